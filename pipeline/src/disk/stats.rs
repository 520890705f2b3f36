//! Stats: the disk cache's counters, kept by the disk threads and the
//! fetch stage's tasks with relaxed atomics, read as a [`DiskStats`]
//! snapshot through [`crate::Stats`].

#[cfg(feature = "disk-cache")]
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The disk cache's counters, a part of [`crate::Stats`] (all zero without
/// a disk cache).
///
/// A load with the disk cache on ends in exactly one of `thumbnail_hits`,
/// `hits`, `revalidated` and `misses`, or fails before (a network error).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiskStats {
    /// Images served from disk without the network: fresh by their HTTP
    /// headers.
    pub hits: u64,
    /// Thumbnails served from disk already decoded
    /// ([`DiskConfig::thumbnails`](crate::DiskConfig::thumbnails)): made from a
    /// response still on disk and fresh, with no network and no decode.
    pub thumbnail_hits: u64,
    /// Images served from disk after the server answered `304 Not
    /// Modified` to a revalidation: a round trip, no image bytes.
    pub revalidated: u64,
    /// Images whose bytes came from the network: none on disk, a stale copy
    /// the server replaced, or a copy that could not be read.
    pub misses: u64,
    /// Responses and thumbnails written to disk.
    pub written: u64,
    /// Entries evicted to keep the directory within its budget.
    pub evicted: u64,
    /// Entries that failed their check when read (a changed, truncated or
    /// missing file, an unreadable index line): removed and fetched again.
    pub corrupt: u64,
    /// Disk operations that failed (a read-only or full disk, a permission
    /// error): the load went to the network instead.
    pub errors: u64,
    /// Disk reads that took longer than
    /// [`DiskConfig::read_timeout`](crate::DiskConfig::read_timeout): the load
    /// went to the network.
    pub read_timeouts: u64,
    /// Loads that did not ask the disk because a read had timed out and
    /// no disk operation had finished since (but for one probe a second):
    /// they went to the network.
    pub reads_skipped: u64,
    /// Responses and thumbnails not written because the writes already
    /// waiting for the disk held 16 MiB of bodies (as many again may wait
    /// for the opening scan, counted apart).
    pub writes_skipped: u64,
    /// Gauge: bytes the cache's entries take, as its ledger counts them
    /// (content files and index lines).
    pub bytes: u64,
    /// Gauge: entries on disk, responses and thumbnails.
    pub entries: u64,
}

#[derive(Debug, Default)]
#[cfg(feature = "disk-cache")]
pub(crate) struct DiskCounters {
    pub(super) hits: AtomicU64,
    pub(super) thumbnail_hits: AtomicU64,
    pub(super) revalidated: AtomicU64,
    pub(super) misses: AtomicU64,
    pub(super) written: AtomicU64,
    pub(super) evicted: AtomicU64,
    pub(super) corrupt: AtomicU64,
    pub(super) errors: AtomicU64,
    pub(super) read_timeouts: AtomicU64,
    pub(super) reads_skipped: AtomicU64,
    pub(super) writes_skipped: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) entries: AtomicU64,
}

#[cfg(feature = "disk-cache")]
impl DiskCounters {
    pub(crate) fn snapshot(&self) -> DiskStats {
        DiskStats {
            hits: self.hits.load(Relaxed),
            thumbnail_hits: self.thumbnail_hits.load(Relaxed),
            revalidated: self.revalidated.load(Relaxed),
            misses: self.misses.load(Relaxed),
            written: self.written.load(Relaxed),
            evicted: self.evicted.load(Relaxed),
            corrupt: self.corrupt.load(Relaxed),
            errors: self.errors.load(Relaxed),
            read_timeouts: self.read_timeouts.load(Relaxed),
            reads_skipped: self.reads_skipped.load(Relaxed),
            writes_skipped: self.writes_skipped.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            entries: self.entries.load(Relaxed),
        }
    }

    pub(super) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }

    pub(super) fn set_usage(&self, bytes: u64, entries: u64) {
        self.bytes.store(bytes, Relaxed);
        self.entries.store(entries, Relaxed);
    }
}
