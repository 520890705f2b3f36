//! Tables: the boxes inside an AVIF's `meta` that say what its items are
//! (`pitm`, `iinf`, `iloc`, `iref`), what properties they have (`ipco`,
//! `ipma`: size, colours, alpha, crop, turn, mirror) and how a grid is laid
//! out, each read into plain values, with the crop checked against the
//! image.
//!
//! Plain functions over a box's body; they keep nothing. A table that is
//! cut short reads as `None`, and at most `MAX_ENTRIES` entries are kept,
//! counting each reference and each association, not only each box.

use super::boxes::{Boxes, FourCc, Reader, full_box};
use super::still::Colour;

/// Where an item's data is: in the file, or in the `meta` box's `idat`.
pub(super) struct Location {
    pub(super) item: u32,
    pub(super) in_idat: bool,
    pub(super) extents: Vec<(u64, u64)>,
}

/// Each item's properties: indexes into the `ipco` list, and whether each
/// is essential.
pub(super) type Associations = Vec<(u32, Vec<(usize, bool)>)>;

/// A property of an item, as far as a still needs it.
pub(super) enum Property<'a> {
    Size(u32, u32),
    Colour(Colour),
    Auxiliary(&'a [u8]),
    Crop(Clap),
    Turn(u8),
    Mirror(u8),
    /// The operating point to decode (`a1op`), of an image of layers.
    OperatingPoint(u8),
    /// One this reader does not act on (`av1C`, which only sums up what
    /// the AV1 sequence header says; `pixi`, an ICC `colr`...).
    Known,
    Unknown,
}

/// A `clap` box: fractions of the width, height and centre offset.
#[derive(Clone, Copy)]
pub(super) struct Clap {
    width: (u32, u32),
    height: (u32, u32),
    horizontal_offset: (i32, u32),
    vertical_offset: (i32, u32),
}

/// Items a file may list, references (each item a reference points to)
/// and property associations, before it is refused: the most a real grid
/// needs (a 12 MP photo in 512 px tiles is 48 tiles) many times over.
pub(super) const MAX_ENTRIES: usize = 4096;

pub(super) fn read_pitm(body: &[u8]) -> Option<u32> {
    let ((version, _), rest) = full_box(body).ok()?;
    let mut reader = Reader::new(rest);
    match version {
        0 => reader.u16().map(u32::from),
        _ => reader.u32(),
    }
}

pub(super) fn read_iinf(body: &[u8]) -> Option<Vec<(u32, FourCc)>> {
    let ((version, _), rest) = full_box(body).ok()?;
    let mut reader = Reader::new(rest);
    let _count = if version == 0 {
        u32::from(reader.u16()?)
    } else {
        reader.u32()?
    };
    let mut items = Vec::new();
    for found in Boxes::new(reader.rest()) {
        let (kind, body) = found.ok()?;
        if &kind != b"infe" || items.len() >= MAX_ENTRIES {
            continue;
        }
        let ((version, _), rest) = full_box(body).ok()?;
        let mut reader = Reader::new(rest);
        // Versions 0 and 1 predate item types: no image is one.
        let id = match version {
            2 => u32::from(reader.u16()?),
            3 => reader.u32()?,
            _ => continue,
        };
        let _protection = reader.u16()?;
        items.push((id, reader.four_cc()?));
    }
    Some(items)
}

pub(super) fn read_iloc(body: &[u8]) -> Option<Vec<Location>> {
    let ((version, _), rest) = full_box(body).ok()?;
    let mut reader = Reader::new(rest);
    let sizes = reader.u16()?;
    let [offset_size, length_size, base_offset_size, index_size] =
        [12, 8, 4, 0].map(|shift| ((sizes >> shift) & 0xf) as u8);
    let count = if version < 2 {
        u32::from(reader.u16()?)
    } else {
        reader.u32()?
    };
    let mut locations = Vec::new();
    // Extents of no bytes each (offset and length sizes of 0) cost the
    // table nothing: they are counted, all items together.
    let mut extents_read = 0;
    for _ in 0..count {
        if locations.len() >= MAX_ENTRIES {
            return None;
        }
        let item = if version < 2 {
            u32::from(reader.u16()?)
        } else {
            reader.u32()?
        };
        let method = if version >= 1 { reader.u16()? & 0xf } else { 0 };
        let _data_reference = reader.u16()?;
        let base = reader.sized(base_offset_size)?;
        let extent_count = reader.u16()?;
        extents_read += usize::from(extent_count);
        if extents_read > MAX_ENTRIES {
            return None;
        }
        let mut extents = Vec::with_capacity(usize::from(extent_count));
        for _ in 0..extent_count {
            if version >= 1 && index_size > 0 {
                reader.sized(index_size)?;
            }
            let offset = reader.sized(offset_size)?;
            let length = reader.sized(length_size)?;
            extents.push((base.checked_add(offset)?, length));
        }
        // Construction method 2 (data from other items) is left unread:
        // such an item has no data here.
        if method <= 1 {
            locations.push(Location {
                item,
                in_idat: method == 1,
                extents,
            });
        }
    }
    Some(locations)
}

pub(super) fn read_iref(body: &[u8]) -> Option<Vec<(FourCc, u32, Vec<u32>)>> {
    let ((version, _), rest) = full_box(body).ok()?;
    let mut references = Vec::new();
    // Each item referred to, in every box: one box may refer to a tile
    // thousands of times.
    let mut counted = 0;
    for found in Boxes::new(rest) {
        let (kind, body) = found.ok()?;
        let mut reader = Reader::new(body);
        let id = |reader: &mut Reader<'_>| match version {
            0 => reader.u16().map(u32::from),
            _ => reader.u32(),
        };
        let from = id(&mut reader)?;
        let count = reader.u16()?;
        // The reference box, and each item it refers to.
        counted += 1 + usize::from(count);
        if counted > MAX_ENTRIES {
            return None;
        }
        let to = (0..count)
            .map(|_| id(&mut reader))
            .collect::<Option<Vec<u32>>>()?;
        references.push((kind, from, to));
    }
    Some(references)
}

pub(super) fn read_ipma(body: &[u8]) -> Option<Associations> {
    let ((version, flags), rest) = full_box(body).ok()?;
    let mut reader = Reader::new(rest);
    let count = reader.u32()?;
    let mut associations = Vec::new();
    let mut counted = 0;
    for _ in 0..count {
        if associations.len() >= MAX_ENTRIES {
            return None;
        }
        let item = if version < 1 {
            u32::from(reader.u16()?)
        } else {
            reader.u32()?
        };
        let listed = reader.u8()?;
        // The entry, and each of its associations.
        counted += 1 + usize::from(listed);
        if counted > MAX_ENTRIES {
            return None;
        }
        let mut list = Vec::with_capacity(usize::from(listed));
        for _ in 0..listed {
            let (essential, index) = if flags & 1 == 1 {
                let word = reader.u16()?;
                (word & 0x8000 != 0, usize::from(word & 0x7fff))
            } else {
                let byte = reader.u8()?;
                (byte & 0x80 != 0, usize::from(byte & 0x7f))
            };
            // Index 0 is "no property"; the rest count from 1.
            if let Some(index) = index.checked_sub(1) {
                list.push((index, essential));
            }
        }
        associations.push((item, list));
    }
    Some(associations)
}

pub(super) fn read_property(kind: FourCc, body: &[u8]) -> Result<Property<'_>, String> {
    let short = || {
        format!(
            "the {} property is cut short",
            String::from_utf8_lossy(&kind)
        )
    };
    let property = match &kind {
        b"ispe" => {
            let mut reader = Reader::new(full_box(body)?.1);
            let (width, height) = (reader.u32(), reader.u32());
            Property::Size(width.ok_or_else(short)?, height.ok_or_else(short)?)
        }
        b"colr" => {
            let mut reader = Reader::new(body);
            match &reader.four_cc().ok_or_else(short)? {
                b"nclx" => {
                    let _primaries = reader.u16().ok_or_else(short)?;
                    let _transfer = reader.u16().ok_or_else(short)?;
                    let matrix = reader.u16().ok_or_else(short)?;
                    let full_range = reader.u8().ok_or_else(short)? & 0x80 != 0;
                    Property::Colour(Colour { matrix, full_range })
                }
                _ => Property::Known,
            }
        }
        b"auxC" => {
            let name = full_box(body)?.1;
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            Property::Auxiliary(&name[..end])
        }
        b"clap" => {
            let mut reader = Reader::new(body);
            let mut next = || reader.u32().ok_or_else(short);
            Property::Crop(Clap {
                width: (next()?, next()?),
                height: (next()?, next()?),
                horizontal_offset: (next()? as i32, next()?),
                vertical_offset: (next()? as i32, next()?),
            })
        }
        b"irot" => Property::Turn(body.first().ok_or_else(short)? & 3),
        b"imir" => Property::Mirror(body.first().ok_or_else(short)? & 1),
        // dav1d's operating points are 0 to 31.
        b"a1op" => Property::OperatingPoint(body.first().ok_or_else(short)? & 31),
        b"av1C" | b"pixi" | b"pasp" | b"clli" | b"mdcv" | b"cclv" | b"amve" | b"lsel" | b"a1lx" => {
            Property::Known
        }
        _ => Property::Unknown,
    };
    Ok(property)
}

/// A grid's rows, columns and output size (`ImageGrid`).
pub(super) fn read_grid(data: &[u8]) -> Result<(u32, u32, u32, u32), String> {
    let mut reader = Reader::new(data);
    let grid = (|| {
        let _version = reader.u8()?;
        let flags = reader.u8()?;
        let rows = u32::from(reader.u8()?) + 1;
        let columns = u32::from(reader.u8()?) + 1;
        let (width, height) = if flags & 1 == 1 {
            (reader.u32()?, reader.u32()?)
        } else {
            (u32::from(reader.u16()?), u32::from(reader.u16()?))
        };
        Some((rows, columns, width, height))
    })();
    grid.ok_or_else(|| "the grid's description is cut short".into())
}

/// The pixels `clap` keeps of a `width` x `height` image, as libavif
/// reckons them (`avifCropRectFromCleanApertureBox`): the crop's size whole
/// numbers, its origin the image's centre (half its size) plus the offset
/// less half the crop, a whole number inside the image. `None` for a clean
/// aperture that is not such a crop, which libavif's apps, Android and
/// browsers show as the whole image.
pub(super) fn crop_of(clap: Clap, width: u32, height: u32) -> Option<(u32, u32, u32, u32)> {
    let whole = |(n, d): (u32, u32)| {
        let (n, d) = (i64::from(n as i32), i64::from(d as i32));
        (d > 0 && n >= 0 && n % d == 0).then(|| n / d)
    };
    let crop_width = whole(clap.width)?;
    let crop_height = whole(clap.height)?;
    // origin = size / 2 + offset - crop / 2, in halves, as a whole number.
    let origin = |size: u32, crop: i64, (n, d): (i32, u32)| -> Option<u32> {
        let d = i64::from(d as i32);
        if d <= 0 {
            return None;
        }
        let twice = i64::from(n) * 2;
        if twice % d != 0 {
            return None;
        }
        let halves = i64::from(size) + twice / d - crop;
        (halves % 2 == 0)
            .then_some(halves / 2)
            .and_then(|o| u32::try_from(o).ok())
    };
    let x = origin(width, crop_width, clap.horizontal_offset)?;
    let y = origin(height, crop_height, clap.vertical_offset)?;
    let (crop_width, crop_height) = (
        u32::try_from(crop_width).ok()?,
        u32::try_from(crop_height).ok()?,
    );
    let fits = crop_width > 0
        && crop_height > 0
        && u64::from(x) + u64::from(crop_width) <= u64::from(width)
        && u64::from(y) + u64::from(crop_height) <= u64::from(height);
    fits.then_some((x, y, crop_width, crop_height))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_iloc_of_empty_extents_is_refused_before_it_grows() {
        // Version 0, no offset or length bytes, 4096 items of 65535
        // extents each: 268 million extents in 24 KB, 4 GB as a table.
        let mut iloc = vec![0, 0, 0, 0, 0x00, 0x00];
        iloc.extend_from_slice(&4096u16.to_be_bytes());
        for item in 0..4096u16 {
            iloc.extend_from_slice(&item.to_be_bytes());
            iloc.extend_from_slice(&[0, 0]);
            iloc.extend_from_slice(&u16::MAX.to_be_bytes());
        }
        assert!(read_iloc(&iloc).is_none());
        // A real table: one item, one extent of 4-byte offset and length.
        let mut iloc = vec![0, 0, 0, 0, 0x44, 0x00, 0, 1, 0, 7, 0, 0, 0, 1];
        iloc.extend_from_slice(&100u32.to_be_bytes());
        iloc.extend_from_slice(&20u32.to_be_bytes());
        let locations = read_iloc(&iloc).unwrap();
        assert_eq!(locations.len(), 1);
        assert_eq!((locations[0].item, locations[0].in_idat), (7, false));
        assert_eq!(locations[0].extents, vec![(100, 20)]);
    }
}
