//! The thumbnail: what a load delivers, decoded RGBA pixels shared without
//! copying, and the size rule every stage agrees on.
//!
//! Plain data: made on a decode thread, shared by the cache, the deliveries
//! and the UI's textures through `Arc`s, freed with its last holder.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use url::Url;

use crate::request::{Fit, TargetSize};

/// A decoded, downscaled image: RGBA8, shared without copying.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thumbnail {
    /// The URL it was loaded from.
    pub url: Arc<str>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes, row-major RGBA, not premultiplied.
    pub pixels: Arc<[u8]>,
    /// The width and height of the image it was made from, upright (EXIF
    /// orientation applied): its pixels, or an SVG's size in its user
    /// units, rounded. What egui's `Image::fit_to_original_size` draws it
    /// at, whatever the thumbnail's own size. A decoder of the app's own
    /// that does not know it gives the thumbnail's size.
    pub source_size: (u32, u32),
    /// Every frame of an animated GIF or WebP, at this size, when the
    /// decode stage animates ([`DecodeConfig::animation`]); `None` for a
    /// still image. [`Thumbnail::pixels`] is the first frame either way,
    /// so code that knows nothing of animation shows that.
    ///
    /// [`DecodeConfig::animation`]: crate::DecodeConfig::animation
    pub animation: Option<Arc<Animation>>,
}

impl Thumbnail {
    /// Bytes of pixel data, every frame of an animation counted: what the
    /// thumbnail costs in the cache and as textures.
    pub fn cost(&self) -> usize {
        self.animation
            .as_ref()
            .map_or(self.pixels.len(), |animation| {
                animation
                    .frames
                    .iter()
                    .map(|frame| frame.pixels.len())
                    .sum()
            })
    }

    /// The size to lay the image out at when it is shown at its own size:
    /// [`Thumbnail::source_size`], or the thumbnail's own size where a
    /// decoder left a side of that 0.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let mut thumbnail = thumbpipe::Thumbnail {
    ///     url: Arc::from("memory:dot"),
    ///     width: 2,
    ///     height: 1,
    ///     pixels: Arc::from([0u8; 8]),
    ///     source_size: (400, 200),
    ///     animation: None,
    /// };
    /// assert_eq!(thumbnail.display_size(), (400, 200));
    /// thumbnail.source_size = (0, 0);
    /// assert_eq!(thumbnail.display_size(), (2, 1));
    /// ```
    pub fn display_size(&self) -> (u32, u32) {
        match self.source_size {
            (0, _) | (_, 0) => (self.width, self.height),
            size => size,
        }
    }
}

/// The frames of an animated thumbnail, which loops for ever.
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use thumbpipe::{Animation, AnimationFrame};
///
/// let frame = |shade: u8, millis| {
///     AnimationFrame::new(Arc::from(vec![shade; 4]), Duration::from_millis(millis))
/// };
/// let animation = Animation::new(vec![frame(0, 100), frame(255, 300)]).unwrap();
/// assert_eq!(animation.duration(), Duration::from_millis(400));
/// // 450 ms in: the second loop's first frame, the next in 50 ms.
/// assert_eq!(
///     animation.frame_at(Duration::from_millis(450)),
///     (0, Duration::from_millis(50))
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Animation {
    frames: Vec<AnimationFrame>,
    duration: Duration,
}

/// One frame of an [`Animation`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnimationFrame {
    /// The whole picture at this moment (frames already composed), in the
    /// thumbnail's layout: `width * height * 4` bytes of RGBA.
    pub pixels: Arc<[u8]>,
    /// How long it is shown, never 0 ([`Animation::new`] sees to it).
    pub delay: Duration,
}

impl AnimationFrame {
    /// A frame of `pixels` (the whole picture, in the thumbnail's layout)
    /// shown for `delay`.
    pub fn new(pixels: Arc<[u8]>, delay: Duration) -> Self {
        Self { pixels, delay }
    }
}

impl Animation {
    /// Delays of 10 ms or less are shown for this long, as browsers show
    /// them: many GIFs say 0 and mean "as fast as the viewer goes".
    pub const SHORTEST_DELAY_READ_AS: Duration = Duration::from_millis(100);

    /// Delays longer than this (an hour) are shown for this long.
    pub const LONGEST_DELAY: Duration = Duration::from_secs(3600);

    /// An animation of `frames`, in order, the first being what
    /// [`Thumbnail::pixels`] shows; `None` for fewer than two, or for
    /// frames of different sizes (each must be its thumbnail's `width *
    /// height * 4` bytes). A delay of 10 ms or less becomes
    /// [`Animation::SHORTEST_DELAY_READ_AS`], one over an hour an hour.
    pub fn new(mut frames: Vec<AnimationFrame>) -> Option<Self> {
        let first = frames.first()?.pixels.len();
        if frames.len() < 2 || frames.iter().any(|frame| frame.pixels.len() != first) {
            return None;
        }
        for frame in &mut frames {
            if frame.delay <= Duration::from_millis(10) {
                frame.delay = Self::SHORTEST_DELAY_READ_AS;
            }
            frame.delay = frame.delay.min(Self::LONGEST_DELAY);
        }
        let duration = frames.iter().map(|frame| frame.delay).sum();
        Some(Self { frames, duration })
    }

    /// The frames, in order (at least two).
    pub fn frames(&self) -> &[AnimationFrame] {
        &self.frames
    }

    /// One loop's length.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Which frame is shown `elapsed` after the animation began (it
    /// loops), and how long until the next one is.
    pub fn frame_at(&self, elapsed: Duration) -> (usize, Duration) {
        let loop_nanos = self.duration.as_nanos().max(1);
        let mut into_loop = Duration::from_nanos((elapsed.as_nanos() % loop_nanos) as u64);
        for (index, frame) in self.frames.iter().enumerate() {
            if into_loop < frame.delay {
                return (index, frame.delay - into_loop);
            }
            into_loop -= frame.delay;
        }
        // Not reached: the remainder is less than the sum of the delays.
        (0, self.frames[0].delay)
    }
}

/// A tier of decoded thumbnails kept beside the fetch stage (the disk
/// cache's): the load actor asks it before a load's fetch, and offers it
/// every thumbnail decoded, with the body it came from. The actor's seam to
/// it; the tier decides what it keeps.
pub(crate) trait ThumbnailTier: Send + Sync + 'static {
    /// Whether it may hold thumbnails of `url` for `target`: if not, it is
    /// not asked.
    fn keeps(&self, url: &Url, target: TargetSize) -> bool;

    /// The thumbnail of `url` at `target`, if it has one. Dropping the
    /// future abandons the lookup.
    fn lookup(&self, url: &Url, target: TargetSize) -> BoxFuture<'static, Option<Thumbnail>>;

    /// Offers `thumbnail`, decoded from `body`, for `url` and `target`.
    /// Called on a decode thread; returns at once, copying what it keeps.
    fn offer(&self, url: &Url, target: TargetSize, body: &Bytes, thumbnail: &Thumbnail);
}

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
