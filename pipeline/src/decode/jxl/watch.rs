//! A fetch's watch over a JPEG XL: where the thumbnail is made from the
//! first frame's LF ([`super::lf`]), the body is read until that LF is all
//! there, and no further (the HF passes after it are most of the file);
//! any other JPEG XL is read whole, as is one whose LF groups are spread
//! through the file among its HF (as libjxl's streaming encoder writes
//! large images). Each look reads the header and the frame's table of
//! contents from the bytes so far, and at the end the LF's global part;
//! no pixel is decoded.
//!
//! Made by the fetch stage's stop rule (`decode/watch.rs`) for each body,
//! run on the task that reads it; ends with the read.

use super::{lf, lf_fit, plan, read_start};
use crate::decode::DecodeLimits;
use crate::fetch::stop::{Enough, Looks};
use crate::request::TargetSize;

/// How far a JPEG XL is read while waiting for its LF: past this, it is
/// read whole.
const MAX_WATCHED_BYTES: usize = 32 * 1024 * 1024;

/// The watch over one JPEG XL body, for the thumbnail of `target`.
#[derive(Clone, Debug)]
pub(in crate::decode) struct JxlWatch {
    target: TargetSize,
    limits: DecodeLimits,
    looks: Looks,
}

impl JxlWatch {
    pub(in crate::decode) fn new(target: TargetSize, limits: DecodeLimits) -> Self {
        Self {
            target,
            limits,
            looks: Looks::new(MAX_WATCHED_BYTES, 4 * 1024),
        }
    }

    /// Whether the bytes read so far, `read`, hold all the decode needs.
    pub(in crate::decode) fn check(&mut self, read: &[u8]) -> Enough {
        let (target, limits) = (self.target, &self.limits);
        self.looks.check(read, |read| look(read, target, limits))
    }
}

/// Whether `read` holds all the decode of a thumbnail of `target` under
/// `limits` needs.
fn look(read: &[u8], target: TargetSize, limits: &DecodeLimits) -> Enough {
    // A header not all read yet (its ICC profile, say) waits; one the
    // decode will refuse is read on to the end, where it is refused.
    let Ok(plan) = plan(read, limits) else {
        return Enough::NotYet;
    };
    // Refused by the decode, or not made from its LF: read whole.
    let (width, height) = plan.size;
    let refused = width > limits.max_dimension || height > limits.max_dimension;
    if refused || lf_fit(&plan, target).is_none() {
        return Enough::Never;
    }
    let Ok(image) = read_start(read, limits.max_alloc) else {
        return Enough::NotYet;
    };
    match (lf::readable(&image), image.frame_by_keyframe(0)) {
        (Some(false), _) => Enough::Never,
        (Some(true), Some(frame)) if lf::loaded(frame) => match lf::stands_alone(frame) {
            Ok(true) => Enough::Yes,
            // Patches, say, or a damaged frame: what the decode makes
            // of it, it makes of all of it.
            Ok(false) | Err(_) => Enough::Never,
        },
        _ => Enough::NotYet,
    }
}
