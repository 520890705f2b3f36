//! A fetch's watch over a JPEG XL: where the thumbnail is made from the
//! first frame's LF ([`super::lf`]), the body is read until that LF is all
//! there, and no further (the HF passes after it are most of the file);
//! any other JPEG XL is read whole, as is one whose LF groups are spread
//! through the file among its HF (as libjxl's streaming encoder writes
//! large images). No pixel is decoded: the header is read under the
//! decode's limits first, then jxl-oxide is given each new part of the
//! body once, and the first frame's header and table of contents say when
//! its LF is all read.
//!
//! Made by the fetch stage's stop rule (`decode/watch.rs`) for each body,
//! run on the task that reads it; ends with the read.

use std::fmt;

use jxl_oxide::{AllocTracker, InitializeResult, JxlImage, JxlThreadPool, UninitializedJxlImage};

use super::{lf, lf_fit, plan};
use crate::decode::DecodeLimits;
use crate::fetch::stop::{Enough, Looks};
use crate::request::TargetSize;

/// How far a JPEG XL is read while waiting for its LF: past this, it is
/// read whole.
const MAX_WATCHED_BYTES: usize = 32 * 1024 * 1024;

/// How far a header that cannot be read yet is waited for: past this, the
/// file is read whole (and its decode says why it cannot be read).
const MAX_HEADER_BYTES: usize = 1024 * 1024;

/// The watch over one JPEG XL body, for the thumbnail of `target`. A
/// clone watches a body of its own, from its start.
pub(in crate::decode) struct JxlWatch {
    target: TargetSize,
    limits: DecodeLimits,
    looks: Looks,
    /// What the body read so far has been given to.
    reading: Reading,
}

/// How far a watch has read its body.
enum Reading {
    /// Its header is not read yet.
    Header,
    /// jxl-oxide has been given the body's first `fed` bytes; `readable`
    /// once the first frame's header says its LF is read (asked once: it
    /// builds the colour transform).
    Fed {
        image: Fed,
        fed: usize,
        readable: bool,
    },
    /// The answer is known: the body is read whole.
    Whole,
}

/// jxl-oxide's reader, before and after it has read the header.
enum Fed {
    Header(Box<UninitializedJxlImage>),
    Image(Box<JxlImage>),
}

impl JxlWatch {
    pub(in crate::decode) fn new(target: TargetSize, limits: DecodeLimits) -> Self {
        Self {
            target,
            limits,
            looks: Looks::new(MAX_WATCHED_BYTES, 4 * 1024),
            reading: Reading::Header,
        }
    }

    /// Whether the bytes read so far, `read`, hold all the decode needs.
    pub(in crate::decode) fn check(&mut self, read: &[u8]) -> Enough {
        let (target, limits, reading) = (self.target, &self.limits, &mut self.reading);
        self.looks.check(read, |read| {
            let enough = look(reading, read, target, limits);
            if enough == Enough::Never {
                *reading = Reading::Whole;
            }
            enough
        })
    }
}

impl Clone for JxlWatch {
    fn clone(&self) -> Self {
        Self::new(self.target, self.limits)
    }
}

impl fmt::Debug for JxlWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fed = match &self.reading {
            Reading::Fed { fed, .. } => Some(*fed),
            _ => None,
        };
        f.debug_struct("JxlWatch")
            .field("target", &self.target)
            .field("fed", &fed)
            .finish_non_exhaustive()
    }
}

/// Whether `read` holds all the decode of a thumbnail of `target` under
/// `limits` needs, going on from what `reading` has read of it.
fn look(reading: &mut Reading, read: &[u8], target: TargetSize, limits: &DecodeLimits) -> Enough {
    if let Reading::Header = reading {
        // Read here first, within the limits: jxl-oxide allocates the ICC
        // profile the header declares. A header not all read yet waits.
        let Ok(plan) = plan(read, limits) else {
            return if read.len() > MAX_HEADER_BYTES {
                Enough::Never
            } else {
                Enough::NotYet
            };
        };
        // Refused by the decode, or not made from its LF: read whole.
        let (width, height) = plan.size;
        let refused = width > limits.max_dimension || height > limits.max_dimension;
        if refused || lf_fit(&plan, target).is_none() {
            return Enough::Never;
        }
        let budget = usize::try_from(limits.max_alloc).unwrap_or(usize::MAX);
        let uninit = JxlImage::builder()
            .pool(JxlThreadPool::none())
            .alloc_tracker(AllocTracker::with_limit(budget))
            .build_uninit();
        *reading = Reading::Fed {
            image: Fed::Header(Box::new(uninit)),
            fed: 0,
            readable: false,
        };
    }
    let Reading::Fed {
        image,
        fed,
        readable,
    } = reading
    else {
        return Enough::Never;
    };
    // Only what is new: each part of the body is given to jxl-oxide once.
    if feed(image, fed, read).is_err() {
        return Enough::Never;
    }
    let Fed::Image(image) = image else {
        return Enough::NotYet;
    };
    if !*readable {
        match lf::readable(image) {
            Some(false) => return Enough::Never,
            Some(true) => *readable = true,
            None => return Enough::NotYet,
        }
    }
    match image.frame_by_keyframe(0) {
        Some(frame) if lf::loaded(frame) => Enough::Yes,
        _ => Enough::NotYet,
    }
}

/// Gives jxl-oxide the bytes of `read` past the `fed` it has, reading the
/// header once there is all of it.
fn feed(image: &mut Fed, fed: &mut usize, read: &[u8]) -> jxl_oxide::Result<()> {
    let new = read.get(*fed..).unwrap_or_default();
    match image {
        Fed::Header(uninit) => {
            *fed += uninit.feed_bytes(new)?;
            // `try_init` takes the reader; a stand-in holds its place.
            let taken = std::mem::replace(&mut **uninit, JxlImage::builder().build_uninit());
            match taken.try_init()? {
                InitializeResult::NeedMoreData(uninit) => *image = Fed::Header(Box::new(uninit)),
                InitializeResult::Initialized(ready) => *image = Fed::Image(Box::new(ready)),
            }
        }
        Fed::Image(ready) => {
            let mut rest = new;
            while !rest.is_empty() {
                let more = ready.feed_bytes(rest)?;
                if more == 0 {
                    break;
                }
                *fed += more;
                rest = &rest[more..];
            }
        }
    }
    Ok(())
}
