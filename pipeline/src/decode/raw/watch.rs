//! A fetch's watch over a camera RAW: the body is read until the preview
//! its decode will choose is all there, and no further (the sensor data
//! after it is most of the file). Every preview's size is read from its
//! first bytes, so the choice is the one the decode makes of the whole
//! file; a preview not sized yet, or a structure not read yet, reads on.
//!
//! Made by the fetch stage's stop rule (`decode/watch.rs`) for each body,
//! run on the task that reads it; ends with the read.

use super::{Checked, MAX_PREVIEWS, Unsized, choose, is_raw, previews, sized, tiff};
use crate::decode::format::is_tiff;
use crate::fetch::stop::Enough;
use crate::request::TargetSize;

/// How far a RAW is read while waiting for its preview: past this, it is
/// read whole (its decode then looks at every preview the file has).
const MAX_WATCHED_BYTES: usize = 32 * 1024 * 1024;

/// The watch over one RAW body, for the thumbnail of `target`.
#[derive(Clone, Debug)]
pub(in crate::decode) struct RawWatch {
    target: TargetSize,
    /// Bytes read before the next look: the body is looked at again only
    /// once it has grown by a quarter, so however it arrives, a few dozen
    /// looks cover the most it is watched for.
    look_at: usize,
}

impl RawWatch {
    pub(in crate::decode) fn new(target: TargetSize) -> Self {
        Self {
            target,
            look_at: 0,
        }
    }

    /// Whether the bytes read so far, `read`, hold the preview the decode
    /// will choose.
    pub(in crate::decode) fn check(&mut self, read: &[u8]) -> Enough {
        if read.len() > MAX_WATCHED_BYTES {
            return Enough::Never;
        }
        if read.len() < self.look_at {
            return Enough::NotYet;
        }
        let enough = self.look(read);
        self.look_at = read.len() + (read.len() / 4).max(16 * 1024);
        enough
    }

    fn look(&self, read: &[u8]) -> Enough {
        if !is_raw(read) {
            // A TIFF whose directories are not all read yet may still
            // prove a RAW (its sensor data in a later sub-IFD).
            let partial_tiff = is_tiff(read)
                && tiff::read(read).is_some_and(|tiff| !tiff.previews.complete);
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
        match choose(all, found.orientation, self.target) {
            Some((preview, _)) if preview.bytes.end <= read.len() => Enough::Yes,
            Some(_) => Enough::NotYet,
            None => Enough::Never,
        }
    }
}
