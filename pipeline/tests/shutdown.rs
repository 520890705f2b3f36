//! Dropping the pipeline with a thousand requests in flight cancels them
//! and leaves none of its threads behind.

#![allow(clippy::unwrap_used)]

mod common;

use common::{eventually, server};
use thumbpipe::{Config, Pipeline, Priority, TargetSize, ThreadCensus};

#[test]
fn drop_with_a_thousand_requests_in_flight_joins_every_thread() {
    if ThreadCensus::take().is_err() {
        return;
    }
    let server = server(500);
    let before = ThreadCensus::take().unwrap();
    assert_eq!(before.with_prefix("thumbpipe-"), 0);
    let config = Config {
        max_concurrent_fetches: 1000,
        ..Config::default()
    };
    let mut pipeline = Pipeline::<u32>::new(config).unwrap();
    for row in 0..1000 {
        let url = format!("{}/img/{row}.jpg?w=48&h=48", server.base_url());
        pipeline.request(row, &url, TargetSize::square(32), Priority::Visible);
    }
    assert!(
        eventually(|| server.stats().in_flight >= 900),
        "{:?}",
        server.stats()
    );
    assert!(ThreadCensus::take().unwrap().with_prefix("thumbpipe-") > 0);
    drop(pipeline);
    let after = ThreadCensus::take().unwrap();
    assert_eq!(after.with_prefix("thumbpipe-"), 0, "{:?}", after.names);
    // Every connection was dropped: the server sees each request aborted.
    assert!(eventually(|| server.stats().in_flight == 0));
    let served = server.stats();
    assert_eq!(served.responses_completed, 0);
    assert_eq!(served.responses_aborted, served.requests_started);
}
