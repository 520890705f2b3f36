//! The UI side's level for iced: thumbnails made into `image::Handle`s
//! once, kept across views (a handle's id is what iced's renderer caches
//! its upload by, so a new handle per view would upload again and hold
//! both), under a byte budget with the least recently shown freed first.
//!
//! Owned by [`super::Thumbnails`] and used on the UI thread only. A freed
//! handle's pixels are freed when iced's renderer stops drawing it (it
//! trims what a frame did not use); the thumbnail stays in the pipeline's
//! cache and comes back as a new handle when a row asks for it.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use iced_core::image::Handle;
use lru::LruCache;

use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// A handle's identity: the URL and the box its thumbnail was made for.
pub(super) type HandleKey = (Arc<str>, TargetSize);

/// Counters of the handles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandleStats {
    /// Handles kept now.
    pub handles: usize,
    /// Their RGBA bytes.
    pub bytes: usize,
    /// The most bytes kept at once.
    pub peak_bytes: usize,
    /// Handles made.
    pub made: u64,
    /// Handles freed to stay under the budget.
    pub evicted: u64,
}

pub(super) struct Handles {
    kept: LruCache<HandleKey, (Handle, usize)>,
    max_bytes: usize,
    stats: HandleStats,
}

impl Handles {
    pub(super) fn new(max_bytes: usize) -> Self {
        Self {
            kept: LruCache::unbounded(),
            max_bytes,
            stats: HandleStats::default(),
        }
    }

    /// The handle kept for `key`, marked as the most recently shown.
    pub(super) fn get(&mut self, key: &HandleKey) -> Option<Handle> {
        self.kept.get(key).map(|(handle, _)| handle.clone())
    }

    /// Marks `key`'s handle, if kept, as the most recently shown.
    pub(super) fn touch(&mut self, key: &HandleKey) {
        self.kept.promote(key);
    }

    /// `key`'s handle: the one kept, or one made from `thumbnail` (its
    /// first frame, for an animation), without copying its pixels. Then
    /// frees the least recently shown handles not `in_use` until the
    /// budget holds, or only those are left. A thumbnail whose pixels are
    /// not its size's RGBA (from a decoder of the app's) is an error,
    /// never a handle the renderer would fail on.
    pub(super) fn insert(
        &mut self,
        key: HandleKey,
        thumbnail: &Thumbnail,
        in_use: &HashSet<&HandleKey>,
    ) -> Result<Handle, Error> {
        if let Some(handle) = self.get(&key) {
            return Ok(handle);
        }
        let expected = u64::from(thumbnail.width) * u64::from(thumbnail.height) * 4;
        if expected == 0 || thumbnail.pixels.len() as u64 != expected {
            return Err(Error::Decode {
                url: key.0.to_string(),
                reason: format!(
                    "the decoder gave {} bytes for a {}x{} RGBA thumbnail ({expected} expected)",
                    thumbnail.pixels.len(),
                    thumbnail.width,
                    thumbnail.height
                ),
            });
        }
        let pixels = Bytes::from_owner(Arc::clone(&thumbnail.pixels));
        let handle = Handle::from_rgba(thumbnail.width, thumbnail.height, pixels);
        let bytes = thumbnail.pixels.len();
        self.kept.put(key.clone(), (handle.clone(), bytes));
        self.stats.made += 1;
        self.stats.bytes += bytes;
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.stats.bytes);
        self.evict(Some(&key), in_use);
        Ok(handle)
    }

    /// Whether `extra` more bytes of handles would stay within the budget:
    /// then nothing is freed, and which handles are in use does not matter.
    pub(super) fn fits(&self, extra: usize) -> bool {
        self.stats.bytes.saturating_add(extra) <= self.max_bytes
    }

    /// Frees the least recently shown handles not `in_use` until the
    /// budget holds, or only those are left: the rows that left a list
    /// give their room back.
    pub(super) fn trim(&mut self, in_use: &HashSet<&HandleKey>) {
        self.evict(None, in_use);
    }

    /// Frees the least recently shown handles, neither `new` nor `in_use`,
    /// until the budget holds or only those are left.
    fn evict(&mut self, new: Option<&HandleKey>, in_use: &HashSet<&HandleKey>) {
        if self.stats.bytes <= self.max_bytes {
            return;
        }
        let mut over = self.stats.bytes - self.max_bytes;
        let mut freed = Vec::new();
        // Least recently shown first.
        for (key, (_, bytes)) in self.kept.iter().rev() {
            if over == 0 {
                break;
            }
            if Some(key) != new && !in_use.contains(key) {
                over = over.saturating_sub(*bytes);
                freed.push(key.clone());
            }
        }
        for key in freed {
            if let Some((_, bytes)) = self.kept.pop(&key) {
                self.stats.bytes -= bytes;
                self.stats.evicted += 1;
            }
        }
    }

    /// Frees every handle of `url`.
    pub(super) fn forget(&mut self, url: &str) {
        let gone: Vec<HandleKey> = self
            .kept
            .iter()
            .filter(|((kept, _), _)| &**kept == url)
            .map(|(key, _)| key.clone())
            .collect();
        for key in gone {
            if let Some((_, bytes)) = self.kept.pop(&key) {
                self.stats.bytes -= bytes;
            }
        }
    }

    /// Frees every handle.
    pub(super) fn clear(&mut self) {
        self.kept.clear();
        self.stats.bytes = 0;
    }

    pub(super) fn stats(&self) -> HandleStats {
        HandleStats {
            handles: self.kept.len(),
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thumbnail(url: &str, side: u32) -> Thumbnail {
        Thumbnail {
            url: Arc::from(url),
            width: side,
            height: side,
            pixels: vec![0; (side * side * 4) as usize].into(),
            source_size: (side, side),
            animation: None,
        }
    }

    fn key(url: &str) -> HandleKey {
        (Arc::from(url), TargetSize::square(64))
    }

    #[test]
    fn the_least_recently_shown_handles_not_in_use_are_freed_first() {
        // Three 16 KiB thumbnails fit.
        let mut handles = Handles::new(3 * 16 * 1024);
        let none = HashSet::new();
        let a = handles
            .insert(key("a"), &thumbnail("a", 64), &none)
            .unwrap();
        handles
            .insert(key("b"), &thumbnail("b", 64), &none)
            .unwrap();
        handles
            .insert(key("c"), &thumbnail("c", 64), &none)
            .unwrap();
        // `a` shown again: `b` is now the least recently shown.
        assert_eq!(handles.get(&key("a")).map(|h| h.id()), Some(a.id()));
        let c = key("c");
        let in_use = HashSet::from([&c]);
        handles
            .insert(key("d"), &thumbnail("d", 64), &in_use)
            .unwrap();
        assert!(handles.get(&key("b")).is_none());
        assert!(handles.get(&key("a")).is_some());
        let stats = handles.stats();
        assert_eq!(
            (stats.handles, stats.bytes, stats.evicted, stats.made),
            (3, 3 * 16 * 1024, 1, 4)
        );
    }

    #[test]
    fn handles_in_use_are_kept_over_the_budget() {
        let mut handles = Handles::new(16 * 1024);
        let (a, b) = (key("a"), key("b"));
        handles
            .insert(a.clone(), &thumbnail("a", 64), &HashSet::new())
            .unwrap();
        handles
            .insert(b.clone(), &thumbnail("b", 64), &HashSet::from([&a]))
            .unwrap();
        assert_eq!(handles.stats().handles, 2);
        assert_eq!(handles.stats().peak_bytes, 2 * 16 * 1024);
        // Neither in use any more: the next one makes room.
        handles
            .insert(key("c"), &thumbnail("c", 64), &HashSet::new())
            .unwrap();
        assert_eq!(handles.stats().handles, 1);
    }

    #[test]
    fn a_handle_is_made_once_and_shares_the_thumbnails_pixels() {
        let mut handles = Handles::new(1 << 20);
        let thumbnail = thumbnail("a", 8);
        let first = handles
            .insert(key("a"), &thumbnail, &HashSet::new())
            .unwrap();
        let again = handles
            .insert(key("a"), &thumbnail, &HashSet::new())
            .unwrap();
        assert_eq!(first.id(), again.id());
        assert_eq!(handles.stats().made, 1);
        let Handle::Rgba { pixels, .. } = first else {
            panic!("an RGBA handle");
        };
        assert_eq!(pixels.as_ptr(), thumbnail.pixels.as_ptr());
        handles.forget("a");
        assert_eq!((handles.stats().handles, handles.stats().bytes), (0, 0));
    }

    #[test]
    fn pixels_that_are_not_the_thumbnails_size_are_an_error() {
        let mut handles = Handles::new(1 << 20);
        let mut short = thumbnail("a", 8);
        short.pixels = vec![0; 10].into();
        let error = handles
            .insert(key("a"), &short, &HashSet::new())
            .unwrap_err();
        assert!(matches!(error, Error::Decode { .. }), "{error}");
        let mut empty = thumbnail("b", 8);
        empty.width = 0;
        assert!(handles.insert(key("b"), &empty, &HashSet::new()).is_err());
        assert_eq!(handles.stats().handles, 0);
    }
}
