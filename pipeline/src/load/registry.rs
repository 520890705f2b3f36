//! The task registry: every load under way, one per (url, size), with the
//! requests that share it and the stage it has reached.
//!
//! Plain data, owned by the load actor and changed only by it; it ends with
//! the actor. A task is made by its first request and removed when its
//! last request leaves or its outcome is delivered; what the removal
//! means (cancel a fetch, skip a decode) is the actor's business.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use url::Url;

use crate::cache::CacheKey;
use crate::request::{Priority, RequestId, TaskId};

/// How far a task has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Waiting for a fetch slot.
    Queued,
    /// Holding a fetch slot while the thumbnail tier (the disk cache's
    /// decoded thumbnails) is asked for it.
    LookingUp,
    Fetching,
    /// Its body waits for, or is in, a decode.
    Decoding,
}

/// One load shared by every subscriber of its (url, size).
#[derive(Debug)]
pub(crate) struct Task {
    pub(crate) key: CacheKey,
    pub(crate) url: Url,
    subscribers: HashMap<RequestId, Priority>,
    /// Cancelled when the task is dropped by its last subscriber.
    pub(crate) cancel: CancellationToken,
    pub(crate) stage: Stage,
    /// The longest time to live any subscriber asked for.
    pub(crate) ttl: Duration,
    /// When it left the queue (its creation until then): the load's time
    /// without its wait in the queue, which a request at a higher
    /// priority would not share.
    pub(crate) fetch_started: Instant,
    /// How much of its body it reads.
    pub(crate) reading: Reading,
}

/// How much of its body a task reads: as far as the thumbnail needs, until
/// a body cut short does not make the thumbnail; then, once, the whole of
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    /// As far as the thumbnail needs: a layer may cut the body short.
    AsNeeded,
    /// Its body came cut short, and is being decoded.
    CutShort,
    /// All of it: a body cut short did not make the thumbnail.
    Whole,
}

impl Task {
    /// Its subscribers' highest priority.
    pub(crate) fn priority(&self) -> Priority {
        self.subscribers.values().copied().max().unwrap_or_default()
    }

    /// Who gets its outcome.
    pub(crate) fn subscribers(&self) -> impl Iterator<Item = RequestId> + '_ {
        self.subscribers.keys().copied()
    }
}

/// A new request's task.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Joined {
    /// A task was made for it: queue it.
    New(TaskId),
    /// It joined the task already loading its (url, size).
    Existing(TaskId),
}

/// What leaving did to the request's task.
#[derive(Debug)]
pub(crate) enum Left {
    /// The request was unknown (its task had finished).
    Unknown,
    /// Others still want the task; their priority may have changed.
    Shared(TaskId),
    /// It was the last subscriber: the task, now out of the registry.
    Last(TaskId, Box<Task>),
}

#[derive(Debug, Default)]
pub(crate) struct TaskRegistry {
    tasks: HashMap<TaskId, Task>,
    by_key: HashMap<CacheKey, TaskId>,
    requests: HashMap<RequestId, TaskId>,
    last_task: TaskId,
    /// Tasks in [`Stage::Decoding`], kept by the stage changes below.
    decoding: usize,
}

impl TaskRegistry {
    /// Adds request `id` to the task loading `key`, making one (queued,
    /// with a child of `parent` as its token) if there is none.
    pub(crate) fn subscribe(
        &mut self,
        id: RequestId,
        key: CacheKey,
        url: Url,
        priority: Priority,
        ttl: Duration,
        parent: &CancellationToken,
    ) -> Joined {
        if let Some(&task_id) = self.by_key.get(&key)
            && let Some(task) = self.tasks.get_mut(&task_id)
        {
            task.subscribers.insert(id, priority);
            task.ttl = task.ttl.max(ttl);
            self.requests.insert(id, task_id);
            return Joined::Existing(task_id);
        }
        self.last_task += 1;
        let task_id = self.last_task;
        self.by_key.insert(key.clone(), task_id);
        self.requests.insert(id, task_id);
        self.tasks.insert(
            task_id,
            Task {
                key,
                url,
                subscribers: HashMap::from([(id, priority)]),
                cancel: parent.child_token(),
                stage: Stage::Queued,
                ttl,
                fetch_started: Instant::now(),
                reading: Reading::AsNeeded,
            },
        );
        Joined::New(task_id)
    }

    /// Removes request `id`; its task too if it was the last one.
    pub(crate) fn unsubscribe(&mut self, id: RequestId) -> Left {
        let Some(task_id) = self.requests.remove(&id) else {
            return Left::Unknown;
        };
        let Some(task) = self.tasks.get_mut(&task_id) else {
            return Left::Unknown;
        };
        task.subscribers.remove(&id);
        if !task.subscribers.is_empty() {
            return Left::Shared(task_id);
        }
        match self.remove(task_id) {
            Some(task) => Left::Last(task_id, Box::new(task)),
            None => Left::Unknown,
        }
    }

    /// Changes request `id`'s priority; returns its task.
    pub(crate) fn set_priority(&mut self, id: RequestId, priority: Priority) -> Option<TaskId> {
        let task_id = *self.requests.get(&id)?;
        self.tasks
            .get_mut(&task_id)?
            .subscribers
            .insert(id, priority);
        Some(task_id)
    }

    pub(crate) fn get(&self, task_id: TaskId) -> Option<&Task> {
        self.tasks.get(&task_id)
    }

    /// Moves a task to `stage`; returns it, or `None` if it is gone.
    pub(crate) fn advance(&mut self, task_id: TaskId, stage: Stage) -> Option<&Task> {
        let task = self.tasks.get_mut(&task_id)?;
        match (task.stage, stage) {
            (Stage::Decoding, Stage::Decoding) => {}
            (_, Stage::Decoding) => self.decoding += 1,
            (Stage::Decoding, _) => self.decoding -= 1,
            _ => {}
        }
        if task.stage == Stage::Queued && matches!(stage, Stage::LookingUp | Stage::Fetching) {
            task.fetch_started = Instant::now();
        }
        task.stage = stage;
        Some(task)
    }

    /// Records that `task_id`'s body arrived, whole or cut short.
    pub(crate) fn body_arrived(&mut self, task_id: TaskId, complete: bool) {
        if let Some(task) = self.tasks.get_mut(&task_id)
            && !complete
            && task.reading == Reading::AsNeeded
        {
            task.reading = Reading::CutShort;
        }
    }

    /// Sends a task whose body came cut short and did not make the
    /// thumbnail back to the queue, to be read whole; returns it, or `None`
    /// if it is gone or its body was not cut short (it was read whole, or
    /// already read again whole: this happens at most once to a task).
    pub(crate) fn read_again_whole(&mut self, task_id: TaskId) -> Option<&Task> {
        let task = self.tasks.get_mut(&task_id)?;
        if task.reading != Reading::CutShort {
            return None;
        }
        task.reading = Reading::Whole;
        self.advance(task_id, Stage::Queued)
    }

    /// Takes a finished task out, with its requests, to deliver its
    /// outcome to them.
    pub(crate) fn finish(&mut self, task_id: TaskId) -> Option<Task> {
        let task = self.remove(task_id)?;
        for id in task.subscribers() {
            self.requests.remove(&id);
        }
        Some(task)
    }

    /// Tasks whose body waits for, or is in, a decode.
    pub(crate) fn decoding(&self) -> usize {
        self.decoding
    }

    fn remove(&mut self, task_id: TaskId) -> Option<Task> {
        let task = self.tasks.remove(&task_id)?;
        self.by_key.remove(&task.key);
        if task.stage == Stage::Decoding {
            self.decoding -= 1;
        }
        Some(task)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::request::TargetSize;

    fn key(url: &str, side: u32) -> CacheKey {
        CacheKey {
            url: Arc::from(url),
            target: TargetSize::square(side),
        }
    }

    fn subscribe(registry: &mut TaskRegistry, id: u64, url: &str, side: u32) -> Joined {
        let parsed = Url::parse(url).unwrap();
        let ttl = Duration::from_secs(id);
        let root = CancellationToken::new();
        let id = RequestId(id);
        registry.subscribe(id, key(url, side), parsed, Priority::Prefetch, ttl, &root)
    }

    #[test]
    fn the_same_url_and_size_share_one_task_and_another_size_does_not() {
        let mut registry = TaskRegistry::default();
        assert_eq!(
            subscribe(&mut registry, 1, "http://h/a", 64),
            Joined::New(1)
        );
        assert_eq!(
            subscribe(&mut registry, 2, "http://h/a", 64),
            Joined::Existing(1)
        );
        assert_eq!(
            subscribe(&mut registry, 3, "http://h/a", 32),
            Joined::New(2)
        );
        let task = registry.get(1).unwrap();
        assert_eq!(task.subscribers().count(), 2);
        // The longest time to live wins.
        assert_eq!(task.ttl, Duration::from_secs(2));
    }

    #[test]
    fn a_task_goes_with_its_last_subscriber_and_its_priority_is_the_highest() {
        let mut registry = TaskRegistry::default();
        subscribe(&mut registry, 1, "http://h/a", 64);
        subscribe(&mut registry, 2, "http://h/a", 64);
        assert_eq!(
            registry.set_priority(RequestId(2), Priority::Visible),
            Some(1)
        );
        assert_eq!(registry.get(1).unwrap().priority(), Priority::Visible);
        assert!(matches!(
            registry.unsubscribe(RequestId(2)),
            Left::Shared(1)
        ));
        assert_eq!(registry.get(1).unwrap().priority(), Priority::Prefetch);
        assert!(matches!(
            registry.unsubscribe(RequestId(1)),
            Left::Last(1, _)
        ));
        assert!(matches!(registry.unsubscribe(RequestId(1)), Left::Unknown));
        assert!(registry.get(1).is_none());
        // The key is free again: a new request makes a new task.
        assert_eq!(
            subscribe(&mut registry, 3, "http://h/a", 64),
            Joined::New(2)
        );
    }

    #[test]
    fn finishing_ends_every_request_of_the_task() {
        let mut registry = TaskRegistry::default();
        subscribe(&mut registry, 1, "http://h/a", 64);
        subscribe(&mut registry, 2, "http://h/a", 64);
        let task = registry.finish(1).unwrap();
        let mut ids: Vec<_> = task.subscribers().collect();
        ids.sort_unstable();
        assert_eq!(ids, [RequestId(1), RequestId(2)]);
        assert!(matches!(registry.unsubscribe(RequestId(1)), Left::Unknown));
        assert!(
            registry
                .set_priority(RequestId(2), Priority::Visible)
                .is_none()
        );
        assert!(registry.finish(1).is_none());
    }

    #[test]
    fn the_decoding_count_follows_stages_and_removals() {
        let mut registry = TaskRegistry::default();
        for id in 1..=3 {
            subscribe(&mut registry, id, &format!("http://h/{id}"), 64);
        }
        for task in 1..=3 {
            registry.advance(task, Stage::Fetching);
            registry.advance(task, Stage::Decoding);
        }
        registry.advance(3, Stage::Decoding);
        assert_eq!(registry.decoding(), 3);
        registry.finish(1);
        assert!(matches!(
            registry.unsubscribe(RequestId(2)),
            Left::Last(2, _)
        ));
        assert_eq!(registry.decoding(), 1);
        assert!(registry.advance(1, Stage::Decoding).is_none());
        assert_eq!(registry.decoding(), 1);
    }

    /// A body cut short that did not make the thumbnail is read again
    /// whole, once: a second failure, or a failure of a body read whole
    /// from the start, is the task's outcome.
    #[test]
    fn a_body_is_read_again_whole_only_after_it_came_cut_short_and_only_once() {
        let mut registry = TaskRegistry::default();
        subscribe(&mut registry, 1, "http://h/cut", 64);
        subscribe(&mut registry, 2, "http://h/whole", 64);
        for task in [1, 2] {
            registry.advance(task, Stage::Fetching);
        }
        registry.body_arrived(1, false);
        registry.body_arrived(2, true);
        assert_eq!(registry.get(1).unwrap().reading, Reading::CutShort);
        assert_eq!(registry.get(2).unwrap().reading, Reading::AsNeeded);
        assert!(registry.read_again_whole(2).is_none());
        let again = registry.read_again_whole(1).unwrap();
        assert_eq!(
            (again.stage, again.reading),
            (Stage::Queued, Reading::Whole)
        );
        // Read whole, a body that still comes cut short (a fetcher that
        // ignores the request) is not read a third time.
        registry.advance(1, Stage::Fetching);
        registry.body_arrived(1, false);
        assert_eq!(registry.get(1).unwrap().reading, Reading::Whole);
        assert!(registry.read_again_whole(1).is_none());
    }

    #[test]
    fn a_task_token_is_a_child_of_the_parent() {
        let mut registry = TaskRegistry::default();
        let root = CancellationToken::new();
        let url = Url::parse("http://h/a").unwrap();
        registry.subscribe(
            RequestId(1),
            key("http://h/a", 8),
            url,
            Priority::Visible,
            Duration::ZERO,
            &root,
        );
        root.cancel();
        assert!(registry.get(1).unwrap().cancel.is_cancelled());
    }
}
