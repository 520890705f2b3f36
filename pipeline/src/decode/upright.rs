//! Upright and fitted: how a photo's EXIF orientation turns the target it
//! is fitted to and the thumbnail made from it, and how the kept part of a
//! decoded image (in its decoded pixels, a DCT-scaled JPEG's included)
//! becomes the thumbnail. The route's last steps.
//!
//! Runs inside a decode, on the thread that called it; keeps nothing.

use image::DynamicImage;
use image::metadata::Orientation;

use super::fitting::Fitting;
use super::{jpeg, resize};
use crate::request::TargetSize;

/// Whether `orientation` turns the picture a quarter, swapping its sides.
pub(super) fn quarter_turn(orientation: Orientation) -> bool {
    matches!(
        orientation,
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    )
}

/// `target` with its width and height swapped.
pub(super) fn swapped(target: TargetSize) -> TargetSize {
    TargetSize {
        width: target.height,
        height: target.width,
        fit: target.fit,
    }
}

/// The thumbnail of `pixels`, decoded from an image of `size` (fewer
/// pixels for a JPEG decoded at `eighths`/8): the kept part resized as
/// `fitting` says, then turned upright.
pub(super) fn fit(
    pixels: resize::Pixels,
    fitting: &Fitting,
    size: (u32, u32),
    eighths: Option<u32>,
    orientation: Orientation,
) -> Result<image::RgbaImage, String> {
    // The kept part, in the decoded image's pixels. Edges are clamped to
    // the decoded image: the products can land a rounding error past it,
    // which the resize refuses.
    let (left, top, crop_width, crop_height) = fitting.crop;
    let (thumb_width, thumb_height) = fitting.size;
    let (decoded_width, decoded_height) = (f64::from(pixels.width), f64::from(pixels.height));
    let scaled_size = eighths.map(|e| (jpeg::scaled_side(size.0, e), jpeg::scaled_side(size.1, e)));
    let (x_scale, y_scale) = match eighths {
        // libjpeg's output at M/8: each pixel is 8/M of the image's, and
        // a side that ends inside a block ends inside the last pixel, which
        // holds the block's padding too (213 rows at 1/4 are 53.25 pixels,
        // given as 54).
        Some(eighths) if scaled_size == Some((pixels.width, pixels.height)) => {
            (f64::from(eighths) / 8.0, f64::from(eighths) / 8.0)
        }
        _ => (
            decoded_width / f64::from(size.0),
            decoded_height / f64::from(size.1),
        ),
    };
    let (left, top) = (
        (left * x_scale).min(decoded_width),
        (top * y_scale).min(decoded_height),
    );
    let crop = (
        left,
        top,
        (crop_width * x_scale).min(decoded_width - left),
        (crop_height * y_scale).min(decoded_height - top),
    );
    let mut rgba = pixels.into_rgba(crop, thumb_width, thumb_height)?;
    if orientation != Orientation::NoTransforms {
        let mut turned = DynamicImage::ImageRgba8(rgba);
        turned.apply_orientation(orientation);
        rgba = turned.into_rgba8();
    }
    Ok(rgba)
}

/// How the camera held the picture, by its EXIF orientation as `image`
/// reads it: an unreadable tag is no reason to refuse the image.
pub(super) fn orientation_of(header: &mut dyn image::ImageDecoder) -> Orientation {
    header.orientation().unwrap_or(Orientation::NoTransforms)
}
