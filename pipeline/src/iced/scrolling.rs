//! What a scroll asks for in an iced list: the coast a [`ScrollWatch`]
//! reads followed first in each pass (the rows where it will rest asked
//! for first, those it flies past not at all), and the rows just beyond
//! the view prefetched ([`PrefetchWindow`](super::PrefetchWindow)), so
//! that a row scrolled into view has been loading for a while: without
//! them, every row of a flick was asked for as it came into view and most
//! were dropped in flight as it left.
//!
//! Methods of [`Thumbnails`], called in `update` with the pass they
//! belong to.

use std::hash::Hash;

use super::{ScrollWatch, Thumbnails};
use crate::coast::{CoastModel, CoastPrediction};
use crate::request::TargetSize;

impl<K: Hash + Eq + Clone> Thumbnails<K> {
    /// Follows a coast for this pass: call it first in the pass, before the
    /// rows are asked for, with where the list's scroll will rest (`None`
    /// at rest does nothing). The rows where it rests are asked for at
    /// [`Priority::Destination`](crate::Priority::Destination), ahead of every other row; a row in view
    /// that will leave sooner than an image takes to arrive is not
    /// requested (it shows
    /// [`RowThumbnail::Loading`](super::RowThumbnail::Loading), or its
    /// image if one is decoded); a screen ahead is prefetched. `row_at` gives the key
    /// and URL of the row at an index (a grid's cell, numbered row by
    /// row). The prediction is made with a [`CoastModel`] of how the app's
    /// scrolls slow down: [`ScrollWatch`] makes it from the list's scroll
    /// messages. A row skipped is asked for once the list has been still
    /// for a moment: the subscription wakes for it, and
    /// [`Thumbnails::update`] asks.
    pub fn follow_coast<M: CoastModel, S: AsRef<str>>(
        &mut self,
        coast: Option<&CoastPrediction<M>>,
        target: TargetSize,
        row_at: impl FnMut(usize) -> (K, S),
    ) {
        if let Some(coast) = coast {
            self.rows.follow(coast, true, target, row_at);
        }
    }

    /// [`Thumbnails::follow_coast`] with what `scrolls` saw: call it first
    /// in the pass. While the scroll slows down as its model says (a
    /// system's momentum), the rows where it will rest are asked for
    /// first; while it is still driven by a hand, and where it will rest
    /// is not known, only the rows it flies past are skipped. Either way
    /// the rows in view are asked for once the list has been still for
    /// [`ScrollWatch::STILL_AFTER`].
    pub fn follow_scroll<S: AsRef<str>>(
        &mut self,
        scrolls: &ScrollWatch,
        target: TargetSize,
        row_at: impl FnMut(usize) -> (K, S),
    ) {
        if let Some(coast) = scrolls.predict() {
            let rests = scrolls.rests_steadily();
            self.rows.follow(&coast, rests, target, row_at);
        }
    }

    /// Asks for `row`'s thumbnail of `url` ahead of need, at
    /// [`Priority::Prefetch`](crate::Priority::Prefetch): call it in each pass for the rows a
    /// [`PrefetchWindow`](super::PrefetchWindow) gives (one screen beyond
    /// those in view, in the direction the list moves), after the rows in
    /// view ([`Thumbnails::request`] at [`Priority::Visible`](crate::Priority::Visible)) and before
    /// [`Thumbnails::end_pass`]: a local file's look-ups run in the order
    /// asked, and the rows in view come first. A prefetched row is kept
    /// loading while it is asked for, and cancelled at the end of a pass
    /// that does not (so is the pass [`Thumbnails::update`] makes once a
    /// coast is still, which asks for the rows in view alone); its handle,
    /// once made, counts in the byte budget as a row of its pass does.
    /// Asks for nothing while a coast followed in this pass rests
    /// somewhere: it asks for the screen beyond its rest itself.
    pub fn prefetch(&mut self, row: K, url: &str, target: TargetSize) {
        self.rows.prefetch(row, url, target);
    }
}
