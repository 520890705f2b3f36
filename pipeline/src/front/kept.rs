//! Kept images: the UI side's level of the cache, for any toolkit. A
//! toolkit's image made from a thumbnail (egui's textures, iced's
//! `image::Handle`) is kept by key across passes, so the toolkit uploads
//! it once, under a byte budget with the least recently shown freed
//! first, but never one shown in the current pass: two images that do not
//! fit the budget together would free each other every pass. The images a
//! view made with only `&self` (iced's) wait in [`MadeInView`] until the
//! next pass keeps them. And the one check of a thumbnail's pixels before
//! a toolkit is given them.
//!
//! Owned by egui's textures (`egui/textures.rs`) or the rows' images
//! (`front/row_images.rs`) and used on the UI thread only; what freeing
//! an image means (a texture dropped, a handle no longer drawn) is the
//! toolkit's. Plain data: it ends when its owner drops it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};

use lru::LruCache;

use crate::thumbnail::Thumbnail;

/// Counters of kept images.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeptStats {
    /// Their bytes now.
    pub(crate) bytes: usize,
    /// The most bytes kept once the budget was applied ([`KeptImages::trim`]):
    /// past the budget only by images of one pass.
    pub(crate) peak_bytes: usize,
    /// Images freed to stay under the budget.
    pub(crate) evicted: u64,
    /// Images kept under a key that had none.
    pub(crate) inserted: u64,
}

struct Kept<I> {
    image: I,
    bytes: usize,
    /// The pass that last showed it.
    shown_in: u64,
}

/// A toolkit's images `I` by key `K`, least recently shown first out.
pub(crate) struct KeptImages<K, I> {
    entries: LruCache<K, Kept<I>>,
    budget: usize,
    /// The current pass, counted by [`KeptImages::begin_pass`].
    pass: u64,
    /// Whether a pass is open ([`KeptImages::open_pass`]): nothing is
    /// freed until it closes.
    open: bool,
    stats: KeptStats,
}

impl<K: Hash + Eq + Clone, I> KeptImages<K, I> {
    /// Images kept within `budget` bytes.
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            entries: LruCache::unbounded(),
            budget,
            pass: 0,
            open: false,
            stats: KeptStats::default(),
        }
    }

    /// A new pass: the images shown in the last one may be freed again.
    /// For a toolkit whose passes are its frames (egui).
    pub(crate) fn begin_pass(&mut self) {
        self.pass += 1;
    }

    /// Opens a pass, unless one is open: for a toolkit whose pass begins
    /// with its first row's request (iced), so that the images of the last
    /// pass's rows are kept until then (images arriving between passes are
    /// for them). Until [`KeptImages::close_pass`], nothing is freed: a row
    /// of the last pass not yet asked for may be in this one too.
    #[cfg_attr(not(feature = "iced"), allow(dead_code))]
    pub(crate) fn open_pass(&mut self) {
        if !self.open {
            self.begin_pass();
            self.open = true;
        }
    }

    /// Closes the pass (a pass that asked for no row opens and closes
    /// here): the images it did not show are freed, least recently shown
    /// first, until the budget holds.
    #[cfg_attr(not(feature = "iced"), allow(dead_code))]
    pub(crate) fn close_pass(&mut self) {
        self.open_pass();
        self.trim();
        self.open = false;
    }

    /// The budget, in bytes.
    #[cfg_attr(not(feature = "egui"), allow(dead_code))]
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// `key`'s image, marked as shown in this pass (most recently shown).
    pub(crate) fn show(&mut self, key: &K) -> Option<&I> {
        let pass = self.pass;
        self.entries.get_mut(key).map(|kept| {
            kept.shown_in = pass;
            &kept.image
        })
    }

    /// Whether `key` has an image (without marking it).
    pub(crate) fn contains(&self, key: &K) -> bool {
        self.entries.contains(key)
    }

    /// `key`'s image, without marking it: for drawing what a pass showed.
    #[cfg_attr(not(feature = "iced"), allow(dead_code))]
    pub(crate) fn peek(&self, key: &K) -> Option<&I> {
        self.entries.peek(key).map(|kept| &kept.image)
    }

    /// Every image kept, most recently shown first (without marking any).
    #[cfg_attr(not(feature = "egui"), allow(dead_code))]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &I)> {
        self.entries.iter().map(|(key, kept)| (key, &kept.image))
    }

    /// Keeps `image` of `bytes` for `key`, shown in this pass (replacing
    /// any `key` had), then frees the least recently shown images of other
    /// passes until the budget holds; while a pass is open, nothing is
    /// freed until it closes.
    pub(crate) fn insert(&mut self, key: K, image: I, bytes: usize) {
        let kept = Kept {
            image,
            bytes,
            shown_in: self.pass,
        };
        match self.entries.put(key, kept) {
            Some(old) => self.stats.bytes -= old.bytes,
            None => self.stats.inserted += 1,
        }
        self.stats.bytes += bytes;
        if !self.open {
            self.trim();
        }
    }

    /// Frees the least recently shown images until the budget holds or
    /// every image left was shown in this pass.
    fn trim(&mut self) {
        while self.stats.bytes > self.budget {
            if self
                .entries
                .peek_lru()
                .is_none_or(|(_, oldest)| oldest.shown_in == self.pass)
            {
                break;
            }
            let Some((_, freed)) = self.entries.pop_lru() else {
                break;
            };
            self.stats.bytes -= freed.bytes;
            self.stats.evicted += 1;
        }
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.stats.bytes);
    }

    /// Frees every image `keep` says no to.
    pub(crate) fn retain(&mut self, keep: impl Fn(&K) -> bool) {
        let gone: Vec<K> = self
            .entries
            .iter()
            .filter(|(key, _)| !keep(key))
            .map(|(key, _)| key.clone())
            .collect();
        for key in &gone {
            if let Some(kept) = self.entries.pop(key) {
                self.stats.bytes -= kept.bytes;
            }
        }
    }

    /// How many images are kept.
    #[cfg_attr(not(feature = "iced"), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn stats(&self) -> KeptStats {
        self.stats
    }
}

/// Images a toolkit's view made, with `&self` (iced's `view`), from what
/// the levels in front of the pipeline hold, before a pass or an update
/// took it: a folder's first screen, read while the window opened, is
/// drawn by the first view. Each is made once, so every view draws the
/// same image (the toolkit uploads it once), and is kept with the others,
/// under the budget, by the door's next call with `&mut`
/// ([`MadeInView::keep_in`]); until then it is not counted.
#[cfg_attr(not(feature = "iced"), allow(dead_code))]
pub(crate) struct MadeInView<K, I>(Mutex<HashMap<K, (I, usize)>>);

impl<K, I> Default for MadeInView<K, I> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

#[cfg_attr(not(feature = "iced"), allow(dead_code))]
impl<K: Hash + Eq + Clone, I: Clone> MadeInView<K, I> {
    /// `key`'s image made in a view, or made now by `make` (the image and
    /// its bytes) if none was; `None` if `make` makes none.
    pub(crate) fn image(&self, key: &K, make: impl FnOnce() -> Option<(I, usize)>) -> Option<I> {
        let mut made = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((image, _)) = made.get(key) {
            return Some(image.clone());
        }
        let (image, bytes) = make()?;
        made.insert(key.clone(), (image.clone(), bytes));
        Some(image)
    }

    /// Keeps the images made in views in `kept`, each shown in its current
    /// pass (what a view draws is the last pass's rows'), unless it has
    /// one for that key already.
    pub(crate) fn keep_in(&mut self, kept: &mut KeptImages<K, I>) {
        let made = self.0.get_mut().unwrap_or_else(PoisonError::into_inner);
        for (key, (image, bytes)) in made.drain() {
            if !kept.contains(&key) {
                kept.insert(key, image, bytes);
            }
        }
    }

    /// Drops the images made in views that `keep` says no to.
    pub(crate) fn retain(&mut self, keep: impl Fn(&K) -> bool) {
        let made = self.0.get_mut().unwrap_or_else(PoisonError::into_inner);
        made.retain(|key, _| keep(key));
    }
}

/// Why `thumbnail`'s pixels are not its size's 8-bit RGBA, if they are not
/// (a decoder of the app's own may return anything): a toolkit given them
/// would panic or draw garbage.
pub(crate) fn not_rgba(thumbnail: &Thumbnail) -> Option<String> {
    let (width, height) = (thumbnail.width as usize, thumbnail.height as usize);
    let expected = width.checked_mul(height).and_then(|n| n.checked_mul(4));
    (expected.is_none_or(|n| n == 0 || n != thumbnail.pixels.len())).then(|| {
        format!(
            "the decoder returned {} bytes for a {width}x{height} RGBA thumbnail",
            thumbnail.pixels.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_least_recently_shown_is_freed_first_and_never_one_of_this_pass() {
        let mut kept: KeptImages<&str, u8> = KeptImages::new(3);
        kept.begin_pass();
        for (i, key) in ["a", "b", "c"].into_iter().enumerate() {
            kept.insert(key, i as u8, 1);
        }
        kept.begin_pass();
        assert_eq!(kept.show(&"a"), Some(&0));
        kept.insert("d", 3, 1);
        // b was the least recently shown: freed as d came in.
        assert!(!kept.contains(&"b") && kept.contains(&"a"));
        assert_eq!((kept.len(), kept.stats().evicted), (3, 1));
        // Shown in this pass, a, c and d stay though over the budget.
        assert_eq!(kept.show(&"c"), Some(&2));
        kept.insert("e", 4, 2);
        assert_eq!(kept.len(), 4, "a, c, d and e are all of this pass");
        assert_eq!((kept.stats().bytes, kept.stats().peak_bytes), (5, 5));
        // The next pass frees down to the budget, least recently shown
        // first: a, then d.
        kept.begin_pass();
        kept.trim();
        assert_eq!(kept.stats().bytes, 3);
        assert!(kept.contains(&"c") && kept.contains(&"e"));
        assert_eq!(kept.stats().evicted, 3);
        kept.retain(|key| *key != "e");
        assert_eq!((kept.len(), kept.stats().bytes), (1, 1));
    }

    #[test]
    fn nothing_is_freed_while_a_pass_is_open() {
        let mut kept: KeptImages<&str, u8> = KeptImages::new(1);
        kept.open_pass();
        kept.insert("a", 0, 1);
        kept.close_pass();
        kept.insert("b", 1, 1);
        assert_eq!(kept.len(), 2, "arrivals between passes are the last pass's");
        kept.open_pass();
        kept.insert("c", 2, 1);
        assert_eq!(kept.len(), 3, "nothing is freed while a pass is open");
        assert_eq!(kept.show(&"b"), Some(&1));
        kept.close_pass();
        assert!(kept.contains(&"b") && kept.contains(&"c") && !kept.contains(&"a"));
        assert_eq!(kept.stats().evicted, 1);
    }

    #[test]
    fn pixels_not_of_the_size_are_named() {
        let thumbnail = |width, height, len| Thumbnail {
            url: Arc::from("u"),
            width,
            height,
            pixels: vec![0; len].into(),
            source_size: (width, height),
            animation: None,
        };
        assert_eq!(not_rgba(&thumbnail(2, 2, 16)), None);
        assert!(not_rgba(&thumbnail(2, 2, 15)).is_some());
        assert!(not_rgba(&thumbnail(0, 2, 0)).is_some());
        assert!(not_rgba(&thumbnail(u32::MAX, u32::MAX, 4)).is_some());
    }

    #[test]
    fn an_image_made_in_a_view_is_made_once_and_kept_by_the_next_pass() {
        let mut made: MadeInView<&str, u8> = MadeInView::default();
        let mut calls = 0;
        let mut make = |image| {
            calls += 1;
            Some((image, 2))
        };
        assert_eq!(made.image(&"a", || make(1)), Some(1));
        // The same image each view: not made again.
        assert_eq!(made.image(&"a", || make(9)), Some(1));
        assert_eq!(made.image(&"b", || None), None);
        assert_eq!(calls, 1);
        // Kept with the others, counted, unless one was kept meanwhile.
        let mut kept: KeptImages<&str, u8> = KeptImages::new(100);
        kept.insert("c", 3, 1);
        made.image(&"c", || Some((7, 2)));
        made.keep_in(&mut kept);
        assert_eq!((kept.peek(&"a"), kept.peek(&"c")), (Some(&1), Some(&3)));
        assert_eq!((kept.len(), kept.stats().bytes), (2, 3));
        // Moved, not copied: the next view makes anew.
        assert_eq!(made.image(&"a", || Some((5, 2))), Some(5));
        made.retain(|_| false);
        made.keep_in(&mut kept);
        assert_eq!(kept.len(), 2);
    }
}
