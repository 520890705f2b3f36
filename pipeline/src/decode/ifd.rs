//! TIFF's structure as EXIF and camera RAW files use it: a byte order,
//! then image file directories (IFDs) of 12-byte entries, each a tag, a
//! type, a count and a value or where the value lies. Read under distrust:
//! every number is read from the file's bytes through a bounds check,
//! offsets near the end of `usize` saturate to "past the end", and a
//! directory claiming more entries than [`MAX_ENTRIES`] is read no
//! further than that many. Following directories (their chains, sub-IFDs)
//! and refusing loops is the caller's; this reads one at a time.
//!
//! Used by EXIF's embedded thumbnail (`jpeg/exif.rs`) and the camera RAW
//! previews (`raw/`), on the thread that decodes; keeps nothing.

use std::ops::Range;

/// Most entries of one directory read. Real directories hold a few dozen;
/// a count of 65,535 in a damaged file is read no further than this.
pub(super) const MAX_ENTRIES: usize = 1024;

/// A TIFF-structured run of bytes: its numbers read in its byte order.
#[derive(Clone, Copy)]
pub(super) struct Tiff<'a> {
    pub(super) bytes: &'a [u8],
    big_endian: bool,
}

/// One directory entry: its tag, type and count, and where it lies.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub(super) tag: u16,
    kind: u16,
    count: u32,
    /// Where the entry's 12 bytes start.
    at: usize,
}

/// TIFF's SHORT and LONG types, the only numbers read here.
const SHORT: u16 = 3;
const LONG: u16 = 4;

impl<'a> Tiff<'a> {
    /// `bytes` read in the byte order their first two bytes say (`II`,
    /// little-endian; `MM`, big-endian), whatever the magic number after
    /// them (42 for TIFF; RAW formats write their own).
    pub(super) fn new(bytes: &'a [u8]) -> Option<Self> {
        let big_endian = match bytes.get(..2)? {
            b"II" => false,
            b"MM" => true,
            _ => return None,
        };
        Some(Self { bytes, big_endian })
    }

    pub(super) fn u16_at(&self, at: usize) -> Option<u16> {
        let bytes: [u8; 2] = self.bytes.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if self.big_endian {
            u16::from_be_bytes(bytes)
        } else {
            u16::from_le_bytes(bytes)
        })
    }

    pub(super) fn u32_at(&self, at: usize) -> Option<u32> {
        let bytes: [u8; 4] = self.bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if self.big_endian {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        })
    }

    /// Where the first directory lies (the header's offset at 4).
    pub(super) fn first_ifd(&self) -> Option<usize> {
        self.u32_at(4).map(|at| at as usize)
    }

    /// The entries of the directory at `ifd`, as many as lie within the
    /// bytes (at most [`MAX_ENTRIES`]); `None` if its count does not.
    pub(super) fn entries(&self, ifd: usize) -> Option<impl Iterator<Item = Entry> + '_> {
        let count = usize::from(self.u16_at(ifd)?).min(MAX_ENTRIES);
        Some((0..count).map_while(move |n| {
            let at = ifd.checked_add(2 + n * 12)?;
            Some(Entry {
                tag: self.u16_at(at)?,
                kind: self.u16_at(at.saturating_add(2))?,
                count: self.u32_at(at.saturating_add(4))?,
                at,
            })
        }))
    }

    /// The number of the first `tag` entry of the directory at `ifd` that
    /// holds one (a SHORT or a LONG): an entry of that tag of another type
    /// is passed over.
    pub(super) fn number_of(&self, ifd: usize, tag: u16) -> Option<u32> {
        self.entries(ifd)?
            .filter(|entry| entry.tag == tag)
            .find_map(|entry| entry.number(self))
    }

    /// Whether `range` lies within the bytes.
    #[cfg_attr(not(feature = "raw"), allow(dead_code))]
    pub(super) fn holds(&self, range: &Range<usize>) -> bool {
        range.end <= self.bytes.len()
    }

    /// Whether the directory at `ifd` lies whole within the bytes: its
    /// count, every entry, and the next directory's offset.
    #[cfg_attr(not(feature = "raw"), allow(dead_code))]
    pub(super) fn holds_directory(&self, ifd: usize) -> bool {
        self.u16_at(ifd).is_some_and(|count| {
            ifd.checked_add(2 + usize::from(count) * 12 + 4)
                .is_some_and(|end| end <= self.bytes.len())
        })
    }

    /// The directory after the one at `ifd`, if its offset is not 0.
    pub(super) fn next_ifd(&self, ifd: usize) -> Option<usize> {
        let count = usize::from(self.u16_at(ifd)?);
        let next = self.u32_at(ifd.checked_add(2 + count * 12)?)?;
        (next != 0).then_some(next as usize)
    }

    /// The first `tag` entry of the directory at `ifd`.
    #[cfg(test)]
    pub(super) fn find(&self, ifd: usize, tag: u16) -> Option<Entry> {
        self.entries(ifd)?.find(|entry| entry.tag == tag)
    }
}

impl Entry {
    /// How many values it holds.
    #[cfg_attr(not(feature = "raw"), allow(dead_code))]
    pub(super) fn count(&self) -> u32 {
        self.count
    }

    /// Its first value, if it is a SHORT or a LONG.
    pub(super) fn number(&self, tiff: &Tiff<'_>) -> Option<u32> {
        self.numbers(tiff, 1).next()
    }

    /// Its first `most` values, if it is SHORTs or LONGs: inline when they
    /// fit in four bytes, else where its value offset points.
    pub(super) fn numbers<'t>(
        &self,
        tiff: &'t Tiff<'_>,
        most: usize,
    ) -> impl Iterator<Item = u32> + 't {
        let size = match self.kind {
            SHORT => 2,
            LONG => 4,
            _ => 0,
        };
        let count = (self.count as usize).min(most);
        let start = if (self.count as usize).saturating_mul(size) <= 4 {
            Some(self.at.saturating_add(8))
        } else {
            tiff.u32_at(self.at.saturating_add(8)).map(|at| at as usize)
        };
        let kind = self.kind;
        (0..if size == 0 { 0 } else { count }).map_while(move |n| {
            let at = start?.checked_add(n * size)?;
            match kind {
                SHORT => tiff.u16_at(at).map(u32::from),
                _ => tiff.u32_at(at),
            }
        })
    }

    /// Where its value's bytes lie (inline or pointed at), for any type,
    /// if they lie within the bytes.
    #[cfg(test)]
    pub(super) fn data(&self, tiff: &Tiff<'_>) -> Option<Range<usize>> {
        self.span(tiff)
            .filter(|range| tiff.bytes.get(range.clone()).is_some())
    }

    /// Where its value's bytes lie (inline or pointed at), for any type,
    /// within the bytes or past them (a file read in part).
    #[cfg_attr(not(feature = "raw"), allow(dead_code))]
    pub(super) fn span(&self, tiff: &Tiff<'_>) -> Option<Range<usize>> {
        let unit = match self.kind {
            1 | 2 | 6 | 7 => 1, // BYTE, ASCII, SBYTE, UNDEFINED
            3 | 8 => 2,         // SHORT, SSHORT
            4 | 9 | 11 | 13 => 4,
            5 | 10 | 12 => 8,
            _ => return None,
        };
        let length = (self.count as usize).checked_mul(unit)?;
        let start = if length <= 4 {
            self.at.checked_add(8)?
        } else {
            tiff.u32_at(self.at.saturating_add(8))? as usize
        };
        Some(start..start.checked_add(length)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian TIFF whose one directory holds `entries` (tag,
    /// type, count, value).
    fn tiff(entries: &[(u16, u16, u32, u32)]) -> Vec<u8> {
        let mut bytes = b"II*\0\x08\0\0\0".to_vec();
        bytes.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        for &(tag, kind, count, value) in entries {
            bytes.extend_from_slice(&tag.to_le_bytes());
            bytes.extend_from_slice(&kind.to_le_bytes());
            bytes.extend_from_slice(&count.to_le_bytes());
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes
    }

    #[test]
    fn numbers_are_read_inline_or_where_they_point_and_never_past_the_end() {
        let mut bytes = tiff(&[
            (0x0112, SHORT, 1, 6),
            (0x014A, LONG, 3, 50),
            (0x0201, LONG, 1, 7),
        ]);
        for value in [100u32, 200, 300] {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        let tiff = Tiff::new(&bytes).unwrap();
        let ifd = tiff.first_ifd().unwrap();
        assert_eq!(tiff.find(ifd, 0x0112).unwrap().number(&tiff), Some(6));
        let sub: Vec<u32> = tiff.find(ifd, 0x014A).unwrap().numbers(&tiff, 8).collect();
        assert_eq!(sub, [100, 200, 300]);
        assert_eq!(tiff.next_ifd(ifd), None);
        // Cut short: what lies past the end reads as nothing.
        let cut = Tiff::new(&bytes[..57]).unwrap();
        let sub: Vec<u32> = cut.find(ifd, 0x014A).unwrap().numbers(&cut, 8).collect();
        assert_eq!(sub, [100]);
    }

    #[test]
    fn a_tags_number_passes_over_an_entry_of_it_of_another_type() {
        const ASCII: u16 = 2;
        let bytes = tiff(&[(0x0201, ASCII, 4, 0x0041_4141), (0x0201, LONG, 1, 1234)]);
        let tiff = Tiff::new(&bytes).unwrap();
        assert_eq!(tiff.number_of(8, 0x0201), Some(1234));
        assert_eq!(tiff.number_of(8, 0x0202), None);
        // The whole directory lies within the bytes; cut by a byte, not.
        assert!(tiff.holds_directory(8));
        assert!(
            !Tiff::new(&bytes[..bytes.len() - 1])
                .unwrap()
                .holds_directory(8)
        );
    }

    #[test]
    fn hostile_counts_and_offsets_are_bounded() {
        // 65,535 entries claimed, few there; offsets at the end of u32.
        let mut bytes = tiff(&[(0x014A, LONG, u32::MAX, u32::MAX), (0x002E, 7, u32::MAX, 8)]);
        bytes[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
        let tiff = Tiff::new(&bytes).unwrap();
        let entries: Vec<Entry> = tiff.entries(8).unwrap().collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].numbers(&tiff, 16).count(), 0);
        assert_eq!(entries[1].data(&tiff), None);
        assert!(Tiff::new(b"XX*\0").is_none());
    }
}
