//! Streams: the pictures a HEIC's items make libheif allocate, read before
//! libheif sees the file (`heic/`). libheif 1.15 decodes the picture an
//! item's SPS declares (`hevc.rs`), whatever the item's `ispe` says, and a
//! grid's or overlay's canvas at the size its data says: a file whose
//! `ispe` says 64x64 and whose SPS says 16000x16000 would pass a check of
//! `ispe` alone. Every `hvc1` item's parameter sets are read (its `hvcC`s,
//! and its data split by 4-byte lengths, libheif's, and by its `hvcC`'s),
//! and every canvas; an image is reckoned by the largest picture of the
//! items its decode takes (itself, its tiles, its alpha). An alpha plane
//! that may show less than its image, or is turned or cropped otherwise,
//! is refused (libheif before 1.18 reads past it), as is an overlay that
//! places an image far off its canvas. A file that could
//! be read two ways (two `meta`, `iinf`, `iloc`, `idat`, `iref`, `iprp`,
//! `ipco` or `ipma` boxes, an extent past its end), that holds AV1 items,
//! which libheif would decode unseen, or whose image is derived from
//! itself (which libheif before 1.16 recursed on until its stack ran out)
//! is an error.
//!
//! Plain functions over the file's bytes, on the decode thread; they keep
//! nothing. Every read is checked: a box or table that claims more than it
//! holds is an error, never a panic.

use std::collections::{HashMap, HashSet};

use super::boxes::{Boxes, FourCc, Reader, full_box};
use super::hevc::{HvcC, Picture, is_sps, nal_units, read_sps};
use super::items::{Location, MAX_ENTRIES, read_iinf, read_iloc, read_iref};
use super::properties::Configs;

/// The NAL length size libheif 1.15 splits every item's data by, whatever
/// its `hvcC` says.
const LIBHEIF_LENGTH_SIZE: usize = 4;

/// What a file's HEVC streams and canvases declare.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    /// Each item's largest declared picture: an HEVC item's SPS, a grid's
    /// or overlay's canvas.
    pictures: HashMap<u32, Picture>,
    /// The items each image is made from (`dimg`).
    derived: HashMap<u32, Vec<u32>>,
    /// The images that say they are each image's alpha or depth (`auxl`).
    auxiliary: HashMap<u32, Vec<u32>>,
}

/// The boxes of a HEIF's `meta` this reads, each at most once.
#[derive(Default)]
struct Meta<'a> {
    iinf: Option<&'a [u8]>,
    iloc: Option<&'a [u8]>,
    idat: Option<&'a [u8]>,
    iref: Option<&'a [u8]>,
    ipco: Option<&'a [u8]>,
    ipma: Option<&'a [u8]>,
}

impl<'a> Meta<'a> {
    /// The boxes of the file's `meta`; all `None` if it has none.
    fn find(bytes: &'a [u8]) -> Result<Self, String> {
        let mut found = Meta::default();
        let mut meta = None;
        // Top-level boxes up to the first that is not whole: what follows
        // is no box to libheif either (bytes appended to a file, say).
        for (kind, body) in Boxes::new(bytes).map_while(Result::ok) {
            if &kind == b"meta" {
                once(&mut meta, body, &kind)?;
            }
        }
        let Some(meta) = meta else {
            return Ok(found);
        };
        let mut iprp = None;
        for entry in Boxes::new(full_box(meta)?.1) {
            let (kind, body) = entry?;
            let slot = match &kind {
                b"iinf" => &mut found.iinf,
                b"iloc" => &mut found.iloc,
                b"idat" => &mut found.idat,
                b"iref" => &mut found.iref,
                b"iprp" => &mut iprp,
                _ => continue,
            };
            once(slot, body, &kind)?;
        }
        for entry in Boxes::new(iprp.unwrap_or_default()) {
            let (kind, body) = entry?;
            let slot = match &kind {
                b"ipco" => &mut found.ipco,
                b"ipma" => &mut found.ipma,
                _ => continue,
            };
            once(slot, body, &kind)?;
        }
        Ok(found)
    }
}

/// `slot`, set to `body` if it is the first box of its kind: a second is
/// an error, since libheif and this reader might each take another one.
fn once<'a>(slot: &mut Option<&'a [u8]>, body: &'a [u8], kind: &FourCc) -> Result<(), String> {
    if slot.replace(body).is_some() {
        return Err(format!(
            "it has two '{}' boxes",
            String::from_utf8_lossy(kind)
        ));
    }
    Ok(())
}

impl Streams {
    /// Reads every HEVC item's parameter sets and every canvas.
    pub(crate) fn read(bytes: &[u8]) -> Result<Self, String> {
        let meta = Meta::find(bytes)?;
        let mut streams = Streams::default();
        if let Some(iref) = meta.iref {
            streams.relate(&read_iref(iref).ok_or("its references are damaged")?)?;
        }
        let (Some(iinf), Some(iloc)) = (meta.iinf, meta.iloc) else {
            return Ok(streams);
        };
        let items = read_iinf(iinf).ok_or("its item table is damaged")?;
        // libheif decodes AV1 items too, which nothing here reads.
        if items.iter().any(|(_, kind)| kind == b"av01") {
            return Err("it holds AV1 items, which a HEIC is not read with".into());
        }
        let locations = read_iloc(iloc).ok_or("its item locations are damaged")?;
        let data = |item| item_data(bytes, meta.idat, &locations, item);
        let configs = Configs::read(meta.ipco, meta.ipma)?;
        let mut scanned = 0usize;
        for &(item, kind) in &items {
            let picture = match &kind {
                b"grid" => {
                    Some(read_canvas(&data(item)?, false).ok_or("a grid's data is cut short")?)
                }
                b"iovl" => {
                    let inputs = streams.derived.get(&item).cloned().unwrap_or_default();
                    let with_alpha = |input| streams.has_alpha(input, &configs);
                    Some(read_overlay(&data(item)?, &inputs, with_alpha)?)
                }
                b"hvc1" => {
                    let data = data(item)?;
                    scanned = scanned.saturating_add(data.len());
                    // Items pointing at the same bytes again and again
                    // would make this read the file thousands of times.
                    if scanned > 2 * bytes.len() {
                        return Err("its items' data adds up to more than the file holds".into());
                    }
                    largest_in_stream(&configs.of(item), &data)?
                }
                _ => None,
            };
            if let Some(picture) = picture {
                streams.pictures.insert(item, picture);
            }
        }
        streams.check_alphas(&configs)?;
        Ok(streams)
    }

    /// Refuses an alpha plane libheif before 1.18 would read past: one
    /// that may show less than the image it belongs to, or that is turned,
    /// mirrored or cropped otherwise (libheif 1.15 takes the plane as it
    /// is decoded and reads it at the image's size, turned and cropped).
    fn check_alphas(&self, configs: &Configs<'_>) -> Result<(), String> {
        for (&image, parts) in &self.auxiliary {
            for &alpha in parts.iter().filter(|&&part| configs.is_alpha(part)) {
                let (Some(shown), Some(plane)) =
                    (self.pictures.get(&image), self.pictures.get(&alpha))
                else {
                    continue;
                };
                let (image_size, alpha_size) = (shown.most_shown, plane.least_shown);
                let smaller = alpha_size.0 < image_size.0 || alpha_size.1 < image_size.1;
                if smaller || configs.transforms(image) != configs.transforms(alpha) {
                    return Err(format!(
                        "its alpha plane (item {alpha}) shows {}x{} where its image shows {}x{}, or is \
                         turned or cropped otherwise; libheif before 1.18 reads past such a plane",
                        alpha_size.0, alpha_size.1, image_size.0, image_size.1
                    ));
                }
            }
        }
        Ok(())
    }

    /// Keeps the references that say what an image's decode takes, refusing
    /// an image derived from itself (libheif before 1.16 follows
    /// derivations without looking for a loop, recursing until its stack
    /// runs out).
    fn relate(&mut self, references: &[(FourCc, u32, Vec<u32>)]) -> Result<(), String> {
        for (kind, from, to) in references {
            match kind {
                b"dimg" => self.derived.entry(*from).or_default().extend(to),
                b"auxl" => {
                    for image in to {
                        self.auxiliary.entry(*image).or_default().push(*from);
                    }
                }
                _ => {}
            }
        }
        if derives_from_itself(&self.derived) {
            return Err("an image is derived, through its references, from itself".into());
        }
        Ok(())
    }

    /// Whether `item` or any image it is made from (`dimg`, at any depth)
    /// has an alpha plane, which libheif 1.15 then blends with.
    fn has_alpha(&self, item: u32, configs: &Configs<'_>) -> bool {
        let mut taken = HashSet::from([item]);
        let mut pending = vec![item];
        while let Some(next) = pending.pop() {
            let alphas = self.auxiliary.get(&next).into_iter().flatten();
            if alphas.into_iter().any(|&part| configs.is_alpha(part)) {
                return true;
            }
            for &part in self.derived.get(&next).into_iter().flatten() {
                if taken.len() < MAX_ENTRIES && taken.insert(part) {
                    pending.push(part);
                }
            }
        }
        false
    }

    /// The largest picture libheif may decode to show `item`: its own, its
    /// tiles' and overlays' (`dimg` from it, and from them), and those of
    /// the images that say they are its alpha or depth (`auxl` to it).
    pub(crate) fn largest_for(&self, item: u32) -> Option<Picture> {
        let mut taken = HashSet::from([item]);
        let mut pending = vec![item];
        while let Some(next) = pending.pop() {
            let parts = self.derived.get(&next).into_iter().flatten();
            let auxiliary = self.auxiliary.get(&next).into_iter().flatten();
            for &part in parts.chain(auxiliary) {
                if taken.len() < MAX_ENTRIES && taken.insert(part) {
                    pending.push(part);
                }
            }
        }
        taken
            .iter()
            .filter_map(|item| self.pictures.get(item))
            .copied()
            .max_by_key(Picture::area)
    }
}

/// The largest picture an HEVC item declares: in its `configs`, or in its
/// `data`, split by libheif's length size and by each its `hvcC`s say.
fn largest_in_stream(configs: &[HvcC], data: &[u8]) -> Result<Option<Picture>, String> {
    let mut largest = configs
        .iter()
        .filter_map(|config| config.largest)
        .fold(None, |largest, picture| Some(picture.larger(largest)));
    let mut length_sizes = vec![LIBHEIF_LENGTH_SIZE];
    for config in configs {
        if !length_sizes.contains(&config.length_size) {
            length_sizes.push(config.length_size);
        }
    }
    for length_size in length_sizes {
        for unit in nal_units(data, length_size) {
            if is_sps(unit) {
                largest = Some(read_sps(unit)?.larger(largest));
            }
        }
    }
    Ok(largest)
}

/// Whether any image is derived (`dimg`, through any number of steps) from
/// itself: one depth-first walk over `derived`, each item left once it is
/// done.
fn derives_from_itself(derived: &HashMap<u32, Vec<u32>>) -> bool {
    // Items on the walk's path (`true`) or done with (`false`).
    let mut state: HashMap<u32, bool> = HashMap::new();
    for &start in derived.keys() {
        if state.contains_key(&start) {
            continue;
        }
        // Each item on the path, and how many of its derived items are seen.
        let mut path = vec![(start, 0)];
        state.insert(start, true);
        while let Some((item, next)) = path.last_mut() {
            let children = derived.get(item).map_or(&[][..], Vec::as_slice);
            let Some(&child) = children.get(*next) else {
                state.insert(*item, false);
                path.pop();
                continue;
            };
            *next += 1;
            match state.get(&child) {
                Some(true) => return true,
                Some(false) => {}
                None => {
                    state.insert(child, true);
                    path.push((child, 0));
                }
            }
        }
    }
    false
}

/// Item `item`'s data, its extents joined: in the file, or in `idat`. An
/// extent past the end is an error (libheif reads some of them).
fn item_data(
    bytes: &[u8],
    idat: Option<&[u8]>,
    locations: &[Location],
    item: u32,
) -> Result<Vec<u8>, String> {
    let mut data = Vec::new();
    for location in locations.iter().filter(|location| location.item == item) {
        let source = if location.in_idat {
            idat.unwrap_or_default()
        } else {
            bytes
        };
        for &(offset, length) in &location.extents {
            let start = usize::try_from(offset).unwrap_or(usize::MAX);
            let end = start.saturating_add(usize::try_from(length).unwrap_or(usize::MAX));
            let extent = source
                .get(start..end)
                .ok_or("an item's data lies past the end of where it is kept")?;
            if data.len() + extent.len() > bytes.len() {
                return Err("an item's data is larger than the file".into());
            }
            data.extend_from_slice(extent);
        }
    }
    Ok(data)
}

/// The canvas an `iovl` item's data declares for its `inputs` images,
/// refusing an image placed further from the canvas than the canvas is
/// wide or high (libheif before 1.18 adds such offsets to sizes in 32-bit
/// arithmetic unchecked: CVE-2024-41311; no overlay needs them), and an
/// image `with_alpha` placed left of the canvas (libheif before 1.18
/// blends such an image past the ends of its rows).
fn read_overlay(
    data: &[u8],
    inputs: &[u32],
    with_alpha: impl Fn(u32) -> bool,
) -> Result<Picture, String> {
    let cut_short = || "an overlay's data is cut short".to_owned();
    let canvas = read_canvas(data, true).ok_or_else(cut_short)?;
    let wide = data.get(1).is_some_and(|flags| flags & 1 == 1);
    // Version, flags, four fill values, the canvas's two sides.
    let mut reader = Reader::new(data);
    reader
        .take(2 + 8 + if wide { 8 } else { 4 })
        .ok_or_else(cut_short)?;
    for &input in inputs {
        let mut offset = || {
            if wide {
                reader.u32().map(|value| i64::from(value as i32))
            } else {
                reader.u16().map(|value| i64::from(value as i16))
            }
        };
        let (x, y) = (
            offset().ok_or_else(cut_short)?,
            offset().ok_or_else(cut_short)?,
        );
        if x.abs() > i64::from(canvas.width) || y.abs() > i64::from(canvas.height) {
            return Err(format!(
                "an overlay places an image at {x},{y}, outside its {}x{} canvas",
                canvas.width, canvas.height
            ));
        }
        if x < 0 && with_alpha(input) {
            return Err(format!(
                "an overlay places an image with alpha at {x},{y}, left of its canvas; libheif \
                 before 1.18 blends such an image past its rows' ends"
            ));
        }
    }
    Ok(canvas)
}

/// The canvas a `grid` (ISO/IEC 23008-12 6.6.2.3) or `iovl` (6.6.2.2)
/// item's data declares: version, flags (bit 0: 32-bit sizes), then the
/// grid's rows and columns, or the overlay's four 16-bit fill values,
/// then the output width and height.
fn read_canvas(data: &[u8], overlay: bool) -> Option<Picture> {
    let mut reader = Reader::new(data);
    let _version = reader.u8()?;
    let wide = reader.u8()? & 1 == 1;
    reader.take(if overlay { 8 } else { 2 })?;
    let mut side = || {
        if wide {
            reader.u32()
        } else {
            reader.u16().map(u32::from)
        }
    };
    let (width, height) = (side()?, side()?);
    Some(Picture::whole(width, height, 1))
}

#[cfg(test)]
mod tests {
    use super::super::properties::Property;
    use super::*;

    #[test]
    fn an_alpha_plane_showing_less_than_its_image_or_turned_otherwise_is_refused() {
        // Image 1 and its alpha 2 (`auxl` from 2 to 1), each with the
        // properties listed: 0 an alpha `auxC`, 1 a quarter turn.
        let turn = [1u8];
        let configs = |alpha: &[usize], image: &[usize]| Configs {
            properties: vec![Property::Alpha, Property::Transform(*b"irot", &turn)],
            associations: vec![
                (1, image.iter().map(|&index| (index, true)).collect()),
                (2, alpha.iter().map(|&index| (index, true)).collect()),
            ],
        };
        let streams = |image: Picture, alpha: Picture| Streams {
            pictures: HashMap::from([(1, image), (2, alpha)]),
            auxiliary: HashMap::from([(1, vec![2])]),
            ..Streams::default()
        };
        let whole = Picture::whole(512, 384, 1);
        assert!(
            streams(whole, whole)
                .check_alphas(&configs(&[0], &[]))
                .is_ok()
        );
        assert!(
            streams(whole, whole)
                .check_alphas(&configs(&[0, 1], &[1]))
                .is_ok()
        );
        // A plane of a quarter the size, or one of its parameter sets
        // showing less, or cropped by its conformance window.
        let small = Picture::whole(128, 96, 1);
        let refused = streams(whole, small)
            .check_alphas(&configs(&[0], &[]))
            .unwrap_err();
        assert!(
            refused.contains("shows 128x96 where its image shows 512x384"),
            "{refused}"
        );
        let two_sizes = whole.larger(Some(small));
        assert!(
            streams(whole, two_sizes)
                .check_alphas(&configs(&[0], &[]))
                .is_err()
        );
        let mut cropped = whole;
        cropped.least_shown = (512, 376);
        assert!(
            streams(whole, cropped)
                .check_alphas(&configs(&[0], &[]))
                .is_err()
        );
        // The image turned and its plane not.
        assert!(
            streams(whole, whole)
                .check_alphas(&configs(&[0], &[1]))
                .is_err()
        );
        // A depth map (no alpha `auxC`) of any size is not libheif's alpha.
        assert!(
            streams(whole, small)
                .check_alphas(&configs(&[], &[]))
                .is_ok()
        );
    }

    #[test]
    fn an_overlay_placing_an_image_far_off_its_canvas_is_refused() {
        // Version 0, 16-bit fields: fill, a 640x480 canvas, then offsets.
        let overlay = |offsets: &[(i16, i16)]| {
            let mut data = vec![0u8, 0];
            data.extend_from_slice(&[0; 8]);
            data.extend_from_slice(&640u16.to_be_bytes());
            data.extend_from_slice(&480u16.to_be_bytes());
            for (x, y) in offsets {
                data.extend_from_slice(&x.to_be_bytes());
                data.extend_from_slice(&y.to_be_bytes());
            }
            data
        };
        let opaque = |_| false;
        let placed = read_overlay(
            &overlay(&[(0, 0), (-100, 240), (639, 479)]),
            &[1, 2, 3],
            opaque,
        )
        .unwrap();
        assert_eq!((placed.width, placed.height), (640, 480));
        let refused = read_overlay(&overlay(&[(0, 0), (30_000, 0)]), &[1, 2], opaque).unwrap_err();
        assert!(
            refused.contains("30000,0, outside its 640x480"),
            "{refused}"
        );
        assert!(read_overlay(&overlay(&[(0, -481)]), &[1], opaque).is_err());
        // Fewer offsets than images: cut short.
        assert!(read_overlay(&overlay(&[(0, 0)]), &[1, 2], opaque).is_err());
        // An image with alpha (2) placed left of the canvas; above it, or
        // one without alpha left of it, is placed.
        let two_has_alpha = |input| input == 2;
        let refused =
            read_overlay(&overlay(&[(0, 0), (-1, 0)]), &[1, 2], two_has_alpha).unwrap_err();
        assert!(refused.contains("with alpha at -1,0"), "{refused}");
        assert!(read_overlay(&overlay(&[(-1, 0), (0, -5)]), &[1, 2], two_has_alpha).is_ok());
        // 32-bit fields, an offset near the end of the range.
        let mut wide = vec![0u8, 1];
        wide.extend_from_slice(&[0; 8]);
        wide.extend_from_slice(&640u32.to_be_bytes());
        wide.extend_from_slice(&480u32.to_be_bytes());
        wide.extend_from_slice(&(i32::MAX - 10).to_be_bytes());
        wide.extend_from_slice(&0i32.to_be_bytes());
        assert!(read_overlay(&wide, &[1], opaque).is_err());
    }

    #[test]
    fn an_image_derived_from_itself_is_found_however_far_round() {
        let derived = |pairs: &[(u32, &[u32])]| -> HashMap<u32, Vec<u32>> {
            pairs
                .iter()
                .map(|(from, to)| (*from, to.to_vec()))
                .collect()
        };
        // A grid of two tiles; an overlay of the grid and a tile.
        assert!(!derives_from_itself(&derived(&[
            (1, &[2, 3]),
            (4, &[1, 3])
        ])));
        assert!(derives_from_itself(&derived(&[(1, &[1])])));
        assert!(derives_from_itself(&derived(&[
            (1, &[2]),
            (2, &[3]),
            (3, &[1])
        ])));
    }
}
