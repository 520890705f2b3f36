//! A fetch's watch over a camera RAW: the body is read until the preview
//! its decode will choose is all there, and no further (the sensor data
//! after it is most of the file). Every preview's size is read from its
//! first bytes, so the choice is the one the decode makes of the whole
//! file; a preview not sized yet, or a structure not read yet, reads on.
//!
//! Made by the fetch stage's stop rule (`decode/watch.rs`) for each body,
//! run on the task that reads it; ends with the read.

use super::{Checked, MAX_PREVIEWS, Unsized, choose, is_raw, largest_rgb, previews, sized, tiff};
use crate::decode::formats::is_tiff;
use crate::fetch::stop::{Enough, Looks};
use crate::request::TargetSize;

/// How far a RAW is read while waiting for its preview: past this, it is
/// read whole (its decode then looks at every preview the file has).
const MAX_WATCHED_BYTES: usize = 32 * 1024 * 1024;

/// The watch over one RAW body, for the thumbnail of `target`.
#[derive(Clone, Debug)]
pub(in crate::decode) struct RawWatch {
    target: TargetSize,
    looks: Looks,
}

impl RawWatch {
    pub(in crate::decode) fn new(target: TargetSize) -> Self {
        Self {
            target,
            looks: Looks::new(MAX_WATCHED_BYTES, 16 * 1024),
        }
    }

    /// Whether the bytes read so far, `read`, hold the preview the decode
    /// will choose.
    pub(in crate::decode) fn check(&mut self, read: &[u8]) -> Enough {
        let target = self.target;
        self.looks.check(read, |read| look(read, target))
    }
}

/// Whether `read` holds the preview the decode will choose for `target`.
fn look(read: &[u8], target: TargetSize) -> Enough {
    if !is_raw(read) {
        // A TIFF whose directories are not all read yet may still
        // prove a RAW (its sensor data in a later sub-IFD).
        let partial_tiff =
            is_tiff(read) && tiff::read(read).is_some_and(|tiff| !tiff.previews.complete);
        return if partial_tiff {
            Enough::NotYet
        } else {
            Enough::Never
        };
    }
    let found = previews(read);
    if !found.complete {
        return Enough::NotYet;
    }
    // Every preview's size, from as much of it as was read: those the
    // decode looks at.
    let mut all: Vec<Checked> = Vec::new();
    for range in found.jpegs.iter().take(MAX_PREVIEWS) {
        match sized(read, range, false) {
            Ok(preview) => all.push(preview),
            Err(Unsized::Short) => return Enough::NotYet,
            Err(Unsized::Refused) => {}
        }
    }
    all.sort_by_key(|preview| u64::from(preview.width) * u64::from(preview.height));
    match choose(all, found.orientation, target) {
        Some((preview, _)) if preview.bytes.end <= read.len() => Enough::Yes,
        Some(_) => Enough::NotYet,
        // No JPEG: the largest RGB preview, as the decode takes it.
        None => match largest_rgb(&found, usize::MAX) {
            Some(rgb) if rgb.bytes.end <= read.len() => Enough::Yes,
            Some(_) => Enough::NotYet,
            None => Enough::Never,
        },
    }
}
