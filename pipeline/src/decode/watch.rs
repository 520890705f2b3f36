//! The fetch's stop rule: what a body is read for, told by its first
//! bytes. A JPEG is read as far as its embedded thumbnail or its DC scans
//! (`jpeg/prefix.rs`), a camera RAW as far as its chosen preview
//! (`raw/watch.rs`); any other body is read whole.
//!
//! One watch is made for each body read and run by the fetch that reads
//! it, chunk by chunk; it ends with the read, and what the JPEG's watch
//! found rides on the body.

use super::DecodeLimits;
use super::jpeg::{self, PrefixWatch};
#[cfg(feature = "raw")]
use super::raw::watch::RawWatch;
use crate::body::Found;
use crate::fetch::stop::{BodyWatch, Enough, StopRule};
use crate::request::TargetSize;

/// Whether any body is read only as far as its thumbnail needs under
/// `limits`: a JPEG's routes are on, or camera RAWs are read.
pub(crate) fn watches_bodies(limits: &DecodeLimits) -> bool {
    limits.embedded_thumbnails || limits.progressive_dc || cfg!(feature = "raw")
}

/// The stop rule for a thumbnail of `target` under `limits`, or `None`
/// when no body is read only in part.
pub(crate) fn stop_rule(target: TargetSize, limits: DecodeLimits) -> Option<StopRule> {
    if !watches_bodies(&limits) {
        return None;
    }
    let fresh = ByFormat {
        jpeg: jpeg::watch(target, &limits),
        #[cfg(feature = "raw")]
        raw: RawWatch::new(target),
    };
    Some(StopRule::finding(move || fresh.clone()))
}

/// One body's watch: the JPEG's or the RAW's, once the first bytes tell.
#[derive(Clone, Debug)]
struct ByFormat {
    /// `None` when no JPEG route reads a part.
    jpeg: Option<PrefixWatch>,
    #[cfg(feature = "raw")]
    raw: RawWatch,
}

impl BodyWatch for ByFormat {
    fn check(&mut self, read: &[u8]) -> Enough {
        match read.first() {
            None => Enough::NotYet,
            Some(0xFF) => self
                .jpeg
                .as_mut()
                .map_or(Enough::Never, |watch| watch.check(read)),
            #[cfg(feature = "raw")]
            Some(_) if read.len() < 16 => Enough::NotYet,
            #[cfg(feature = "raw")]
            Some(_) => self.raw.check(read),
            #[cfg(not(feature = "raw"))]
            Some(_) => Enough::Never,
        }
    }

    fn found(&mut self) -> Option<Found> {
        self.jpeg.as_mut().and_then(BodyWatch::found)
    }
}
