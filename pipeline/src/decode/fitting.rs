//! Fitting: how an image becomes its thumbnail for a target. The size
//! rule every route of the decode agrees on (inside the box, covering it,
//! or at the image's own size scaled within it); how a photo's EXIF
//! orientation turns the target it is fitted to and the thumbnail made
//! from it; and how the kept part of a decoded image (in its decoded
//! pixels, a DCT-scaled JPEG's included) is resized and turned upright,
//! the route's last steps; a thumbnail made for one target is refitted to
//! another the same way.
//!
//! Plain data and plain functions, run on the thread that calls them: a
//! decode thread for the fitting, the resize and a refit after a decode,
//! and the fetch task too for the turned target (the JPEG watch's
//! judgement of the DC scans). Keeps nothing.

use image::DynamicImage;
use image::metadata::Orientation;

use std::sync::Arc;

use super::jpeg;
use super::resize::{self, Layout, Pixels};
use crate::error::Error;
use crate::request::{Fit, TargetSize};
use crate::thumbnail::{Animation, AnimationFrame, Thumbnail};

/// How a `width` x `height` image becomes its thumbnail for a target: the
/// part of it kept, in the image's pixels, and the size that part is
/// scaled to. The size rule every stage agrees on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fitting {
    /// The kept part's left, top, width and height: the whole image when
    /// fitting inside, the centre of the box's aspect ratio for a cover.
    pub(crate) crop: (f64, f64, f64, f64),
    /// The thumbnail's width and height: never larger than the kept part,
    /// never 0.
    pub(crate) size: (u32, u32),
}

impl Fitting {
    /// How an image of `width` x `height` goes in `target` (sides of 0 are
    /// taken as 1).
    pub(crate) fn new(width: u32, height: u32, target: TargetSize) -> Self {
        let (width, height) = (width.max(1), height.max(1));
        let (crop_width, crop_height) = match target.fit {
            Fit::Inside | Fit::Original { .. } => (width, height),
            Fit::Cover => {
                let (box_width, box_height) = (
                    u64::from(target.width.max(1)),
                    u64::from(target.height.max(1)),
                );
                // The largest centred part with the box's aspect ratio.
                if u64::from(width) * box_height >= u64::from(height) * box_width {
                    let kept = (u64::from(height) * box_width + box_height / 2) / box_height;
                    (kept.clamp(1, u64::from(width)) as u32, height)
                } else {
                    let kept = (u64::from(width) * box_height + box_width / 2) / box_width;
                    (width, kept.clamp(1, u64::from(height)) as u32)
                }
            }
        };
        Self {
            crop: (
                f64::from(width - crop_width) / 2.0,
                f64::from(height - crop_height) / 2.0,
                f64::from(crop_width),
                f64::from(crop_height),
            ),
            size: match target.fit {
                Fit::Original { percent } => {
                    fit_inside(width, height, own_box(width, height, percent, target))
                }
                Fit::Inside | Fit::Cover => fit_inside(crop_width, crop_height, target),
            },
        }
    }

    /// The whole image's size at the thumbnail's scale (rounded up): what
    /// a decoder that scales as it decodes must give at least.
    pub(crate) fn scaled_whole(&self, width: u32, height: u32) -> (u32, u32) {
        if self.crop == (0.0, 0.0, f64::from(width), f64::from(height)) {
            return self.size;
        }
        let scale = f64::from(self.size.0) / self.crop.2;
        // Up, but not for the last bits of a product that is a whole number.
        let side =
            |side: u32| ((f64::from(side) * scale - 1e-6).ceil() as u32).clamp(1, side.max(1));
        (side(width), side(height))
    }
}

/// The box a `width` x `height` raster image at `percent` of its own size
/// (never more than all of it) fits in, within `target`.
fn own_box(width: u32, height: u32, percent: u16, target: TargetSize) -> TargetSize {
    let percent = u64::from(percent.clamp(1, 100));
    let scaled = |side: u32| ((u64::from(side) * percent).div_ceil(100)).max(1) as u32;
    TargetSize::new(
        scaled(width).min(target.width),
        scaled(height).min(target.height),
    )
}

/// The largest size with `width`/`height`'s aspect ratio that fits in
/// `target`, never larger than the original and never 0.
fn fit_inside(width: u32, height: u32, target: TargetSize) -> (u32, u32) {
    if width <= target.width && height <= target.height {
        return (width.max(1), height.max(1));
    }
    let scale = f64::min(
        f64::from(target.width) / f64::from(width),
        f64::from(target.height) / f64::from(height),
    );
    let scaled = |side: u32| ((f64::from(side) * scale).round() as u32).max(1);
    (scaled(width), scaled(height))
}

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

/// `thumbnail` scaled down (or cropped) to `target` as a decode to it
/// would make it, every frame of an animation too: a thumbnail decoded at
/// a larger size for a tier that keeps that size. `None` if it comes out
/// more than a pixel smaller than a decode of the image itself would (a
/// cover crop of a panorama from its thumbnail inside a square). Runs on
/// the calling (decode) thread.
pub(crate) fn refit(thumbnail: &Thumbnail, target: TargetSize) -> Result<Option<Thumbnail>, Error> {
    let fitting = Fitting::new(thumbnail.width, thumbnail.height, target);
    let (width, height) = fitting.size;
    let (source_width, source_height) = thumbnail.display_size();
    let direct = Fitting::new(source_width, source_height, target).size;
    if width + 1 < direct.0 || height + 1 < direct.1 {
        return Ok(None);
    }
    let scale = |pixels: &Arc<[u8]>| -> Result<Arc<[u8]>, Error> {
        let source = Pixels {
            width: thumbnail.width,
            height: thumbnail.height,
            layout: Layout::Rgba,
            data: pixels.to_vec(),
        };
        let scaled = source
            .into_rgba(fitting.crop, width, height)
            .map_err(|reason| Error::Decode {
                url: thumbnail.url.to_string(),
                reason,
            })?;
        Ok(Arc::from(scaled.into_raw()))
    };
    let animation = match &thumbnail.animation {
        None => None,
        Some(animation) => {
            let frames = animation
                .frames()
                .iter()
                .map(|frame| Ok(AnimationFrame::new(scale(&frame.pixels)?, frame.delay)))
                .collect::<Result<Vec<_>, Error>>()?;
            Animation::new(frames).map(Arc::new)
        }
    };
    Ok(Some(Thumbnail {
        url: Arc::clone(&thumbnail.url),
        width,
        height,
        pixels: scale(&thumbnail.pixels)?,
        source_size: thumbnail.source_size,
        animation,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_inside_keeping_aspect_and_never_upscales() {
        assert_eq!(fit_inside(600, 600, TargetSize::square(64)), (64, 64));
        assert_eq!(fit_inside(800, 400, TargetSize::square(64)), (64, 32));
        assert_eq!(fit_inside(400, 800, TargetSize::new(100, 64)), (32, 64));
        assert_eq!(fit_inside(20, 10, TargetSize::square(64)), (20, 10));
        assert_eq!(fit_inside(10_000, 1, TargetSize::square(64)), (64, 1));
    }

    #[test]
    fn a_cover_keeps_the_centre_of_the_boxs_shape_and_never_upscales() {
        let cover = |w, h, target| Fitting::new(w, h, target);
        // A wide photo in a square: its middle square.
        let wide = cover(4000, 3000, TargetSize::cover(128, 128));
        assert_eq!(wide.crop, (500.0, 0.0, 3000.0, 3000.0));
        assert_eq!(wide.size, (128, 128));
        assert_eq!(wide.scaled_whole(4000, 3000), (171, 128));
        // A tall one in a wide box: a band across its middle.
        let tall = cover(300, 900, TargetSize::cover(64, 32));
        assert_eq!(tall.crop, (0.0, 375.0, 300.0, 150.0));
        assert_eq!(tall.size, (64, 32));
        // Smaller than the box: cropped to its shape, not scaled up.
        assert_eq!(cover(100, 50, TargetSize::cover(64, 64)).size, (50, 50));
        assert_eq!(cover(1, 1, TargetSize::cover(64, 16)).size, (1, 1));
        // Inside: the whole image.
        let inside = cover(800, 400, TargetSize::square(64));
        assert_eq!(
            (inside.crop, inside.size),
            ((0.0, 0.0, 800.0, 400.0), (64, 32))
        );
        assert_eq!(inside.scaled_whole(800, 400), (64, 32));
    }

    #[test]
    fn an_original_is_its_own_size_scaled_down_only_to_fit_the_box() {
        let size = |w, h, target| Fitting::new(w, h, target).size;
        assert_eq!(
            size(4000, 3000, TargetSize::original(100, 8192)),
            (4000, 3000)
        );
        assert_eq!(
            size(4000, 3000, TargetSize::original(100, 2048)),
            (2048, 1536)
        );
        assert_eq!(
            size(4000, 3000, TargetSize::original(50, 8192)),
            (2000, 1500)
        );
        // Never up, and never 0.
        assert_eq!(size(300, 200, TargetSize::original(200, 8192)), (300, 200));
        assert_eq!(size(3, 1, TargetSize::original(0, 8192)), (1, 1));
        let whole = Fitting::new(4000, 3000, TargetSize::original(25, 8192));
        assert_eq!(whole.crop, (0.0, 0.0, 4000.0, 3000.0));
        assert_eq!(whole.scaled_whole(4000, 3000), (1000, 750));
    }
}
