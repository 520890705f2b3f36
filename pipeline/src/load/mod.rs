//! The load actor: one task that turns requests into fetches, decodes
//! and deliveries, over three parts that are plain data: the task registry
//! (one shared load per url and size: coalescing), the fetch scheduler
//! (queue and per-host slots) and the cache.
//!
//! It runs on the pipeline's I/O runtime and is the only code that touches
//! that state. The UI side talks to it through a [`LoadHandle`]; fetch tasks
//! and decode threads report on a channel of the actor's own. Neither
//! channel ever blocks a sender. The actor ends when its `LoadHandle` is
//! dropped or the pipeline's root token is cancelled; every fetch it
//! started is a child of that token and ends with it. If it stops any other
//! way (its runtime shut down under it, a panic), its `EndGuard` wakes the
//! UI, whose requests then end with `Error::Shutdown`.
//!
//! ```text
//! Subscribe --> cache hit? -- yes --> deliver
//!                  | no
//!                  v
//!          registry: task for (url, size)? -- yes --> join it (coalesced)
//!                  | no
//!                  v
//!          scheduler: queue --slot--> [thumbnail tier: lookup task --LookedUp--> actor]
//!                                       |                                  | missed
//!                                       |   +------------------------------+
//!                                       v   v
//!                                     fetch task --Fetched--> actor --> decode pool
//!                                                                          |
//!          deliver to every subscriber <-- cache put <-- actor <--Decoded--+
//! ```
//!
//! With a thumbnail tier (the disk cache's decoded thumbnails), a load that
//! holds a fetch slot first asks it (`LookingUp`: a hit is no fetch, no
//! decode), and every thumbnail decoded is offered to it with the body it
//! came from. The responses themselves are the fetcher's business: the
//! disk cache is a layer of the [`Fetch`] the actor is given.
//!
//! Where to change what: a new priority is a [`Priority`] variant (the
//! queues order by it); a new stage between fetch and decode is a
//! [`Stage`] and an [`Event`] handled here; the order fetches start in is
//! `schedule.rs`, how a fetch task runs `fetches.rs`, a decode job
//! `decodes.rs`. The UI side's handle
//! and the guards of the actor's end are `handle.rs`.

mod decodes;
mod fetches;
mod handle;
mod registry;
mod schedule;
pub(crate) mod tier;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use url::Url;

pub(crate) use handle::LoadHandle;
use handle::{Command, EndGuard, LiveTasks};
use registry::{Joined, Left, Stage, TaskRegistry};
use schedule::{FetchScheduler, Removed};
pub(crate) use tier::{ThumbnailTier, either};

use crate::cache::{CacheKey, CacheLimits, CacheStats, CacheView, ThumbnailCache};
use crate::decode::{DecodeJob, DecodeOutcome, DecodePool};
use crate::deliver::{Delivery, Outbox};
use crate::error::Error;
use crate::fetch::{BodyBudget, Fetch, FetchResponse, RequestHeaders};
use crate::metrics::{LoadTimes, Metrics};
use crate::request::{Priority, RequestId, TaskId, host_key};
use crate::thumbnail::Thumbnail;

/// From the fetch tasks and decode threads.
enum Event {
    /// The thumbnail tier answered: with the thumbnail (no fetch, no
    /// decode), or without (fetch it).
    LookedUp(TaskId, Option<Result<Thumbnail, Error>>),
    Fetched(TaskId, Result<FetchResponse, Error>),
    /// A decode ended; its body, of this many bytes, is gone.
    Decoded(TaskId, u64, DecodeOutcome),
}

/// What the actor needs from the rest of the pipeline.
pub(crate) struct Parts {
    /// The fetch stage, with any layers in front of it (the disk cache).
    pub(crate) fetcher: Arc<dyn Fetch>,
    /// Decoded thumbnails kept beside the fetch stage (the disk cache's),
    /// when it keeps them: asked before a fetch, and offered every
    /// thumbnail decoded.
    pub(crate) thumbnails: Option<Arc<dyn ThumbnailTier>>,
    pub(crate) decode_pool: Arc<DecodePool>,
    pub(crate) outbox: Outbox,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) cache_stats: Arc<Mutex<CacheStats>>,
    pub(crate) cache_limits: CacheLimits,
    /// Where the cache publishes its entries for the UI side.
    pub(crate) cache_view: CacheView,
    pub(crate) max_per_host: usize,
    pub(crate) max_in_flight: usize,
    /// Local file reads (and shared-thumbnail look-ups) in flight at most.
    pub(crate) file_slots: usize,
    pub(crate) max_body_bytes: u64,
    /// No fetch starts while bodies of this many bytes await a decode.
    pub(crate) body_budget_bytes: u64,
    /// And no body is read while the bodies held, read or being read, are
    /// as many bytes: lent to every fetch in its request.
    pub(crate) body_budget: Arc<BodyBudget>,
    pub(crate) root: CancellationToken,
    /// The headers of every request: the app's, and its hook's.
    pub(crate) request_headers: RequestHeaders,
    /// Whether the decoder takes bodies cut short
    /// ([`Decode::takes_cut_short_bodies`](crate::Decode::takes_cut_short_bodies)):
    /// the fetches then say the thumbnail they read for, and a layer in
    /// front of the fetcher may stop reading once the body's start makes it.
    pub(crate) takes_cut_short_bodies: bool,
}

/// Starts the actor on `runtime`; it runs until the returned handle is
/// dropped or `parts.root` is cancelled.
pub(crate) fn start(parts: Parts, runtime: &Handle) -> LoadHandle {
    let (commands, inbox) = mpsc::unbounded_channel();
    let (events, reports) = mpsc::unbounded_channel();
    let ended = Arc::new(AtomicBool::new(false));
    let live = LiveTasks::default();
    let actor_task = live.enter();
    let guard = EndGuard {
        root: parts.root.clone(),
        ended: Arc::clone(&ended),
        waker: parts.outbox.waker(),
    };
    let actor = LoadActor {
        cache: ThumbnailCache::new(parts.cache_limits, parts.cache_view.clone()),
        scheduler: FetchScheduler::new(parts.max_per_host, parts.max_in_flight, parts.file_slots),
        registry: TaskRegistry::default(),
        live: live.clone(),
        awaiting_decode: 0,
        decodes: Vec::new(),
        load_times: LoadTimes::default(),
        events,
        parts,
    };
    runtime.spawn(async move {
        let _live = actor_task;
        actor.run(inbox, reports, guard).await;
    });
    LoadHandle::new(commands, ended, live)
}

struct LoadActor {
    parts: Parts,
    registry: TaskRegistry,
    scheduler: FetchScheduler,
    cache: ThumbnailCache,
    /// Counts the fetch tasks (each ended by its task's token) for the
    /// pipeline's drop.
    live: LiveTasks,
    /// Bytes of the bodies sent to the decode pool whose decode has not
    /// ended.
    awaiting_decode: u64,
    /// Decodes started by the messages of this turn, handed to the pool
    /// together at its end (one lock, one wake per thread needed).
    decodes: Vec<DecodeJob>,
    /// Cloned into every fetch task and decode job to report back.
    events: mpsc::UnboundedSender<Event>,
    /// How long the last loads took, from their fetch's start to their
    /// thumbnail: the median is [`crate::Stats::recent_load_micros`].
    load_times: LoadTimes,
}

/// How often expired cache entries are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Messages handled between two publications of the gauges.
const BATCH: usize = 256;

impl LoadActor {
    async fn run(
        mut self,
        mut inbox: mpsc::UnboundedReceiver<Command>,
        mut reports: mpsc::UnboundedReceiver<Event>,
        _guard: EndGuard,
    ) {
        let root = self.parts.root.clone();
        let mut sweep = tokio::time::interval(SWEEP_EVERY);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (mut commands, mut events) = (Vec::with_capacity(64), Vec::with_capacity(64));
        loop {
            // Reports before commands: a fetch or decode that has finished
            // is stored and delivered before a command read after it can
            // cancel it, so finished work is never thrown away. Reports are
            // bounded by the work in flight, so commands wait at most that.
            tokio::select! {
                biased;
                _ = root.cancelled() => break,
                // Never closed: the actor holds a sender itself.
                _ = reports.recv_many(&mut events, BATCH) => {
                    for event in events.drain(..) {
                        self.event(event);
                    }
                }
                received = inbox.recv_many(&mut commands, BATCH) => {
                    if received == 0 {
                        // The handle is gone: the pipeline was dropped.
                        break;
                    }
                    for command in commands.drain(..) {
                        self.command(command);
                    }
                }
                _ = sweep.tick() => self.cache.sweep(Instant::now()),
            }
            // Before the next turn's commands, which may cancel them.
            self.parts.decode_pool.submit_all(self.decodes.drain(..));
            self.start_fetches();
            self.publish();
            self.parts.outbox.wake_if_sent();
        }
        // Every task's token is a child of the root; ending the actor ends
        // them too, when the root was not the reason.
        root.cancel();
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Subscribe {
                id,
                key,
                url,
                priority,
                ttl,
            } => self.subscribe(id, key, url, priority, ttl),
            Command::Unsubscribe(id) => self.unsubscribe(id),
            Command::SetPriority(id, priority) => {
                if let Some(task_id) = self.registry.set_priority(id, priority) {
                    self.reprioritize(task_id);
                }
            }
            Command::Forget(url) => self.cache.remove_url(&url),
            Command::ForgetAll => self.cache.clear(),
        }
    }

    fn subscribe(
        &mut self,
        id: RequestId,
        key: CacheKey,
        url: Url,
        priority: Priority,
        ttl: Duration,
    ) {
        let metrics = &self.parts.metrics;
        if let Some(thumbnail) = self.cache.get(&key, Instant::now()) {
            Metrics::add(&metrics.cache_hits, 1);
            self.parts.outbox.send(Delivery {
                id,
                result: Ok(thumbnail),
            });
            return;
        }
        Metrics::add(&metrics.cache_misses, 1);
        let joined = self
            .registry
            .subscribe(id, key, url, priority, ttl, &self.parts.root);
        match joined {
            Joined::New(task_id) => {
                // Only a new task needs its host: a coalesced request costs
                // no allocation here.
                if let Some(task) = self.registry.get(task_id) {
                    self.scheduler.push(task_id, host_key(&task.url), priority);
                }
            }
            Joined::Existing(task_id) => {
                Metrics::add(&metrics.coalesced, 1);
                self.reprioritize(task_id);
            }
        }
    }

    fn unsubscribe(&mut self, id: RequestId) {
        let (task_id, task) = match self.registry.unsubscribe(id) {
            Left::Unknown => return,
            Left::Shared(task_id) => return self.reprioritize(task_id),
            Left::Last(task_id, task) => (task_id, task),
        };
        // The last subscriber left: cancel the shared work. A fetch future
        // sees the token and drops its connection; a decode waiting in the
        // pool's queue leaves it with its body at once, and a decode
        // already running is discarded.
        task.cancel.cancel();
        if task.stage == Stage::Decoding {
            self.parts.decode_pool.cancel(task_id);
        }
        let metrics = &self.parts.metrics;
        let counter = match self.scheduler.remove(task_id) {
            Removed::Queued => &metrics.fetches_cancelled_queued,
            Removed::InFlight => &metrics.fetches_cancelled_in_flight,
            Removed::Absent => &metrics.loads_abandoned_after_fetch,
        };
        Metrics::add(counter, 1);
    }

    fn event(&mut self, event: Event) {
        let metrics = Arc::clone(&self.parts.metrics);
        if let Event::Decoded(_, size, _) = &event {
            self.awaiting_decode = self.awaiting_decode.saturating_sub(*size);
        }
        match event {
            Event::LookedUp(task_id, found) => self.looked_up(task_id, found),
            Event::Fetched(task_id, result) => self.fetched(task_id, result),
            Event::Decoded(task_id, _, DecodeOutcome::Done(result)) => {
                Metrics::add(&metrics.decodes_completed, 1);
                if self.registry.get(task_id).is_none() {
                    Metrics::add(&metrics.decodes_discarded, 1);
                    return;
                }
                if result.is_err() && self.read_again_whole(task_id) {
                    return;
                }
                self.finish(task_id, result);
            }
            Event::Decoded(task_id, _, DecodeOutcome::Cancelled | DecodeOutcome::PoolClosed) => {
                Metrics::add(&metrics.decodes_skipped, 1);
                // A cancelled task went with its last subscriber; one still
                // here was skipped because the pool is shutting down.
                if let Some(task) = self.registry.get(task_id) {
                    let url = task.url.to_string();
                    self.finish(task_id, Err(Error::Shutdown { url }));
                }
            }
        }
    }

    /// A body cut short (at an embedded thumbnail or the DC scans) that did
    /// not make the thumbnail: its task goes back to the queue, to be read
    /// whole. At most once a task; returns whether it went.
    fn read_again_whole(&mut self, task_id: TaskId) -> bool {
        let Some(task) = self.registry.read_again_whole(task_id) else {
            return false;
        };
        let host = host_key(&task.url);
        let priority = task.priority();
        self.scheduler.push(task_id, host, priority);
        true
    }

    /// Moves a task waiting for a fetch slot or a decode thread to its
    /// subscribers' highest priority.
    fn reprioritize(&mut self, task_id: TaskId) {
        let Some(task) = self.registry.get(task_id) else {
            return;
        };
        match task.stage {
            Stage::Queued => self.scheduler.reprioritize(task_id, task.priority()),
            Stage::Decoding => self
                .parts
                .decode_pool
                .reprioritize(task_id, task.priority()),
            Stage::LookingUp | Stage::Fetching => {}
        }
    }

    /// Ends a task: stores a thumbnail, and delivers the outcome to every
    /// subscriber.
    fn finish(&mut self, task_id: TaskId, result: Result<Thumbnail, Error>) {
        let Some(task) = self.registry.finish(task_id) else {
            return;
        };
        if let Ok(thumbnail) = &result {
            let now = Instant::now();
            self.cache
                .put(task.key.clone(), thumbnail.clone(), task.ttl, now);
            self.load_times
                .record(now.saturating_duration_since(task.fetch_started));
        }
        for id in task.subscribers() {
            self.parts.outbox.send(Delivery {
                id,
                result: result.clone(),
            });
        }
    }

    /// Updates the gauges and the cache's published counters.
    fn publish(&mut self) {
        let metrics = &self.parts.metrics;
        if let Some(median) = self.load_times.new_median() {
            let micros = u64::try_from(median.as_micros()).unwrap_or(u64::MAX);
            Metrics::set(&metrics.recent_load_micros, micros);
        }
        Metrics::set(&metrics.in_flight, self.scheduler.in_flight() as u64);
        Metrics::set(&metrics.queued, self.scheduler.queued() as u64);
        Metrics::set(&metrics.decoding, self.registry.decoding() as u64);
        Metrics::set(&metrics.bytes_awaiting_decode, self.awaiting_decode);
        if let Ok(mut stats) = self.parts.cache_stats.lock() {
            *stats = self.cache.stats();
        }
    }
}
