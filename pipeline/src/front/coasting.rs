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
    /// pass that skipped rows the list is taken to be at rest, and those
    /// rows asked for ([`ListFront::ask_for_skipped_rows`]).
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
    /// The rows the last pass that skipped any skipped, and when, if they
    /// are to be asked for at rest.
    skipped: Vec<K>,
    skipped_at: Option<Instant>,
}

impl<K: Hash + Eq + Clone> Coasting<K> {
    pub(super) fn new(policy: CoastPolicy) -> Self {
        Self {
            policy,
            destination: HashSet::new(),
            passing: HashSet::new(),
            skipped: Vec::new(),
            skipped_at: None,
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
    /// `row_at` gives an item's key and URL by its index (a list's row, a
    /// grid's cell, numbered row by row); `kept` says whether the toolkit
    /// has a URL's image at a size already. Does nothing when coasts are
    /// not followed.
    pub(crate) fn follow_coast<M: CoastModel, S: AsRef<str>>(
        &mut self,
        coast: &CoastPrediction<M>,
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
        for index in plan.destination {
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
        for index in plan.ahead {
            let (row, url) = row_at(index);
            self.want(row, url.as_ref(), target, Priority::Prefetch, &kept);
        }
        if let Some(quiet) = self.coasting.policy.ask_again_after
            && !self.coasting.passing.is_empty()
        {
            self.coasting.skipped = self.coasting.passing.iter().cloned().collect();
            self.coasting.skipped_at = Some(now);
            let wake = std::sync::Arc::clone(&self.wake);
            self.pipeline.wake_after(quiet, move || wake());
        }
    }

    /// Asks for the rows the last pass that skipped any skipped, at
    /// [`Priority::Visible`], once no pass has skipped a row for
    /// [`CoastPolicy::ask_again_after`]: the list is at rest, and no pass
    /// may come to ask for the rows where it stopped. A row no longer
    /// shown, or given its outcome since, is not asked for; the next pass
    /// that does not show a row cancels it, as any other.
    #[cfg_attr(not(feature = "iced"), allow(dead_code))]
    pub(crate) fn ask_for_skipped_rows(&mut self) {
        let quiet = self.coasting.policy.ask_again_after;
        let at_rest = self
            .coasting
            .skipped_at
            .zip(quiet)
            .is_some_and(|(at, quiet)| at.elapsed() >= quiet);
        if !at_rest {
            return;
        }
        self.coasting.skipped_at = None;
        for row in std::mem::take(&mut self.coasting.skipped) {
            if let Some((url, target)) = self.waiting(&row) {
                self.pipeline.request(row, &url, target, Priority::Visible);
            }
        }
    }

    /// Whether a coast this pass rests somewhere: the rows asked for ahead
    /// of the view are then its destination's, not a prefetch's.
    #[cfg_attr(not(feature = "egui"), allow(dead_code))]
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
