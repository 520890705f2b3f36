//! What a [`crate::Pipeline`] is allowed to do, gathered by stage: each
//! stage's settings, with their defaults and validation, live beside the
//! stage that reads them ([`FetchConfig`] in `fetch/`, [`DecodeConfig`]
//! in `decode/`, [`CacheConfig`] in `cache.rs`, [`DiskConfig`] in `disk/`,
//! [`SharedThumbnailsConfig`] in `shared_thumbnails/`);
//! this file holds the pipeline's own and the check of the whole.
//!
//! Plain data, read once by [`crate::Pipeline::new`]. Every field documents
//! its default.

use crate::cache::CacheConfig;
use crate::decode::config::DecodeConfig;
use crate::disk::config::DiskConfig;
use crate::error::BuildError;
use crate::fetch::config::FetchConfig;
use crate::shared_thumbnails::config::SharedThumbnailsConfig;

/// Settings of a [`crate::Pipeline`], one struct per stage.
///
/// ```
/// use std::time::Duration;
///
/// let mut config = thumbpipe::Config::default();
/// config.fetch.max_per_host = 4;
/// config.fetch.total_timeout = Duration::from_secs(10);
/// config.decode.max_dimension = 8192;
/// config.cache.max_bytes = 32 * 1024 * 1024;
/// let pipeline = thumbpipe::Pipeline::<usize>::new(config)?;
/// # Ok::<(), thumbpipe::BuildError>(())
/// ```
///
/// New settings are added over time, so the structs are
/// `#[non_exhaustive]`: start from [`Config::default`] and change the
/// fields you need.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// The fetch stage: connections, timeouts, body limits, TLS roots and
    /// `file://` URLs.
    pub fetch: FetchConfig,
    /// The decode stage: size and allocation limits, the JPEG route and
    /// the decode threads.
    pub decode: DecodeConfig,
    /// The memory cache of decoded thumbnails.
    pub cache: CacheConfig,
    /// The disk cache; off unless [`DiskConfig::dir`] is set.
    pub disk: DiskConfig,
    /// The desktop's shared thumbnails of local files (`file://` URLs),
    /// read and written: on Linux and the BSDs by default, once
    /// [`FetchConfig::file_roots`] allows files.
    pub shared_thumbnails: SharedThumbnailsConfig,
    /// Worker threads of the pipeline's own I/O runtime, named
    /// `thumbpipe-io-N` (unused with [`crate::Pipeline::with_runtime`]).
    /// Default: 2.
    pub io_threads: usize,
    /// Requests waiting to be drained at most: sent and not yet returned
    /// by [`crate::Pipeline::drain`], finished or not. Past it, a new
    /// request is refused with [`crate::Error::TooManyPending`] (delivered
    /// by the next `drain`) without any work started for it, so a UI that
    /// keeps requesting and never drains holds at most this many thumbnails
    /// and loads, and a small record per refused request. A list shows a
    /// few hundred rows at most. Default: 10,000.
    pub max_pending_requests: usize,
}

impl Config {
    /// Checks every stage's settings; the error names the one to change.
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        self.fetch.validate()?;
        self.decode.validate()?;
        self.cache.validate()?;
        self.disk.validate()?;
        self.shared_thumbnails.validate()?;
        crate::error::at_least_one(&[
            ("io_threads", self.io_threads as u64),
            ("max_pending_requests", self.max_pending_requests as u64),
        ])
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            fetch: FetchConfig::default(),
            decode: DecodeConfig::default(),
            cache: CacheConfig::default(),
            disk: DiskConfig::default(),
            shared_thumbnails: SharedThumbnailsConfig::default(),
            io_threads: 2,
            max_pending_requests: 10_000,
        }
    }
}
