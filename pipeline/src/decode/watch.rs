//! The fetch's stop rule: what a body is read for, told by its first
//! bytes. A JPEG is read as far as its embedded thumbnail or its DC scans
//! (`jpeg/prefix.rs`), a camera RAW as far as its chosen preview
//! (`raw/watch.rs`), a JPEG XL as far as its LF (`jxl/watch.rs`); any
//! other body is read whole.
//!
//! One watch is made for each body read and run by the fetch that reads
//! it, chunk by chunk; it ends with the read, and what the JPEG's watch
//! found rides on the body.

use super::DecodeLimits;
use super::jpeg::{self, PrefixWatch};
#[cfg(feature = "jxl")]
use super::jxl::{self, watch::JxlWatch};
#[cfg(feature = "raw")]
use super::raw::watch::RawWatch;
use crate::body::Found;
use crate::fetch::stop::{BodyWatch, Enough, StopRule};
use crate::request::TargetSize;

/// Whether any body is read only as far as its thumbnail needs under
/// `limits`: a JPEG's routes are on, or camera RAWs or JPEG XLs are read.
pub(crate) fn watches_bodies(limits: &DecodeLimits) -> bool {
    limits.embedded_thumbnails
        || limits.progressive_dc
        || cfg!(feature = "raw")
        || cfg!(feature = "jxl")
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
        #[cfg(feature = "jxl")]
        jxl: JxlWatch::new(target, limits),
    };
    Some(StopRule::finding(move || fresh.clone()))
}

/// One body's watch: the JPEG's, the RAW's or the JPEG XL's, once the
/// first bytes tell.
#[derive(Clone, Debug)]
struct ByFormat {
    /// `None` when no JPEG route reads a part.
    jpeg: Option<PrefixWatch>,
    #[cfg(feature = "raw")]
    raw: RawWatch,
    #[cfg(feature = "jxl")]
    jxl: JxlWatch,
}

impl BodyWatch for ByFormat {
    fn check(&mut self, read: &[u8]) -> Enough {
        match read.first() {
            None => Enough::NotYet,
            // A JPEG XL codestream starts 0xFF 0x0A; its container with a
            // box of 12 bytes, read by the time a RAW is told.
            #[cfg(feature = "jxl")]
            Some(0xFF) if read.len() < 2 => Enough::NotYet,
            #[cfg(feature = "jxl")]
            Some(0) if read.len() < 12 => Enough::NotYet,
            #[cfg(feature = "jxl")]
            Some(_) if jxl::is_jxl(read) => self.jxl.check(read),
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

#[cfg(test)]
pub(crate) mod tests {
    use crate::body::Body;
    use crate::decode::route::tests::LIMITS;
    use crate::fetch::stop::{BodySoFar, ReadOn};
    use crate::request::TargetSize;

    /// `file` read as a fetch reads a body under the stop rule for
    /// `target`, `step` bytes a chunk, until the rule says it is enough.
    pub(crate) fn fetched(file: &[u8], target: TargetSize, step: usize) -> Body {
        let rule = super::stop_rule(target, LIMITS).unwrap();
        let mut body = BodySoFar::new(0, u64::MAX, Some(&rule));
        let mut stopped = false;
        for chunk in file.chunks(step) {
            if body.push(chunk, || unreachable!("no cap")).unwrap() == ReadOn::Stop {
                stopped = true;
                break;
            }
        }
        body.finish(stopped, bytes::Bytes::from)
    }
}
