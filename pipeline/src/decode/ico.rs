//! ICO's own step: an icon file holds the same picture at several sizes
//! (16, 32, 48, 256 px...), each drawn for its size. `image` decodes the
//! largest; a thumbnail wants the smallest that still covers it, which is
//! sharper at small sizes (drawn, not scaled) and cheaper to decode. This
//! picks that entry and hands `image` a one-entry ICO of it.
//!
//! Its row of the format table (`FORMAT`) names the step as its
//! `prepare`. Runs inside a decode, on the decode thread that called it,
//! before the header is read; keeps nothing.

use image::ImageFormat;

use super::fitting::Fitting;
use super::formats::{Decoder, Format, Prepared, Raster, Signature};
use crate::request::{Fit, TargetSize};

/// ICO's row of the format table.
pub(super) const FORMAT: Format = Format {
    name: "ICO",
    // What IANA registered; browsers and most servers still send the
    // older `image/x-icon`, which `Accept` names too.
    media_types: &["image/vnd.microsoft.icon", "image/x-icon"],
    signature: Signature::Told(is_ico),
    decoder: Decoder::Image(Raster {
        prepare: |bytes, target| {
            best_entry(bytes, target).map(|best| Prepared {
                bytes: best.icon,
                source_size: Some(best.largest),
            })
        },
        ..Raster::of(ImageFormat::Ico)
    }),
};

/// Whether `bytes` start as an icon directory does (reserved 0, type 1),
/// and not as an ISO-BMFF file (AVIF, HEIC) whose first box is 256 bytes
/// long, which starts with the same four bytes and then `ftyp`.
fn is_ico(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\0\0\x01\0") && bytes.get(4..8) != Some(b"ftyp")
}

/// The directory's header: reserved (0), type (1 for an icon, 2 for a
/// cursor), and the number of entries.
const HEADER: usize = 6;
/// One directory entry: width, height (0 for 256), colour count,
/// reserved, planes or hotspot x, bits per pixel or hotspot y, the size of
/// the entry's data and its offset in the file.
const ENTRY: usize = 16;

/// One entry of the directory, as it declares itself.
#[derive(Clone, Copy, Debug)]
struct Entry {
    width: u32,
    height: u32,
    bits: u16,
    /// Where its directory entry starts in the file.
    entry_at: usize,
    /// Where its data starts in the file, and how long it is.
    offset: usize,
    len: usize,
}

impl Entry {
    fn pixels(self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }
}

/// The entry of an icon chosen for a thumbnail.
pub(super) struct BestEntry {
    /// A one-entry ICO of it.
    pub(super) icon: Vec<u8>,
    /// The width and height of the icon's largest entry: the icon's own
    /// size, as egui's loaders report it.
    pub(super) largest: (u32, u32),
}

/// The entry of `bytes` that best fits `target`: the smallest that covers
/// the thumbnail the largest entry would give, of the most bits per pixel
/// among those of its size. `None` when `bytes` has one entry (nothing to
/// choose), for an icon at its own size (its largest entry, which `image`
/// takes) or a directory that does not add up; then the file goes to
/// `image` as it is, which judges it.
pub(super) fn best_entry(bytes: &[u8], target: TargetSize) -> Option<BestEntry> {
    if matches!(target.fit, Fit::Original { .. }) {
        return None;
    }
    let entries = directory(bytes)?;
    if entries.len() < 2 {
        return None;
    }
    let largest = entries
        .iter()
        .copied()
        .max_by_key(|e| (e.pixels(), e.bits))?;
    let (need_width, need_height) = Fitting::new(largest.width, largest.height, target)
        .scaled_whole(largest.width, largest.height);
    let best = entries
        .iter()
        .copied()
        .filter(|e| e.width >= need_width && e.height >= need_height)
        .min_by_key(|e| (e.pixels(), std::cmp::Reverse(e.bits)))?;
    let data = bytes.get(best.offset..best.offset.checked_add(best.len)?)?;
    let mut one = Vec::with_capacity(HEADER + ENTRY + data.len());
    one.extend_from_slice(&bytes[..4]);
    one.extend_from_slice(&1u16.to_le_bytes());
    one.extend_from_slice(&bytes[best.entry_at..best.entry_at + 12]);
    one.extend_from_slice(&((HEADER + ENTRY) as u32).to_le_bytes());
    one.extend_from_slice(data);
    Some(BestEntry {
        icon: one,
        largest: (largest.width, largest.height),
    })
}

/// The entries of an ICO or CUR directory, or `None` if it is not one or
/// an entry points outside the file.
fn directory(bytes: &[u8]) -> Option<Vec<Entry>> {
    let u16_at = |at: usize| -> Option<u16> {
        Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
    };
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    if u16_at(0)? != 0 || !matches!(u16_at(2)?, 1 | 2) {
        return None;
    }
    let count = usize::from(u16_at(4)?);
    let side = |byte: u8| if byte == 0 { 256 } else { u32::from(byte) };
    (0..count)
        .map(|i| {
            let at = HEADER + i * ENTRY;
            let entry = Entry {
                width: side(*bytes.get(at)?),
                height: side(*bytes.get(at + 1)?),
                bits: u16_at(at + 6)?,
                entry_at: at,
                len: usize::try_from(u32_at(at + 8)?).ok()?,
                offset: usize::try_from(u32_at(at + 12)?).ok()?,
            };
            (entry.offset.checked_add(entry.len)? <= bytes.len()).then_some(entry)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn icon(sides: &[u32]) -> Vec<u8> {
        fixture_server::photo::icon(7, sides).unwrap()
    }

    fn side_of(one: &[u8]) -> u32 {
        let image = image::load_from_memory_with_format(one, image::ImageFormat::Ico).unwrap();
        assert_eq!(image.width(), image.height());
        image.width()
    }

    #[test]
    fn the_smallest_entry_that_covers_the_target_is_chosen() {
        let file = icon(&[16, 256, 32, 48]);
        let chosen = |side| side_of(&best_entry(&file, TargetSize::square(side)).unwrap().icon);
        assert_eq!(chosen(16), 16);
        assert_eq!(chosen(20), 32);
        assert_eq!(chosen(32), 32);
        assert_eq!(chosen(40), 48);
        assert_eq!(chosen(64), 256);
        // Larger than every entry: the largest, never scaled up.
        assert_eq!(chosen(512), 256);
        // A box wider than tall: the 48 covers 48x48 (the fit of 256 in 64x48).
        assert_eq!(
            side_of(&best_entry(&file, TargetSize::new(64, 48)).unwrap().icon),
            48
        );
        // The icon's own size is its largest entry's, whichever is chosen.
        assert_eq!(
            best_entry(&file, TargetSize::square(16)).unwrap().largest,
            (256, 256)
        );
        // At its own size, even scaled down: the largest, as image takes it.
        assert!(best_entry(&file, TargetSize::original(50, 4096)).is_none());
    }

    #[test]
    fn an_icons_thumbnail_reports_its_largest_entry_and_its_own_size_scales_it() {
        let file = icon(&[16, 256, 32, 48]);
        let decode = |target| {
            crate::decode::route::decode_thumbnail(
                &std::sync::Arc::from("http://x/favicon.ico"),
                &file,
                target,
                crate::decode::route::tests::LIMITS,
            )
            .unwrap()
        };
        let small = decode(TargetSize::square(16));
        assert_eq!((small.width, small.source_size), (16, (256, 256)));
        let half = decode(TargetSize::original(50, 4096));
        assert_eq!((half.width, half.source_size), (128, (256, 256)));
    }

    #[test]
    fn a_directory_that_does_not_add_up_is_left_to_image() {
        let mut file = icon(&[16, 32]);
        assert!(best_entry(&icon(&[16]), TargetSize::square(8)).is_none());
        // The second entry's offset past the end of the file.
        file[HEADER + ENTRY + 12..HEADER + ENTRY + 16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(best_entry(&file, TargetSize::square(8)).is_none());
        assert!(best_entry(&file[..3], TargetSize::square(8)).is_none());
        assert!(best_entry(b"BM not an icon", TargetSize::square(8)).is_none());
    }
}
