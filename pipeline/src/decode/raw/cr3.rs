//! Canon's CR3: ISO base media file format boxes, like a video. The
//! previews Canon writes before the sensor data are read: `PRVW` (about
//! 1620x1080, in its own `uuid` box) and `THMB` (160x120, in the `moov`
//! box's Canon `uuid`), with the orientation from `CMT1` (a TIFF
//! directory, as in a CR2's first). The full-size JPEG of the first track
//! and the sensor data in `mdat` are never read.
//!
//! At most [`MAX_BOXES`] boxes are looked at on each level, three levels
//! deep; a box that claims more than its parent holds ends at its parent's
//! end. Runs on a decode thread, or a fetch's watch; keeps nothing.

use std::ops::Range;

use super::Previews;

/// Most boxes looked at on one level.
const MAX_BOXES: usize = 64;

/// The `uuid` of the box in `moov` that holds Canon's metadata and `THMB`.
pub(super) const CANON_UUID: [u8; 16] = [
    0x85, 0xC0, 0xB6, 0x87, 0x82, 0x0F, 0x11, 0xE0, 0x81, 0x11, 0xF4, 0xCE, 0x46, 0x2B, 0x6A, 0x48,
];

/// The `uuid` of the top-level box that holds `PRVW`.
pub(super) const PREVIEW_UUID: [u8; 16] = [
    0xEA, 0xF4, 0x2B, 0x5E, 0x1C, 0x98, 0x4B, 0x88, 0xB9, 0xFB, 0xB7, 0xDC, 0x40, 0x6E, 0x4D, 0x16,
];

/// Whether `bytes` start a CR3: a file type box of major brand `crx `.
pub(super) fn is_cr3(bytes: &[u8]) -> bool {
    bytes.get(4..12) == Some(b"ftypcrx ")
}

/// The previews and orientation of the CR3 `bytes` (whole, or their
/// start).
pub(super) fn read(bytes: &[u8]) -> Previews {
    // Complete only once the sensor data is reached: any box before it
    // may hold a preview.
    let mut previews = Previews::default();
    let mut looked_at = 0;
    for top in boxes(bytes, 0..usize::MAX) {
        looked_at += 1;
        // No box past the last looked at is read: once it is all there,
        // nothing more is to come.
        if looked_at == MAX_BOXES && top.body.end <= bytes.len() {
            previews.complete = true;
        }
        match &top.kind {
            b"moov" => {
                for inner in boxes(bytes, top.body.clone()) {
                    if &inner.kind == b"uuid" && uuid(bytes, &inner) == Some(CANON_UUID) {
                        canon_metadata(bytes, inner.body.start + 16..inner.body.end, &mut previews);
                    }
                }
            }
            b"uuid" if uuid(bytes, &top) == Some(PREVIEW_UUID) => {
                // The uuid, then 8 bytes, then the `PRVW` box.
                let children = top.body.start.saturating_add(24)..top.body.end;
                for inner in boxes(bytes, children) {
                    if &inner.kind == b"PRVW" {
                        previews.jpegs.extend(jpeg_in(bytes, &inner));
                    }
                }
            }
            // The sensor data: nothing before it is missing any more.
            b"mdat" => {
                previews.complete = true;
                break;
            }
            _ => {}
        }
    }
    previews
}

/// The boxes in Canon's metadata `uuid`: `CMT1`'s orientation, `THMB`.
fn canon_metadata(bytes: &[u8], within: Range<usize>, previews: &mut Previews) {
    for inner in boxes(bytes, within) {
        match &inner.kind {
            b"CMT1" => {
                let body = bytes.get(inner.body.clone()).unwrap_or_default();
                // The first that says one counts.
                previews.orientation = previews
                    .orientation
                    .or_else(|| super::tiff::read(body).and_then(|read| read.previews.orientation));
            }
            b"THMB" => previews.jpegs.extend(jpeg_in(bytes, &inner)),
            _ => {}
        }
    }
}

/// A box: its type, and where its body lies (which may go past the bytes
/// read, or, for a last box of unsaid size, to `usize::MAX`).
struct Boxed {
    kind: [u8; 4],
    body: Range<usize>,
}

/// The boxes one after another in `within` (to `usize::MAX` for the
/// file's top level), at most [`MAX_BOXES`], up to the first whose header
/// is not in the bytes. A box that claims more than `within` ends with it.
fn boxes(bytes: &[u8], within: Range<usize>) -> impl Iterator<Item = Boxed> + '_ {
    let mut at = within.start;
    std::iter::from_fn(move || {
        if at >= within.end {
            return None;
        }
        let header = bytes.get(at..at.checked_add(8)?)?;
        let size = u32::from_be_bytes(header[..4].try_into().ok()?);
        let kind: [u8; 4] = header[4..8].try_into().ok()?;
        let (body_start, end) = match size {
            // To the end of the parent.
            0 => (at + 8, within.end),
            1 => {
                let large = bytes.get(at + 8..at.checked_add(16)?)?;
                let large = u64::from_be_bytes(large.try_into().ok()?);
                let large = usize::try_from(large).unwrap_or(usize::MAX).max(16);
                (at + 16, at.saturating_add(large))
            }
            size => (at + 8, at.saturating_add((size as usize).max(8))),
        };
        let end = end.min(within.end);
        at = end;
        Some(Boxed {
            kind,
            body: body_start.min(end)..end,
        })
    })
    .take(MAX_BOXES)
}

/// A `uuid` box's uuid.
fn uuid(bytes: &[u8], boxed: &Boxed) -> Option<[u8; 16]> {
    let start = boxed.body.start;
    bytes.get(start..start.checked_add(16)?)?.try_into().ok()
}

/// The JPEG a `THMB` or `PRVW` box holds after its few header fields: from
/// its start marker, within its first 32 bytes, to the box's end.
fn jpeg_in(bytes: &[u8], boxed: &Boxed) -> Option<Range<usize>> {
    let start = boxed.body.start;
    let head = bytes.get(
        start
            ..boxed
                .body
                .end
                .min(start.saturating_add(32))
                .min(bytes.len()),
    )?;
    let at = head.windows(3).position(|w| w == [0xFF, 0xD8, 0xFF])?;
    Some(start + at..boxed.body.end)
}
