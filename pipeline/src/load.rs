//! The load actor: one task that owns the shared load tasks (one per url and
//! target size, for coalescing), the fetch queue and the cache.
//!
//! It runs on the pipeline's I/O runtime and is the only code that touches
//! that state: the UI side sends it [`Command`]s, fetch futures and decode
//! threads send it [`Event`]s, all through one unbounded channel that never
//! blocks a sender. It ends when the pipeline's root token is cancelled;
//! every fetch it started is a child of that token and ends with it.
//!
//! ```text
//! Subscribe --> cache hit? -- yes --> deliver
//!                  | no
//!                  v
//!          task for (url, size)? -- yes --> join it (coalesced)
//!                  | no
//!                  v
//!          fetch queue --slot--> fetch --Fetched--> decode pool --Decoded--> cache put
//!                                                                              |
//!                                            deliver to every subscriber <-----+
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use url::Url;

use crate::cache::{CacheKey, CacheLimits, CacheView, ThumbnailCache};
use crate::decode::{DecodeJob, DecodePool};
use crate::deliver::{Delivery, Outbox, SubscriptionId};
use crate::fetch::{Fetch, host_key};
use crate::metrics::Metrics;
use crate::queue::{TaskId, TaskQueue};
use crate::{CacheStats, Error, Priority, Thumbnail};

/// From the UI side.
#[derive(Debug)]
pub(crate) enum Command {
    Subscribe {
        id: SubscriptionId,
        key: CacheKey,
        url: Url,
        priority: Priority,
        ttl: Duration,
    },
    Unsubscribe(SubscriptionId),
    SetPriority(SubscriptionId, Priority),
    /// Drop every cached size of this URL.
    Forget(Arc<str>),
    /// Drop every cached thumbnail.
    ForgetAll,
}

/// From the fetch futures and decode threads.
pub(crate) enum Event {
    Fetched(TaskId, Result<Bytes, Error>),
    Decoded(TaskId, Option<Result<Thumbnail, Error>>),
}

pub(crate) enum Message {
    Command(Command),
    Event(Event),
}

enum Stage {
    Queued,
    Fetching,
    Decoding,
}

/// One load shared by every subscriber of its (url, size).
struct Task {
    key: CacheKey,
    url: Url,
    host: String,
    subscribers: HashMap<SubscriptionId, Priority>,
    cancel: CancellationToken,
    stage: Stage,
    ttl: Duration,
}

impl Task {
    fn priority(&self) -> Priority {
        self.subscribers.values().copied().max().unwrap_or_default()
    }
}

/// What the actor needs from the rest of the pipeline.
pub(crate) struct Parts {
    pub(crate) fetcher: Arc<dyn Fetch>,
    pub(crate) decoder: Arc<DecodePool>,
    pub(crate) outbox: Outbox,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) cache_stats: Arc<Mutex<CacheStats>>,
    pub(crate) cache_limits: CacheLimits,
    /// Where the cache publishes its entries for the UI side.
    pub(crate) cache_view: CacheView,
    pub(crate) max_per_host: usize,
    pub(crate) max_body_bytes: u64,
    pub(crate) root: CancellationToken,
    pub(crate) jobs: TaskTracker,
    pub(crate) messages: mpsc::UnboundedSender<Message>,
}

pub(crate) struct LoadActor {
    parts: Parts,
    tasks: HashMap<TaskId, Task>,
    by_key: HashMap<CacheKey, TaskId>,
    subscriptions: HashMap<SubscriptionId, TaskId>,
    queue: TaskQueue,
    in_flight: HashMap<String, usize>,
    cache: ThumbnailCache,
    next_task: TaskId,
    /// Tasks in [`Stage::Decoding`], kept as they move rather than counted.
    decoding: usize,
}

/// How often expired cache entries are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

impl LoadActor {
    pub(crate) fn new(parts: Parts) -> Self {
        Self {
            cache: ThumbnailCache::new(parts.cache_limits, parts.cache_view.clone()),
            parts,
            tasks: HashMap::new(),
            by_key: HashMap::new(),
            subscriptions: HashMap::new(),
            queue: TaskQueue::default(),
            in_flight: HashMap::new(),
            next_task: 0,
            decoding: 0,
        }
    }

    /// Runs until the root token is cancelled.
    pub(crate) async fn run(mut self, mut inbox: mpsc::UnboundedReceiver<Message>) {
        let root = self.parts.root.clone();
        let mut sweep = tokio::time::interval(SWEEP_EVERY);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut batch = Vec::with_capacity(64);
        loop {
            tokio::select! {
                biased;
                _ = root.cancelled() => break,
                received = inbox.recv_many(&mut batch, 256) => {
                    if received == 0 {
                        break;
                    }
                    for message in batch.drain(..) {
                        match message {
                            Message::Command(command) => self.command(command),
                            Message::Event(event) => self.event(event),
                        }
                    }
                }
                _ = sweep.tick() => self.cache.sweep(Instant::now()),
            }
            self.start_fetches();
            self.publish();
            self.parts.outbox.wake_if_sent();
        }
        // Every task's token is a child of the root: cancelled already.
        self.parts.jobs.close();
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
            Command::Forget(url) => self.cache.remove_url(&url),
            Command::ForgetAll => self.cache.clear(),
            Command::SetPriority(id, priority) => {
                let Some(&task_id) = self.subscriptions.get(&id) else {
                    return;
                };
                if let Some(task) = self.tasks.get_mut(&task_id) {
                    task.subscribers.insert(id, priority);
                    self.reprioritize(task_id);
                }
            }
        }
    }

    fn subscribe(
        &mut self,
        id: SubscriptionId,
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
        if let Some(&task_id) = self.by_key.get(&key)
            && let Some(task) = self.tasks.get_mut(&task_id)
        {
            Metrics::add(&metrics.coalesced, 1);
            task.subscribers.insert(id, priority);
            task.ttl = task.ttl.max(ttl);
            self.subscriptions.insert(id, task_id);
            self.reprioritize(task_id);
            return;
        }
        self.next_task += 1;
        let task_id = self.next_task;
        let host = host_key(&url);
        self.tasks.insert(
            task_id,
            Task {
                key: key.clone(),
                url,
                host,
                subscribers: HashMap::from([(id, priority)]),
                cancel: self.parts.root.child_token(),
                stage: Stage::Queued,
                ttl,
            },
        );
        self.by_key.insert(key, task_id);
        self.subscriptions.insert(id, task_id);
        self.queue.push(task_id, priority);
    }

    fn unsubscribe(&mut self, id: SubscriptionId) {
        let Some(task_id) = self.subscriptions.remove(&id) else {
            return;
        };
        let Some(task) = self.tasks.get_mut(&task_id) else {
            return;
        };
        task.subscribers.remove(&id);
        if !task.subscribers.is_empty() {
            self.reprioritize(task_id);
            return;
        }
        // The last subscriber left: cancel the shared work.
        let Some(task) = self.remove_task(task_id) else {
            return;
        };
        task.cancel.cancel();
        let metrics = Arc::clone(&self.parts.metrics);
        match task.stage {
            Stage::Queued => {
                self.queue.remove(task_id);
                Metrics::add(&metrics.fetches_cancelled_queued, 1);
            }
            Stage::Fetching => {
                // The fetch future sees the token and drops its connection;
                // its slot is free from now.
                self.release_slot(&task.host);
                Metrics::add(&metrics.fetches_cancelled_in_flight, 1);
            }
            // The decode thread checks the token before decoding; a decode
            // already running finishes and is discarded.
            Stage::Decoding => Metrics::add(&metrics.loads_abandoned_after_fetch, 1),
        }
    }

    fn event(&mut self, event: Event) {
        let metrics = Arc::clone(&self.parts.metrics);
        match event {
            Event::Fetched(task_id, result) => {
                let Some(task) = self.tasks.get_mut(&task_id) else {
                    // Cancelled after its body had arrived, before this
                    // message was read.
                    Metrics::add(&metrics.loads_abandoned_after_fetch, 1);
                    return;
                };
                let host = task.host.clone();
                match result {
                    Ok(bytes) => {
                        Metrics::add(&metrics.fetches_completed, 1);
                        Metrics::add(&metrics.bytes_fetched, bytes.len() as u64);
                        task.stage = Stage::Decoding;
                        self.decoding += 1;
                        self.decode(task_id, bytes);
                    }
                    Err(error) => {
                        Metrics::add(&metrics.fetches_failed, 1);
                        self.finish(task_id, Err(error));
                    }
                }
                self.release_slot(&host);
            }
            Event::Decoded(task_id, None) => {
                Metrics::add(&metrics.decodes_skipped, 1);
                // Only a cancelled task is skipped, and that one is gone; a
                // pool shutting down is the other way here.
                if self.tasks.contains_key(&task_id) {
                    let url = self.tasks[&task_id].url.to_string();
                    self.finish(task_id, Err(Error::Shutdown { url }));
                }
            }
            Event::Decoded(task_id, Some(result)) => {
                Metrics::add(&metrics.decodes_completed, 1);
                if !self.tasks.contains_key(&task_id) {
                    Metrics::add(&metrics.decodes_discarded, 1);
                    return;
                }
                self.finish(task_id, result);
            }
        }
    }

    fn decode(&mut self, task_id: TaskId, bytes: Bytes) {
        let Some(task) = self.tasks.get(&task_id) else {
            return;
        };
        Metrics::add(&self.parts.metrics.decodes_started, 1);
        let messages = self.parts.messages.clone();
        self.parts.decoder.submit(DecodeJob {
            task: task_id,
            priority: task.priority(),
            url: Arc::clone(&task.key.url),
            bytes,
            target: task.key.target,
            cancel: task.cancel.clone(),
            done: Box::new(move |outcome| {
                let _ = messages.send(Message::Event(Event::Decoded(task_id, outcome)));
            }),
        });
    }

    /// Moves a task waiting for a fetch slot or a decode thread to its
    /// subscribers' highest priority.
    fn reprioritize(&mut self, task_id: TaskId) {
        let Some(task) = self.tasks.get(&task_id) else {
            return;
        };
        match task.stage {
            Stage::Queued => self.queue.reprioritize(task_id, task.priority()),
            Stage::Decoding => self.parts.decoder.reprioritize(task_id, task.priority()),
            Stage::Fetching => {}
        }
    }

    /// Ends a task: stores a thumbnail, and delivers the outcome to every
    /// subscriber.
    fn finish(&mut self, task_id: TaskId, result: Result<Thumbnail, Error>) {
        let Some(task) = self.remove_task(task_id) else {
            return;
        };
        if let Ok(thumbnail) = &result {
            self.cache.put(
                task.key.clone(),
                thumbnail.clone(),
                task.ttl,
                Instant::now(),
            );
        }
        for id in task.subscribers.into_keys() {
            self.subscriptions.remove(&id);
            self.parts.outbox.send(Delivery {
                id,
                result: result.clone(),
            });
        }
    }

    fn remove_task(&mut self, task_id: TaskId) -> Option<Task> {
        let task = self.tasks.remove(&task_id)?;
        self.by_key.remove(&task.key);
        if matches!(task.stage, Stage::Decoding) {
            self.decoding = self.decoding.saturating_sub(1);
        }
        Some(task)
    }

    fn release_slot(&mut self, host: &str) {
        if let Some(count) = self.in_flight.get_mut(host) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.in_flight.remove(host);
            }
        }
    }

    /// Starts queued fetches while their hosts have free slots.
    fn start_fetches(&mut self) {
        loop {
            let (tasks, in_flight, max) = (&self.tasks, &self.in_flight, self.parts.max_per_host);
            let next = self.queue.pop_next(|task_id| {
                tasks
                    .get(&task_id)
                    .is_some_and(|task| in_flight.get(&task.host).copied().unwrap_or(0) < max)
            });
            let Some(task_id) = next else { break };
            let Some(task) = self.tasks.get_mut(&task_id) else {
                continue;
            };
            task.stage = Stage::Fetching;
            *self.in_flight.entry(task.host.clone()).or_default() += 1;
            Metrics::add(&self.parts.metrics.fetches_started, 1);
            let fetch = self
                .parts
                .fetcher
                .fetch(task.url.clone(), self.parts.max_body_bytes);
            let cancel = task.cancel.clone();
            let messages = self.parts.messages.clone();
            // A task per fetch, not a future polled by the actor: connecting
            // (and a TLS handshake) happens inside the fetch future, and on
            // the actor's one task it would hold up every command behind it
            // and serialize a burst of connections under tokio's budget.
            self.parts.jobs.spawn(async move {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => {}
                    result = fetch => {
                        let _ = messages.send(Message::Event(Event::Fetched(task_id, result)));
                    }
                }
            });
        }
    }

    /// Updates the gauges and the cache's published counters.
    fn publish(&self) {
        let metrics = &self.parts.metrics;
        Metrics::set(
            &metrics.in_flight,
            self.in_flight.values().sum::<usize>() as u64,
        );
        Metrics::set(&metrics.queued, self.queue.len() as u64);
        Metrics::set(&metrics.decoding, self.decoding as u64);
        if let Ok(mut stats) = self.parts.cache_stats.lock() {
            *stats = self.cache.stats();
        }
    }
}
