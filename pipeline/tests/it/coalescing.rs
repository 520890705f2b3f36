//! Rows that want the same thumbnail share one fetch and one decode, and a
//! thumbnail loaded once is served from the cache after.

use crate::common::{self, drain_until, id_of, server};
use thumbpipe::{Config, Pipeline, Priority, TargetSize};

#[test]
fn ten_rows_asking_for_one_url_cost_one_request() {
    let server = server(200);
    let mut pipeline = Pipeline::<usize>::new(Config::default()).unwrap();
    let url = server.image_url(31);
    for row in 0..10 {
        pipeline.request(row, &url, TargetSize::square(64), Priority::Visible);
    }
    let done = drain_until(&mut pipeline, |all| all.len() == 10);
    assert_eq!(done.len(), 10);
    let mut rows: Vec<usize> = done.iter().map(|c| c.row).collect();
    rows.sort_unstable();
    assert_eq!(rows, (0..10).collect::<Vec<_>>());
    for completion in &done {
        let thumbnail = completion.result.as_ref().unwrap();
        assert_eq!((thumbnail.width, thumbnail.height), (64, 64));
        assert_eq!(id_of(thumbnail), Some(31));
    }
    assert_eq!(server.stats().requests_started, 1);
    let stats = pipeline.stats();
    assert_eq!(
        (
            stats.fetches_started,
            stats.decodes_started,
            stats.coalesced
        ),
        (1, 1, 9)
    );
}

#[test]
fn a_loaded_thumbnail_comes_from_the_cache_the_next_time() {
    let server = server(50);
    let mut pipeline = Pipeline::<usize>::new(Config::default()).unwrap();
    let url = server.image_url(5);
    pipeline.request(0, &url, TargetSize::square(48), Priority::Visible);
    assert_eq!(drain_until(&mut pipeline, |all| !all.is_empty()).len(), 1);
    // Another row, same URL and size: no fetch, no decode.
    pipeline.request(1, &url, TargetSize::square(48), Priority::Visible);
    let done = drain_until(&mut pipeline, |all| !all.is_empty());
    assert_eq!(id_of(done[0].result.as_ref().unwrap()), Some(5));
    let stats = pipeline.stats();
    assert_eq!(
        (
            stats.cache_hits,
            stats.fetches_started,
            stats.decodes_started
        ),
        (1, 1, 1)
    );
    assert_eq!(stats.cache.entries, 1);
    assert_eq!(stats.cache.cost, 48 * 48 * 4);
    assert_eq!(server.stats().requests_started, 1);
    // A different size is a different thumbnail.
    pipeline.request(2, &url, TargetSize::square(32), Priority::Visible);
    drain_until(&mut pipeline, |all| !all.is_empty());
    assert_eq!(server.stats().requests_started, 2);
}

#[test]
fn shared_work_continues_until_its_last_subscriber_leaves() {
    let server = server(300);
    let mut pipeline = Pipeline::<usize>::new(Config::default()).unwrap();
    let url = server.image_url(8);
    for row in 0..3 {
        pipeline.request(row, &url, TargetSize::square(32), Priority::Visible);
    }
    assert!(common::eventually(|| server.stats().in_flight == 1));
    // Two of the three rows leave: the fetch goes on for the third.
    pipeline.cancel_row(&0);
    pipeline.cancel_row(&1);
    let done = drain_until(&mut pipeline, |all| !all.is_empty());
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].row, 2);
    assert_eq!(id_of(done[0].result.as_ref().unwrap()), Some(8));
    let served = server.stats();
    assert_eq!(
        (served.responses_completed, served.responses_aborted),
        (1, 0)
    );

    // When the last one leaves too, the shared fetch is cancelled.
    let other = server.image_url(9);
    for row in 0..2 {
        pipeline.request(row, &other, TargetSize::square(32), Priority::Visible);
    }
    assert!(common::eventually(|| server.stats().in_flight == 1));
    pipeline.cancel_row(&0);
    pipeline.cancel_row(&1);
    assert!(common::eventually(|| server.stats().responses_aborted == 1));
    assert_eq!(pipeline.stats().fetches_cancelled_in_flight, 1);
}
