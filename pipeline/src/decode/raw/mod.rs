//! Camera RAW files, shown from the JPEG previews the camera wrote into
//! them: the file's structure is read to find each preview (`tiff.rs`:
//! CR2, NEF, ARW, DNG, PEF, SRW, ORF, RW2 and the like; `cr3.rs`; `raf.rs`),
//! the smallest that makes the thumbnail as the largest would is decoded
//! by the JPEG route (DCT-scaled), and turned as the RAW says its picture
//! is turned. A file with no JPEG preview is shown from an uncompressed
//! RGB one if it has one (`rgb.rs`: a DNG's thumbnail). The sensor data is
//! never decoded: a RAW with neither is an error that says so.
//!
//! Every preview found is checked before it is chosen: it must lie within
//! the file, start a JPEG whose one frame header is baseline or
//! progressive (Canon's sensor data is a lossless JPEG), and be walked to
//! that header within the JPEG's probe; its decode then runs under the
//! same limits as any JPEG's.
//!
//! Runs on a decode thread; keeps nothing. A fetch's watch reads a RAW no
//! further than its chosen preview (`watch.rs`).

mod cr3;
mod raf;
mod rgb;
mod tiff;
pub(super) mod watch;

use std::ops::Range;
use std::sync::Arc;

use image::metadata::Orientation;

use super::formats::{Decoder, Format, Signature, is_tiff};
use super::header::Photo;
use super::jpeg::{self, JpegWalk};
use super::{DecodeLimits, fitting, route};
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// Camera RAW's row of the format table: told by each container's own
/// magic, or, for RAWs that are plain TIFFs (NEF, ARW, DNG, PEF), by a
/// DNG version or sensor data in their directories; before TIFF's row.
pub(super) const FORMAT: Format = Format {
    name: "RAW",
    // shared-mime-info's parent type of every camera RAW type.
    media_types: &["image/x-dcraw"],
    signature: Signature::Told(is_raw),
    decoder: Decoder::Own(decode),
};

/// Most previews a file may offer that are looked at.
const MAX_PREVIEWS: usize = 16;

/// The JPEG previews a RAW's structure points at, and how the RAW says its
/// picture is turned.
#[derive(Debug, Default)]
pub(super) struct Previews {
    /// Where each lies in the file (perhaps past the bytes read so far).
    pub(super) jpegs: Vec<Range<usize>>,
    /// Uncompressed 8-bit RGB previews of at most [`MAX_RGB_SIDE`] a side,
    /// from any directory (a DNG's thumbnail is in its first): shown only
    /// where the file has no JPEG preview.
    pub(super) rgb: Vec<RgbPreview>,
    pub(super) orientation: Option<Orientation>,
    /// Every structure that may point at a preview was within the bytes.
    pub(super) complete: bool,
}

/// Whether `bytes` (a file's start, or all of it) are a camera RAW's.
fn is_raw(bytes: &[u8]) -> bool {
    bytes.starts_with(raf::MAGIC)
        || cr3::is_cr3(bytes)
        || matches!(bytes.get(..4), Some(b"IIRO" | b"IIRS" | b"MMOR" | b"IIU\0"))
        || (bytes.starts_with(b"II*\0") && bytes.get(8..11) == Some(b"CR\x02"))
        || (is_tiff(bytes) && tiff::is_raw(bytes))
}

/// The previews of the RAW `bytes` (whole, or their start).
fn previews(bytes: &[u8]) -> Previews {
    if bytes.starts_with(raf::MAGIC) {
        raf::read(bytes)
    } else if cr3::is_cr3(bytes) {
        cr3::read(bytes)
    } else {
        tiff::read(bytes)
            .map(|read| read.previews)
            .unwrap_or_default()
    }
}

/// An uncompressed 8-bit RGB preview: where its samples lie (rows of
/// `width` pixels, three bytes each, one strip), and its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RgbPreview {
    pub(super) bytes: Range<usize>,
    pub(super) width: u32,
    pub(super) height: u32,
}

/// The largest side of an RGB preview shown: a DNG's is 256 px at most.
const MAX_RGB_SIDE: u32 = 1024;

/// A preview that was checked: where it lies, its size, and the walk over
/// its markers to its frame header.
struct Checked {
    bytes: Range<usize>,
    width: u32,
    height: u32,
    walk: JpegWalk,
}

/// The previews of `found` that lie within `bytes` and are JPEGs a
/// thumbnail can be made from, smallest first.
fn checked(bytes: &[u8], found: &Previews) -> Vec<Checked> {
    let mut checked: Vec<Checked> = found
        .jpegs
        .iter()
        .take(MAX_PREVIEWS)
        .filter_map(|range| sized(bytes, range, true).ok())
        .collect();
    checked.sort_by_key(|preview| u64::from(preview.width) * u64::from(preview.height));
    checked.dedup_by_key(|preview| preview.bytes.clone());
    checked
}

/// Why [`sized`] gave no preview.
#[derive(Debug, PartialEq, Eq)]
enum Unsized {
    /// It is no JPEG the route decodes, or lies outside the file.
    Refused,
    /// Its frame header lies past the bytes read so far.
    Short,
}

/// The preview at `range` of `bytes`, with its size, if it starts a JPEG
/// whose one frame header is baseline or progressive (what the JPEG route
/// decodes; Canon's sensor data is a lossless JPEG): read from what of it
/// is in `bytes`, or, when it must be `whole`, only if all of it is.
fn sized(bytes: &[u8], range: &Range<usize>, whole: bool) -> Result<Checked, Unsized> {
    let end = if whole {
        range.end
    } else {
        range.end.min(bytes.len())
    };
    // Not begun yet in the bytes read so far.
    if !whole && range.start >= bytes.len() {
        return Err(Unsized::Short);
    }
    let jpeg = bytes.get(range.start..end).ok_or(Unsized::Refused)?;
    let mut walk = JpegWalk::default();
    let Some((width, height)) = walk.frame_size(jpeg) else {
        let started = jpeg.len() < 2 || jpeg.starts_with(&[0xFF, 0xD8]);
        let short = end < range.end && started && walk.layout().frames == 0;
        return Err(if short {
            Unsized::Short
        } else {
            Unsized::Refused
        });
    };
    let frame = walk
        .segments()
        .and_then(|segments| {
            segments
                .iter()
                .find(|(marker, _)| jpeg::is_frame_marker(*marker))
        })
        .map(|(marker, _)| *marker);
    match frame {
        Some(0xC0..=0xC2) => Ok(Checked {
            bytes: range.clone(),
            width,
            height,
            walk,
        }),
        _ => Err(Unsized::Refused),
    }
}

/// The preview to decode for `target`: the smallest that makes the
/// thumbnail the size the largest would (the same picture, never scaled
/// up), else the largest.
fn choose(
    checked: Vec<Checked>,
    orientation: Option<Orientation>,
    target: TargetSize,
) -> Option<(Checked, (u32, u32))> {
    let largest = checked.last()?;
    let size = (largest.width, largest.height);
    let turned = orientation.is_some_and(fitting::quarter_turn);
    let target = if turned {
        fitting::swapped(target)
    } else {
        target
    };
    let at = checked
        .iter()
        .position(|preview| {
            let at = jpeg::ThumbnailAt {
                bytes: preview.bytes.clone(),
                width: preview.width,
                height: preview.height,
            };
            jpeg::embedded_covers(size, &at, target)
        })
        .unwrap_or(checked.len() - 1);
    checked.into_iter().nth(at).map(|preview| (preview, size))
}

/// The largest of `found`'s RGB previews (of the first [`MAX_PREVIEWS`])
/// that lies within the first `read` bytes: the decode's choice, and, for
/// the whole file, what the fetch's watch waits for.
fn largest_rgb(found: &Previews, read: usize) -> Option<&RgbPreview> {
    found
        .rgb
        .iter()
        .take(MAX_PREVIEWS)
        .filter(|preview| preview.bytes.end <= read)
        .max_by_key(|preview| u64::from(preview.width) * u64::from(preview.height))
}

/// The thumbnail of `target` of the RAW `bytes`, from its preview.
fn decode(
    url: &Arc<str>,
    bytes: &[u8],
    target: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    let found = previews(bytes);
    let Some((preview, size)) = choose(checked(bytes, &found), found.orientation, target) else {
        if let Some(rgb) = largest_rgb(&found, bytes.len()) {
            return rgb::decode(url, bytes, rgb, found.orientation, target, limits);
        }
        return Err(Error::Decode {
            url: url.to_string(),
            reason: format!(
                "the camera RAW has no preview thumbpipe reads ({} JPEG found, none a baseline or \
                 progressive JPEG within the file, and no 8-bit RGB one); its sensor data is not \
                 decoded",
                found.jpegs.len()
            ),
        });
    };
    // The RAW's own turn; a RAF says it in its JPEG's EXIF.
    let orientation = found
        .orientation
        .or(preview.walk.layout().orientation)
        .unwrap_or(Orientation::NoTransforms);
    let upright_size = if fitting::quarter_turn(orientation) {
        (size.1, size.0)
    } else {
        size
    };
    let photo = Photo {
        orientation,
        size: upright_size,
    };
    let jpeg = bytes.get(preview.bytes.clone()).unwrap_or_default();
    route::decode_preview(url, jpeg, target, limits, &photo, preview.walk)
}

#[cfg(test)]
mod tests;
