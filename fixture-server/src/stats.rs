//! What happened to every image request (started, completed, aborted, cut)
//! and to every connection (accepted, its TLS handshake, its protocol).
//!
//! Owns the counters. Every `/img` request holds a [`RequestGuard`] from its
//! first line until its response body is finished or dropped; the guard's
//! `Drop` records the outcome exactly once, so a request the client abandons
//! (its future or body dropped by hyper) can only be counted as aborted.
//! Nothing here runs on its own; the counters live as long as the server's
//! handle or its last connection.

use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::{Body as _, Frame, SizeHint};

use crate::FaultKind;
use crate::tls::Agreed;

/// A copy of the server's counters, as `GET /stats` returns them.
///
/// At any moment, `requests_started = responses_completed + responses_aborted
/// + responses_cut + in_flight` (counting since the last reset).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StatsSnapshot {
    /// Image requests received.
    pub requests_started: u64,
    /// Responses whose body was handed over whole (errors and faults that
    /// end normally included).
    pub responses_completed: u64,
    /// Requests the client gave up on: it closed the connection during the
    /// latency wait, during a `hang`, or before the body finished.
    pub responses_aborted: u64,
    /// Responses the server cut on purpose (`reset`, `truncate`).
    pub responses_cut: u64,
    /// Requests received and not yet ended.
    pub in_flight: u64,
    /// Body bytes handed to the connection.
    pub bytes_sent: u64,
    /// How many requests got each fault, by fault name.
    pub faults: BTreeMap<String, u64>,
    /// Images answered `304 Not Modified`: the client's copy still matched,
    /// and no image bytes were sent.
    #[serde(default)]
    pub not_modified: u64,
    /// Images sent whole (`200 OK` with the image).
    #[serde(default)]
    pub image_bodies: u64,
    /// TCP connections accepted. A connection accepted before a reset and
    /// handshaken after it counts its handshake, not itself.
    #[serde(default)]
    pub connections: u64,
    /// TLS handshakes completed in full (certificate and key exchange).
    #[serde(default)]
    pub tls_full_handshakes: u64,
    /// TLS handshakes that resumed an earlier session.
    #[serde(default)]
    pub tls_resumed_handshakes: u64,
    /// TLS connections on which ALPN chose HTTP/2 (plain connections are
    /// not counted, whatever they speak).
    #[serde(default)]
    pub http2_connections: u64,
}

/// The live counters, shared by every connection.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    requests_started: AtomicU64,
    responses_completed: AtomicU64,
    responses_aborted: AtomicU64,
    responses_cut: AtomicU64,
    in_flight: AtomicU64,
    bytes_sent: AtomicU64,
    not_modified: AtomicU64,
    image_bodies: AtomicU64,
    connections: AtomicU64,
    tls_full_handshakes: AtomicU64,
    tls_resumed_handshakes: AtomicU64,
    http2_connections: AtomicU64,
    faults: [AtomicU64; FaultKind::ALL.len()],
    /// The file names of the last [`REQUEST_LOG`] requests, oldest first.
    log: Mutex<VecDeque<String>>,
}

/// Requests whose file names [`Stats::requested_files`] keeps.
pub(crate) const REQUEST_LOG: usize = 10_000;

impl Stats {
    /// Counts a new request; the guard counts how it ends.
    pub(crate) fn begin(self: &Arc<Self>) -> RequestGuard {
        self.requests_started.fetch_add(1, Relaxed);
        self.in_flight.fetch_add(1, Relaxed);
        RequestGuard {
            stats: Arc::clone(self),
            outcome: Outcome::Pending,
        }
    }

    /// Logs the file a request asked for, in arrival order.
    pub(crate) fn log_request(&self, file: &str) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if log.len() == REQUEST_LOG {
            log.pop_front();
        }
        log.push_back(file.to_owned());
    }

    /// The files asked for since the last reset, oldest first.
    pub(crate) fn requested_files(&self) -> Vec<String> {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter().cloned().collect()
    }

    pub(crate) fn count_not_modified(&self) {
        self.not_modified.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_image_body(&self) {
        self.image_bodies.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_connection(&self) {
        self.connections.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_handshake(&self, agreed: Agreed) {
        let kind = if agreed.resumed {
            &self.tls_resumed_handshakes
        } else {
            &self.tls_full_handshakes
        };
        kind.fetch_add(1, Relaxed);
        if agreed.http2 {
            self.http2_connections.fetch_add(1, Relaxed);
        }
    }

    pub(crate) fn count_fault(&self, kind: FaultKind) {
        self.faults[kind.index()].fetch_add(1, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            requests_started: self.requests_started.load(Relaxed),
            responses_completed: self.responses_completed.load(Relaxed),
            responses_aborted: self.responses_aborted.load(Relaxed),
            responses_cut: self.responses_cut.load(Relaxed),
            in_flight: self.in_flight.load(Relaxed),
            bytes_sent: self.bytes_sent.load(Relaxed),
            not_modified: self.not_modified.load(Relaxed),
            image_bodies: self.image_bodies.load(Relaxed),
            connections: self.connections.load(Relaxed),
            tls_full_handshakes: self.tls_full_handshakes.load(Relaxed),
            tls_resumed_handshakes: self.tls_resumed_handshakes.load(Relaxed),
            http2_connections: self.http2_connections.load(Relaxed),
            faults: FaultKind::ALL
                .iter()
                .map(|kind| {
                    (
                        kind.name().to_owned(),
                        self.faults[kind.index()].load(Relaxed),
                    )
                })
                .collect(),
        }
    }

    /// Zeroes the counters. `in_flight` is a gauge, not a counter: requests
    /// still running keep it, and are counted when they end.
    pub(crate) fn reset(&self) {
        for counter in [
            &self.requests_started,
            &self.responses_completed,
            &self.responses_aborted,
            &self.responses_cut,
            &self.bytes_sent,
            &self.not_modified,
            &self.image_bodies,
            &self.connections,
            &self.tls_full_handshakes,
            &self.tls_resumed_handshakes,
            &self.http2_connections,
        ]
        .into_iter()
        .chain(&self.faults)
        {
            counter.store(0, Relaxed);
        }
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        // Requests still in flight will end after the reset; count them as
        // started in the new period so that the sum above holds.
        self.requests_started
            .store(self.in_flight.load(Relaxed), Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pending,
    Completed,
    Cut,
}

/// One request's place in the counters. Dropping it records the outcome:
/// completed or cut if the response said so, aborted otherwise.
#[derive(Debug)]
pub(crate) struct RequestGuard {
    stats: Arc<Stats>,
    outcome: Outcome,
}

impl RequestGuard {
    fn complete(&mut self) {
        if self.outcome == Outcome::Pending {
            self.outcome = Outcome::Completed;
        }
    }

    fn cut(&mut self) {
        if self.outcome == Outcome::Pending {
            self.outcome = Outcome::Cut;
        }
    }

    /// Wraps a response body so that its end (or its drop before the end)
    /// settles this request.
    pub(crate) fn into_body(self, inner: Body) -> Body {
        Body::new(CountedBody { inner, guard: self })
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let counter = match self.outcome {
            Outcome::Pending => &self.stats.responses_aborted,
            Outcome::Completed => &self.stats.responses_completed,
            Outcome::Cut => &self.stats.responses_cut,
        };
        counter.fetch_add(1, Relaxed);
        self.stats.in_flight.fetch_sub(1, Relaxed);
    }
}

/// A response body that counts its bytes and settles its request's guard.
struct CountedBody {
    inner: Body,
    guard: RequestGuard,
}

impl http_body::Body for CountedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.guard
                        .stats
                        .bytes_sent
                        .fetch_add(data.len() as u64, Relaxed);
                }
                // hyper stops polling once the body says it has ended.
                if this.inner.is_end_stream() {
                    this.guard.complete();
                }
            }
            Poll::Ready(Some(Err(_))) => this.guard.cut(),
            Poll::Ready(None) => this.guard.complete(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for CountedBody {
    fn drop(&mut self) {
        // An empty body is never polled: hyper sees its end up front.
        if self.inner.is_end_stream() {
            self.guard.complete();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_body_read_to_the_end_is_completed() {
        let stats = Arc::new(Stats::default());
        let body = stats.begin().into_body(Body::from("hello"));
        assert_eq!(body.collect().await.unwrap().to_bytes(), "hello");
        let snapshot = stats.snapshot();
        assert_eq!(
            (
                snapshot.responses_completed,
                snapshot.responses_aborted,
                snapshot.in_flight
            ),
            (1, 0, 0)
        );
        assert_eq!(snapshot.bytes_sent, 5);
    }

    #[tokio::test]
    async fn a_body_dropped_unread_is_aborted() {
        let stats = Arc::new(Stats::default());
        drop(stats.begin().into_body(Body::from("hello")));
        drop(stats.begin());
        let snapshot = stats.snapshot();
        assert_eq!((snapshot.responses_aborted, snapshot.in_flight), (2, 0));
        assert_eq!(snapshot.requests_started, 2);
    }

    #[tokio::test]
    async fn an_empty_body_is_completed_without_a_poll() {
        let stats = Arc::new(Stats::default());
        drop(stats.begin().into_body(Body::empty()));
        assert_eq!(stats.snapshot().responses_completed, 1);
    }

    #[test]
    fn reset_keeps_requests_in_flight_balanced() {
        let stats = Arc::new(Stats::default());
        let running = stats.begin();
        drop(stats.begin());
        stats.reset();
        drop(running);
        let s = stats.snapshot();
        assert_eq!(s.requests_started, 1);
        assert_eq!(
            s.requests_started,
            s.responses_completed + s.responses_aborted + s.responses_cut + s.in_flight
        );
    }
}
