//! The disk cache's settings: its directory (none: no disk cache), its
//! budget, whether it keeps decoded thumbnails, its threads and how long a
//! load waits for it. Plain data, read when the pipeline is built (by the
//! disk tier); validated with the rest of [`crate::Config`].

use std::path::PathBuf;
use std::time::Duration;

use crate::error::BuildError;

/// Settings of the disk cache: [`Config::disk`](crate::Config::disk). Off
/// unless [`DiskConfig::dir`] is set.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DiskConfig {
    /// A directory for an HTTP cache on disk, so that a restarted app
    /// shows its thumbnails without the network. Default: `None`, no disk
    /// cache. The cache is a layer in front of the pipeline's fetcher,
    /// the default one or yours ([`crate::PipelineBuilder::fetcher`]),
    /// and keeps what that fetcher's [`crate::Fetch::fetch_response`]
    /// returns with headers that allow it; `http` and `https` URLs only.
    ///
    /// Responses are stored with their headers, and HTTP's caching rules
    /// decide (computed by the `http-cache-semantics` crate, as a private
    /// cache): a response still fresh by its `Cache-Control: max-age` or
    /// `Expires` is used without the network; a stale one with an `ETag`
    /// or `Last-Modified` is revalidated (`If-None-Match`,
    /// `If-Modified-Since`), and a `304 Not Modified` serves it with no
    /// body sent; `no-store` is never written and `no-cache` always
    /// revalidated. Entries are keyed by URL alone, so a response to a
    /// request with credentials (`Authorization` or `Cookie`, from
    /// [`FetchConfig::headers`](crate::FetchConfig::headers) or the hook)
    /// is kept only when it says it may be shared (`public`, `s-maxage` or
    /// `must-revalidate`: RFC 9111's rule for a shared cache, section
    /// 3.5), never under a key another account's request could read.
    /// Every body read back is checked against its SHA-256;
    /// one that fails is removed and fetched again. Two processes may
    /// share the directory. A disk that fails (read-only, full) never fails
    /// a load: the image comes from the network, and [`crate::Stats::disk`]
    /// counts what happened. Reads and writes run on
    /// [`DiskConfig::threads`] threads of their own.
    ///
    /// Beside the responses it keeps the thumbnails made from them
    /// ([`DiskConfig::thumbnails`]). The memory cache and
    /// [`CacheConfig::ttl`](crate::CacheConfig::ttl) work as without it, and
    /// [`crate::Pipeline::forget`] clears only the memory cache.
    ///
    /// The directory should be this user's own, such as the platform's
    /// cache directory for the app (`~/.cache/my-app` on Linux,
    /// `~/Library/Caches/my-app` on macOS, `%LOCALAPPDATA%\my-app` on
    /// Windows; the `directories` crate's `ProjectDirs::cache_dir` gives
    /// it), not a folder of the shared temporary directory, where another
    /// user could have made it first. A directory the cache creates is
    /// made readable by this user alone (0700 on Unix); one that exists
    /// and belongs to another user is refused ([`crate::BuildError`]).
    /// Nothing read from the directory is trusted: files are never read
    /// past the size their entry records, nor on Unix through a link, and
    /// the cache removes only files by the names cacache gives its own
    /// (index buckets, content files, `tmp/.tmpXXXXXX`).
    ///
    /// ```
    /// // In an app: the platform's cache directory, as above.
    /// let dir = std::env::temp_dir().join(format!("my-app-thumbnails-{}", std::process::id()));
    /// let mut config = thumbpipe::Config::default();
    /// config.disk.dir = Some(dir.clone());
    /// config.disk.max_bytes = 100 * 1024 * 1024;
    /// let pipeline = thumbpipe::Pipeline::<usize>::new(config)?;
    /// # drop(pipeline);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub dir: Option<PathBuf>,
    /// Budget of the disk cache: its bodies and index. Past it, the least
    /// recently used entries are removed, so the directory holds at most
    /// the budget and the one entry just written. A response larger than
    /// the whole budget is not written. Default: 256 MiB (Glide's and
    /// Coil's largest default: about 10,000 thumbnails of 25 KB).
    pub max_bytes: u64,
    /// Whether the disk cache also keeps the decoded thumbnails it made
    /// from its responses, per URL and size: while the response is fresh
    /// and unchanged, a restarted app draws them without decoding the
    /// original again (a 12-megapixel photo takes 30 ms or more to decode;
    /// its 64x64 thumbnail is 16 KB to read). A thumbnail is raw RGBA,
    /// 4 bytes a pixel, counted in [`DiskConfig::max_bytes`]. Off with
    /// a decoder of your own ([`crate::PipelineBuilder::decoder`]): the
    /// thumbnails on disk are what the default decoder makes; off too while
    /// animations are played ([`crate::DecodeConfig::animation`]): a
    /// thumbnail on disk holds one frame. Default: `true`.
    pub thumbnails: bool,
    /// Threads that read and write the disk cache, named
    /// `thumbpipe-disk-N` (started only with a [`DiskConfig::dir`]).
    /// Default: 2, so that a write never holds up the reads of a screen.
    /// The opening scan of the directory runs on a thread of its own,
    /// `thumbpipe-disk-scan`, so reads never wait for it.
    pub threads: usize,
    /// How long a load waits for a disk cache read (an index entry, a body,
    /// a thumbnail) before it goes to the network. A read that takes longer
    /// (a network mount that stopped answering, a disk spinning up) is
    /// counted in [`crate::DiskStats::read_timeouts`], and until a disk
    /// operation finishes again, loads do not ask the disk
    /// ([`crate::DiskStats::reads_skipped`]) but for one a second, a
    /// probe: a hung disk costs one wait a second, not one per load.
    /// Default: 250 ms (a local disk answers in well under a millisecond).
    pub read_timeout: Duration,
}

impl Default for DiskConfig {
    fn default() -> Self {
        Self {
            dir: None,
            max_bytes: 256 * 1024 * 1024,
            thumbnails: true,
            threads: 2,
            read_timeout: Duration::from_millis(250),
        }
    }
}

impl DiskConfig {
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        #[cfg(not(feature = "disk-cache"))]
        if let Some(dir) = &self.dir {
            return Err(BuildError::Config(format!(
                "disk.dir is set ({}), but thumbpipe was built without its `disk-cache` \
                 feature: enable the feature, or leave disk.dir unset",
                dir.display()
            )));
        }
        crate::error::at_least_one(&[
            ("disk.max_bytes", self.max_bytes),
            ("disk.threads", self.threads as u64),
        ])
    }
}
