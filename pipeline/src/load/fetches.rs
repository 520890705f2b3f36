//! Fetches: the fetch tasks the actor starts, one per load, when its host
//! has a free slot and the bodies awaiting a decode are within their
//! budget. A load the thumbnail tier may hold asks it first, in a task of
//! its own holding the same slot (`LookedUp`). Each is a task on the I/O
//! runtime that ends with its load's token (a child of the root), reports
//! `LookedUp` or `Fetched` to the actor, and turns a panic of the fetcher
//! into [`Error::FetcherPanicked`].

use std::panic::AssertUnwindSafe;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use super::registry::Stage;
use super::{Event, LoadActor};
use crate::Error;
use crate::fetch::{Fetch, FetchRequest, FetchResponse};
use crate::metrics::Metrics;
use crate::request::TaskId;

impl LoadActor {
    /// Starts queued fetches while their hosts have free slots and the
    /// bodies awaiting a decode are within their budget.
    pub(super) fn start_fetches(&mut self) {
        while self.awaiting_decode < self.parts.body_budget_bytes {
            let Some(task_id) = self.scheduler.next() else {
                break;
            };
            let lookup = match (self.registry.get(task_id), &self.parts.thumbnails) {
                (None, _) => {
                    self.scheduler.remove(task_id);
                    continue;
                }
                (Some(task), Some(tier)) if tier.keeps(&task.url) => {
                    Some(tier.lookup(&task.url, task.key.target))
                }
                (Some(_), _) => None,
            };
            Metrics::add(&self.parts.metrics.fetches_started, 1);
            match lookup {
                Some(lookup) => {
                    self.registry.advance(task_id, Stage::LookingUp);
                    self.spawn(
                        task_id,
                        lookup.map(move |found| Event::LookedUp(task_id, found)),
                    );
                }
                None => self.fetch(task_id),
            }
        }
    }

    /// Starts the fetch of a task that holds a fetch slot.
    pub(super) fn fetch(&mut self, task_id: TaskId) {
        let Some(task) = self.registry.advance(task_id, Stage::Fetching) else {
            self.scheduler.remove(task_id);
            return;
        };
        let request = FetchRequest::within(
            task.url.clone(),
            self.parts.max_body_bytes,
            std::sync::Arc::clone(&self.parts.body_budget),
        );
        let fetch = guarded_fetch(&*self.parts.fetcher, request);
        self.spawn(
            task_id,
            fetch.map(move |fetched| Event::Fetched(task_id, fetched)),
        );
    }

    /// Runs `work` for `task_id` in a task of its own, which reports its
    /// event unless the load is cancelled first.
    fn spawn(&self, task_id: TaskId, work: impl Future<Output = Event> + Send + 'static) {
        let Some(task) = self.registry.get(task_id) else {
            return;
        };
        let cancel = task.cancel.clone();
        let events = self.events.clone();
        let live = self.live.enter();
        // A task per fetch, not a future polled by the actor: connecting
        // (and a TLS handshake) happens inside the fetch future, and on
        // the actor's one task it would hold up every command behind it
        // and serialize a burst of connections under tokio's budget.
        tokio::spawn(async move {
            let _live = live;
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {}
                event = work => {
                    let _ = events.send(event);
                }
            }
        });
    }
}

/// `fetcher`'s response to `request`, with a panic (in `fetch_response`
/// itself, on the actor's task, or in its future) turned into
/// [`Error::FetcherPanicked`]: a custom fetcher must not end the actor or
/// keep a slot forever.
fn guarded_fetch(
    fetcher: &dyn Fetch,
    request: FetchRequest,
) -> BoxFuture<'static, Result<FetchResponse, Error>> {
    let panicked = {
        let url = request.url.to_string();
        move |payload: Box<dyn std::any::Any + Send>| Error::FetcherPanicked {
            url,
            reason: panic_message(&*payload),
        }
    };
    match std::panic::catch_unwind(AssertUnwindSafe(|| fetcher.fetch_response(request))) {
        Ok(fetch) => Box::pin(
            AssertUnwindSafe(fetch)
                .catch_unwind()
                .map(|outcome| outcome.unwrap_or_else(|payload| Err(panicked(payload)))),
        ),
        Err(payload) => Box::pin(std::future::ready(Err(panicked(payload)))),
    }
}

/// A panic's message, when it has one.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}
