//! The rows' images, for a toolkit whose image is made from a thumbnail at
//! once and whose view draws from `&self` (iced's `image::Handle`): a
//! [`ListFront`] with the images it made kept under a byte budget
//! ([`KeptImages`]), the ones a view made waiting in [`MadeInView`], and
//! what a row shows. A door for such a toolkit is this, its image
//! ([`ToolkitImage`]), its wake and its public names.
//!
//! Owned by that door and used on the UI thread only. It owns the
//! pipeline, so dropping it cancels every load.

use std::hash::Hash;
use std::sync::Arc;

use super::kept::{KeptImages, KeptStats, MadeInView, not_rgba};
use super::{Held, ListFront};
use crate::coast::{CoastModel, CoastPrediction};
use crate::error::Error;
use crate::request::{Priority, TargetSize};
use crate::thumbnail::Thumbnail;

/// A toolkit's image of a thumbnail, made on the UI thread from pixels
/// already checked to be the thumbnail's RGBA ([`not_rgba`]).
pub(crate) trait ToolkitImage: Clone {
    fn from_thumbnail(thumbnail: &Thumbnail) -> Self;
}

/// An image's key: the URL and size it was made for.
pub(crate) type ImageKey = (Arc<str>, TargetSize);

/// What a row shows.
pub(crate) enum RowImage<'a, I> {
    Shown(I),
    Loading,
    Failed(&'a Error),
    /// Not asked for in this pass or the last.
    NotShown,
}

/// A list's rows and the toolkit's images of them.
pub(crate) struct RowImages<K, I> {
    list: ListFront<K>,
    kept: KeptImages<ImageKey, I>,
    made_in_view: MadeInView<ImageKey, I>,
}

impl<K: Hash + Eq + Clone, I: ToolkitImage> RowImages<K, I> {
    /// The images of `list`'s rows, kept under `budget` bytes.
    pub(crate) fn new(list: ListFront<K>, budget: usize) -> Self {
        Self {
            list,
            kept: KeptImages::new(budget),
            made_in_view: MadeInView::default(),
        }
    }

    /// The pipeline the rows are loaded by.
    pub(crate) fn pipeline(&self) -> &crate::Pipeline<K> {
        &self.list.pipeline
    }

    /// After a wake: once a list that flew past rows has been still for a
    /// moment, a pass of the rows in view (what the coast asked for
    /// elsewhere cancelled); otherwise the images of what arrived.
    pub(crate) fn update(&mut self) {
        self.made_in_view.keep_in(&mut self.kept);
        let at_rest = self.list.rows_at_rest();
        if at_rest.is_empty() {
            return self.receive();
        }
        for (row, url, target) in at_rest {
            self.request(row, &url, target, Priority::Visible);
        }
        self.end_pass();
    }

    /// Makes the images of the thumbnails that arrived, and takes the
    /// errors a request gets at once (which wake no one). A row already
    /// showing its image (found decoded when asked for) keeps it.
    fn receive(&mut self) {
        for arrived in self.list.receive() {
            let key: ImageKey = (arrived.url, arrived.target);
            if self.kept.peek(&key).is_none() {
                self.make(&arrived.row, key, &arrived.thumbnail);
            }
        }
    }

    /// Asks for `row`'s thumbnail of `url` in `target` at `priority`; a
    /// thumbnail already decoded becomes the row's image at once.
    pub(crate) fn request(&mut self, row: K, url: &str, target: TargetSize, priority: Priority) {
        // A pass begins with its first row, whatever that row shows.
        self.open_pass();
        self.list.ask(&row, url, target);
        // The row's image, kept (and marked shown in this pass), or made
        // now from what is held for it: never one drawn uncounted. Keyed
        // by the row's own copy of its URL, which `ask` just made.
        let url_kept = self.list.shown(&row).map(|(url, _)| Arc::clone(url));
        let key: ImageKey = (url_kept.unwrap_or_else(|| Arc::from(url)), target);
        if self.kept.show(&key).is_none()
            && let Held::Pixels(thumbnail) = self.list.held(&row, url, target)
        {
            self.make(&row, key, &thumbnail);
        }
        if priority == Priority::Visible {
            self.list.request_shown(&row, url, target);
        } else {
            self.list.pipeline.request(row, url, target, priority);
        }
    }

    /// Ends a pass: rows not asked for since the last one are cancelled
    /// and forgotten, their images kept only as far as the budget allows.
    pub(crate) fn end_pass(&mut self) {
        // A pass that asked for no row begins here: thumbnails taken now
        // are for this pass's rows.
        self.open_pass();
        self.list.end_pass();
        self.list.clear_coast();
        self.receive();
        self.kept.close_pass();
    }

    /// What `row` shows, from `&self`: its kept image, or one made now
    /// from a thumbnail no pass has taken yet (the pipeline's cache), the
    /// same one every view until the next pass keeps it.
    pub(crate) fn get(&self, row: &K) -> RowImage<'_, I> {
        let Some((url, target)) = self.list.shown(row) else {
            return RowImage::NotShown;
        };
        let key = (Arc::clone(url), target);
        if let Some(image) = self.kept.peek(&key) {
            return RowImage::Shown(image.clone());
        }
        match self.list.held(row, url, target) {
            Held::Failed(error) => RowImage::Failed(error),
            Held::Pixels(thumbnail) => self
                .made_in_view
                .image(&key, || {
                    let bytes = thumbnail.pixels.len();
                    not_rgba(&thumbnail)
                        .is_none()
                        .then(|| (I::from_thumbnail(&thumbnail), bytes))
                })
                .map_or(RowImage::Loading, RowImage::Shown),
            Held::Nothing => RowImage::Loading,
        }
    }

    /// Follows a coast for this pass (see `ListFront::follow_coast`),
    /// after keeping the images the last view made.
    pub(crate) fn follow<M: CoastModel, S: AsRef<str>>(
        &mut self,
        coast: &CoastPrediction<M>,
        rests: bool,
        target: TargetSize,
        row_at: impl FnMut(usize) -> (K, S),
    ) {
        self.open_pass();
        let kept = &self.kept;
        self.list
            .follow_coast(coast, rests, target, row_at, |url, target| {
                kept.peek(&(Arc::from(url), target)).is_some()
            });
    }

    /// Asks for `row` ahead of need, unless a followed coast asks for the
    /// rows beyond its rest itself.
    pub(crate) fn prefetch(&mut self, row: K, url: &str, target: TargetSize) {
        if !self.list.is_coasting() {
            self.request(row, url, target, Priority::Prefetch);
        }
    }

    /// Forgets `url` at every level: its images, its cache entries, its
    /// loads.
    pub(crate) fn forget(&mut self, url: &str) {
        self.kept.retain(|(kept, _)| &**kept != url);
        self.made_in_view.retain(|(kept, _)| &**kept != url);
        self.list.forget(url);
    }

    /// Forgets every image at every level.
    pub(crate) fn forget_all(&mut self) {
        self.kept.retain(|_| false);
        self.made_in_view.retain(|_| false);
        self.list.forget_all();
    }

    /// The images kept, and their counters.
    pub(crate) fn kept_stats(&self) -> (usize, KeptStats) {
        (self.kept.len(), self.kept.stats())
    }

    /// Opens a pass, unless one is open, after keeping the images the last
    /// view made (they are the last pass's rows').
    fn open_pass(&mut self) {
        self.made_in_view.keep_in(&mut self.kept);
        self.kept.open_pass();
    }

    /// Makes `row`'s image, `key`'s, from `thumbnail`; a thumbnail that
    /// cannot be one is the row's error.
    fn make(&mut self, row: &K, key: ImageKey, thumbnail: &Thumbnail) {
        if let Err(error) = make(&mut self.kept, key, thumbnail) {
            self.list.fail(row, error);
        }
    }
}

/// `key`'s image in `kept`: the one kept, or one made from `thumbnail`
/// and kept; pixels that are not the thumbnail's RGBA are an error.
pub(crate) fn make<I: ToolkitImage>(
    kept: &mut KeptImages<ImageKey, I>,
    key: ImageKey,
    thumbnail: &Thumbnail,
) -> Result<I, Error> {
    if let Some(image) = kept.show(&key) {
        return Ok(image.clone());
    }
    if let Some(reason) = not_rgba(thumbnail) {
        return Err(Error::Decode {
            url: key.0.to_string(),
            reason,
        });
    }
    let image = I::from_thumbnail(thumbnail);
    kept.insert(key, image.clone(), thumbnail.pixels.len());
    Ok(image)
}
