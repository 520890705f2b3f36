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
//! `store.rs` (and `entry.rs`), their removal `removal.rs` (the files
//! unlinked by `unlink.rs`). Beside the responses it may keep the
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
pub(crate) mod config;
pub(crate) mod stats;

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
mod unlink;

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

use std::sync::Arc;

use crate::config::Config;
use crate::error::BuildError;
use crate::fetch::Fetch;
use crate::load::tier::ThumbnailTier;

/// Reads the disk cache's counters.
pub(crate) type DiskStatsFn = Box<dyn Fn() -> DiskStats + Send + Sync>;

/// The fetch stage as the load actor sees it, with the disk cache in front
/// when the config asks for one, its counters, and its thumbnail tier.
pub(crate) struct WithDisk {
    pub(crate) fetcher: Arc<dyn Fetch>,
    pub(crate) stats: Option<DiskStatsFn>,
    pub(crate) thumbnails: Option<Arc<dyn ThumbnailTier>>,
}

/// `fetcher`, behind the disk cache if `config.disk.dir` is set (a config
/// that sets it without the cargo feature `disk-cache` was refused by its
/// validation). Thumbnails on disk are what the default decoder makes:
/// kept only with `default_decoder`, and not while it plays animations
/// (a thumbnail on disk holds one frame).
pub(crate) fn with_disk(
    fetcher: Arc<dyn Fetch>,
    config: &Config,
    default_decoder: bool,
) -> Result<WithDisk, BuildError> {
    #[cfg(feature = "disk-cache")]
    if let Some(dir) = config.disk.dir.clone() {
        let tier = Arc::new(DiskTier::open(fetcher, dir, &config.disk)?);
        return Ok(WithDisk {
            stats: Some(Box::new(tier.stats())),
            thumbnails: if default_decoder && !config.decode.animation {
                tier.thumbnails()
            } else {
                None
            },
            fetcher: tier,
        });
    }
    #[cfg(not(feature = "disk-cache"))]
    let _ = (config, default_decoder);
    Ok(WithDisk {
        fetcher,
        stats: None,
        thumbnails: None,
    })
}
