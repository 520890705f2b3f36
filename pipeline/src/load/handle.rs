//! The load actor's handle and its end: the UI side's sender of commands,
//! and the guards that let the pipeline's drop wait for the actor and its
//! fetch tasks, and the UI hear of an actor that ended under it. Used on
//! the UI thread (the handle) and inside the actor's tasks (the guards);
//! none of it blocks but `LoadHandle::wait_ended`, with a bound.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::cache::CacheKey;
use crate::deliver::{Waker, wake};
use crate::request::{Priority, RequestId, TargetSize};

/// The UI side's handle on the load actor. Every method sends one message
/// and returns at once; the actor ends when the handle is dropped.
#[derive(Debug)]
pub(crate) struct LoadHandle {
    commands: mpsc::UnboundedSender<Command>,
    /// Set if the actor ended while the pipeline still wanted it.
    ended: Arc<AtomicBool>,
    /// The actor's task and its fetch tasks not yet ended.
    live: LiveTasks,
}

impl LoadHandle {
    pub(super) fn new(
        commands: mpsc::UnboundedSender<Command>,
        ended: Arc<AtomicBool>,
        live: LiveTasks,
    ) -> Self {
        Self {
            commands,
            ended,
            live,
        }
    }

    /// Waits at most `patience` until the actor's task and every fetch task
    /// have ended (after the root token is cancelled, each ends at its next
    /// poll); returns whether they have. Must not be called from a task of
    /// the runtime they run on, which may be the one to poll them.
    pub(crate) fn wait_ended(&self, patience: Duration) -> bool {
        self.live.wait_none(patience)
    }

    /// Whether the actor has ended while the pipeline was in use (its
    /// runtime was shut down, or it panicked): nothing sent will be answered
    /// and nothing pending will arrive.
    pub(crate) fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire) || self.commands.is_closed()
    }

    /// Asks for `url` fitted to `target` for request `id`: delivered
    /// from the cache, joined to a load under way, or loaded. Returns
    /// whether the actor will answer.
    pub(crate) fn subscribe(
        &self,
        id: RequestId,
        url: Arc<str>,
        parsed: Url,
        target: TargetSize,
        priority: Priority,
        ttl: Duration,
    ) -> bool {
        self.send(Command::Subscribe {
            id,
            key: CacheKey { url, target },
            url: parsed,
            priority,
            ttl,
        }) && !self.ended()
    }

    /// Ends request `id`; its load is cancelled if nobody else wants it.
    pub(crate) fn unsubscribe(&self, id: RequestId) {
        self.send(Command::Unsubscribe(id));
    }

    pub(crate) fn set_priority(&self, id: RequestId, priority: Priority) {
        self.send(Command::SetPriority(id, priority));
    }

    /// Drops every cached size of `url`.
    pub(crate) fn forget(&self, url: Arc<str>) {
        self.send(Command::Forget(url));
    }

    /// Drops every cached thumbnail.
    pub(crate) fn forget_all(&self) {
        self.send(Command::ForgetAll);
    }

    fn send(&self, command: Command) -> bool {
        self.commands.send(command).is_ok()
    }
}

/// From the UI side, through a [`LoadHandle`].
#[derive(Debug)]
pub(super) enum Command {
    Subscribe {
        id: RequestId,
        key: CacheKey,
        url: Url,
        priority: Priority,
        ttl: Duration,
    },
    Unsubscribe(RequestId),
    SetPriority(RequestId, Priority),
    Forget(Arc<str>),
    ForgetAll,
}

/// Counts the actor's task and its fetch tasks that have not ended, so that
/// dropping the pipeline can wait until none of them runs. A task counts
/// from before it is spawned until its future is dropped: when it returns,
/// or when its runtime drops it unpolled.
#[derive(Clone, Debug, Default)]
pub(super) struct LiveTasks(Arc<(Mutex<usize>, Condvar)>);

impl LiveTasks {
    pub(super) fn enter(&self) -> LiveTask {
        *self.0.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        LiveTask(self.clone())
    }

    fn wait_none(&self, patience: Duration) -> bool {
        let (count, ended) = &*self.0;
        let count = count.lock().unwrap_or_else(PoisonError::into_inner);
        let (count, _) = ended
            .wait_timeout_while(count, patience, |count| *count > 0)
            .unwrap_or_else(PoisonError::into_inner);
        *count == 0
    }
}

/// One live task; dropped with the task's future.
pub(super) struct LiveTask(LiveTasks);

impl Drop for LiveTask {
    fn drop(&mut self) {
        let (count, ended) = &*self.0.0;
        let mut count = count.lock().unwrap_or_else(PoisonError::into_inner);
        *count -= 1;
        // Only the last one out can end a wait (a signal is a system call,
        // and a fetch task ends with every load).
        if *count == 0 {
            ended.notify_all();
        }
    }
}

/// Marks the actor ended and wakes the UI when the actor stops while the
/// pipeline still wants it: its runtime shut down under it (the task is
/// dropped), or it panicked. The UI's next `drain` then ends every pending
/// request with [`Error::Shutdown`] instead of leaving it waiting forever.
/// Dropped with the actor's task; silent when the pipeline ended it.
pub(super) struct EndGuard {
    pub(super) root: CancellationToken,
    pub(super) ended: Arc<AtomicBool>,
    pub(super) waker: Arc<Mutex<Option<Waker>>>,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        if !self.root.is_cancelled() {
            self.ended.store(true, Ordering::Release);
            wake(&self.waker);
        }
    }
}
