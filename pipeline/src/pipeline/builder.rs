//! The builder: a [`Pipeline`] started with a runtime, fetcher or decoder
//! of the app's own, or the defaults. Runs once, on the caller's thread:
//! it validates the config, starts the threads and the load actor, and
//! returns the handle (or the first error, with nothing left running).

use std::sync::{Arc, Mutex};

use tokio::runtime::{Handle, Runtime};
use tokio_util::sync::CancellationToken;

use super::Pipeline;
use crate::cache::{CacheLimits, CacheView};
use crate::decode::{DecodePool, read_as_needed};
use crate::deliver::Outbox;
use crate::disk::{WithDisk, with_disk};
use crate::fetch::{BodyBudget, RequestHeaders};
use crate::load::{self, Parts, either};
use crate::local_files::LocalFiles;
use crate::metrics::Metrics;
use crate::shared_thumbnails;
use crate::{BuildError, CacheStats, Config, Decode, Fetch, HttpFetcher, ImageDecoder};

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
    pub(super) fn new() -> Self {
        Self {
            config: Config::default(),
            runtime: None,
            fetcher: None,
            decoder: None,
            rows: std::marker::PhantomData,
        }
    }

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

    /// Fetches with `fetcher` instead of an [`HttpFetcher`]. With
    /// [`DiskConfig::dir`](crate::DiskConfig::dir) set, the disk cache is a
    /// layer in front of it, and keeps what its [`Fetch::fetch_response`]
    /// allows.
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

    /// The same config, runtime, fetcher and decoder, for a pipeline whose
    /// rows are keyed by `R`: how a front door that keys its rows itself
    /// (thumbpipe's egui loader, or a toolkit's of your own) takes an app's
    /// builder.
    ///
    /// ```
    /// let app: thumbpipe::PipelineBuilder<()> = thumbpipe::Pipeline::builder();
    /// let by_name: thumbpipe::PipelineBuilder<String> = app.for_rows();
    /// ```
    pub fn for_rows<R>(self) -> PipelineBuilder<R> {
        PipelineBuilder {
            config: self.config,
            runtime: self.runtime,
            fetcher: self.fetcher,
            decoder: self.decoder,
            rows: std::marker::PhantomData,
        }
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
        let (fetcher, local_files) = match self.fetcher {
            Some(fetcher) => (fetcher, None),
            None => default_fetcher(&config, &handle)?,
        };
        let metrics = Arc::new(Metrics::default());
        // The disk cache: a layer in front of the fetcher, and the
        // thumbnail tier beside it.
        let WithDisk {
            fetcher,
            stats: disk_stats,
            thumbnails,
        } = with_disk(fetcher, &config, self.decoder.is_none())?;
        // The desktop's thumbnails of local files: a tier beside it.
        let shared = shared_thumbnails::tier(
            &config,
            local_files,
            &metrics,
            self.decoder.is_none() && !config.decode.animation,
        )?;
        let thumbnails = either(thumbnails, shared);
        let decode_pool = decode_pool(self.decoder, &config)?;
        // A decoder that takes bodies cut short gets JPEGs read only as far
        // as their thumbnail needs: a layer in front of the others.
        let takes_cut_short_bodies = decode_pool.decoder().takes_cut_short_bodies();
        let fetcher = if takes_cut_short_bodies {
            read_as_needed(fetcher, &config.decode)
        } else {
            fetcher
        };
        let (outbox, deliveries) = std::sync::mpsc::channel();
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
                cost: config.cache.max_bytes,
                count: config.cache.max_entries,
            },
            cache_view: cache_view.clone(),
            max_per_host: config.fetch.max_per_host,
            max_in_flight: config.fetch.max_in_flight,
            // Twice the threads: a read is ready for each as one ends, and
            // a row that leaves takes back a read that has not started.
            file_slots: config.fetch.file_readers.saturating_mul(2),
            max_body_bytes: config.fetch.max_body_bytes,
            body_budget_bytes: config.fetch.body_budget_bytes,
            body_budget: Arc::new(BodyBudget::new(config.fetch.body_budget_bytes)),
            root: root.clone(),
            request_headers: RequestHeaders::new(
                config.fetch.headers.clone(),
                config.fetch.header_hook.clone(),
            ),
            takes_cut_short_bodies,
        };
        let loads = load::start(parts, &handle);
        Ok(Pipeline {
            rows: super::rows::RowTable::new(config.max_pending_requests),
            ready: Vec::new(),
            refused: Vec::new(),
            default_ttl: config.cache.ttl,
            files_allowed: !config.fetch.file_roots.is_empty(),
            loads,
            deliveries,
            metrics,
            cache_stats,
            disk_stats,
            cache_view,
            waker,
            root,
            decode_pool,
            runtime,
        })
    }
}

/// The decode threads, running the app's decoder or the default one
/// under `config.decode`.
fn decode_pool(
    decoder: Option<Arc<dyn Decode>>,
    config: &Config,
) -> Result<Arc<DecodePool>, BuildError> {
    let decode: Arc<dyn Decode> = match decoder {
        Some(decoder) => decoder,
        None => Arc::new(ImageDecoder::new(&config.decode)),
    };
    Ok(Arc::new(DecodePool::start(
        config.decode.threads,
        config.decode.large_image_pixels,
        config
            .decode
            .animation
            .then_some(config.decode.max_animation_frames),
        decode,
    )?))
}

/// A fetcher, and the local files it reads (`None` without file roots),
/// for the shared thumbnails of the same files.
type FetcherAndFiles = (Arc<dyn Fetch>, Option<Arc<LocalFiles>>);

/// The pipeline's own fetcher, and its local files.
fn default_fetcher(config: &Config, handle: &Handle) -> Result<FetcherAndFiles, BuildError> {
    // reqwest's client needs a runtime context to build.
    let _entered = handle.enter();
    let fetcher = HttpFetcher::for_pipeline(&config.fetch)?;
    let local_files = fetcher.local_files();
    Ok((Arc::new(fetcher), local_files))
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
