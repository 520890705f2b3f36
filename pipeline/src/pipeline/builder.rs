//! The builder: a [`Pipeline`] started with a runtime, fetcher, sources or
//! decoder of the app's own, or the defaults. Runs once, on the caller's
//! thread: it validates the config, routes each scheme to its source,
//! starts the threads and the load actor, and returns the handle (or the
//! first error, with nothing left running).

use std::sync::{Arc, Mutex};

use tokio::runtime::{Handle, Runtime};
use tokio_util::sync::CancellationToken;

use super::Pipeline;
use crate::cache::{CacheLimits, CacheStats, CacheView};
use crate::config::Config;
use crate::decode::{Decode, DecodePool, ImageDecoder};
use crate::deliver::Outbox;
use crate::disk::{WithDisk, with_disk};
use crate::error::BuildError;
use crate::fetch::{
    BodyBudget, Fetch, FileSource, HttpFetcher, RequestHeaders, Sources, read_as_needed,
};
use crate::load::{self, Parts, either};
use crate::local_files::LocalFiles;
use crate::metrics::Metrics;
use crate::request::is_scheme;
use crate::shared_thumbnails;

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
    /// The app's sources, by scheme as given, in order.
    sources: Vec<(String, Arc<dyn Fetch>)>,
    decoder: Option<Arc<dyn Decode>>,
    rows: std::marker::PhantomData<fn() -> K>,
}

impl<K> PipelineBuilder<K> {
    pub(super) fn new() -> Self {
        Self {
            config: Config::default(),
            runtime: None,
            fetcher: None,
            sources: Vec::new(),
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

    /// Fetches `http` and `https` URLs with `fetcher` instead of an
    /// [`HttpFetcher`] (an API client that signs requests, a test's
    /// fixtures). With [`DiskConfig::dir`](crate::DiskConfig::dir) set, the
    /// disk cache is a layer in front of it, and keeps what its
    /// [`Fetch::fetch_response`] allows. `file://` URLs are still read by
    /// the pipeline's own file source, under
    /// [`FetchConfig::file_roots`](crate::FetchConfig::file_roots); other
    /// schemes are [`PipelineBuilder::source`]'s.
    pub fn fetcher(mut self, fetcher: impl Fetch) -> Self {
        self.fetcher = Some(Arc::new(fetcher));
        self
    }

    /// Fetches the URLs of `scheme` (`s3`, `zip`, `myapp`: any case, taken
    /// as lower case) with `fetcher`. A pipeline then takes requests for
    /// them, and the egui door takes `egui::Image`s of them; a scheme with
    /// no source is refused with [`Error::UnsupportedUrl`](crate::Error::UnsupportedUrl).
    /// `http`, `https` and `file` may be given too, which replaces
    /// thumbpipe's own source for that scheme; a later call for a scheme
    /// replaces an earlier one. A `file` source of the app's is not confined
    /// to [`FetchConfig::file_roots`](crate::FetchConfig::file_roots): the
    /// roots guard thumbpipe's own file source, and what an app's reads is
    /// its own to check. A name that is not a URL scheme (a letter,
    /// then letters, digits, `+`, `-` or `.`) makes [`build`](Self::build)
    /// fail with [`BuildError::Config`].
    ///
    /// The URL is the source's to read: `demo://cover/7`, `s3://bucket/key`
    /// or `myapp:42`. Its fetches count against
    /// [`FetchConfig::max_per_host`](crate::FetchConfig::max_per_host) by
    /// the URL's scheme and host, apart from any network host's.
    ///
    /// ```
    /// use bytes::Bytes;
    ///
    /// static PNG: &[u8] = &[0x89, b'P', b'N', b'G'];
    /// let mut pipeline = thumbpipe::Pipeline::<u32>::builder()
    ///     .source("demo", thumbpipe::fetch_fn(|url, _max_bytes| async move {
    ///         // `url` is `demo://cover/7`: look it up in the app's own store.
    ///         let _id = url.path();
    ///         Ok(Bytes::from_static(PNG))
    ///     }))
    ///     .build()?;
    /// assert!(pipeline.schemes().any(|scheme| scheme == "demo"));
    /// let size = thumbpipe::TargetSize::square(64);
    /// pipeline.request(0, "demo://cover/7", size, thumbpipe::Priority::Visible);
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub fn source(mut self, scheme: impl Into<String>, fetcher: impl Fetch) -> Self {
        self.sources.push((scheme.into(), Arc::new(fetcher)));
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
            sources: self.sources,
            decoder: self.decoder,
            rows: std::marker::PhantomData,
        }
    }

    /// Starts the pipeline's threads and its load actor.
    pub fn build(self) -> Result<Pipeline<K>, BuildError> {
        let config = self.config;
        config.validate()?;
        check_schemes(&self.sources)?;
        let (runtime, handle) = runtime_for_io(self.runtime, config.io_threads)?;
        // One set of local files serves the `file` source and the shared
        // thumbnails of the same files.
        let local_files = (!config.fetch.file_roots.is_empty())
            .then(|| LocalFiles::start(&config.fetch.file_roots, config.fetch.file_readers))
            .transpose()?
            .map(Arc::new);
        let network = match self.fetcher {
            Some(fetcher) => fetcher,
            None => default_fetcher(&config, &handle)?,
        };
        let sources = route_schemes(network, local_files.as_ref(), self.sources);
        let schemes = sources.schemes();
        let fetcher: Arc<dyn Fetch> = Arc::new(sources);
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
            schemes,
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
            io: handle,
        })
    }
}

/// The runtime the I/O side runs on: the app's `given` one, or one of its
/// own with `threads` workers (returned, to be kept alive with the
/// pipeline).
fn runtime_for_io(
    given: Option<Handle>,
    threads: usize,
) -> std::io::Result<(Option<Runtime>, Handle)> {
    match given {
        Some(handle) => Ok((None, handle)),
        None => {
            let runtime = io_runtime(threads)?;
            let handle = runtime.handle().clone();
            Ok((Some(runtime), handle))
        }
    }
}

/// An error naming the first of the app's `sources` whose scheme is not a
/// URL scheme.
fn check_schemes(sources: &[(String, Arc<dyn Fetch>)]) -> Result<(), BuildError> {
    match sources.iter().find(|(scheme, _)| !is_scheme(scheme)) {
        Some((scheme, _)) => Err(BuildError::Config(format!(
            "PipelineBuilder::source: '{scheme}' is not a URL scheme (a letter, then \
             letters, digits, '+', '-' or '.')"
        ))),
        None => Ok(()),
    }
}

/// The scheme router: `http` and `https` to `network`, `file` to the
/// local files when there are roots, then the app's own sources (one of
/// which may take a scheme above over).
fn route_schemes(
    network: Arc<dyn Fetch>,
    local_files: Option<&Arc<LocalFiles>>,
    own: Vec<(String, Arc<dyn Fetch>)>,
) -> Sources {
    let mut sources = vec![
        ("http".to_owned(), Arc::clone(&network)),
        ("https".to_owned(), network),
    ];
    if let Some(files) = local_files {
        let files: Arc<dyn Fetch> = Arc::new(FileSource::new(Arc::clone(files)));
        sources.push(("file".to_owned(), files));
    }
    sources.extend(own);
    Sources::new(sources)
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

/// The pipeline's own fetcher for `http` and `https`.
fn default_fetcher(config: &Config, handle: &Handle) -> Result<Arc<dyn Fetch>, BuildError> {
    // reqwest's client needs a runtime context to build.
    let _entered = handle.enter();
    Ok(Arc::new(HttpFetcher::for_pipeline(&config.fetch)?))
}

fn io_runtime(threads: usize) -> std::io::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        // reqwest resolves host names on the blocking pool, and the HTTP
        // client is made there at the first http load (`fetch/client.rs`):
        // one thread is enough, and bounds it. File URLs have threads of
        // their own.
        .max_blocking_threads(1)
        .thread_name_fn(|| {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            format!("thumbpipe-io-{}", NEXT.fetch_add(1, Ordering::Relaxed))
        })
        .enable_all()
        .build()
}
