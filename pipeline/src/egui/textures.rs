//! Textures: the UI side's level of the cache (L1) for egui. Thumbnails
//! become egui textures here (an animation, one per frame), kept by the
//! crate's kept images (`kept.rs`, shared with iced's handles: a byte
//! budget, the least recently drawn freed first, never one drawn in this
//! pass), which frees the GPU texture, and under a per-pass upload budget.
//!
//! Owned by one UI-side loader (the URI loader or a [`super::ThumbnailList`])
//! and used on the UI thread only. A texture lives until it is evicted,
//! forgotten, or its owner is dropped: dropping the `TextureHandle` is what
//! frees it in egui (after the pass that last drew it is painted).

use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::front::kept::{KeptImages, not_rgba};
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;
use ::egui::load::SizedTexture;
use ::egui::{ColorImage, Context, TextureHandle, TextureOptions};

/// A texture's identity: the URL, the box its thumbnail was made for, and
/// how egui samples it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TextureKey {
    pub(crate) url: Arc<str>,
    pub(crate) target: TargetSize,
    pub(crate) options: TextureOptions,
}

/// Counters of a texture cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TextureStats {
    /// Textures alive now, an animation's frames each one.
    pub textures: usize,
    /// Their RGBA bytes.
    pub bytes: usize,
    /// The most bytes kept once the budget was applied after an upload:
    /// more than the budget only when the textures one pass draws need
    /// more.
    pub peak_bytes: usize,
    /// Textures made, an animation's frames each one.
    pub uploads: u64,
    /// Textures freed to stay under the budget.
    pub evicted: u64,
    /// Uploads put off to a later pass by the per-pass upload budget.
    pub deferred: u64,
}

/// Why a thumbnail did not become a texture.
#[derive(Debug, Clone)]
pub(crate) enum UploadRefused {
    /// The pass's upload budget is spent: ask again next pass.
    BudgetSpent,
    /// Never: the thumbnail is malformed or too large for a texture.
    Unusable(Error),
}

struct Texture {
    /// One a frame: the still image's, or every frame of an animation.
    frames: Vec<TextureHandle>,
    /// The pixels it was made from (shared with the pipeline's cache, not
    /// copied), so that an app can read what a row shows.
    thumbnail: Thumbnail,
}

/// Thumbnails' textures, least recently drawn first out.
pub(crate) struct TextureCache {
    entries: KeptImages<TextureKey, Texture>,
    upload_bytes_per_pass: usize,
    /// Bytes and textures uploaded in the current pass.
    uploaded_bytes: usize,
    uploaded_count: usize,
    stats: TextureStats,
}

impl TextureCache {
    pub(crate) fn new(budget: usize, upload_bytes_per_pass: usize) -> Self {
        Self {
            entries: KeptImages::new(budget),
            upload_bytes_per_pass,
            uploaded_bytes: 0,
            uploaded_count: 0,
            stats: TextureStats::default(),
        }
    }

    /// A new pass: its upload budget is whole again.
    pub(crate) fn begin_pass(&mut self) {
        self.entries.begin_pass();
        self.uploaded_bytes = 0;
        self.uploaded_count = 0;
    }

    /// The texture for `key` and its thumbnail, marked most recently drawn;
    /// for an animation, the frame shown at `now` (since the app began:
    /// every copy of an animation is at the same frame) and how long until
    /// the next.
    pub(crate) fn get(
        &mut self,
        key: &TextureKey,
        now: Duration,
    ) -> Option<(SizedTexture, &Thumbnail, Option<Duration>)> {
        self.entries.show(key).map(|texture| {
            let (frame, next) = match &texture.thumbnail.animation {
                Some(animation) if texture.frames.len() > 1 => {
                    let (frame, next) = animation.frame_at(now);
                    (frame, Some(next))
                }
                _ => (0, None),
            };
            let handle = texture.frames.get(frame).unwrap_or(&texture.frames[0]);
            (SizedTexture::from_handle(handle), &texture.thumbnail, next)
        })
    }

    /// The side of the largest square whose RGBA fits the budget: an
    /// image of any shape fitted inside it can be a texture.
    pub(crate) fn largest_side(&self) -> usize {
        ((self.entries.budget() / 4) as f64).sqrt() as usize
    }

    /// Whether `key` has a texture (without marking it).
    pub(crate) fn contains(&self, key: &TextureKey) -> bool {
        self.entries.contains(key)
    }

    /// The thumbnail drawn for `url` at `target`, with any texture options,
    /// without marking it.
    pub(crate) fn thumbnail(&self, url: &str, target: TargetSize) -> Option<&Thumbnail> {
        self.entries
            .iter()
            .find(|(key, _)| *key.url == *url && key.target == target)
            .map(|(_, texture)| &texture.thumbnail)
    }

    /// Makes `thumbnail` the texture for `key` (every frame of an
    /// animation, or its first alone if all of them would not fit in the
    /// budget), freeing least recently drawn textures to stay within the
    /// budget.
    pub(crate) fn upload(
        &mut self,
        ctx: &Context,
        key: TextureKey,
        thumbnail: &Thumbnail,
    ) -> Result<(), UploadRefused> {
        // An animation over the budget is its first frame.
        let budget = self.entries.budget();
        let animated = thumbnail.animation.is_some() && thumbnail.cost() <= budget;
        let bytes = if animated {
            thumbnail.cost()
        } else {
            thumbnail.pixels.len()
        };
        if bytes > budget {
            return Err(UploadRefused::Unusable(Error::TooLarge {
                url: key.url.to_string(),
                what: format!(
                    "its {}x{} thumbnail needs {bytes} bytes of texture, over the {}-byte \
                     texture budget",
                    thumbnail.width, thumbnail.height, budget
                ),
                setting: "max_texture_bytes",
            }));
        }
        // An animation goes in one pass, as one texture would, however
        // large: its frames are drawn together.
        if self.uploaded_count > 0 && self.uploaded_bytes + bytes > self.upload_bytes_per_pass {
            self.stats.deferred += 1;
            return Err(UploadRefused::BudgetSpent);
        }
        let max_side = ctx.input(|input| input.max_texture_side);
        // Its later frames, if they are all images of the thumbnail's size
        // (the decoder made them so; a decoder of the app's own is
        // checked): if not, the first frame alone.
        let later_frames =
            thumbnail
                .animation
                .as_ref()
                .filter(|_| animated)
                .and_then(|animation| {
                    animation.frames()[1..]
                        .iter()
                        .map(|frame| {
                            let frame = Thumbnail {
                                pixels: Arc::clone(&frame.pixels),
                                animation: None,
                                ..thumbnail.clone()
                            };
                            color_image(&frame, max_side).ok()
                        })
                        .collect::<Option<Vec<ColorImage>>>()
                });
        let thumbnail = &match (&thumbnail.animation, &later_frames) {
            (Some(_), None) => Thumbnail {
                animation: None,
                ..thumbnail.clone()
            },
            _ => thumbnail.clone(),
        };
        let bytes = thumbnail.cost();
        let image = color_image(thumbnail, max_side).map_err(|reason| {
            UploadRefused::Unusable(Error::Decode {
                url: key.url.to_string(),
                reason,
            })
        })?;
        let name = format!(
            "thumbpipe:{}@{}x{}",
            key.url, key.target.width, key.target.height
        );
        let mut frames = vec![ctx.load_texture(&name, image, key.options)];
        for (index, image) in later_frames.into_iter().flatten().enumerate() {
            frames.push(ctx.load_texture(format!("{name}#{}", index + 1), image, key.options));
        }
        self.uploaded_bytes += bytes;
        self.uploaded_count += 1;
        self.stats.uploads += frames.len() as u64;
        let texture = Texture {
            frames,
            thumbnail: thumbnail.clone(),
        };
        self.entries.insert(key, texture, bytes);
        self.count_textures();
        Ok(())
    }

    /// Counts the live textures (an animation's frames each).
    fn count_textures(&mut self) {
        self.stats.textures = self.entries.iter().map(|(_, t)| t.frames.len()).sum();
        let kept = self.entries.stats();
        (self.stats.bytes, self.stats.peak_bytes, self.stats.evicted) =
            (kept.bytes, kept.peak_bytes, kept.evicted);
    }

    /// Frees every texture of `url`.
    pub(crate) fn forget_url(&mut self, url: &str) {
        self.retain(|key| *key.url != *url);
    }

    /// Frees every texture.
    pub(crate) fn clear(&mut self) {
        self.retain(|_| false);
    }

    fn retain(&mut self, keep: impl Fn(&TextureKey) -> bool) {
        self.entries.retain(keep);
        self.count_textures();
    }

    pub(crate) fn stats(&self) -> TextureStats {
        self.stats
    }
}

/// The thumbnail as an egui image, or why it cannot be one: a decoder of
/// the app's own may return pixels that do not match the size, and a GPU
/// refuses textures over its largest side.
pub(crate) fn color_image(thumbnail: &Thumbnail, max_side: usize) -> Result<ColorImage, String> {
    if let Some(reason) = not_rgba(thumbnail) {
        return Err(reason);
    }
    let (width, height) = (thumbnail.width as usize, thumbnail.height as usize);
    if width > max_side || height > max_side {
        return Err(format!(
            "its thumbnail is {width}x{height}, over the GPU's largest texture side {max_side} \
             (draw it smaller)"
        ));
    }
    let (source_width, source_height) = thumbnail.display_size();
    Ok(
        ColorImage::from_rgba_unmultiplied([width, height], &thumbnail.pixels)
            .with_source_size(::egui::vec2(source_width as f32, source_height as f32)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thumbnail(side: u32) -> Thumbnail {
        Thumbnail {
            url: "http://x/".into(),
            width: side,
            height: side,
            pixels: vec![255; (side * side * 4) as usize].into(),
            source_size: (side, side),
            animation: None,
        }
    }

    fn key(name: &str) -> TextureKey {
        TextureKey {
            url: name.into(),
            target: TargetSize::square(64),
            options: TextureOptions::LINEAR,
        }
    }

    #[test]
    fn the_budget_frees_the_least_recently_drawn_texture() {
        let ctx = Context::default();
        // Room for three 16x16 textures (1 KiB each).
        let mut cache = TextureCache::new(3 * 1024, usize::MAX);
        for name in ["a", "b", "c"] {
            cache.begin_pass();
            assert!(cache.upload(&ctx, key(name), &thumbnail(16)).is_ok());
        }
        cache.begin_pass();
        assert!(cache.get(&key("a"), Duration::ZERO).is_some());
        cache.upload(&ctx, key("d"), &thumbnail(16)).unwrap();
        assert!(
            cache.get(&key("b"), Duration::ZERO).is_none(),
            "b was drawn least recently"
        );
        for name in ["a", "c", "d"] {
            assert!(cache.get(&key(name), Duration::ZERO).is_some(), "{name}");
        }
        let stats = cache.stats();
        assert_eq!(
            (stats.textures, stats.bytes, stats.evicted),
            (3, 3 * 1024, 1)
        );
        assert!(stats.peak_bytes <= 3 * 1024);
    }

    #[test]
    fn textures_drawn_in_this_pass_are_never_freed_to_make_room() {
        let ctx = Context::default();
        // Room for one 16x16 texture; a screen that needs two goes over the
        // budget for as long as it shows both, instead of thrashing.
        let mut cache = TextureCache::new(1024, usize::MAX);
        cache.begin_pass();
        cache.upload(&ctx, key("a"), &thumbnail(16)).unwrap();
        cache.upload(&ctx, key("b"), &thumbnail(16)).unwrap();
        cache.begin_pass();
        assert!(
            cache.get(&key("a"), Duration::ZERO).is_some()
                && cache.get(&key("b"), Duration::ZERO).is_some()
        );
        assert_eq!((cache.stats().textures, cache.stats().evicted), (2, 0));
        // Once a pass draws only one, the other goes at the next upload.
        cache.begin_pass();
        assert!(cache.get(&key("b"), Duration::ZERO).is_some());
        cache.upload(&ctx, key("c"), &thumbnail(16)).unwrap();
        assert!(cache.get(&key("a"), Duration::ZERO).is_none());
        assert_eq!(cache.stats().evicted, 1);
    }

    #[test]
    fn a_pass_uploads_within_its_budget_and_always_at_least_one() {
        let ctx = Context::default();
        let mut cache = TextureCache::new(usize::MAX, 2 * 1024);
        // A texture larger than the pass budget still goes, alone.
        assert!(cache.upload(&ctx, key("big"), &thumbnail(32)).is_ok());
        assert!(matches!(
            cache.upload(&ctx, key("a"), &thumbnail(16)),
            Err(UploadRefused::BudgetSpent)
        ));
        cache.begin_pass();
        assert!(cache.upload(&ctx, key("a"), &thumbnail(16)).is_ok());
        assert!(cache.upload(&ctx, key("b"), &thumbnail(16)).is_ok());
        assert!(matches!(
            cache.upload(&ctx, key("c"), &thumbnail(16)),
            Err(UploadRefused::BudgetSpent)
        ));
        assert_eq!((cache.stats().uploads, cache.stats().deferred), (3, 2));
    }

    #[test]
    fn malformed_or_oversized_thumbnails_are_refused_not_panicked_on() {
        let ctx = Context::default();
        let mut cache = TextureCache::new(1024, usize::MAX);
        let mut short = thumbnail(16);
        short.pixels = vec![0; 10].into();
        assert!(matches!(
            cache.upload(&ctx, key("short"), &short),
            Err(UploadRefused::Unusable(error)) if error.to_string().contains("10 bytes")
        ));
        assert!(matches!(
            cache.upload(&ctx, key("big"), &thumbnail(64)),
            Err(UploadRefused::Unusable(error)) if error.to_string().contains("config.max_texture_bytes")
        ));
        assert!(color_image(&thumbnail(4), 2).is_err());
        assert_eq!(cache.stats().textures, 0);
    }

    /// A 16x16 animation of three frames shown 100, 200 and 300 ms, each
    /// all grey `frame * 100`.
    fn animation() -> Thumbnail {
        let frames = (0..3u8)
            .map(|frame| crate::thumbnail::AnimationFrame {
                pixels: vec![frame * 100; 16 * 16 * 4].into(),
                delay: Duration::from_millis(100 * (u64::from(frame) + 1)),
            })
            .collect::<Vec<_>>();
        Thumbnail {
            pixels: Arc::clone(&frames[0].pixels),
            animation: crate::thumbnail::Animation::new(frames).map(Arc::new),
            ..thumbnail(16)
        }
    }

    #[test]
    fn an_animation_is_a_texture_a_frame_and_shows_the_frame_of_the_moment() {
        let ctx = Context::default();
        let mut cache = TextureCache::new(usize::MAX, usize::MAX);
        cache.upload(&ctx, key("a"), &animation()).unwrap();
        let stats = cache.stats();
        assert_eq!(
            (stats.textures, stats.uploads, stats.bytes),
            (3, 3, 3 * 1024)
        );
        let mut shown = |millis| {
            let (texture, _, next) = cache.get(&key("a"), Duration::from_millis(millis)).unwrap();
            (texture.id, next.map(|next| next.as_millis()))
        };
        let (first, next) = shown(0);
        assert_eq!(next, Some(100));
        let (second, next) = shown(150);
        assert_eq!(next, Some(150));
        let (third, next) = shown(599);
        assert_eq!(next, Some(1));
        assert!(first != second && second != third && first != third);
        // It loops.
        assert_eq!(shown(650), (first, Some(50)));
        // A still image has no next frame.
        cache.upload(&ctx, key("b"), &thumbnail(16)).unwrap();
        assert_eq!(
            cache.get(&key("b"), Duration::from_secs(5)).unwrap().2,
            None
        );
    }

    #[test]
    fn an_animation_over_the_budget_is_its_first_frame() {
        let ctx = Context::default();
        // Room for two frames, not three.
        let mut cache = TextureCache::new(2 * 1024, usize::MAX);
        cache.upload(&ctx, key("a"), &animation()).unwrap();
        let stats = cache.stats();
        assert_eq!((stats.textures, stats.bytes), (1, 1024));
        let (_, thumbnail, next) = cache.get(&key("a"), Duration::from_millis(150)).unwrap();
        assert_eq!((thumbnail.animation.is_none(), next), (true, None));
        assert_eq!(thumbnail.pixels[0], 0, "the first frame");
    }

    #[test]
    fn forgetting_a_url_frees_all_its_textures() {
        let ctx = Context::default();
        let mut cache = TextureCache::new(usize::MAX, usize::MAX);
        let mut large = key("a");
        large.target = TargetSize::square(128);
        cache.upload(&ctx, key("a"), &thumbnail(16)).unwrap();
        cache.upload(&ctx, large, &thumbnail(16)).unwrap();
        cache.upload(&ctx, key("b"), &thumbnail(16)).unwrap();
        cache.forget_url("a");
        assert_eq!((cache.stats().textures, cache.stats().bytes), (1, 1024));
        cache.clear();
        assert_eq!((cache.stats().textures, cache.stats().bytes), (0, 0));
    }
}
