//! A RAW's uncompressed RGB preview (a DNG's thumbnail in its first
//! directory, an old Kodak's): its samples made into the thumbnail,
//! turned as the RAW says. Used only where the file has no JPEG preview;
//! the preview's own size is the size reported, as nothing larger is
//! shown.
//!
//! Runs on a decode thread; keeps nothing.

use std::sync::Arc;

use image::metadata::Orientation;

use super::{MAX_RGB_SIDE, RgbPreview};
use crate::decode::DecodeLimits;
use crate::decode::fitting::{Fitting, fit, quarter_turn, swapped};
use crate::decode::header::{self, within_max_dimension};
use crate::decode::resize::{self, Layout, Pixels};
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// The thumbnail of `target` from `preview`, which lies within `bytes`.
pub(super) fn decode(
    url: &Arc<str>,
    bytes: &[u8],
    preview: &RgbPreview,
    orientation: Option<Orientation>,
    target: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    let decode_error = |reason: String| Error::Decode {
        url: url.to_string(),
        reason,
    };
    let (width, height) = (preview.width, preview.height);
    within_max_dimension(url, width, height, &limits)?;
    let samples = bytes
        .get(preview.bytes.clone())
        .filter(|samples| samples.len() as u64 == u64::from(width) * u64::from(height) * 3)
        .filter(|_| width.max(height) <= MAX_RGB_SIDE && width > 0 && height > 0)
        .ok_or_else(|| {
            decode_error(format!(
                "its {width}x{height} RGB preview is not all in the file"
            ))
        })?;
    let orientation = orientation.unwrap_or(Orientation::NoTransforms);
    let (stored_target, upright_size) = if quarter_turn(orientation) {
        (swapped(target), (height, width))
    } else {
        (target, (width, height))
    };
    let fitting = Fitting::new(width, height, stored_target);
    let needed = u64::from(width) * u64::from(height) * 3
        + resize::working_bytes((width, height), fitting.size);
    if needed > limits.max_alloc {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "its {width}x{height} preview takes {needed} bytes to make into a thumbnail"
            ),
            setting: "decode.max_alloc_bytes",
        });
    }
    let pixels = Pixels {
        width,
        height,
        layout: Layout::Rgb,
        data: samples.to_vec(),
    };
    let rgba = fit(pixels, &fitting, (width, height), None, orientation).map_err(decode_error)?;
    Ok(header::still(url, rgba, upright_size))
}
