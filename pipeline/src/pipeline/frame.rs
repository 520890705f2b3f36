//! The UI thread's calls: [`Pipeline::request`], [`Pipeline::drain`],
//! [`Pipeline::end_frame`] and the ways to cancel and forget. Each one
//! updates the row table (`rows.rs`, plain data) and tells the load actor
//! what it decided, through its handle (an unbounded channel), so none of
//! them blocks or awaits.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::rows::Asked;
use crate::deliver::{Completion, Delivery};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::pipeline::Pipeline;
use crate::request::{Priority, RequestId, TargetSize, parse_url};
use crate::thumbnail::Thumbnail;

impl<K: Hash + Eq + Clone> Pipeline<K> {
    /// Asks for `url`'s thumbnail, fitted inside `target`, for `row`.
    ///
    /// Call it every frame for every visible row: asking again for the same
    /// URL and size is cheap and keeps the request alive through
    /// [`Pipeline::end_frame`]. A different URL or size cancels the row's
    /// previous request at once and starts a new request, whose id this
    /// returns; completions of older requests are never delivered.
    /// Never blocks.
    ///
    /// A load that failed is not retried while the row keeps asking for the
    /// same URL and size; it is retried when the row asks again after
    /// leaving the view ([`Pipeline::end_frame`]) or [`Pipeline::cancel_row`].
    ///
    /// With
    /// [`Config::max_pending_requests`](crate::Config::max_pending_requests)
    /// requests waiting to be drained, the request is refused: it completes
    /// with [`Error::TooManyPending`] at the next `drain`.
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
    pub fn request(
        &mut self,
        row: K,
        url: &str,
        target: TargetSize,
        priority: Priority,
    ) -> RequestId {
        self.request_with_ttl(row, url, target, priority, self.default_ttl)
    }

    /// [`Pipeline::request`], with this thumbnail's time to live in the cache
    /// instead of [`CacheConfig::ttl`](crate::CacheConfig::ttl) (longer than
    /// ten years counts as ten years).
    pub fn request_with_ttl(
        &mut self,
        row: K,
        url: &str,
        target: TargetSize,
        priority: Priority,
        ttl: Duration,
    ) -> RequestId {
        let (id, url, refused) = match self.rows.ask(row, url, target, priority, Instant::now) {
            Asked::Current { id, reprioritized } => {
                if let Some(priority) = reprioritized {
                    self.loads.set_priority(id, priority);
                }
                return id;
            }
            Asked::New {
                id,
                url,
                superseded,
                refused,
            } => {
                if let Some(previous) = superseded {
                    self.unsubscribe(previous, Ended::Superseded);
                }
                (id, url, refused)
            }
        };
        Metrics::add(&self.metrics.requested, 1);
        match parse_url(&url, &self.schemes) {
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
            let url = self.rows.url_of(id);
            ready.push(Delivery {
                id,
                result: Err(Error::TooManyPending {
                    url: url.map(|url| url.to_string()).unwrap_or_default(),
                    limit: self.rows.max_pending(),
                }),
            });
        }
        ready.extend(self.deliveries.try_iter());
        if self.loads.ended() {
            let arrived: HashSet<RequestId> = ready.iter().map(|d| d.id).collect();
            let ended: Vec<_> = self
                .rows
                .pending()
                .filter(|(id, _)| !arrived.contains(id))
                .map(|(id, url)| Delivery {
                    id,
                    result: Err(shut_down(url)),
                })
                .collect();
            ready.extend(ended);
        }
        for delivery in ready {
            match self.rows.complete(delivery) {
                Some(completion) => done.push(completion),
                // Its request was cancelled or superseded, and counted so,
                // after the result was sent.
                None => Metrics::add(&self.metrics.results_dropped, 1),
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
        let gone = self.rows.end_frame();
        self.cancel(gone);
    }

    /// Ends the frame of the requests made so far, for a UI-side front put
    /// over this pipeline: the rows still loading are kept into its first
    /// pass (and cancelled at that pass's end unless asked for again), and
    /// the rows whose completion was drained already are forgotten, so
    /// that the front asks for them afresh instead of waiting for what was
    /// taken.
    #[cfg(any(feature = "egui", feature = "iced"))]
    pub(crate) fn hand_over(&mut self) {
        self.end_frame();
        self.rows.forget_settled();
    }

    /// Cancels `row`'s request, if any. Never blocks.
    pub fn cancel_row(&mut self, row: &K) {
        if let Some(id) = self.rows.forget_row(row) {
            self.unsubscribe(id, Ended::Cancelled);
        }
    }

    /// When `row`'s current request was made, if it has one: with
    /// [`Pipeline::recent_load_time`], what a UI needs to tell whether a
    /// row's image can still arrive before the row leaves the view (the
    /// egui front door's coasting does).
    ///
    /// ```
    /// use thumbpipe::{Pipeline, Priority, TargetSize};
    ///
    /// let mut pipeline = Pipeline::<usize>::new(thumbpipe::Config::default())?;
    /// assert!(pipeline.requested_at(&0).is_none());
    /// pipeline.request(0, "http://127.0.0.1:9/a.jpg", TargetSize::square(64), Priority::Visible);
    /// assert!(pipeline.requested_at(&0).is_some());
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub fn requested_at(&self, row: &K) -> Option<Instant> {
        self.rows.requested_at(row)
    }

    /// The median time loads take now ([`crate::Stats::recent_load_micros`]),
    /// read without a whole [`Pipeline::stats`] snapshot; `None` before the
    /// first load has finished.
    ///
    /// ```
    /// let pipeline = thumbpipe::Pipeline::<usize>::new(thumbpipe::Config::default())?;
    /// assert_eq!(pipeline.recent_load_time(), None);
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub fn recent_load_time(&self) -> Option<Duration> {
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
        let gone = self.rows.forget_url(url);
        self.cancel(gone);
        self.cache_view.remove_url(url);
        self.loads.forget(Arc::from(url));
    }

    /// Forgets everything: cancels every row's request and empties the
    /// cache. Never blocks.
    pub fn forget_all(&mut self) {
        let gone = self.rows.forget_all();
        self.cancel(gone);
        self.cache_view.clear();
        self.loads.forget_all();
    }

    /// Rows with a request that has not completed yet.
    pub fn pending_rows(&self) -> usize {
        self.rows.pending().count()
    }

    /// Cancels the requests of rows that have gone.
    fn cancel(&mut self, gone: Vec<RequestId>) {
        for id in gone {
            self.unsubscribe(id, Ended::Cancelled);
        }
    }

    /// Ends a pending request the row table has let go of.
    fn unsubscribe(&mut self, id: RequestId, how: Ended) {
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
