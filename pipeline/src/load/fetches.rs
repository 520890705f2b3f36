//! Fetches: the fetch tasks the actor starts, one per load, when its host
//! has a free slot and the bodies awaiting a decode are within their
//! budget. A load the thumbnail tier may hold asks it first, in a task of
//! its own holding the same slot (`LookedUp`). Each is a task on the I/O
//! runtime that ends with its load's token (a child of the root), reports
//! `LookedUp` or `Fetched` to the actor, and turns a panic of the fetcher
//! into [`Error::FetcherPanicked`]. What the actor does with their reports
//! (`looked_up`, `fetched`) is here too.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::registry::{Reading, Stage};
use super::{Event, LoadActor};

use crate::body::Body;
use crate::error::{Error, panic_message};
use crate::fetch::{Fetch, FetchRequest, FetchResponse, RequestHeaders, check_status};
use crate::metrics::Metrics;
use crate::request::TaskId;
use crate::thumbnail::Thumbnail;

impl LoadActor {
    /// Starts queued fetches while their hosts have free slots and the
    /// bodies awaiting a decode are within their budget.
    pub(super) fn start_fetches(&mut self) {
        while self.awaiting_decode < self.parts.body_budget_bytes {
            let Some(task_id) = self.scheduler.next() else {
                break;
            };
            // The thumbnail tier's lookup, with the task's token, when the
            // tier may hold this URL.
            let lookup = match (self.registry.get(task_id), &self.parts.thumbnails) {
                (None, _) => {
                    self.scheduler.remove(task_id);
                    continue;
                }
                (Some(task), Some(tier)) if tier.keeps(&task.url, task.key.target) => {
                    Some((tier.lookup(&task.url, task.key.target), task.cancel.clone()))
                }
                (Some(_), _) => None,
            };
            Metrics::add(&self.parts.metrics.fetches_started, 1);
            match lookup {
                Some((lookup, cancel)) => {
                    self.registry.advance(task_id, Stage::LookingUp);
                    self.spawn(
                        cancel,
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
        let mut request = FetchRequest::within(
            task.url.clone(),
            self.parts.max_body_bytes,
            Arc::clone(&self.parts.body_budget),
        );
        // The body's start may serve, until one cut short did not. Read
        // as far as the target needs: a thumbnail tier's larger size is
        // made only where that start holds it (`decodes.rs`).
        request.cut_short_for = (self.parts.takes_cut_short_bodies
            && task.reading == Reading::AsNeeded)
            .then_some(task.key.target);
        let cancel = task.cancel.clone();
        let fetch = guarded_fetch(&*self.parts.fetcher, &self.parts.request_headers, request);
        self.spawn(
            cancel,
            fetch.map(move |fetched| Event::Fetched(task_id, fetched)),
        );
    }

    /// The thumbnail tier answered `task_id`'s lookup: with its thumbnail
    /// (or an error it recorded), the load is done; without, the slot it
    /// holds goes to its fetch.
    pub(super) fn looked_up(&mut self, task_id: TaskId, found: Option<Result<Thumbnail, Error>>) {
        let Some(found) = found else {
            return self.fetch(task_id);
        };
        self.scheduler.remove(task_id);
        let metrics = &self.parts.metrics;
        let Some(task) = self.registry.get(task_id) else {
            Metrics::add(&metrics.loads_abandoned_after_fetch, 1);
            return;
        };
        // The URL as asked for, as a decoded thumbnail carries it.
        let url = Arc::clone(&task.key.url);
        let found = found.map(|mut thumbnail| {
            thumbnail.url = url;
            thumbnail
        });
        Metrics::add(&metrics.fetches_completed, 1);
        self.finish(task_id, found);
    }

    /// `task_id`'s fetch ended: its slot is free, and its body goes to a
    /// decode, or its error to its subscribers.
    pub(super) fn fetched(&mut self, task_id: TaskId, result: Result<FetchResponse, Error>) {
        self.scheduler.remove(task_id);
        let metrics = Arc::clone(&self.parts.metrics);
        let Some(task) = self.registry.get(task_id) else {
            // Cancelled after its body had arrived, before this message
            // was read.
            Metrics::add(&metrics.loads_abandoned_after_fetch, 1);
            return;
        };
        // A fetcher answers a success, or a 304 to a conditional request
        // that a layer in front of it turns into one; any other status it
        // returns is not a body to decode.
        let result = result
            .and_then(|response| check_status(&task.key.url, response.status).map(|()| response));
        match result {
            Ok(response) => {
                Metrics::add(&metrics.fetches_completed, 1);
                Metrics::add(&metrics.bytes_fetched, response.body.len() as u64);
                if task.url.scheme() == "file" {
                    Metrics::add(&metrics.file_bytes_read, response.body.len() as u64);
                }
                self.body_arrived(task_id, response.body);
            }
            Err(error) => {
                Metrics::add(&metrics.fetches_failed, 1);
                self.finish(task_id, Err(error));
            }
        }
    }

    /// `task_id`'s body arrived: to the decode pool, unless it came cut
    /// short for a decoder that takes no such bodies (a fetcher of the
    /// app's own may cut one short unasked); that one is read again whole,
    /// as a body cut short whose decode failed is.
    fn body_arrived(&mut self, task_id: TaskId, body: Body) {
        self.registry.body_arrived(task_id, body.complete);
        if body.complete || self.parts.takes_cut_short_bodies {
            return self.decode(task_id, body);
        }
        if !self.read_again_whole(task_id)
            && let Some(task) = self.registry.get(task_id)
        {
            let error = Error::Decode {
                url: task.key.url.to_string(),
                reason: "the fetcher answered only the start of the body, and the decoder \
                         takes whole bodies (does the fetcher honour FetchRequest::stop_rule?)"
                    .into(),
            };
            self.finish(task_id, Err(error));
        }
    }

    /// Runs `work` in a task of its own, which reports its event unless
    /// the load's token, `cancel`, fires first.
    fn spawn(&self, cancel: CancellationToken, work: impl Future<Output = Event> + Send + 'static) {
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

/// `fetcher`'s response to `request`, with the app's `headers` (its hook
/// run here, on the actor's task), and with a panic (in the hook, in
/// `fetch_response` itself, or in its future) turned into
/// [`Error::FetcherPanicked`]: neither the app's hook nor a custom fetcher
/// may end the actor or keep a slot forever.
fn guarded_fetch(
    fetcher: &dyn Fetch,
    headers: &RequestHeaders,
    mut request: FetchRequest,
) -> BoxFuture<'static, Result<FetchResponse, Error>> {
    let url = request.url.to_string();
    let panicked = move |place: &str, payload: Box<dyn std::any::Any + Send>| {
        let message = panic_message(&*payload).unwrap_or_else(|| "no message".to_owned());
        Error::FetcherPanicked {
            url,
            reason: format!("{place}{message}"),
        }
    };
    let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
        request.headers = headers.for_url(&request.url);
    }))
    .map_err(|payload| ("in fetch.header_hook: ", payload))
    .and_then(|()| {
        std::panic::catch_unwind(AssertUnwindSafe(|| fetcher.fetch_response(request)))
            .map_err(|payload| ("", payload))
    });
    match started {
        Ok(fetch) => Box::pin(
            AssertUnwindSafe(fetch)
                .catch_unwind()
                .map(|outcome| outcome.unwrap_or_else(|payload| Err(panicked("", payload)))),
        ),
        Err((place, payload)) => Box::pin(std::future::ready(Err(panicked(place, payload)))),
    }
}
