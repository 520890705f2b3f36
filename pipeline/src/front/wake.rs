//! The pipeline's waker as a stream of wakes, for a toolkit whose UI is
//! woken by a stream (iced's subscriptions): each time thumbnails arrive,
//! one item, so the app's update drains them.
//!
//! The waker runs on the pipeline's threads and only tries to send on a
//! channel of one slot: a wake already waiting stands for every arrival
//! until the app reads it, so a burst of completions costs one update.
//! A stream lives as long as the toolkit keeps it (a [`Wakeups`] hashes as
//! its own identity, one per door) and ends when the toolkit drops it or
//! when [`Wakeups::close`] is called, as the door is dropped.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt as _;
use futures::channel::mpsc;
use futures::stream::BoxStream;

/// Where the waker sends: the current stream, if the toolkit runs one.
#[derive(Clone)]
pub(crate) struct Wakeups {
    /// Tells one `Thumbnails`' subscription from another's.
    id: u64,
    sender: Arc<Mutex<Option<mpsc::Sender<()>>>>,
}

impl Wakeups {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            sender: Arc::new(Mutex::new(None)),
        }
    }

    /// Called by the pipeline when thumbnails arrive, on its threads.
    /// Never blocks: with a message already waiting, nothing is sent.
    pub(crate) fn wake(&self) {
        let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = sender.as_mut()
            && let Err(error) = open.try_send(())
            && error.is_disconnected()
        {
            *sender = None;
        }
    }

    /// Ends the stream: its door is gone.
    pub(crate) fn close(&self) {
        let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        *sender = None;
    }

    /// A new stream of wakes, replacing any before it: one wake at once
    /// (for what arrived while none ran), then one per burst.
    pub(crate) fn stream(&self) -> BoxStream<'static, ()> {
        let (mut sender, receiver) = mpsc::channel(0);
        // The one slot this sender has: never full yet.
        let _ = sender.try_send(());
        *self.sender.lock().unwrap_or_else(PoisonError::into_inner) = Some(sender);
        receiver.boxed()
    }
}

impl Hash for Wakeups {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;

    #[test]
    fn wakes_are_coalesced_until_read_and_none_is_lost() {
        let wakeups = Wakeups::new();
        wakeups.wake(); // no stream yet: nothing to send to
        let mut ready = wakeups.stream();
        for _ in 0..10 {
            wakeups.wake();
        }
        assert_eq!(ready.next().now_or_never().flatten(), Some(()));
        // The ten wakes stood behind one message.
        assert_eq!(ready.next().now_or_never(), None);
        wakeups.wake();
        assert_eq!(ready.next().now_or_never().flatten(), Some(()));
        wakeups.close();
        assert_eq!(ready.next().now_or_never(), Some(None));
    }

    #[test]
    fn each_door_has_a_stream_of_its_own() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |wakeups: &Wakeups| {
            let mut hasher = DefaultHasher::new();
            wakeups.hash(&mut hasher);
            hasher.finish()
        };
        let (a, b) = (Wakeups::new(), Wakeups::new());
        assert_eq!(hash(&a), hash(&a.clone()));
        assert_ne!(hash(&a), hash(&b));
    }
}
