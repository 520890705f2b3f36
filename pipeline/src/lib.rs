//! thumbpipe loads thumbnails for GUI lists: async HTTP fetch, decode and
//! downscale on a bounded pool, an actor-owned memory cache with TTL and
//! byte-cost eviction, and cancellation tied to list-row identity.
//!
//! The rule behind it: waiting (network, timers) never holds a thread, CPU
//! work (decode, downscale) runs on a bounded pool, and the UI thread never
//! blocks. A fast flick through hundreds of rows costs a few futures and a
//! few decodes, never a thread per row, and a row can never show an image
//! meant for its previous URL.
//!
//! # Layout
//!
//! The modules are private; everything public is re-exported here, except
//! `egui` (cargo feature `egui`). In the order a request travels:
//!
//! - `rows`: the UI side, [`Pipeline::request`] / [`Pipeline::drain`]; one
//!   live request per row, cancelled when the row asks for something else
//!   or leaves the view. The request's [`Priority`] and [`TargetSize`].
//! - `load`: the load actor, a dispatcher over plain-data parts:
//!   `load/registry.rs` (one shared task per url and size: coalescing,
//!   subscribers, stages) and `load/schedule.rs` (the fetch queue and
//!   per-host slots). The UI side reaches it through one handle.
//! - `cache`: least-recently-used thumbnails under cost, count and TTL
//!   limits, owned by the actor, with a view the UI side reads without
//!   waiting ([`Pipeline::cached`]).
//! - `queue`: the serving order of the fetch and decode queues: by
//!   priority, newest first.
//! - `fetch`: the [`Fetch`] trait, its reqwest implementation
//!   [`HttpFetcher`], and [`fetch_fn`].
//! - `disk` (opt-in, [`Config::disk_cache_dir`]): the HTTP cache on disk
//!   that the [`HttpFetcher`] asks before the network, with the decoded
//!   thumbnails beside their responses; `disk/store.rs` reads and writes
//!   the entries, `disk/layout.rs` reads the directory without trusting
//!   it, `disk/scan.rs` is the opening scan, `disk/ledger.rs` keeps the
//!   byte budget. Its threads, `thumbpipe-disk-N` and
//!   `thumbpipe-disk-scan`, are `workers.rs`, as is the `file://` thread.
//! - `decode`: the [`Decode`] trait and its default [`ImageDecoder`]
//!   (JPEG's scaled path in `decode/jpeg.rs`), and the decode pool
//!   (`decode/pool.rs`, threads `thumbpipe-decode-N`) where large images
//!   ([`Config::large_image_pixels`]) never hold the last free thread.
//! - `thumbnail`: the [`Thumbnail`] every stage after decode shares.
//! - `coast`: [`CoastPrediction`], where a kinetic scroll comes to rest and
//!   how long each row it passes is on screen, for the UI side to request
//!   the rows a list will stop on first and skip the ones it flies past.
//! - `deliver`: [`Completion`]s back to the UI thread, and its waker.
//! - `metrics`: the counters behind [`Pipeline::stats`].
//! - `config` and `error`: [`Config`]; [`Error`] and [`BuildError`].
//! - `egui` (cargo feature `egui`): `egui::Image::new(url)` through the
//!   pipeline, textures under a budget, and a row-keyed list helper.
//!
//! ```text
//! UI thread                 io runtime (2 workers)                 decode pool (<= cores)
//! ---------                 ----------------------                 ----------------------
//! request(row, url, size)
//!   rows: one live request
//!   per row ---subscribe--> load actor: cache hit? ---------------------+
//!                           registry: same (url, size) joins one task   |
//!                           scheduler: priority, LIFO, per-host slots   |
//!                           fetch task (cancellable, body cap)          |
//!                             --Fetched--> load actor --submit-------------> queue: priority, LIFO
//!                                                                          decode + downscale
//!                                                                          (skipped if cancelled;
//!                                                                          large: all threads but one)
//!                           load actor <--Decoded--------------------------+
//!                           cache put (TTL, cost, LRU)                  |
//! drain() <---------------- deliver to every subscriber <---------------+
//!   only the row's current generation; the waker asks for a frame
//! ```
//!
//! # Where to change what
//!
//! - **A new priority**: a [`Priority`] variant; both queues (`queue.rs`)
//!   order by it, and the registry gives a task its subscribers' highest.
//! - **A new stage** between the cache and the network: a `Stage` in
//!   `load/registry.rs`, an `Event` the actor handles in `load/mod.rs`
//!   (as the disk cache's decoded thumbnails are `FromDisk`), and a seam
//!   trait like [`Fetch`] if it is pluggable.
//! - **A new image format**: an `image` cargo feature in
//!   `pipeline/Cargo.toml` and a name in [`SUPPORTED_FORMATS`]; a faster
//!   path for it in its own file like `decode/jpeg.rs`.
//! - **A new UI toolkit**: the row-keyed [`Pipeline`] is toolkit-free; a
//!   module like `egui` turns its completions into the toolkit's textures
//!   and its frame into `request` / `end_frame` calls, behind a cargo
//!   feature.
//!
//! # Example
//!
//! ```no_run
//! use thumbpipe::{Config, Pipeline, Priority, TargetSize};
//!
//! let mut pipeline = Pipeline::<usize>::new(Config::default())?;
//! pipeline.set_waker(|| { /* egui: ctx.request_repaint() */ });
//! // Each frame:
//! for row in 0..30 {
//!     let url = format!("http://127.0.0.1:8080/img/{row}.jpg");
//!     pipeline.request(row, &url, TargetSize::square(64), Priority::Visible);
//! }
//! for done in pipeline.drain() {
//!     match done.result {
//!         Ok(thumbnail) => { /* upload thumbnail.pixels for done.row */ }
//!         Err(error) => eprintln!("row {}: {error}", done.row),
//!     }
//! }
//! pipeline.end_frame();
//! # Ok::<(), thumbpipe::BuildError>(())
//! ```
//!
//! # Limits
//!
//! Whatever a server sends, a load ends within these limits with a typed
//! [`Error`] that names the setting to raise; nothing else in the app is
//! held up by it.
//!
//! | limit | default | when it is exceeded | setting |
//! |---|---|---|---|
//! | fetches in flight per host | 16 | the rest wait in the queue, costing no thread | [`Config::max_concurrent_fetches`] |
//! | fetches in flight over all hosts | 24 | the rest wait in the queue, costing no thread | [`Config::max_fetches_in_flight`] |
//! | connect timeout | 5 s | [`Error::Timeout`] | [`Config::connect_timeout`] |
//! | whole-response timeout (headers and body; a body's wait for the budget below does not count) | 30 s | [`Error::Timeout`]; the slot is free again at once | [`Config::total_timeout`] |
//! | response body | 16 MiB | [`Error::TooLarge`], from `Content-Length` or while streaming, never buffered past the cap | [`Config::max_body_bytes`] |
//! | bodies held between the network and the decoders | 64 MiB | no new fetch starts and no new body is read until decodes catch up; a cancelled load's body is freed at once | [`Config::max_bytes_awaiting_decode`] |
//! | redirects | 5; none from `https` to `http` | [`Error::Network`]; [`Error::InsecureRedirect`] for a downgrade | [`Config::max_redirects`], [`Config::allow_https_to_http_redirects`] |
//! | image width or height | 16384 | [`Error::TooLarge`], from the header, before decoding | [`Config::max_dimension`] |
//! | decoded pixels and decoder allocations | 256 MiB (JPEG and WebP decoder buffers count: a progressive 4:4:4 JPEG takes 13 bytes per pixel, a baseline 4:2:0 one 5.5, a lossy WebP 5.5, a lossless one 8) | [`Error::TooLarge`], from the header, before decoding | [`Config::max_decode_alloc`] |
//! | scans in a JPEG | 100 (a photo has about ten) | [`Error::Decode`], from the markers, before decoding | - |
//! | cache | 64 MiB, 4096 entries, 300 s | least recently used entries are evicted; expired ones are never returned | [`Config::cache_cost_limit`], [`Config::cache_count_limit`], [`Config::cache_ttl`] |
//! | textures (`egui` feature) | 32 MiB | least recently drawn textures are freed; their thumbnails come back from the cache | [`Config::texture_budget`] |
//! | texture uploads per pass (`egui` feature) | 1 MiB | the rest are uploaded in the next passes | [`Config::upload_budget`] |
//! | requests waiting to be drained | 10,000 | [`Error::TooManyPending`], with no work started: a UI that never drains holds a bounded number of thumbnails | [`Config::max_pending_requests`] |
//! | disk cache (opt-in) | 256 MiB when a directory is set | least recently used entries are removed before a write that would pass it; a response larger than the budget is not written | [`Config::disk_cache_dir`], [`Config::disk_cache_bytes`] |
//! | a disk cache read | 250 ms | the load goes to the network, and later loads skip the disk, but for one probe a second, until a disk operation finishes | [`Config::disk_read_timeout`] |
//! | bodies of writes waiting for the disk | 16 MiB (and 16 MiB more while the opening scan runs) | a response or thumbnail is not written ([`DiskStats::writes_skipped`]) | - |
//! | dropping the pipeline | 0.5 s for a decode still running, as long for a `file://` read or the disk cache's pending writes | the thread finishes that job alone and exits; nothing is delivered or woken after the drop | - |
//!
//! Change them with [`Config`]:
//!
//! ```
//! use std::time::Duration;
//!
//! let mut config = thumbpipe::Config::default();
//! config.total_timeout = Duration::from_secs(10);
//! config.max_body_bytes = 4 * 1024 * 1024;
//! config.max_dimension = 8192;
//! let pipeline = thumbpipe::Pipeline::<u32>::new(config)?;
//! # Ok::<(), thumbpipe::BuildError>(())
//! ```
//!
//! # What is loaded
//!
//! - `http` and `https` URLs. TLS is rustls, with certificates checked
//!   against the platform's trusted roots and any
//!   [`Config::extra_root_certificates`]; a certificate that fails the check
//!   is [`Error::Tls`]. A redirect from `https` to `http` is not followed
//!   unless [`Config::allow_https_to_http_redirects`] says so.
//! - `file://` URLs only when [`Config::file_root`] is set, and then only
//!   files whose path, with symbolic links resolved, lies under that
//!   directory; others are [`Error::UnsupportedUrl`]. Only regular files
//!   are read: a FIFO or a device is [`Error::File`], told from the opened
//!   handle without waiting on it. The check and the read happen together
//!   off the UI thread; a link swapped into a directory of the path between
//!   them is not guarded against, so do not point the root at a directory
//!   that untrusted users can write to.
//! - Every other scheme is [`Error::UnsupportedUrl`], delivered at the next
//!   [`Pipeline::drain`].
//! - The [`SUPPORTED_FORMATS`]. Anything else, and any
//!   malformed input, is [`Error::Decode`]; a decoder panic is caught and
//!   becomes [`Error::Decode`] too, and a custom fetcher's panic
//!   [`Error::FetcherPanicked`].
//! - If a runtime given to [`PipelineBuilder::runtime`] is shut down while
//!   the pipeline is in use, the waker is called and every pending and later
//!   request completes with [`Error::Shutdown`].

#![warn(missing_docs)]

mod cache;
mod coast;
mod config;
mod decode;
mod deliver;
mod disk;
#[cfg(feature = "egui")]
pub mod egui;
mod error;
mod fetch;
mod load;
mod metrics;
mod queue;
mod request;
mod rows;
mod thumbnail;
mod workers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};
use tokio_util::sync::CancellationToken;

pub use cache::CacheStats;
pub use coast::{CoastModel, CoastPrediction, ExponentialDecay, ListGeometry, RowVisit};
pub use config::Config;
pub use decode::{Decode, ImageDecoder, SUPPORTED_FORMATS, thumbnail_from_bytes};
pub use deliver::Completion;
pub use disk::DiskStats;
pub use error::{BuildError, Error};
pub use fetch::{Fetch, FetchFn, HttpFetcher, fetch_fn};
pub use metrics::Stats;
pub use request::{Priority, TargetSize};
pub use thumbnail::Thumbnail;

use cache::{CacheLimits, CacheView};
use decode::DecodePool;
use deliver::{Delivery, Outbox, Waker, unset_waker};
use load::{LoadHandle, Parts};
use metrics::Metrics;
use request::SubscriptionId;

/// The thumbnail pipeline, keyed by row keys of type `K` (a row index, an
/// item id: anything small, hashable and cloneable).
///
/// Owns an I/O runtime (`thumbpipe-io-N`, unless built
/// [`with_runtime`](PipelineBuilder::runtime)), the decode threads
/// (`thumbpipe-decode-N`) and the load actor. Dropping it cancels every
/// request and ends its threads and tasks in bounded time (see its `Drop`);
/// no completion arrives and the waker is not called after that.
pub struct Pipeline<K> {
    rows: HashMap<K, rows::Row>,
    /// Which row owns each pending request.
    owners: HashMap<SubscriptionId, K>,
    /// Results decided on the UI side (a bad URL), returned by the next
    /// `drain` if their request is still current.
    ready: Vec<Delivery>,
    /// Requests refused past `max_pending`, ended by the next `drain` with
    /// [`Error::TooManyPending`].
    refused: Vec<SubscriptionId>,
    next_id: SubscriptionId,
    default_ttl: Duration,
    /// Whether `file://` URLs may be requested (`Config::file_root` is set).
    files_allowed: bool,
    /// `Config::max_pending_requests`.
    max_pending: usize,
    /// The load actor; dropping it ends the actor.
    loads: LoadHandle,
    deliveries: std::sync::mpsc::Receiver<Delivery>,
    metrics: Arc<Metrics>,
    cache_stats: Arc<Mutex<CacheStats>>,
    /// The default fetcher's disk cache counters, when it has one.
    disk_counters: Option<Arc<disk::DiskCounters>>,
    /// The cache's entries, read by [`Pipeline::cached`] without waiting.
    cache_view: CacheView,
    waker: Arc<Mutex<Option<Waker>>>,
    root: CancellationToken,
    decode_pool: Arc<DecodePool>,
    /// Present when the pipeline owns its runtime.
    runtime: Option<Runtime>,
}

/// Builds a [`Pipeline`] with a runtime, fetcher or decoder of your own.
///
/// ```
/// # #[tokio::main]
/// # async fn main() -> Result<(), thumbpipe::BuildError> {
/// let pipeline = thumbpipe::Pipeline::<u64>::builder()
///     .config(thumbpipe::Config::default())
///     .runtime(tokio::runtime::Handle::current())
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[must_use]
pub struct PipelineBuilder<K> {
    config: Config,
    runtime: Option<Handle>,
    fetcher: Option<Arc<dyn Fetch>>,
    decoder: Option<Arc<dyn Decode>>,
    rows: std::marker::PhantomData<fn() -> K>,
}

impl<K> PipelineBuilder<K> {
    /// Settings; default [`Config::default`].
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Runs the I/O side (the load actor and fetches) on this runtime instead
    /// of the pipeline's own.
    pub fn runtime(mut self, handle: Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// Keeps an HTTP cache of up to `max_bytes` on disk in `dir`: sets
    /// [`Config::disk_cache_dir`] and [`Config::disk_cache_bytes`] (after
    /// [`PipelineBuilder::config`], which replaces them).
    ///
    /// ```
    /// let pipeline = thumbpipe::Pipeline::<u64>::builder()
    ///     .disk_cache(std::env::temp_dir().join("my-app-thumbnails"), 100 << 20)
    ///     .build()?;
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub fn disk_cache(mut self, dir: impl Into<std::path::PathBuf>, max_bytes: u64) -> Self {
        self.config.disk_cache_dir = Some(dir.into());
        self.config.disk_cache_bytes = max_bytes;
        self
    }

    /// Fetches with `fetcher` instead of an [`HttpFetcher`] (which is what
    /// keeps the disk cache: a custom fetcher has none).
    pub fn fetcher(mut self, fetcher: impl Fetch) -> Self {
        self.fetcher = Some(Arc::new(fetcher));
        self
    }

    /// Decodes with `decoder` instead of an [`ImageDecoder`] (the config's
    /// dimension and allocation limits then are the decoder's business).
    pub fn decoder(mut self, decoder: impl Decode) -> Self {
        self.decoder = Some(Arc::new(decoder));
        self
    }

    /// Starts the pipeline's threads and its load actor.
    pub fn build(self) -> Result<Pipeline<K>, BuildError> {
        let config = self.config;
        config.validate()?;
        let (runtime, handle) = match self.runtime {
            Some(handle) => (None, handle),
            None => {
                let runtime = io_runtime(config.io_threads)?;
                let handle = runtime.handle().clone();
                (Some(runtime), handle)
            }
        };
        let (fetcher, disk_counters, thumbnails): (Arc<dyn Fetch>, _, _) = match self.fetcher {
            Some(fetcher) => (fetcher, None, None),
            None => {
                // reqwest's client needs a runtime context to build.
                let _entered = handle.enter();
                let fetcher = HttpFetcher::new(&config)?;
                let disk = fetcher.disk_cache();
                let counters = disk.as_ref().map(|disk| disk.counters());
                // Thumbnails on disk are what the default decoder makes.
                let thumbnails =
                    disk.filter(|_| config.disk_cache_thumbnails && self.decoder.is_none());
                (Arc::new(fetcher), counters, thumbnails)
            }
        };
        let decode: Arc<dyn Decode> = match self.decoder {
            Some(decoder) => decoder,
            None => Arc::new(ImageDecoder::new(&config)),
        };
        let decode_pool = Arc::new(DecodePool::start(
            config.decode_threads,
            config.large_image_pixels,
            decode,
        )?);
        let (outbox, deliveries) = std::sync::mpsc::channel();
        let metrics = Arc::new(Metrics::default());
        let cache_stats = Arc::new(Mutex::new(CacheStats::default()));
        let waker = Arc::new(Mutex::new(None));
        let root = CancellationToken::new();
        let cache_view = CacheView::default();
        let parts = Parts {
            fetcher,
            thumbnails,
            decode_pool: Arc::clone(&decode_pool),
            outbox: Outbox::new(outbox, Arc::clone(&waker)),
            metrics: Arc::clone(&metrics),
            cache_stats: Arc::clone(&cache_stats),
            cache_limits: CacheLimits {
                cost: config.cache_cost_limit,
                count: config.cache_count_limit,
            },
            cache_view: cache_view.clone(),
            max_per_host: config.max_concurrent_fetches,
            max_in_flight: config.max_fetches_in_flight,
            max_body_bytes: config.max_body_bytes,
            max_bytes_awaiting_decode: config.max_bytes_awaiting_decode,
            root: root.clone(),
        };
        let loads = load::start(parts, &handle);
        Ok(Pipeline {
            rows: HashMap::new(),
            owners: HashMap::new(),
            ready: Vec::new(),
            refused: Vec::new(),
            next_id: 0,
            default_ttl: config.cache_ttl,
            files_allowed: config.file_root.is_some(),
            max_pending: config.max_pending_requests,
            loads,
            deliveries,
            metrics,
            cache_stats,
            disk_counters,
            cache_view,
            waker,
            root,
            decode_pool,
            runtime,
        })
    }
}

fn io_runtime(threads: usize) -> std::io::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        // reqwest resolves host names on the blocking pool: one thread is
        // enough, and bounds it. File URLs have a thread of their own.
        .max_blocking_threads(1)
        .thread_name_fn(|| {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            format!("thumbpipe-io-{}", NEXT.fetch_add(1, Ordering::Relaxed))
        })
        .enable_all()
        .build()
}

impl<K> Pipeline<K> {
    /// A pipeline with `config`, its own I/O runtime and an [`HttpFetcher`].
    pub fn new(config: Config) -> Result<Self, BuildError> {
        Self::builder().config(config).build()
    }

    /// A pipeline whose I/O side runs on `handle`'s runtime.
    pub fn with_runtime(handle: Handle, config: Config) -> Result<Self, BuildError> {
        Self::builder().config(config).runtime(handle).build()
    }

    /// A builder, for a runtime, fetcher or decoder of your own.
    pub fn builder() -> PipelineBuilder<K> {
        PipelineBuilder {
            config: Config::default(),
            runtime: None,
            fetcher: None,
            decoder: None,
            rows: std::marker::PhantomData,
        }
    }

    /// Sets the callback run (on a pipeline thread) when completions are
    /// ready to drain; with egui, `move || ctx.request_repaint()`.
    ///
    /// It is never called after the pipeline's drop has returned: the drop
    /// waits for a call in progress, and so does a later `set_waker`. So
    /// the waker must not drop the pipeline or call `set_waker` itself, nor
    /// wait for the thread that does. A panic in it is caught and ignored.
    pub fn set_waker(&self, waker: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut slot) = self.waker.lock() {
            *slot = Some(Arc::new(waker));
        }
    }

    /// The pipeline's counters and gauges now.
    pub fn stats(&self) -> Stats {
        let cache = self.cache_stats.lock().map(|s| *s).unwrap_or_default();
        let disk = self
            .disk_counters
            .as_ref()
            .map(|counters| counters.snapshot())
            .unwrap_or_default();
        self.metrics.snapshot(cache, disk)
    }
}

impl<K> Drop for Pipeline<K> {
    /// Cancels everything and ends the pipeline's threads and tasks; no
    /// completion arrives and the waker is not called after it returns.
    ///
    /// It waits at most half a second for a decode still running (a decode
    /// cannot be interrupted) and as long for a `file://` read, or the disk
    /// cache's reads and writes, in progress:
    /// a thread still busy then is left to finish that one job and exit on
    /// its own. Its own runtime gets 100 ms to stop. With a runtime of your
    /// own, the load tasks end at their next poll; dropped outside that
    /// runtime's tasks (and not on a current-thread runtime, whose one
    /// thread this would be), it also waits, at most a second, until they
    /// have. A pipeline with no such stuck job drops in milliseconds.
    fn drop(&mut self) {
        self.root.cancel();
        unset_waker(&self.waker);
        self.decode_pool.shutdown(decode::SHUTDOWN_PATIENCE);
        match self.runtime.take() {
            Some(runtime) => shut_down(runtime),
            // In a task, or anywhere on a current-thread runtime, waiting
            // could hold up the very thread that would poll them; they end
            // at their next poll without doing work.
            None if can_wait_for_tasks() => {
                self.loads.wait_ended(TASKS_PATIENCE);
            }
            None => {}
        }
    }
}

/// Whether this thread may block waiting for tasks of a caller's runtime:
/// not from inside a task, nor on a current-thread runtime (in its
/// `block_on`, this thread is the only one that could poll them).
fn can_wait_for_tasks() -> bool {
    if tokio::task::try_id().is_some() {
        return false;
    }
    Handle::try_current().map_or(true, |handle| {
        handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread
    })
}

/// How long dropping the pipeline waits for the load tasks on a caller's
/// runtime.
const TASKS_PATIENCE: Duration = Duration::from_secs(1);

/// How long dropping the pipeline waits for its own runtime's threads.
const RUNTIME_PATIENCE: Duration = Duration::from_millis(100);

/// Shuts the pipeline's own runtime down and joins its threads, waiting at
/// most [`RUNTIME_PATIENCE`]. Inside another runtime, where tokio refuses
/// to block, a helper thread does it and is joined.
fn shut_down(runtime: Runtime) {
    if Handle::try_current().is_err() {
        return runtime.shutdown_timeout(RUNTIME_PATIENCE);
    }
    let mut slot = Some(runtime);
    std::thread::scope(|scope| {
        let helper = std::thread::Builder::new()
            .name("thumbpipe-drop".into())
            .spawn_scoped(scope, || {
                if let Some(runtime) = slot.take() {
                    runtime.shutdown_timeout(RUNTIME_PATIENCE);
                }
            });
        if let Ok(helper) = helper {
            let _ = helper.join();
        }
    });
    if let Some(runtime) = slot.take() {
        runtime.shutdown_background();
    }
}
