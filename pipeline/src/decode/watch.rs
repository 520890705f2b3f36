//! The fetch's stop rule: what a body is read for, told by its first
//! bytes. A JPEG is read as far as its embedded thumbnail or its DC scans
//! (`jpeg/prefix.rs`), a camera RAW as far as its chosen preview
//! (`raw/watch.rs`), a JPEG XL as far as its LF (`jxl/watch.rs`); any
//! other body is read whole.
//!
//! One watch is made for each body read, once its first bytes tell which
//! (`FF D8`, a JPEG, before any other format is asked; any other `FF`
//! start but a JPEG XL's `FF 0A` goes to the JPEG's watch too, and with
//! RAWs read, any other body of 16 bytes or more to the RAW's, which
//! reads it whole unless it proves a RAW). It is run by the fetch that
//! reads the body, chunk by chunk; it ends with the read, and what the
//! JPEG's watch found rides on the body.

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
    let fresh = ByFormat::Untold { target, limits };
    Some(StopRule::finding(move || fresh.clone()))
}

/// One body's watch: made for the JPEG, the RAW or the JPEG XL once the
/// first bytes tell which it is, so that a body runs one format's watch
/// and no other's.
#[derive(Clone, Debug)]
enum ByFormat {
    /// Not told yet: what the watch will be made for.
    Untold {
        target: TargetSize,
        limits: DecodeLimits,
    },
    Jpeg(PrefixWatch),
    #[cfg(feature = "raw")]
    Raw(RawWatch),
    #[cfg(feature = "jxl")]
    Jxl(JxlWatch),
    /// Read whole: no watch reads a part of it.
    Whole,
}

impl ByFormat {
    /// The watch for the body whose first bytes are `read`, or `None`
    /// until enough of them are read to tell.
    fn told(read: &[u8], target: TargetSize, limits: DecodeLimits) -> Option<Self> {
        let jpeg = || jpeg::watch(target, &limits).map_or(ByFormat::Whole, ByFormat::Jpeg);
        match read.first()? {
            // A JPEG, told without asking any other format.
            0xFF if read.get(1) == Some(&0xD8) => Some(jpeg()),
            // A JPEG XL codestream starts 0xFF 0x0A; its container with a
            // box of 12 bytes, read by the time a RAW is told.
            #[cfg(feature = "jxl")]
            0xFF if read.len() < 2 => None,
            #[cfg(feature = "jxl")]
            0 if read.len() < jxl::CONTAINER.len() => None,
            #[cfg(feature = "jxl")]
            _ if jxl::is_jxl(read) => Some(ByFormat::Jxl(JxlWatch::new(target, limits))),
            0xFF => Some(jpeg()),
            #[cfg(feature = "raw")]
            _ if read.len() < 16 => None,
            #[cfg(feature = "raw")]
            _ => Some(ByFormat::Raw(RawWatch::new(target))),
            #[cfg(not(feature = "raw"))]
            _ => Some(ByFormat::Whole),
        }
    }
}

impl BodyWatch for ByFormat {
    fn check(&mut self, read: &[u8]) -> Enough {
        if let ByFormat::Untold { target, limits } = *self {
            match ByFormat::told(read, target, limits) {
                Some(told) => *self = told,
                None => return Enough::NotYet,
            }
        }
        match self {
            ByFormat::Untold { .. } => Enough::NotYet,
            ByFormat::Jpeg(watch) => watch.check(read),
            #[cfg(feature = "raw")]
            ByFormat::Raw(watch) => watch.check(read),
            #[cfg(feature = "jxl")]
            ByFormat::Jxl(watch) => watch.check(read),
            ByFormat::Whole => Enough::Never,
        }
    }

    fn found(&mut self) -> Option<Found> {
        match self {
            ByFormat::Jpeg(watch) => watch.found(),
            _ => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::body::Body;
    use crate::decode::route::tests::LIMITS;
    use crate::fetch::stop::{BodySoFar, ReadOn};
    use crate::request::TargetSize;

    /// Which watch a body gets, by its first bytes: a JPEG's two tell it
    /// without any other format's watch being made; bytes too few to tell
    /// read on untold.
    #[test]
    fn a_body_gets_the_watch_its_first_bytes_tell_and_no_other() {
        use super::{BodyWatch, ByFormat, Enough};
        let target = TargetSize::square(64);
        let watch = |read: &[u8]| {
            let mut watch = ByFormat::Untold {
                target,
                limits: LIMITS,
            };
            let enough = watch.check(read);
            (watch, enough)
        };
        let kind = |watch: &ByFormat| match watch {
            ByFormat::Untold { .. } => "untold",
            ByFormat::Jpeg(_) => "jpeg",
            #[cfg(feature = "raw")]
            ByFormat::Raw(_) => "raw",
            #[cfg(feature = "jxl")]
            ByFormat::Jxl(_) => "jxl",
            ByFormat::Whole => "whole",
        };
        let (jpeg, enough) = watch(&[0xFF, 0xD8]);
        assert_eq!((kind(&jpeg), enough), ("jpeg", Enough::NotYet));
        let (untold, enough) = watch(&[]);
        assert_eq!((kind(&untold), enough), ("untold", Enough::NotYet));
        #[cfg(feature = "jxl")]
        {
            assert_eq!(kind(&watch(&[0xFF]).0), "untold");
            assert_eq!(kind(&watch(&[0xFF, 0x0A, 0, 0]).0), "jxl");
        }
        #[cfg(feature = "raw")]
        {
            let tiff = *b"II*\0\x08\0\0\0\0\0\0\0\0\0\0\0";
            assert_eq!(kind(&watch(&tiff[..8]).0), "untold");
            assert_eq!(kind(&watch(&tiff).0), "raw");
        }
        // Any other 0xFF start is the JPEG watch's to refuse.
        assert_eq!(kind(&watch(&[0xFF, 0x01]).0), "jpeg");
        #[cfg(feature = "jxl")]
        {
            // A container's box is 12 bytes: fewer are untold.
            assert_eq!(kind(&watch(&super::jxl::CONTAINER[..11]).0), "untold");
            assert_eq!(kind(&watch(super::jxl::CONTAINER).0), "jxl");
        }
        // Told, a watch stays what it was told as the body grows.
        let (mut jpeg, _) = watch(&[0xFF, 0xD8]);
        let _ = jpeg.check(&[0xFF, 0xD8, 0xFF, 0xE1, 0, 0x10]);
        assert_eq!(kind(&jpeg), "jpeg");
    }

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
