//! What a [`crate::Pipeline`] is allowed to do: concurrency, timeouts,
//! size limits and the cache's budget.
//!
//! Plain data, read once by [`crate::Pipeline::new`]. Every field documents
//! its default.

use std::path::PathBuf;
use std::time::Duration;

use crate::BuildError;

/// Settings of a [`crate::Pipeline`].
///
/// ```
/// use std::time::Duration;
///
/// let mut config = thumbpipe::Config::default();
/// config.max_concurrent_fetches = 4;
/// config.total_timeout = Duration::from_secs(10);
/// let pipeline = thumbpipe::Pipeline::<usize>::new(config)?;
/// # Ok::<(), thumbpipe::BuildError>(())
/// ```
///
/// New settings are added over time, so the struct is `#[non_exhaustive]`:
/// start from [`Config::default`] and change the fields you need.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// Fetches in flight at once to one host; the rest wait in the queue,
    /// costing no thread. Default: 16, so that a screenful of list rows
    /// loads in one round trip: with 6 (what browsers allow per host over
    /// HTTP/1.1) the 13 rows in view when a scroll stops wait for three,
    /// 750 ms at 250 ms latency. Lower it for a server that must not see
    /// more connections from one client.
    pub max_concurrent_fetches: usize,
    /// Fetches in flight at once over every host together; the rest wait in
    /// the queue. Without it, a list of images from many hosts (one per
    /// user's avatar, say) would open `max_concurrent_fetches` sockets to
    /// each of them. Default: 24, a screenful from one host and room for a
    /// few others.
    pub max_fetches_in_flight: usize,
    /// Time to establish a connection. Default: 5 s.
    pub connect_timeout: Duration,
    /// Time for a whole response, headers and body. Time a fetch spends
    /// waiting for [`Config::max_bytes_awaiting_decode`], its body unread
    /// while the decoders catch up, does not count. Default: 30 s.
    pub total_timeout: Duration,
    /// Largest response body; a larger one is aborted while streaming.
    /// Default: 16 MiB.
    pub max_body_bytes: u64,
    /// Bytes of response bodies held between the network and the decoders:
    /// bodies being read and bodies waiting for (or in) a decode. Past it,
    /// no new fetch starts and no new body is read (by an
    /// [`crate::HttpFetcher`], a `file://` read or the disk cache) until
    /// decodes catch up; a cancelled load's body is freed at once.
    /// Without it, a slow decoder and a fast server would pile up bodies:
    /// 200 rows of 16 MiB images are 3.2 GB. A body larger than the whole
    /// budget still loads, alone. Default: 64 MiB (four bodies at
    /// [`Config::max_body_bytes`], hundreds of typical thumbnails).
    pub max_bytes_awaiting_decode: u64,
    /// Redirects followed before giving up. Default: 5.
    pub max_redirects: usize,
    /// Whether a redirect from an `https` URL to a plain `http` one is
    /// followed. Default: `false`: it is [`crate::Error::InsecureRedirect`],
    /// as the image would travel unencrypted, open to being read or
    /// replaced on the way.
    pub allow_https_to_http_redirects: bool,
    /// Certificates (DER) trusted for `https` besides the platform's own
    /// roots: a company's certificate authority, or a test server's
    /// self-signed certificate. A certificate that cannot be read fails
    /// [`crate::Pipeline::new`]. Default: none.
    pub extra_root_certificates: Vec<Vec<u8>>,
    /// Largest width or height an image may declare. Default: 16384.
    pub max_dimension: u32,
    /// Most bytes one decode may allocate, counted from the header before
    /// decoding: the decoded pixels, the decoder's own buffers and the
    /// resize's. A JPEG decodes at the smallest DCT scale that covers the
    /// thumbnail, so a baseline one costs little at any size (a 12 MP
    /// photo to 256 px: under 1 MB), but a progressive one keeps every DCT
    /// coefficient at full size until its last scan (2 bytes a sample: 36
    /// MB for a 12 MP 4:2:0 photo, 72 MB at 4:4:4). PNG, GIF and WebP
    /// decode in full: 4 bytes a pixel, and a WebP's YUV planes or ARGB
    /// words on top. Default: 256 MiB, a 40-megapixel progressive 4:4:4
    /// JPEG or a 60-megapixel PNG.
    pub max_decode_alloc: u64,
    /// Whether JPEGs are decoded by libjpeg at the smallest DCT scale that
    /// covers the thumbnail (a 12 MP photo to 256 px: 31.7 ms and 3.3 MB),
    /// rather than in full by `image`'s pure-Rust decoder (112 ms and 132
    /// MB). Default: `true`.
    ///
    /// In a binary built with `panic = "abort"` it has no effect: libjpeg
    /// reports a broken file by unwinding out of its error callback (that
    /// is how the `mozjpeg` crate turns it into an error), and without
    /// unwinding that would end the process. There, every JPEG takes the
    /// pure-Rust decoder, which returns its errors, so a broken JPEG is an
    /// [`crate::Error::Decode`] as it is elsewhere. What else changes under
    /// `panic = "abort"`: a panic inside a decoder or a disk job (none is
    /// known; `decode-fuzz` and `disk-fuzz` look for them) ends the process
    /// instead of failing one load.
    pub jpeg_dct_scaling: bool,
    /// Decode threads, named `thumbpipe-decode-N`. Default: one per core.
    pub decode_threads: usize,
    /// Images whose header declares more pixels than this are large: they
    /// decode on at most `decode_threads - 1` threads at once, so that with
    /// two or more decode threads a small thumbnail never waits behind a
    /// large decode. Default: 2,000,000 (a 1920x1080 image is large, a
    /// 1600x1200 one is not). `u64::MAX` lets large images use every
    /// thread.
    pub large_image_pixels: u64,
    /// Worker threads of the pipeline's own I/O runtime, named
    /// `thumbpipe-io-N` (unused with [`crate::Pipeline::with_runtime`]).
    /// Default: 2.
    pub io_threads: usize,
    /// Cache budget: the sum of cached thumbnails' RGBA bytes. Default: 64 MiB.
    pub cache_cost_limit: usize,
    /// Most thumbnails cached at once. Default: 4096.
    pub cache_count_limit: usize,
    /// How long a cached thumbnail stays valid, unless the request says
    /// otherwise; longer than ten years (`Duration::MAX` included) counts as
    /// ten years. Default: 300 s.
    pub cache_ttl: Duration,
    /// Budget of the UI side's textures (`thumbpipe::egui`): the sum of
    /// live textures' RGBA bytes. Past it, the least recently drawn
    /// textures are freed; their thumbnails stay in the cache and come back
    /// in the pass that asks for them. The textures drawn in one pass are
    /// never freed in that pass, so a screen that alone needs more than the
    /// budget goes over it rather than reloading images every frame. A
    /// texture is kept by recency alone: [`Config::cache_ttl`] applies to
    /// the cache behind it; forget an image to load it afresh. Keep the
    /// budget above a few screens of thumbnails. Default: 32 MiB (512
    /// thumbnails of 128x128).
    pub texture_budget: usize,
    /// Bytes of new textures the UI side (`thumbpipe::egui`) uploads in one
    /// pass at most, so that a burst of finished loads never stalls a
    /// frame; the rest wait for the next pass, which is requested at once.
    /// One texture is always allowed per pass, however large. Default:
    /// 1 MiB (16 thumbnails of 128x128, more than a screenful of rows).
    pub upload_budget: usize,
    /// Whether the UI side (`thumbpipe::egui`) uses a coasting list's
    /// predicted resting place (given it each pass with `follow_coast`):
    /// while a kinetic scroll coasts, the rows where it will stop are
    /// requested first, at [`crate::Priority::Destination`], and rows it
    /// only flies past are not requested at all (see
    /// [`Config::coast_min_time_on_screen`]). Rows already decoded still
    /// draw at once. `false` loads every row that shows, as at rest.
    /// Default: `true`.
    pub coast_prediction: bool,
    /// While a list coasts, a row that will have left the screen within
    /// this time (from now, or from its request for a row already loading)
    /// is not requested: an image takes this long to arrive, so it would
    /// never be seen in that row. Default: `None`, the time images take to
    /// arrive now ([`crate::Stats::recent_load_micros`]: a round trip and a
    /// decode, without the wait in the queue), or 100 ms before the first
    /// has arrived.
    pub coast_min_time_on_screen: Option<Duration>,
    /// Requests waiting to be drained at most: sent and not yet returned
    /// by [`crate::Pipeline::drain`], finished or not. Past it, a new
    /// request is refused with [`crate::Error::TooManyPending`] (delivered
    /// by the next `drain`) without any work started for it, so a UI that
    /// keeps requesting and never drains holds at most this many thumbnails
    /// and loads, and a small record per refused request. A list shows a
    /// few hundred rows at most. Default: 10,000.
    pub max_pending_requests: usize,
    /// The directory `file://` URLs may read from. Default: `None`, which
    /// refuses every `file://` URL. With a root, a file loads only if its
    /// path, with symbolic links resolved, lies under the root; it is read
    /// under [`Config::max_body_bytes`] on a thread of its own
    /// (`thumbpipe-file`, started only with a root), so that a slow disk
    /// never holds up the host name lookups of `http` loads.
    ///
    /// ```
    /// let dir = std::env::temp_dir();
    /// let mut config = thumbpipe::Config::default();
    /// config.file_root = Some(dir.clone());
    /// let pipeline = thumbpipe::Pipeline::<usize>::new(config)?;
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub file_root: Option<PathBuf>,
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
    /// revalidated. Every body read back is checked against its SHA-256;
    /// one that fails is removed and fetched again. Two processes may
    /// share the directory. A disk that fails (read-only, full) never fails
    /// a load: the image comes from the network, and [`crate::Stats::disk`]
    /// counts what happened. Reads and writes run on
    /// [`Config::disk_threads`] threads of their own.
    ///
    /// Beside the responses it keeps the thumbnails made from them
    /// ([`Config::disk_cache_thumbnails`]). The memory cache and
    /// [`Config::cache_ttl`] work as without it, and
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
    /// config.disk_cache_dir = Some(dir);
    /// config.disk_cache_bytes = 100 * 1024 * 1024;
    /// let pipeline = thumbpipe::Pipeline::<usize>::new(config)?;
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub disk_cache_dir: Option<PathBuf>,
    /// Budget of the disk cache: its bodies and index. Past it, the least
    /// recently used entries are removed, so the directory holds at most
    /// the budget and the one entry just written. A response larger than
    /// the whole budget is not written. Default: 256 MiB (Glide's and
    /// Coil's largest default: about 10,000 thumbnails of 25 KB).
    pub disk_cache_bytes: u64,
    /// Whether the disk cache also keeps the decoded thumbnails it made
    /// from its responses, per URL and size: while the response is fresh
    /// and unchanged, a restarted app draws them without decoding the
    /// original again (a 12-megapixel photo takes 30 ms or more to decode;
    /// its 64x64 thumbnail is 16 KB to read). A thumbnail is raw RGBA,
    /// 4 bytes a pixel, counted in [`Config::disk_cache_bytes`]. Off with
    /// a decoder of your own ([`crate::PipelineBuilder::decoder`]): the
    /// thumbnails on disk are what the default decoder makes. Default:
    /// `true`.
    pub disk_cache_thumbnails: bool,
    /// Threads that read and write the disk cache, named
    /// `thumbpipe-disk-N` (started only with a [`Config::disk_cache_dir`]).
    /// Default: 2, so that a write never holds up the reads of a screen.
    /// The opening scan of the directory runs on a thread of its own,
    /// `thumbpipe-disk-scan`, so reads never wait for it.
    pub disk_threads: usize,
    /// How long a load waits for a disk cache read (an index entry, a body,
    /// a thumbnail) before it goes to the network. A read that takes longer
    /// (a network mount that stopped answering, a disk spinning up) is
    /// counted in [`crate::DiskStats::read_timeouts`], and until a disk
    /// operation finishes again, loads do not ask the disk
    /// ([`crate::DiskStats::reads_skipped`]) but for one a second, a
    /// probe: a hung disk costs one wait a second, not one per load.
    /// Default: 250 ms (a local disk answers in well under a millisecond).
    pub disk_read_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_concurrent_fetches: 16,
            max_fetches_in_flight: 24,
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(30),
            max_body_bytes: 16 * 1024 * 1024,
            max_bytes_awaiting_decode: 64 * 1024 * 1024,
            max_redirects: 5,
            allow_https_to_http_redirects: false,
            extra_root_certificates: Vec::new(),
            max_dimension: 16_384,
            max_decode_alloc: 256 * 1024 * 1024,
            jpeg_dct_scaling: true,
            decode_threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            large_image_pixels: 2_000_000,
            io_threads: 2,
            cache_cost_limit: 64 * 1024 * 1024,
            cache_count_limit: 4096,
            cache_ttl: Duration::from_secs(300),
            texture_budget: 32 * 1024 * 1024,
            upload_budget: 1024 * 1024,
            coast_prediction: true,
            coast_min_time_on_screen: None,
            max_pending_requests: 10_000,
            file_root: None,
            disk_cache_dir: None,
            disk_cache_bytes: 256 * 1024 * 1024,
            disk_cache_thumbnails: true,
            disk_threads: 2,
            disk_read_timeout: Duration::from_millis(250),
        }
    }
}

impl Config {
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        let positive = [
            ("max_concurrent_fetches", self.max_concurrent_fetches),
            ("max_fetches_in_flight", self.max_fetches_in_flight),
            ("decode_threads", self.decode_threads),
            ("io_threads", self.io_threads),
            ("cache_count_limit", self.cache_count_limit),
            ("texture_budget", self.texture_budget),
            ("upload_budget", self.upload_budget),
            ("max_pending_requests", self.max_pending_requests),
            ("disk_threads", self.disk_threads),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(BuildError::Config(format!("{name} must be at least 1")));
            }
        }
        if self.max_dimension == 0
            || self.max_body_bytes == 0
            || self.max_bytes_awaiting_decode == 0
            || self.disk_cache_bytes == 0
        {
            return Err(BuildError::Config(
                "max_dimension, max_body_bytes, max_bytes_awaiting_decode and disk_cache_bytes \
                 must be at least 1"
                    .into(),
            ));
        }
        Ok(())
    }
}
