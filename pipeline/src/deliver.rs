//! Deliver: finished loads travel from the load actor to the UI thread,
//! which drains them without blocking; a waker tells the UI to run a frame.
//!
//! Owns the delivery channel and the waker. The actor's `Outbox` sends,
//! the pipeline's `drain` receives. The channel closes when either side is
//! dropped.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::Error;
use crate::request::{RequestId, TargetSize};
use crate::thumbnail::Thumbnail;

/// A finished load for one request.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub(crate) id: RequestId,
    pub(crate) result: Result<Thumbnail, Error>,
}

/// What `drain` returns: a row's thumbnail or the reason it has none.
///
/// It always belongs to the row's current request: a result for a URL the
/// row no longer shows is dropped before it gets here.
#[derive(Debug, Clone)]
pub struct Completion<K> {
    /// The row, as given to `request`.
    pub row: K,
    /// The URL, as given to `request`.
    pub url: Arc<str>,
    /// The box, as given to `request`.
    pub target: TargetSize,
    /// The request this completes: the id `request` returned for it.
    pub request: RequestId,
    /// The thumbnail, or why it could not be loaded.
    pub result: Result<Thumbnail, Error>,
}

/// A callback that asks the UI for a frame, such as egui's
/// `Context::request_repaint`.
pub(crate) type Waker = Arc<dyn Fn() + Send + Sync>;

/// The actor's end of the delivery channel.
pub(crate) struct Outbox {
    sender: mpsc::Sender<Delivery>,
    waker: Arc<Mutex<Option<Waker>>>,
    sent: bool,
}

impl Outbox {
    pub(crate) fn new(sender: mpsc::Sender<Delivery>, waker: Arc<Mutex<Option<Waker>>>) -> Self {
        Self {
            sender,
            waker,
            sent: false,
        }
    }

    pub(crate) fn send(&mut self, delivery: Delivery) {
        // The UI side gone means the pipeline is shutting down.
        self.sent |= self.sender.send(delivery).is_ok();
    }

    /// Calls the waker once for everything sent since the last call.
    pub(crate) fn wake_if_sent(&mut self) {
        if std::mem::take(&mut self.sent) {
            wake(&self.waker);
        }
    }

    /// The waker's slot, for a wake after the outbox is gone.
    pub(crate) fn waker(&self) -> Arc<Mutex<Option<Waker>>> {
        Arc::clone(&self.waker)
    }
}

/// Calls the waker in `slot`, if one is set.
///
/// The call is made holding the slot's lock: dropping the pipeline empties
/// the slot under the same lock, so it waits for a call in progress, and no
/// call starts after it. A panicking waker is caught, so it neither poisons
/// the lock nor ends the caller (the load actor).
pub(crate) fn wake(slot: &Mutex<Option<Waker>>) {
    let waker = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(waker) = waker.as_ref() {
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| waker()));
    }
}

/// Empties the waker slot; returns once no call is in progress.
pub(crate) fn unset_waker(slot: &Mutex<Option<Waker>>) {
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = None;
}
