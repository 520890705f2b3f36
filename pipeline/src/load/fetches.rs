//! Fetches: the fetch tasks the actor starts, one per load, when its host
//! has a free slot and the bodies awaiting a decode are within their
//! budget. Each is a task on the I/O runtime that ends with its load's
//! token (a child of the root), reports `Fetched` (or `FromDisk`, a
//! decoded thumbnail on disk) to the actor, and turns a panic of the
//! fetcher into [`Error::FetcherPanicked`].

use std::panic::AssertUnwindSafe;

use bytes::Bytes;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use url::Url;

use super::registry::Stage;
use super::{Event, LoadActor};
use crate::Error;
use crate::fetch::Fetch;
use crate::metrics::Metrics;

impl LoadActor {
    /// Starts queued fetches while their hosts have free slots and the
    /// bodies awaiting a decode are within their budget.
    pub(super) fn start_fetches(&mut self) {
        while self.awaiting_decode < self.parts.max_bytes_awaiting_decode {
            let Some(task_id) = self.scheduler.next() else {
                break;
            };
            let Some(task) = self.registry.advance(task_id, Stage::Fetching) else {
                self.scheduler.remove(task_id);
                continue;
            };
            Metrics::add(&self.parts.metrics.fetches_started, 1);
            let fetch = guarded_fetch(&*self.parts.fetcher, &task.url, self.parts.max_body_bytes);
            // A decoded thumbnail on disk is looked up first.
            let on_disk = self
                .parts
                .thumbnails
                .as_ref()
                .filter(|_| is_http(&task.url))
                .map(|disk| disk.lookup_thumbnail(&task.url, task.key.target));
            let fetch = async move {
                if let Some(lookup) = on_disk
                    && let Some(thumbnail) = lookup.await
                {
                    return Event::FromDisk(task_id, thumbnail);
                }
                Event::Fetched(task_id, fetch.await)
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
                    event = fetch => {
                        let _ = events.send(event);
                    }
                }
            });
        }
    }
}

/// Whether `url` is one the disk cache may hold (`http` or `https`).
pub(super) fn is_http(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

/// `fetcher`'s fetch of `url`, with a panic (in `fetch` itself, on the
/// actor's task, or in its future) turned into [`Error::FetcherPanicked`]:
/// a custom fetcher must not end the actor or keep a slot forever.
fn guarded_fetch(
    fetcher: &dyn Fetch,
    url: &Url,
    max_bytes: u64,
) -> BoxFuture<'static, Result<Bytes, Error>> {
    let panicked = {
        let url = url.to_string();
        move |payload: Box<dyn std::any::Any + Send>| Error::FetcherPanicked {
            url,
            reason: panic_message(&*payload),
        }
    };
    match std::panic::catch_unwind(AssertUnwindSafe(|| fetcher.fetch(url.clone(), max_bytes))) {
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
