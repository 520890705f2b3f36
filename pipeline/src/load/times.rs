//! Load times: the durations of the last loads, whose median is
//! [`crate::Stats::recent_load_micros`]. Plain data, kept by the actor.

use std::time::Duration;

/// The durations of the last [`LoadTimes::KEPT`] loads that fetched and
/// decoded a thumbnail.
#[derive(Debug, Default)]
pub(super) struct LoadTimes {
    recent: std::collections::VecDeque<Duration>,
    /// A load was recorded since the last median: the actor sorts once a
    /// batch of messages, not once a load.
    changed: bool,
}

impl LoadTimes {
    const KEPT: usize = 32;

    pub(super) fn record(&mut self, took: Duration) {
        if self.recent.len() == Self::KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(took);
        self.changed = true;
    }

    /// The median, if a load was recorded since it was last asked for.
    pub(super) fn new_median(&mut self) -> Option<Duration> {
        std::mem::take(&mut self.changed).then(|| self.median())
    }

    /// The median, zero before the first load.
    fn median(&self) -> Duration {
        let mut sorted: Vec<Duration> = self.recent.iter().copied().collect();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied().unwrap_or_default()
    }
}
