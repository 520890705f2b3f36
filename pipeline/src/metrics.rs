//! Metrics: counters and gauges of every stage, shared by the UI side, the
//! load actor and the decode threads.
//!
//! Every request ends exactly once: `requested` = `delivered` + `failed` +
//! `superseded` + `cancelled` + the requests still pending
//! ([`crate::Pipeline::pending_rows`]).
//!
//! Relaxed atomics: each counter is exact, a [`Stats`] snapshot is not one
//! instant across counters. They live as long as the pipeline.
//!
//! And the durations of the last loads ([`LoadTimes`]), whose median is
//! [`Stats::recent_load_micros`]: plain data, kept by the load actor.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::cache::CacheStats;
use crate::disk::stats::DiskStats;

macro_rules! metrics {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        /// A snapshot of the pipeline's counters and gauges.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct Stats {
            $( $(#[$doc])* pub $name: u64, )*
            /// The cache's own counters, as of the load actor's last update.
            pub cache: CacheStats,
            /// The disk cache's counters
            /// ([`DiskConfig::dir`](crate::DiskConfig::dir)).
            pub disk: DiskStats,
        }

        #[derive(Debug, Default)]
        pub(crate) struct Metrics {
            $( pub(crate) $name: AtomicU64, )*
        }

        impl Metrics {
            pub(crate) fn snapshot(&self, cache: CacheStats, disk: DiskStats) -> Stats {
                Stats { $( $name: self.$name.load(Relaxed), )* cache, disk }
            }
        }
    };
}

metrics! {
    /// Calls to `request` that started a new request for a row.
    requested,
    /// Requests that joined a load already under way for the same URL and size.
    coalesced,
    /// Requests answered from the cache.
    cache_hits,
    /// Requests that needed a load.
    cache_misses,
    /// Fetches started.
    fetches_started,
    /// Fetches that returned a body (from the disk cache too).
    fetches_completed,
    /// Loads cancelled while waiting in the fetch queue.
    fetches_cancelled_queued,
    /// Fetches cancelled while in flight (their connection dropped).
    fetches_cancelled_in_flight,
    /// Fetches that failed.
    fetches_failed,
    /// Loads whose last subscriber left after the fetch had finished: the
    /// cancellation came too late to save the download (the decode is
    /// skipped or its result discarded).
    loads_abandoned_after_fetch,
    /// Decodes started.
    decodes_started,
    /// Decodes skipped because the load was cancelled first.
    decodes_skipped,
    /// Decodes finished (thumbnail or error).
    decodes_completed,
    /// Decodes that finished after every subscriber had left: not stored.
    decodes_discarded,
    /// Completions returned by `drain` with a thumbnail.
    delivered,
    /// Completions returned by `drain` with an error.
    failed,
    /// Requests ended because their row asked for another URL or size.
    superseded,
    /// Requests ended because their row left the view (`end_frame`) or was
    /// cancelled (`cancel_row`).
    cancelled,
    /// Results that arrived after their request had been cancelled or
    /// superseded: dropped, never delivered.
    results_dropped,
    /// Body bytes fetched.
    bytes_fetched,
    /// Of them, bytes read from local files (`file://` URLs).
    file_bytes_read,
    /// Loads of local files served by a thumbnail of the desktop's shared
    /// cache ([`SharedThumbnailsConfig`](crate::SharedThumbnailsConfig)):
    /// no read of the file, no decode of it.
    shared_thumbnails_used,
    /// Thumbnails written to the shared cache.
    shared_thumbnails_written,
    /// Gauge: fetches in flight now.
    in_flight,
    /// Gauge: loads waiting in the fetch queue now.
    queued,
    /// Gauge: loads waiting for or in a decode now.
    decoding,
    /// Gauge: bytes of the bodies of those loads
    /// ([`FetchConfig::body_budget_bytes`](crate::FetchConfig::body_budget_bytes)
    /// bounds them).
    bytes_awaiting_decode,
    /// Gauge: the median time, in microseconds, from a load's fetch start
    /// to its thumbnail, over the last 32 loads that fetched and decoded
    /// one (cache hits and the wait in the fetch queue not counted); 0
    /// before the first. The time an image asked for now at the highest
    /// priority takes to arrive: a row that leaves sooner cannot show it.
    recent_load_micros,
}

impl Metrics {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub(crate) fn set(gauge: &AtomicU64, value: u64) {
        gauge.store(value, Relaxed);
    }
}

/// The durations of the last [`LoadTimes::KEPT`] loads that fetched and
/// decoded a thumbnail.
#[derive(Debug, Default)]
pub(crate) struct LoadTimes {
    recent: VecDeque<Duration>,
    /// A load was recorded since the last median: the actor sorts once a
    /// batch of messages, not once a load.
    changed: bool,
}

impl LoadTimes {
    const KEPT: usize = 32;

    pub(crate) fn record(&mut self, took: Duration) {
        if self.recent.len() == Self::KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(took);
        self.changed = true;
    }

    /// The median, if a load was recorded since it was last asked for.
    pub(crate) fn new_median(&mut self) -> Option<Duration> {
        std::mem::take(&mut self.changed).then(|| self.median())
    }

    /// The median, zero before the first load.
    fn median(&self) -> Duration {
        let mut sorted: Vec<Duration> = self.recent.iter().copied().collect();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied().unwrap_or_default()
    }
}
