//! Disk: the HTTP cache on disk, between the fetch stage and the network.
//!
//! Owns the cache directory, a [cacache] store: every body is a file named
//! by its SHA-256 and written by an atomic rename, and each index line
//! carries its own hash, so an entry is whole or absent even after a
//! crash, and two processes can share the directory. Every body read back
//! is checked against its hash and key; one that fails (flipped bits, a
//! truncated or missing file) is removed, counted, and fetched again. The
//! ledger keeps the directory within its byte budget by evicting the least
//! recently used entries (`ledger.rs`); the entries themselves are
//! `store.rs` (and `entry.rs`). Beside the responses it may keep the
//! thumbnails decoded from them, served only while their response is on
//! disk, unchanged and fresh (`thumbnails.rs`).
//!
//! Whether a response may be stored, and whether a stored one may be used
//! without asking the server, is decided by `http-cache-semantics` (as a
//! private cache, `policy.rs`). The cache is a layer, [`DiskTier`]
//! (`tier.rs`): a [`crate::Fetch`] in front of the pipeline's fetcher
//! that serves, revalidates and stores responses, and the load actor's
//! tier of decoded thumbnails; nothing outside `disk/` names anything
//! else here.
//!
//! Run by the [`DiskTier`] the pipeline's builder makes: every read, write and
//! eviction happens on its `thumbpipe-disk-N` threads (the opening scan on
//! `thumbpipe-disk-scan`, `scan.rs`), never on the I/O runtime or the UI
//! thread, and a read whose load was cancelled before a thread reached it is
//! skipped. A disk that fails (read-only, full, corrupt) costs only the
//! network: the failure is counted in [`DiskStats`] and the load fetches the
//! image. A disk that is slow or hangs costs a load at most
//! [`DiskConfig::read_timeout`](crate::DiskConfig::read_timeout), and then only
//! one probe a second until it answers again (`stall.rs`). The operations on
//! one URL's entries run in the order they were asked for (`lanes.rs`); writes
//! waiting for a thread hold copies of their bodies, at most
//! [`MAX_QUEUED_WRITE_BYTES`] (and while the opening scan runs, as many again
//! waiting for it), never the pipeline's body budget. The threads end with the
//! layer, when the pipeline is dropped.
//!
//! Nothing in the directory is trusted (`layout.rs`): it may hold what a
//! crash, a bad disk, another release or another program left.
//!
//! [cacache]: https://docs.rs/cacache

// The settings and the counters are plain data, there with or without the
// cargo feature `disk-cache`; the cache is not.
mod config;
mod stats;

#[cfg(feature = "disk-cache")]
mod cache;
#[cfg(feature = "disk-cache")]
mod deferred;
#[cfg(feature = "disk-cache")]
mod entry;
#[cfg(feature = "disk-cache")]
mod lanes;
#[cfg(feature = "disk-cache")]
mod layout;
#[cfg(feature = "disk-cache")]
mod ledger;
#[cfg(feature = "disk-cache")]
mod policy;
#[cfg(feature = "disk-cache")]
mod removal;
#[cfg(feature = "disk-cache")]
mod scan;
#[cfg(feature = "disk-cache")]
mod stall;
#[cfg(feature = "disk-cache")]
mod store;
#[cfg(feature = "disk-cache")]
mod thumbnails;
#[cfg(feature = "disk-cache")]
mod tier;

#[cfg(feature = "disk-cache")]
pub(crate) use cache::{DiskCache, Head, MAX_QUEUED_WRITE_BYTES};
pub use config::DiskConfig;
#[cfg(feature = "disk-cache")]
use policy::sane_age;
#[cfg(feature = "disk-cache")]
pub(crate) use policy::{cache_options, request_parts, response_parts};
#[cfg(feature = "disk-cache")]
pub(crate) use stats::DiskCounters;
pub use stats::DiskStats;
#[cfg(feature = "disk-cache")]
pub(crate) use tier::DiskTier;
