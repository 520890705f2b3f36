//! Following a coast, for any toolkit: in a pass of a coasting list, the
//! rows where it will rest are asked for first, at
//! [`Priority::Destination`], and a row that will be on screen for less
//! than an image takes to arrive is drawn from the levels in front of the
//! pipeline but not requested. Which rows those are is the plan's
//! (`plan.rs`); this keeps them for the pass and asks.
//!
//! For a toolkit that draws only when a message comes (iced), a pass that
//! skipped rows also asks for a wake once the scroll has been still for a
//! moment ([`CoastPolicy::ask_again_after`]): the rows it skipped may be
//! where the list stopped, and no scroll message will come to ask for
//! them.
//!
//! Part of the [`ListFront`], on the UI thread: made with it, its rows
//! cleared between passes.

use std::collections::HashSet;
use std::hash::Hash;
use std::time::{Duration, Instant};

use super::ListFront;
use super::plan::CoastPlan;
use crate::coast::{CoastModel, CoastPrediction};
use crate::request::{Priority, TargetSize};

/// The shortest time on screen worth a request while coasting, before any
/// load has been timed.
const FIRST_MIN_TIME_ON_SCREEN: Duration = Duration::from_millis(100);

/// Whether coasts are followed, and the time on screen a row needs to be
/// worth a request (`None`: the time loads take now).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoastPolicy {
    pub(crate) enabled: bool,
    pub(crate) min_time_on_screen: Option<Duration>,
    /// For a toolkit that draws only on messages: how long after the last
    /// pass that skipped rows the list is taken to be at rest, and its rows
    /// in view asked for again ([`ListFront::rows_at_rest`]).
    pub(crate) ask_again_after: Option<Duration>,
}

impl CoastPolicy {
    /// Coasts followed, a row worth a request if it stays on screen for
    /// as long as loads take now; the rows skipped asked for again once
    /// the list has been still as long as a scroll watch waits.
    #[cfg(feature = "iced")]
    pub(crate) const FOLLOWED: Self = Self {
        enabled: true,
        min_time_on_screen: None,
        ask_again_after: Some(super::scroll::ScrollWatch::STILL_AFTER),
    };
}

/// This pass's coast: the rows where it will rest, and the rows it only
/// passes by. Empty at rest.
pub(super) struct Coasting<K> {
    policy: CoastPolicy,
    destination: HashSet<K>,
    passing: HashSet<K>,
    /// When a pass last skipped rows, if the rows in view are to be asked
    /// for again at rest; and when the wake pending for that is due.
    skipped_at: Option<Instant>,
    wake_due: Option<Instant>,
}

impl<K: Hash + Eq + Clone> Coasting<K> {
    pub(super) fn new(policy: CoastPolicy) -> Self {
        Self {
            policy,
            destination: HashSet::new(),
            passing: HashSet::new(),
            skipped_at: None,
            wake_due: None,
        }
    }

    /// The priority a row shown in this pass is asked for at; `None` for a
    /// row the coast flies past.
    pub(super) fn priority_of_shown(&self, row: &K) -> Option<Priority> {
        if self.passing.contains(row) {
            None
        } else if self.destination.contains(row) {
            Some(Priority::Destination)
        } else {
            Some(Priority::Visible)
        }
    }
}

impl<K: Hash + Eq + Clone> ListFront<K> {
    /// Forgets the coast a pass followed, as it ends or the next begins;
    /// [`ListFront::follow_coast`] says where the next one goes.
    pub(crate) fn clear_coast(&mut self) {
        self.coasting.destination.clear();
        self.coasting.passing.clear();
    }

    /// Follows a coast for this pass (call it before the rows are asked
    /// for): the rows where the list will rest, and the one more a list
    /// draws there, are asked for at [`Priority::Destination`], before
    /// every other row; a row that will leave sooner than an image takes to
    /// arrive is not requested this pass; a screen ahead is prefetched.
    /// Where it rests is asked for only if `rests` (a coast of a known
    /// model): a scroll still driven by a hand, whose rest moves each pass,
    /// only has the rows it flies past skipped.
    /// `row_at` gives an item's key and URL by its index (a list's row, a
    /// grid's cell, numbered row by row); `kept` says whether the toolkit
    /// has a URL's image at a size already. Does nothing when coasts are
    /// not followed.
    pub(crate) fn follow_coast<M: CoastModel, S: AsRef<str>>(
        &mut self,
        coast: &CoastPrediction<M>,
        rests: bool,
        target: TargetSize,
        mut row_at: impl FnMut(usize) -> (K, S),
        kept: impl Fn(&str, TargetSize) -> bool,
    ) {
        if !self.coasting.policy.enabled || !coast.is_coasting() {
            return;
        }
        let min_time_on_screen = self.min_time_on_screen();
        let now = Instant::now();
        let pipeline = &self.pipeline;
        let plan = CoastPlan::new(coast, min_time_on_screen, |index| {
            let (row, _) = row_at(index);
            let asked = pipeline.requested_at(&row)?;
            Some(now.saturating_duration_since(asked))
        });
        for index in plan.destination.filter(|_| rests) {
            let (row, url) = row_at(index);
            self.coasting.destination.insert(row.clone());
            self.want(row, url.as_ref(), target, Priority::Destination, &kept);
        }
        // A row showing the same image as a destination row (the same key)
        // is not passing.
        for index in plan.passing {
            let (row, _) = row_at(index);
            if !self.coasting.destination.contains(&row) {
                self.coasting.passing.insert(row);
            }
        }
        for index in plan.ahead.into_iter().filter(|_| rests) {
            let (row, url) = row_at(index);
            self.want(row, url.as_ref(), target, Priority::Prefetch, &kept);
        }
        if self.coasting.policy.ask_again_after.is_some() && !self.coasting.passing.is_empty() {
            self.coasting.skipped_at = Some(now);
            self.wake_at_rest(now);
        }
    }

    /// The rows in view in the last pass, to be asked for again (at
    /// [`Priority::Visible`], in a pass of their own, which cancels what a
    /// coast asked for where the list did not go), once no pass has skipped
    /// a row for [`CoastPolicy::ask_again_after`]: the list is at rest,
    /// and no pass may come to ask for the rows where it stopped. Empty
    /// otherwise; while the list may still be moving, a wake is kept
    /// pending for the moment it is still.
    #[cfg_attr(not(feature = "iced"), allow(dead_code))]
    pub(crate) fn rows_at_rest(&mut self) -> Vec<(K, std::sync::Arc<str>, TargetSize)> {
        let now = Instant::now();
        if self.coasting.wake_due.is_some_and(|due| due <= now) {
            self.coasting.wake_due = None;
        }
        let (Some(quiet), Some(skipped_at)) = (
            self.coasting.policy.ask_again_after,
            self.coasting.skipped_at,
        ) else {
            return Vec::new();
        };
        if now.saturating_duration_since(skipped_at) < quiet {
            self.wake_at_rest(skipped_at);
            return Vec::new();
        }
        self.coasting.skipped_at = None;
        self.rows_in_view()
    }

    /// Has the door woken [`CoastPolicy::ask_again_after`] after
    /// `skipped_at`, unless a wake is pending already (one timer at a
    /// time: the pass it wakes for keeps the next one pending if need be).
    fn wake_at_rest(&mut self, skipped_at: Instant) {
        let Some(quiet) = self.coasting.policy.ask_again_after else {
            return;
        };
        if self.coasting.wake_due.is_some() {
            return;
        }
        let due = skipped_at + quiet;
        self.coasting.wake_due = Some(due);
        let wake = std::sync::Arc::clone(&self.wake);
        let delay = due.saturating_duration_since(Instant::now());
        self.pipeline.wake_after(delay, move || wake());
    }

    /// Whether a coast this pass rests somewhere: the rows asked for ahead
    /// of the view are then its destination's, not a prefetch's.
    pub(crate) fn is_coasting(&self) -> bool {
        !self.coasting.destination.is_empty()
    }

    /// Whether the coast this pass flies past `row`.
    #[cfg_attr(not(feature = "egui"), allow(dead_code))]
    pub(crate) fn is_passing(&self, row: &K) -> bool {
        self.coasting.passing.contains(row)
    }

    /// The shortest time on screen worth a request: the policy's, or the
    /// time loads take now.
    fn min_time_on_screen(&self) -> Duration {
        self.coasting.policy.min_time_on_screen.unwrap_or_else(|| {
            self.pipeline
                .recent_load_time()
                .unwrap_or(FIRST_MIN_TIME_ON_SCREEN)
        })
    }
}
