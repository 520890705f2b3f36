//! The pipeline handle: what an app holds. Owns the I/O runtime (unless given
//! one), the decode pool and the load actor's handle, and the UI side's row
//! table (`rows.rs`, plain data): one live request per row key, matched with
//! the completions that come back. Its calls from the UI thread are `frame.rs`.
//! Built by `builder.rs`. Its methods run on the caller's (UI) thread and never
//! block; dropping it cancels every request and ends its threads and tasks in
//! bounded time.

mod builder;
mod frame;
mod rows;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};
use tokio_util::sync::CancellationToken;

pub use builder::PipelineBuilder;

use crate::cache::{CacheStats, CacheView};
use crate::config::Config;
use crate::decode::{self, DecodePool};
use crate::deliver::{Delivery, Waker, unset_waker};
use crate::disk::DiskStatsFn;
use crate::error::BuildError;
use crate::load::LoadHandle;
use crate::metrics::{Metrics, Stats};
use crate::request::RequestId;
use crate::request::Schemes;

/// The thumbnail pipeline, keyed by row keys of type `K` (a row index, an
/// item id: anything small, hashable and cloneable).
///
/// Owns an I/O runtime (`thumbpipe-io-N`, unless built
/// [`with_runtime`](PipelineBuilder::runtime)), the decode threads
/// (`thumbpipe-decode-N`) and the load actor. Dropping it cancels every
/// request and ends its threads and tasks in bounded time (see its `Drop`);
/// no completion arrives and the waker is not called after that.
pub struct Pipeline<K> {
    /// Every row's current request.
    rows: rows::RowTable<K>,
    /// Results decided on the UI side (a bad URL), returned by the next
    /// `drain` if their request is still current.
    ready: Vec<Delivery>,
    /// Requests refused past `max_pending`, ended by the next `drain` with
    /// [`Error::TooManyPending`].
    refused: Vec<RequestId>,
    default_ttl: Duration,
    /// The schemes with a source: what a request's URL may have.
    schemes: Schemes,
    /// The load actor; dropping it ends the actor.
    loads: LoadHandle,
    deliveries: std::sync::mpsc::Receiver<Delivery>,
    metrics: Arc<Metrics>,
    cache_stats: Arc<Mutex<CacheStats>>,
    /// The disk cache's counters, when it is on.
    disk_stats: Option<DiskStatsFn>,
    /// The cache's entries, read by [`Pipeline::cached`] without waiting.
    cache_view: CacheView,
    waker: Arc<Mutex<Option<Waker>>>,
    root: CancellationToken,
    decode_pool: Arc<DecodePool>,
    /// Present when the pipeline owns its runtime.
    runtime: Option<Runtime>,
    /// The I/O runtime, its own or the app's.
    io: Handle,
}

impl<K> Pipeline<K> {
    /// A pipeline with `config`, its own I/O runtime and an [`HttpFetcher`](crate::HttpFetcher).
    pub fn new(config: Config) -> Result<Self, BuildError> {
        Self::builder().config(config).build()
    }

    /// A pipeline whose I/O side runs on `handle`'s runtime.
    pub fn with_runtime(handle: Handle, config: Config) -> Result<Self, BuildError> {
        Self::builder().config(config).runtime(handle).build()
    }

    /// A builder, for a runtime, fetcher or decoder of your own.
    pub fn builder() -> PipelineBuilder<K> {
        PipelineBuilder::new()
    }

    /// Sets the callback run (on a pipeline thread) when completions are
    /// ready to drain; with egui, `move || ctx.request_repaint()`.
    ///
    /// It is never called after the pipeline's drop has returned: the drop
    /// waits for a call in progress, and so does a later `set_waker`. So
    /// the waker must not drop the pipeline or call `set_waker` itself, nor
    /// wait for the thread that does. A panic in it is caught and ignored.
    /// A completion [`Pipeline::request`] makes at once (a URL that does
    /// not parse, too many pending) calls no waker: the next `drain` has it.
    pub fn set_waker(&self, waker: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut slot) = self.waker.lock() {
            *slot = Some(Arc::new(waker));
        }
    }

    /// Calls `wake` after `delay`, on the I/O runtime, unless the pipeline
    /// is dropped first: for a toolkit door that is woken only by messages
    /// (iced), to look again at a list once its scroll has stopped.
    #[cfg_attr(not(feature = "iced"), allow(dead_code))]
    pub(crate) fn wake_after(&self, delay: Duration, wake: impl FnOnce() + Send + 'static) {
        let dropped = self.root.clone();
        self.io.spawn(async move {
            tokio::select! {
                biased;
                () = dropped.cancelled() => {}
                () = tokio::time::sleep(delay) => {
                    if !dropped.is_cancelled() {
                        wake();
                    }
                }
            }
        });
    }

    /// The pipeline's counters and gauges now.
    pub fn stats(&self) -> Stats {
        let cache = self.cache_stats.lock().map(|s| *s).unwrap_or_default();
        let disk = self
            .disk_stats
            .as_ref()
            .map(|read| read())
            .unwrap_or_default();
        self.metrics.snapshot(cache, disk)
    }

    /// The URL schemes it has a source for, in lower case, sorted:
    /// `http` and `https`, `file` with a root in
    /// [`FetchConfig::file_roots`](crate::FetchConfig::file_roots), and
    /// those added with [`PipelineBuilder::source`]. A request for any
    /// other is refused with [`Error::UnsupportedUrl`](crate::Error::UnsupportedUrl).
    ///
    /// ```
    /// let pipeline = thumbpipe::Pipeline::<u32>::new(thumbpipe::Config::default())?;
    /// assert_eq!(pipeline.schemes().collect::<Vec<_>>(), ["http", "https"]);
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub fn schemes(&self) -> impl Iterator<Item = &str> {
        self.schemes.names()
    }

    /// The schemes, for a front door that tells its URIs from others.
    #[cfg(feature = "egui")]
    pub(crate) fn scheme_set(&self) -> &Schemes {
        &self.schemes
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
