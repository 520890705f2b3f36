//! Dropping the pipeline with a thousand requests in flight (queued,
//! fetching and decoding) cancels them, returns promptly, leaves none of its
//! threads behind and wakes nobody afterwards.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{eventually, server};
use fixture_server::ThreadCensus;
use thumbpipe::{Config, Pipeline, Priority, TargetSize};

#[test]
fn drop_with_a_thousand_requests_in_flight_joins_every_thread() {
    if ThreadCensus::take().is_err() {
        return;
    }
    let server = server(500);
    let before = ThreadCensus::take().unwrap();
    assert_eq!(before.with_prefix("thumbpipe-"), 0);
    let mut config = Config::default();
    config.max_concurrent_fetches = 400;
    config.max_fetches_in_flight = 400;
    let mut pipeline = Pipeline::<u32>::new(config).unwrap();
    let wakes = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&wakes);
    pipeline.set_waker(move || {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    // The first rows answer at once with large images, which keep the
    // decode threads busy; the rest wait 500 ms on the server or in the queue.
    for row in 0..1000 {
        let url = if row < 40 {
            format!(
                "{}/img/{row}.jpg?w=2048&h=2048&latency_ms=0",
                server.base_url()
            )
        } else {
            format!("{}/img/{row}.jpg?w=48&h=48", server.base_url())
        };
        pipeline.request(row, &url, TargetSize::square(32), Priority::Visible);
    }
    // In flight by the pipeline's count and at the server: a fetch task
    // counts as in flight before its connection is made, and with both
    // cores decoding, 300 connections can take a while to arrive.
    assert!(
        eventually(|| {
            let stats = pipeline.stats();
            stats.decoding > 0
                && stats.in_flight >= 300
                && stats.queued > 0
                && server.stats().requests_started >= 300
        }),
        "{:?} {:?}",
        pipeline.stats(),
        server.stats()
    );
    assert!(ThreadCensus::take().unwrap().with_prefix("thumbpipe-") > 0);

    // In flight at the server now: the 48x48 ones wait out 500 ms that have
    // not passed, so only the drop can end them; of the 40 large ones that
    // answer at once, a body still on its way may finish.
    let waiting = server.stats().in_flight;
    let started = Instant::now();
    drop(pipeline);
    let took = started.elapsed();
    let wakes_at_drop = wakes.load(Ordering::Relaxed);

    let after = ThreadCensus::take().unwrap();
    assert_eq!(after.with_prefix("thumbpipe-"), 0, "{:?}", after.names);
    // The target is 100 ms (measured by the soak report); a shared test
    // machine gets more room.
    assert!(took < Duration::from_secs(1), "drop took {took:?}");
    // Every connection was dropped: the server sees each request aborted.
    assert!(eventually(|| server.stats().in_flight == 0));
    let served = server.stats();
    assert_eq!(
        served.responses_aborted + served.responses_completed,
        served.requests_started
    );
    assert!(
        served.responses_aborted + 40 >= waiting && waiting >= 250,
        "{waiting} waiting at the drop: {served:?}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        wakes.load(Ordering::Relaxed),
        wakes_at_drop,
        "woken after drop"
    );
    eprintln!("drop took {took:?}");
}
