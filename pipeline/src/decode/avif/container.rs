//! Container: what an AVIF file (HEIF, on ISO BMFF boxes: `boxes.rs`)
//! says of the image it shows (`still.rs`), read from the boxes a still
//! needs (`tables.rs`): the primary item (an AV1 image, or a grid of
//! them), its alpha (an auxiliary image), its size, colours and
//! transforms (`clap`, `irot`, `imir`). An image sequence (`avis`) without
//! a still gives its first frame's sample (`sequence.rs`).
//!
//! Runs inside a decode, on the decode thread, over bytes already in
//! memory; borrows them and keeps nothing. An item's data is where its
//! extents lie, found once however many references point to it, and
//! joined only as it is decoded. Every read is checked: a box that claims
//! more than it holds is an error, never a panic.

use super::sequence;
use super::still::{Coded, Data, Grid, Still, Transforms};
use super::tables::{Property, crop_of, read_grid, read_property};
use crate::decode::bmff::{
    Associations, Boxes, FourCc, Location, MAX_ENTRIES, full_box, read_iinf, read_iloc, read_ipma,
    read_iref, read_pitm,
};
use crate::decode::formats;

/// Reads what `bytes`, an AVIF file, shows.
pub(super) fn read(bytes: &[u8]) -> Result<Still<'_>, String> {
    if !formats::is_avif(bytes) {
        return Err("the file does not start with an AVIF file type box".into());
    }
    let mut boxes = Boxes::new(bytes);
    boxes.next();
    let mut meta = None;
    let mut moov = None;
    for found in boxes {
        let (kind, body) = found?;
        match &kind {
            b"meta" if meta.is_none() => meta = Some(full_box(body)?.1),
            b"moov" if moov.is_none() => moov = Some(body),
            _ => {}
        }
    }
    match (meta, moov) {
        (Some(meta), _) => Meta::read(bytes, meta)?.still(),
        (None, Some(moov)) => sequence::first_frame(bytes, moov),
        (None, None) => Err("the file has no image (no meta box, and no track)".into()),
    }
}

/// The `meta` box, read.
struct Meta<'a> {
    file: &'a [u8],
    primary: u32,
    /// Each item's id and type.
    items: Vec<(u32, FourCc)>,
    locations: Vec<Location>,
    /// Each reference: its type, from, to.
    references: Vec<(FourCc, u32, Vec<u32>)>,
    properties: Vec<Property<'a>>,
    /// Each item's properties: indexes into `properties`, whether essential.
    associations: Associations,
    idat: &'a [u8],
}

impl<'a> Meta<'a> {
    fn read(file: &'a [u8], meta: &'a [u8]) -> Result<Self, String> {
        let mut read = Meta {
            file,
            primary: 0,
            items: Vec::new(),
            locations: Vec::new(),
            references: Vec::new(),
            properties: Vec::new(),
            associations: Vec::new(),
            idat: &[],
        };
        let mut primary = None;
        for found in Boxes::new(meta) {
            let (kind, body) = found?;
            let short = || {
                format!(
                    "the {} box is cut short, or lists more than {MAX_ENTRIES} entries",
                    String::from_utf8_lossy(&kind)
                )
            };
            match &kind {
                b"hdlr" => {
                    let handler = full_box(body)?.1.get(4..8);
                    if handler != Some(b"pict") {
                        return Err("the meta box does not describe a picture".into());
                    }
                }
                b"pitm" => primary = Some(read_pitm(body).ok_or_else(short)?),
                b"iinf" => read.items = read_iinf(body).ok_or_else(short)?,
                b"iloc" => read.locations = read_iloc(body).ok_or_else(short)?,
                b"iref" => read.references = read_iref(body).ok_or_else(short)?,
                b"iprp" => read.read_iprp(body)?,
                b"idat" => read.idat = body,
                _ => {}
            }
        }
        read.primary = primary.ok_or("the file names no primary image (pitm)")?;
        Ok(read)
    }

    fn read_iprp(&mut self, iprp: &'a [u8]) -> Result<(), String> {
        for found in Boxes::new(iprp) {
            let (kind, body) = found?;
            match &kind {
                b"ipco" => {
                    for property in Boxes::new(body) {
                        let (kind, body) = property?;
                        self.properties.push(read_property(kind, body)?);
                        if self.properties.len() > MAX_ENTRIES {
                            return Err("the file lists too many properties".into());
                        }
                    }
                }
                b"ipma" => {
                    let associations = read_ipma(body).ok_or_else(|| {
                        format!(
                            "the ipma box is cut short, or lists more than {MAX_ENTRIES} entries"
                        )
                    })?;
                    self.associations.extend(associations);
                    // Every entry and every association, of every ipma.
                    let listed: usize = self.associations.iter().map(|(_, l)| 1 + l.len()).sum();
                    if listed > MAX_ENTRIES {
                        return Err("the file lists too many property associations".into());
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The still the primary item shows.
    fn still(&self) -> Result<Still<'a>, String> {
        let primary = self.primary;
        let colour = self.coded(primary)?;
        let alpha_item = self
            .references_to(b"auxl", primary)
            .find(|&item| self.is_alpha(item));
        let alpha = match alpha_item {
            Some(item) => Some(self.coded(item)?),
            None => self.tiles_alpha(&colour)?,
        };
        let premultiplied = alpha_item.is_some_and(|alpha| {
            self.references
                .iter()
                .any(|(kind, from, to)| kind == b"prem" && *from == primary && to.contains(&alpha))
        });
        let (width, height) = match &colour {
            Coded::Grid(grid) => (grid.width, grid.height),
            Coded::Av1(_) => self
                .property(primary, |p| match p {
                    Property::Size(w, h) => Some((*w, *h)),
                    _ => None,
                })
                .ok_or("the primary image has no size (ispe)")?,
        };
        if width == 0 || height == 0 {
            return Err(format!("the file says the image is {width}x{height}"));
        }
        let nclx = self.property(primary, |p| match p {
            Property::Colour(nclx) => Some(*nclx),
            _ => None,
        });
        // A clean aperture that is not a crop of the image shows it whole.
        let crop = self
            .property(primary, |p| match p {
                Property::Crop(clap) => Some(*clap),
                _ => None,
            })
            .and_then(|clap| crop_of(clap, width, height));
        let transforms = Transforms {
            crop,
            quarter_turns: self
                .property(primary, |p| match p {
                    Property::Turn(turns) => Some(*turns),
                    _ => None,
                })
                .unwrap_or(0),
            mirror: self.property(primary, |p| match p {
                Property::Mirror(axis) => Some(*axis),
                _ => None,
            }),
        };
        Ok(Still {
            colour,
            alpha,
            premultiplied,
            width,
            height,
            nclx,
            operating_point: self
                .property(primary, |p| match p {
                    Property::OperatingPoint(point) => Some(*point),
                    _ => None,
                })
                .unwrap_or(0),
            transforms,
        })
    }

    /// A grid's alpha given tile by tile (an alpha image for each of the
    /// colour's tiles, none for the grid), as a grid of those: `None` when
    /// not every tile has one.
    fn tiles_alpha(&self, colour: &Coded<'a>) -> Result<Option<Coded<'a>>, String> {
        let Coded::Grid(grid) = colour else {
            return Ok(None);
        };
        let alphas: Option<Vec<u32>> = self
            .references_from(b"dimg", self.primary)
            .map(|tile| {
                self.references_to(b"auxl", tile)
                    .find(|&item| self.is_alpha(item))
            })
            .collect();
        let Some(alphas) = alphas else {
            return Ok(None);
        };
        let mut found = Vec::new();
        let tiles = alphas
            .into_iter()
            .map(|item| {
                self.check_essentials(item)?;
                match self.item_type(item)? {
                    b"av01" => self.data_once(item, &mut found),
                    _ => Err("a tile's alpha is not an AV1 image".to_string()),
                }
            })
            .collect::<Result<_, String>>()?;
        Ok(Some(Coded::Grid(Grid { tiles, ..*grid })))
    }

    /// Item `item` as a coded image.
    fn coded(&self, item: u32) -> Result<Coded<'a>, String> {
        self.check_essentials(item)?;
        match self.item_type(item)? {
            b"av01" => Ok(Coded::Av1(self.data(item)?)),
            b"grid" => {
                let tiles: Vec<u32> = self.references_from(b"dimg", item).collect();
                let grid = read_grid(&self.data(item)?.bytes())?;
                let (rows, columns, width, height) = grid;
                if tiles.len() as u64 != u64::from(rows) * u64::from(columns) {
                    return Err(format!(
                        "the grid has {rows}x{columns} cells but {} tiles",
                        tiles.len()
                    ));
                }
                // A tile that fills many cells is found once, and shared.
                let mut found = Vec::new();
                let tiles = tiles
                    .into_iter()
                    .map(|tile| {
                        self.check_essentials(tile)?;
                        match self.item_type(tile)? {
                            b"av01" => self.data_once(tile, &mut found),
                            _ => Err("a grid's tile is not an AV1 image".into()),
                        }
                    })
                    .collect::<Result<_, String>>()?;
                Ok(Coded::Grid(Grid {
                    rows,
                    columns,
                    width,
                    height,
                    tiles,
                }))
            }
            other => Err(format!(
                "the image is of item type {:?}, which is not AV1 or a grid",
                String::from_utf8_lossy(other)
            )),
        }
    }

    fn item_type(&self, item: u32) -> Result<&FourCc, String> {
        self.items
            .iter()
            .find(|(id, _)| *id == item)
            .map(|(_, kind)| kind)
            .ok_or_else(|| format!("item {item} is not listed (iinf)"))
    }

    /// Refuses an item with an essential property this reader does not
    /// know: the file says it cannot be shown without it.
    fn check_essentials(&self, item: u32) -> Result<(), String> {
        let unknown = self.associated(item).any(|(property, essential)| {
            essential
                && matches!(
                    self.properties.get(property),
                    Some(Property::Unknown) | None
                )
        });
        if unknown {
            return Err("the image needs a property this decoder does not support".into());
        }
        Ok(())
    }

    /// The properties associated with `item`, with whether each is essential.
    fn associated(&self, item: u32) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.associations
            .iter()
            .filter(move |(id, _)| *id == item)
            .flat_map(|(_, list)| list.iter().copied())
    }

    /// The first of `item`'s properties that `pick` takes.
    fn property<T>(&self, item: u32, pick: impl Fn(&Property<'a>) -> Option<T>) -> Option<T> {
        self.associated(item)
            .filter_map(|(index, _)| self.properties.get(index))
            .find_map(pick)
    }

    fn is_alpha(&self, item: u32) -> bool {
        self.property(item, |p| match p {
            Property::Auxiliary(kind) => Some(
                *kind == b"urn:mpeg:mpegB:cicp:systems:auxiliary:alpha"
                    || *kind == b"urn:mpeg:hevc:2015:auxid:1",
            ),
            _ => None,
        })
        .unwrap_or(false)
    }

    /// The items `kind` references from `from` point to, in order.
    fn references_from(&self, kind: &FourCc, from: u32) -> impl Iterator<Item = u32> + '_ {
        let kind = *kind;
        self.references
            .iter()
            .filter(move |(k, f, _)| *k == kind && *f == from)
            .flat_map(|(_, _, to)| to.iter().copied())
    }

    /// The items with a `kind` reference to `to`.
    fn references_to(&self, kind: &FourCc, to: u32) -> impl Iterator<Item = u32> + '_ {
        let kind = *kind;
        self.references
            .iter()
            .filter(move |(k, _, t)| *k == kind && t.contains(&to))
            .map(|(_, from, _)| *from)
    }

    /// Item `item`'s data, or the same data found before (in `found`).
    fn data_once(&self, item: u32, found: &mut Vec<(u32, Data<'a>)>) -> Result<Data<'a>, String> {
        if let Some((_, data)) = found.iter().find(|(id, _)| *id == item) {
            return Ok(data.clone());
        }
        let data = self.data(item)?;
        found.push((item, data.clone()));
        Ok(data)
    }

    /// Item `item`'s data: where its extents lie.
    fn data(&self, item: u32) -> Result<Data<'a>, String> {
        let location = self
            .locations
            .iter()
            .find(|location| location.item == item)
            .ok_or_else(|| format!("item {item} has no location (iloc)"))?;
        let source = if location.in_idat {
            self.idat
        } else {
            self.file
        };
        let extent = |&(offset, length): &(u64, u64)| {
            let start = usize::try_from(offset).ok()?;
            let end = start.checked_add(usize::try_from(length).ok()?)?;
            source.get(start..end)
        };
        let outside = || format!("item {item}'s data lies outside the file");
        let pieces = location
            .extents
            .iter()
            .map(|one| extent(one).ok_or_else(outside))
            .collect::<Result<Vec<&[u8]>, String>>()?;
        // Joined, an item is never more than the file: extents that point
        // at the same bytes again and again are refused.
        let joined = pieces
            .iter()
            .try_fold(0usize, |sum, piece| sum.checked_add(piece.len()));
        if joined.is_none_or(|joined| joined > self.file.len()) {
            return Err(format!("item {item}'s extents hold more than the file"));
        }
        Ok(match pieces.as_slice() {
            [one] => Data::whole(one),
            _ => Data::pieces(pieces),
        })
    }
}
