//! The thumbnail: what a load delivers, decoded RGBA pixels shared without
//! copying, and an animation's frames.
//!
//! Plain data: made on a decode thread, shared by the cache, the deliveries
//! and the UI's textures through `Arc`s, freed with its last holder.

use std::sync::Arc;
use std::time::Duration;

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
