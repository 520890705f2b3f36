//! Items: the boxes inside a HEIF's `meta` (AVIF's and HEIC's) that say
//! which item is the primary one (`pitm`), what each item is (`iinf`),
//! where its data lies (`iloc`), how items refer to each other (`iref`)
//! and which properties each has (`ipma`), each read into plain values.
//!
//! Plain functions over a box's body; they keep nothing. A table that is
//! cut short reads as `None`, and at most `MAX_ENTRIES` entries are kept,
//! counting each reference and each association, not only each box.

use super::boxes::{Boxes, FourCc, Reader, full_box};

/// Items a file may list, references (each item a reference points to)
/// and property associations, before it is refused: the most a real grid
/// needs (a 12 MP photo in 512 px tiles is 48 tiles) many times over.
pub(crate) const MAX_ENTRIES: usize = 4096;

/// Where an item's data is: in the file, or in the `meta` box's `idat`.
pub(crate) struct Location {
    pub(crate) item: u32,
    pub(crate) in_idat: bool,
    pub(crate) extents: Vec<(u64, u64)>,
}

#[cfg_attr(not(feature = "avif"), allow(dead_code))]
pub(crate) fn read_pitm(body: &[u8]) -> Option<u32> {
    let ((version, _), rest) = full_box(body).ok()?;
    let mut reader = Reader::new(rest);
    match version {
        0 => reader.u16().map(u32::from),
        _ => reader.u32(),
    }
}

pub(crate) fn read_iinf(body: &[u8]) -> Option<Vec<(u32, FourCc)>> {
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
        if &kind != b"infe" {
            continue;
        }
        // Past the cap the table is refused, not cut: an item left out
        // would be one no check sees.
        if items.len() >= MAX_ENTRIES {
            return None;
        }
        let ((version, _), rest) = full_box(body).ok()?;
        let mut reader = Reader::new(rest);
        // Versions 0 and 1 predate item types: no image is one. Later
        // versions are read as 3, as libheif reads them.
        let id = match version {
            0 | 1 => continue,
            2 => u32::from(reader.u16()?),
            _ => reader.u32()?,
        };
        let _protection = reader.u16()?;
        items.push((id, reader.four_cc()?));
    }
    Some(items)
}

pub(crate) fn read_iloc(body: &[u8]) -> Option<Vec<Location>> {
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

/// Each item's properties: indexes into the `ipco` list, and whether each
/// is essential.
pub(crate) type Associations = Vec<(u32, Vec<(usize, bool)>)>;

pub(crate) fn read_iref(body: &[u8]) -> Option<Vec<(FourCc, u32, Vec<u32>)>> {
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
        // libheif reads the references one after the other, whatever each
        // box's size: bytes left in a box would be references only it sees.
        if !reader.rest().is_empty() {
            return None;
        }
        references.push((kind, from, to));
    }
    Some(references)
}

pub(crate) fn read_ipma(body: &[u8]) -> Option<Associations> {
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
