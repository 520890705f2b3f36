//! The thumbnail: what a load delivers, decoded RGBA pixels shared without
//! copying, and the size rule every stage agrees on.
//!
//! Plain data: made on a decode thread, shared by the cache, the deliveries
//! and the UI's textures through `Arc`s, freed with its last holder.

use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use url::Url;

use crate::request::TargetSize;

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
}

impl Thumbnail {
    /// Bytes of pixel data: what the thumbnail costs in the cache.
    pub fn cost(&self) -> usize {
        self.pixels.len()
    }
}

/// A tier of decoded thumbnails kept beside the fetch stage (the disk
/// cache's): the load actor asks it before a load's fetch, and offers it
/// every thumbnail decoded, with the body it came from. The actor's seam to
/// it; the tier decides what it keeps.
pub(crate) trait ThumbnailTier: Send + Sync + 'static {
    /// Whether it may hold thumbnails of `url`: if not, it is not asked.
    fn keeps(&self, url: &Url) -> bool;

    /// The thumbnail of `url` at `target`, if it has one. Dropping the
    /// future abandons the lookup.
    fn lookup(&self, url: &Url, target: TargetSize) -> BoxFuture<'static, Option<Thumbnail>>;

    /// Offers `thumbnail`, decoded from `body`, for `url` and `target`.
    /// Called on a decode thread; returns at once, copying what it keeps.
    fn offer(&self, url: &Url, target: TargetSize, body: &Bytes, thumbnail: &Thumbnail);
}

/// The largest size with `width`/`height`'s aspect ratio that fits in
/// `target`, never larger than the original and never 0.
pub(crate) fn fit_inside(width: u32, height: u32, target: TargetSize) -> (u32, u32) {
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
}
