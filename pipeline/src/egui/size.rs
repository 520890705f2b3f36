//! Sizes: egui's size hints and point sizes to the [`TargetSize`] a
//! thumbnail is made for, in physical pixels, rounded up to a few steps.
//!
//! Plain arithmetic, called on the UI thread. The steps are why a window
//! being resized does not start a decode per pixel: every size between two
//! steps shares one thumbnail (and one cache entry), drawn slightly scaled
//! down, never up.

use ::egui::load::SizeHint;
use ::egui::{Context, Vec2};

use crate::request::TargetSize;

/// The smallest thumbnail side: smaller boxes share it.
const MIN_SIDE: u32 = 16;
/// The largest: the decoder's default
/// [`DecodeConfig::max_dimension`](crate::DecodeConfig::max_dimension). A side
/// that is unconstrained (an image sized by width alone) gets it.
pub(crate) const MAX_SIDE: u32 = 16_384;
/// The largest scale an image drawn at its own size is asked for, in
/// hundredths (an SVG drawn at 100 times its size is over any GPU's
/// largest texture anyway).
const MAX_PERCENT: f32 = 10_000.0;

/// The step at or above `pixels`: 16, 24, 32, 48, 64, 96, 128, 192, 256, ...
/// (each power of two, and one and a half times it), within
/// `MIN_SIDE..=MAX_SIDE`.
pub(crate) fn step_up(pixels: u32) -> u32 {
    let pixels = pixels.clamp(MIN_SIDE, MAX_SIDE);
    let power = pixels.next_power_of_two();
    let between = power / 4 * 3;
    if pixels <= between { between } else { power }
}

/// The largest texture side of the GPU `ctx` draws with (egui's
/// renderer tells it; 2048 until it has).
pub(crate) fn max_texture_side(ctx: &Context) -> usize {
    ctx.input(|input| input.max_texture_side)
}

/// The box for egui's `hint`, which is already in physical pixels. A box
/// whose aspect ratio need not be kept (`maintain_aspect_ratio: false`:
/// an [`egui::Image`](::egui::Image) told
/// [`maintain_aspect_ratio(false)`](::egui::Image::maintain_aspect_ratio),
/// or painted into a rect with `paint_at`) is filled: a cover crop of the
/// box's shape, so the image fills it without being stretched. An image
/// drawn at its own size (`SizeHint::Scale`: egui's
/// `fit_to_original_size`, or an image bound on neither side) is loaded at its
/// own size times the scale (pixels per point times the image's own
/// scale: an SVG is drawn that much larger, a raster image only ever
/// smaller), inside `max_side()`, the largest texture side: asked only
/// then, so that images drawn in a box cost no more than before.
pub(crate) fn target_for_hint(hint: SizeHint, max_side: impl FnOnce() -> usize) -> TargetSize {
    match hint {
        SizeHint::Size {
            width,
            height,
            maintain_aspect_ratio: false,
        } => cover_box(width, height),
        SizeHint::Size { width, height, .. } => TargetSize::new(step_up(width), step_up(height)),
        SizeHint::Width(width) => TargetSize::new(step_up(width), MAX_SIDE),
        SizeHint::Height(height) => TargetSize::new(MAX_SIDE, step_up(height)),
        SizeHint::Scale(scale) => {
            let percent = (scale.0 * 100.0).round();
            let percent = if percent.is_nan() {
                100.0
            } else {
                percent.clamp(1.0, MAX_PERCENT)
            };
            TargetSize::original(
                percent as u16,
                u32::try_from(max_side())
                    .unwrap_or(MAX_SIDE)
                    .clamp(MIN_SIDE, MAX_SIDE),
            )
        }
    }
}

/// A cover box of `width` x `height`'s shape, its longer side rounded up
/// to a step and the other scaled with it, so the crop has the box's
/// aspect ratio (within a pixel).
fn cover_box(width: u32, height: u32) -> TargetSize {
    let longer = width.max(height).max(1);
    let stepped = step_up(longer);
    let scaled = |side: u32| {
        let side =
            (u64::from(side) * u64::from(stepped) + u64::from(longer) / 2) / u64::from(longer);
        (side as u32).clamp(1, MAX_SIDE)
    };
    TargetSize::cover(scaled(width.max(1)), scaled(height.max(1)))
}

/// The box for a cell of `size` points on a screen of `pixels_per_point`:
/// what an [`egui::Image`](::egui::Image) of that exact size asks for.
///
/// ```
/// use thumbpipe::TargetSize;
///
/// let ppp_1 = thumbpipe::egui::target_size(egui::vec2(64.0, 64.0), 1.0);
/// let ppp_2 = thumbpipe::egui::target_size(egui::vec2(64.0, 64.0), 2.0);
/// assert_eq!((ppp_1, ppp_2), (TargetSize::square(64), TargetSize::square(128)));
/// ```
pub fn target_size(size: Vec2, pixels_per_point: f32) -> TargetSize {
    TargetSize::new(
        step_up(pixels(size.x * pixels_per_point)),
        step_up(pixels(size.y * pixels_per_point)),
    )
}

/// The cover box for a cell of `size` points on a screen of
/// `pixels_per_point`: what a cell cropped to fill asks for.
///
/// ```
/// use thumbpipe::TargetSize;
///
/// let cell = thumbpipe::egui::cover_size(egui::vec2(100.0, 60.0), 1.0);
/// assert_eq!(cell, TargetSize::cover(128, 77));
/// ```
pub fn cover_size(size: Vec2, pixels_per_point: f32) -> TargetSize {
    cover_box(
        pixels(size.x * pixels_per_point),
        pixels(size.y * pixels_per_point),
    )
}

/// The box an image is drawn in, in points, and whether it fills it: what
/// [`Loader::prefetch`](super::Loader::prefetch),
/// [`Loader::follow_coast`](super::Loader::follow_coast) and
/// [`Loader::drawn`](super::Loader::drawn) take, to ask for the thumbnails
/// the images drawn there load. A `Vec2` is a box the whole image fits
/// inside (an `egui::Image` with `fit_to_exact_size`); [`Cell::filled`] is
/// one it is cropped to fill (with `.maintain_aspect_ratio(false)` too: a
/// photo grid's cell).
///
/// ```
/// use thumbpipe::egui::Cell;
///
/// let size = egui::vec2(96.0, 96.0);
/// assert_eq!(Cell::from(size), Cell::fitted(size));
/// assert_ne!(Cell::filled(size), Cell::fitted(size));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    size: Vec2,
    fill: bool,
}

impl Cell {
    /// A box of `size` points the whole image fits inside.
    pub fn fitted(size: Vec2) -> Self {
        Self { size, fill: false }
    }

    /// A box of `size` points the image is cropped to fill.
    pub fn filled(size: Vec2) -> Self {
        Self { size, fill: true }
    }

    /// The thumbnail's box for this cell on a screen of
    /// `pixels_per_point`: the one the image drawn in it asks for.
    pub(crate) fn target(self, pixels_per_point: f32) -> TargetSize {
        if self.fill {
            cover_size(self.size, pixels_per_point)
        } else {
            target_size(self.size, pixels_per_point)
        }
    }
}

impl From<Vec2> for Cell {
    fn from(size: Vec2) -> Self {
        Self::fitted(size)
    }
}

/// Whole pixels, rounded as egui rounds a size hint; NaN and negatives are 0,
/// infinity is unconstrained.
fn pixels(value: f32) -> u32 {
    if value.is_nan() || value <= 0.0 {
        0
    } else if value.is_finite() {
        value.round().min(MAX_SIDE as f32) as u32
    } else {
        MAX_SIDE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::egui::emath::OrderedFloat;

    #[test]
    fn sizes_round_up_to_the_next_step_and_stay_in_range() {
        let steps: Vec<u32> = [0, 1, 16, 17, 24, 25, 33, 64, 65, 97, 128, 129, 1000, 99_999]
            .into_iter()
            .map(step_up)
            .collect();
        assert_eq!(
            steps,
            [
                16, 16, 16, 24, 24, 32, 48, 64, 96, 128, 128, 192, 1024, 16_384
            ]
        );
    }

    #[test]
    fn a_window_resized_pixel_by_pixel_asks_for_few_sizes() {
        let mut sizes: Vec<TargetSize> = (100..=400)
            .map(|side| {
                target_for_hint(
                    SizeHint::Size {
                        width: side,
                        height: side,
                        maintain_aspect_ratio: true,
                    },
                    || 8192,
                )
            })
            .collect();
        sizes.dedup();
        assert_eq!(sizes.len(), 5, "{sizes:?}");
    }

    #[test]
    fn a_box_that_need_not_keep_the_images_shape_is_covered_in_its_own() {
        let hint = |width, height| {
            target_for_hint(
                SizeHint::Size {
                    width,
                    height,
                    maintain_aspect_ratio: false,
                },
                || 8192,
            )
        };
        assert_eq!(hint(100, 60), TargetSize::cover(128, 77));
        assert_eq!(hint(64, 64), TargetSize::cover(64, 64));
        assert_eq!(hint(30, 300), TargetSize::cover(38, 384));
        assert_eq!(hint(0, 0), TargetSize::cover(16, 16));
    }

    #[test]
    fn every_hint_becomes_a_box_in_pixels() {
        assert_eq!(
            target_for_hint(SizeHint::Width(100), || 8192),
            TargetSize::new(128, MAX_SIDE)
        );
        assert_eq!(
            target_for_hint(SizeHint::Height(60), || 8192),
            TargetSize::new(MAX_SIDE, 64)
        );
        // At its own size, inside the GPU's largest texture.
        let own = |scale: f32, max_side| {
            target_for_hint(SizeHint::Scale(OrderedFloat(scale)), || max_side)
        };
        assert_eq!(own(2.0, 8192), TargetSize::original(200, 8192));
        assert_eq!(own(1.25, 4096), TargetSize::original(125, 4096));
        assert_eq!(own(f32::NAN, 0), TargetSize::original(100, MIN_SIDE));
        assert_eq!(own(1e9, usize::MAX), TargetSize::original(10_000, MAX_SIDE));
        assert_eq!(own(-1.0, 2048), TargetSize::original(1, 2048));
        assert_eq!(
            target_size(Vec2::new(f32::INFINITY, f32::NAN), 2.0),
            TargetSize::new(MAX_SIDE, MIN_SIDE)
        );
    }
}
