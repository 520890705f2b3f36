//! Rows: the UI side of the pipeline. One live request per row key; a new
//! URL for a row cancels the old request; rows not requested during a frame
//! are cancelled when it ends.
//!
//! Owned by the [`Pipeline`] handle and run on the caller's (UI) thread:
//! every method here only updates a map and sends to the load actor through
//! its handle (an unbounded channel), so none of them blocks or awaits.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::deliver::Delivery;
use crate::metrics::Metrics;
use crate::request::{Priority, SubscriptionId, TargetSize};
use crate::{Completion, Error, Pipeline, Thumbnail, fetch};

/// A row's current request.
pub(crate) struct Row {
    id: SubscriptionId,
    url: Arc<str>,
    target: TargetSize,
    priority: Priority,
    /// Requested since the last `end_frame`.
    seen: bool,
    /// Still waiting for its completion.
    pending: bool,
    /// When this request (generation) was made: the coasting policy of the
    /// egui front doors reads it.
    #[cfg_attr(not(feature = "egui"), allow(dead_code))]
    since: Instant,
}

impl<K: Hash + Eq + Clone> Pipeline<K> {
    /// Asks for `url`'s thumbnail, fitted inside `target`, for `row`.
    ///
    /// Call it every frame for every visible row: asking again for the same
    /// URL and size is cheap and keeps the request alive through
    /// [`Pipeline::end_frame`]. A different URL or size cancels the row's
    /// previous request at once and starts a new generation, which this
    /// returns; completions of older generations are never delivered.
    /// Never blocks.
    ///
    /// A load that failed is not retried while the row keeps asking for the
    /// same URL and size; it is retried when the row asks again after
    /// leaving the view ([`Pipeline::end_frame`]) or [`Pipeline::cancel_row`].
    ///
    /// With [`crate::Config::max_pending_requests`] requests waiting to be
    /// drained, the request is refused: it completes with
    /// [`Error::TooManyPending`] at the next `drain`.
    ///
    /// ```
    /// use thumbpipe::{Pipeline, Priority, TargetSize};
    ///
    /// let mut pipeline = Pipeline::<usize>::new(thumbpipe::Config::default())?;
    /// let first = pipeline.request(0, "http://127.0.0.1:9/a.jpg", TargetSize::square(64), Priority::Visible);
    /// let again = pipeline.request(0, "http://127.0.0.1:9/a.jpg", TargetSize::square(64), Priority::Visible);
    /// let next = pipeline.request(0, "http://127.0.0.1:9/b.jpg", TargetSize::square(64), Priority::Visible);
    /// assert_eq!(first, again);
    /// assert!(next > first);
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub fn request(&mut self, row: K, url: &str, target: TargetSize, priority: Priority) -> u64 {
        self.request_with_ttl(row, url, target, priority, self.default_ttl)
    }

    /// [`Pipeline::request`], with this thumbnail's time to live in the
    /// cache instead of [`crate::Config::cache_ttl`] (longer than ten years
    /// counts as ten years).
    pub fn request_with_ttl(
        &mut self,
        row: K,
        url: &str,
        target: TargetSize,
        priority: Priority,
        ttl: Duration,
    ) -> u64 {
        if let Some(current) = self.rows.get_mut(&row)
            && *current.url == *url
            && current.target == target
        {
            current.seen = true;
            if current.priority != priority {
                current.priority = priority;
                if current.pending {
                    self.loads.set_priority(current.id, priority);
                }
            }
            return current.id;
        }
        if let Some(previous) = self.rows.remove(&row)
            && previous.pending
        {
            self.unsubscribe(previous.id, Ended::Superseded);
        }
        self.next_id += 1;
        let id = self.next_id;
        Metrics::add(&self.metrics.requested, 1);
        let url: Arc<str> = Arc::from(url);
        let refused = self.owners.len() >= self.max_pending;
        self.owners.insert(id, row.clone());
        match fetch::parse_url(&url, self.files_allowed) {
            // No work starts, and only the id is kept: the error is made
            // by the next `drain`.
            _ if refused => self.refused.push(id),
            Ok(parsed) => {
                let answered =
                    self.loads
                        .subscribe(id, Arc::clone(&url), parsed, target, priority, ttl);
                if !answered {
                    self.ready.push(Delivery {
                        id,
                        result: Err(shut_down(&url)),
                    });
                }
            }
            // Delivered by the next `drain`, like any other result.
            Err(error) => self.ready.push(Delivery {
                id,
                result: Err(error),
            }),
        }
        self.rows.insert(
            row,
            Row {
                id,
                url,
                target,
                priority,
                seen: true,
                pending: true,
                since: Instant::now(),
            },
        );
        id
    }

    /// The completions that arrived since the last call, for rows' current
    /// requests only. Never blocks.
    ///
    /// If the pipeline's I/O side has stopped under it (a runtime given to
    /// [`PipelineBuilder::runtime`](crate::PipelineBuilder::runtime) was
    /// shut down), every pending request completes here with
    /// [`Error::Shutdown`], and so does every later one.
    pub fn drain(&mut self) -> Vec<Completion<K>> {
        let mut done = Vec::new();
        let mut ready = std::mem::take(&mut self.ready);
        for id in std::mem::take(&mut self.refused) {
            let url = self.owners.get(&id).and_then(|row| self.rows.get(row));
            ready.push(Delivery {
                id,
                result: Err(Error::TooManyPending {
                    url: url.map(|row| row.url.to_string()).unwrap_or_default(),
                    limit: self.max_pending,
                }),
            });
        }
        ready.extend(self.deliveries.try_iter());
        if self.loads.ended() {
            let arrived: HashSet<SubscriptionId> = ready.iter().map(|d| d.id).collect();
            let pending = self
                .rows
                .values()
                .filter(|row| row.pending && !arrived.contains(&row.id));
            let ended: Vec<_> = pending
                .map(|row| Delivery {
                    id: row.id,
                    result: Err(shut_down(&row.url)),
                })
                .collect();
            ready.extend(ended);
        }
        for delivery in ready {
            let row = self.owners.remove(&delivery.id);
            match row.and_then(|row| self.rows.get_mut(&row).map(|current| (row, current))) {
                Some((row, current)) if current.id == delivery.id => {
                    current.pending = false;
                    // Refused, not failed: asking again, even for the same
                    // URL, is a new request, so the row is forgotten.
                    let forget = matches!(delivery.result, Err(Error::TooManyPending { .. }))
                        .then(|| row.clone());
                    done.push(Completion {
                        row,
                        url: Arc::clone(&current.url),
                        target: current.target,
                        generation: current.id,
                        result: delivery.result,
                    });
                    if let Some(row) = forget {
                        self.rows.remove(&row);
                    }
                }
                // Its request was cancelled or superseded, and counted so,
                // after the result was sent.
                _ => Metrics::add(&self.metrics.results_dropped, 1),
            }
        }
        let failed = done.iter().filter(|c| c.result.is_err()).count() as u64;
        Metrics::add(&self.metrics.failed, failed);
        Metrics::add(&self.metrics.delivered, done.len() as u64 - failed);
        done
    }

    /// Ends a frame: every row not requested since the previous `end_frame`
    /// has scrolled out of view, and its request is cancelled.
    pub fn end_frame(&mut self) {
        self.cancel_rows_where(|row| !std::mem::take(&mut row.seen));
    }

    /// Cancels `row`'s request, if any. Never blocks.
    pub fn cancel_row(&mut self, row: &K) {
        if let Some(current) = self.rows.remove(row) {
            self.cancel(current);
        }
    }

    /// When `row`'s current request was made, if it has one.
    #[cfg(feature = "egui")]
    pub(crate) fn requested_at(&self, row: &K) -> Option<Instant> {
        self.rows.get(row).map(|current| current.since)
    }

    /// The median time loads take now ([`crate::Stats::recent_load_micros`]),
    /// read without a whole [`Pipeline::stats`] snapshot; `None` before the
    /// first.
    #[cfg(feature = "egui")]
    pub(crate) fn recent_load_time(&self) -> Option<Duration> {
        match self
            .metrics
            .recent_load_micros
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            0 => None,
            micros => Some(Duration::from_micros(micros)),
        }
    }

    /// The thumbnail of `url` fitted to `target`, if the cache holds a live
    /// one now. Never blocks and sends nothing: a UI draws a thumbnail that
    /// is already decoded in the same frame that asks for it, and keeps
    /// calling [`Pipeline::request`] for the row so that the cache counts
    /// the use and the row's completion still arrives.
    ///
    /// ```
    /// use thumbpipe::{Pipeline, TargetSize};
    ///
    /// let pipeline = Pipeline::<usize>::new(thumbpipe::Config::default())?;
    /// assert!(pipeline.cached("http://127.0.0.1:9/a.jpg", TargetSize::square(64)).is_none());
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub fn cached(&self, url: &str, target: TargetSize) -> Option<Thumbnail> {
        self.cache_view.get(url, target, Instant::now())
    }

    /// Forgets `url`: cancels every row's request for it and drops every
    /// size of it from the cache, so that the next request loads it afresh.
    /// Never blocks.
    pub fn forget(&mut self, url: &str) {
        self.cancel_rows_where(|row| *row.url == *url);
        self.cache_view.remove_url(url);
        self.loads.forget(Arc::from(url));
    }

    /// Forgets everything: cancels every row's request and empties the
    /// cache. Never blocks.
    pub fn forget_all(&mut self) {
        self.cancel_rows_where(|_| true);
        self.cache_view.clear();
        self.loads.forget_all();
    }

    /// Rows with a request that has not completed yet.
    pub fn pending_rows(&self) -> usize {
        self.rows.values().filter(|row| row.pending).count()
    }

    fn cancel_rows_where(&mut self, mut which: impl FnMut(&mut Row) -> bool) {
        let mut gone = Vec::new();
        self.rows.retain(|_, row| {
            let cancel = which(row);
            if cancel && row.pending {
                gone.push(row.id);
            }
            !cancel
        });
        for id in gone {
            self.unsubscribe(id, Ended::Cancelled);
        }
    }

    fn cancel(&mut self, row: Row) {
        if row.pending {
            self.unsubscribe(row.id, Ended::Cancelled);
        }
    }

    fn unsubscribe(&mut self, id: SubscriptionId, how: Ended) {
        self.owners.remove(&id);
        let counter = match how {
            Ended::Cancelled => &self.metrics.cancelled,
            Ended::Superseded => &self.metrics.superseded,
        };
        Metrics::add(counter, 1);
        self.loads.unsubscribe(id);
    }
}

fn shut_down(url: &str) -> Error {
    Error::Shutdown {
        url: url.to_owned(),
    }
}

/// How a request ended before its result arrived.
enum Ended {
    /// Its row left the view or was cancelled.
    Cancelled,
    /// Its row asked for another URL or size.
    Superseded,
}
