//! The pipeline's waker as an iced [`Subscription`]: each time thumbnails
//! arrive, one [`Ready`] message, so the app's `update` drains them.
//!
//! The waker runs on the pipeline's threads and only tries to send on a
//! channel of one slot: a message already waiting stands for every arrival
//! until the app reads it, so a burst of completions costs one `update`.
//! The stream lives as long as iced keeps the subscription (its identity
//! is the [`super::Thumbnails`] it came from) and ends when iced drops it
//! or when the `Thumbnails` is dropped.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt as _;
use futures::channel::mpsc;
use futures::stream::BoxStream;
use iced_futures::Subscription;

/// The message [`super::Thumbnails::subscription`] produces: thumbnails
/// arrived; pass it to [`super::Thumbnails::update`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ready;

/// Where the waker sends: the subscription's current stream, if iced runs
/// one.
#[derive(Clone)]
pub(super) struct Wakeups {
    /// Tells one `Thumbnails`' subscription from another's.
    id: u64,
    sender: Arc<Mutex<Option<mpsc::Sender<()>>>>,
}

impl Wakeups {
    pub(super) fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            sender: Arc::new(Mutex::new(None)),
        }
    }

    /// Called by the pipeline when thumbnails arrive, on its threads.
    /// Never blocks: with a message already waiting, nothing is sent.
    pub(super) fn wake(&self) {
        let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = sender.as_mut()
            && let Err(error) = open.try_send(())
            && error.is_disconnected()
        {
            *sender = None;
        }
    }

    /// Ends the stream: the `Thumbnails` is gone.
    pub(super) fn close(&self) {
        let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        *sender = None;
    }

    pub(super) fn subscription(&self) -> Subscription<Ready> {
        Subscription::run_with(self.clone(), stream)
    }
}

impl Hash for Wakeups {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

/// The subscription's stream, made when iced starts it: one `Ready` at
/// once (for what arrived while none ran), then one per wake.
fn stream(wakeups: &Wakeups) -> BoxStream<'static, Ready> {
    let (mut sender, receiver) = mpsc::channel(0);
    // The one slot this sender has: never full yet.
    let _ = sender.try_send(());
    *wakeups
        .sender
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(sender);
    receiver.map(|()| Ready).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;

    fn started(wakeups: &Wakeups) -> BoxStream<'static, Ready> {
        stream(wakeups)
    }

    #[test]
    fn wakes_are_coalesced_until_read_and_none_is_lost() {
        let wakeups = Wakeups::new();
        wakeups.wake(); // no stream yet: nothing to send to
        let mut ready = started(&wakeups);
        for _ in 0..10 {
            wakeups.wake();
        }
        assert_eq!(ready.next().now_or_never().flatten(), Some(Ready));
        // The ten wakes stood behind one message.
        assert_eq!(ready.next().now_or_never(), None);
        wakeups.wake();
        assert_eq!(ready.next().now_or_never().flatten(), Some(Ready));
        wakeups.close();
        assert_eq!(ready.next().now_or_never(), Some(None));
    }

    #[test]
    fn each_thumbnails_has_a_subscription_of_its_own() {
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
