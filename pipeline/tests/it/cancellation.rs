//! Rows that leave the view are cancelled at the end of the frame: queued
//! loads never start, fetches in flight drop their connection, and nothing
//! is decoded for them.

use crate::common::{drain_until, eventually, idle, server};
use thumbpipe::{Config, Pipeline, Priority, TargetSize};

#[test]
fn end_frame_cancels_rows_not_requested_and_nothing_is_decoded_for_them() {
    let server = server(300);
    // Six slots for twenty rows: some loads wait in the queue, some fly.
    let mut config = Config::default();
    config.fetch.max_per_host = 6;
    let mut pipeline = Pipeline::<u32>::new(config).unwrap();
    let url = |row: u32| format!("{}?w=64&h=64", server.image_url(row));
    // Frame 1: twenty rows on screen.
    for row in 0..20 {
        pipeline.request(row, &url(row), TargetSize::square(32), Priority::Visible);
    }
    pipeline.end_frame();
    assert!(
        eventually(|| server.stats().in_flight == 6),
        "six fetches start"
    );
    // Frame 2: only rows 0 and 1 are still visible.
    for row in 0..2 {
        pipeline.request(row, &url(row), TargetSize::square(32), Priority::Visible);
    }
    pipeline.end_frame();
    let done = drain_until(&mut pipeline, |all| all.len() == 2);
    let mut rows: Vec<u32> = done.iter().map(|c| c.row).collect();
    rows.sort_unstable();
    assert_eq!(rows, [0, 1]);
    assert!(eventually(|| server.stats().in_flight == 0));
    // With no load left, nothing more can arrive: check what did.
    assert!(eventually(|| idle(&pipeline)), "{:?}", pipeline.stats());
    assert!(
        pipeline.drain().is_empty(),
        "nothing arrives for cancelled rows"
    );

    let stats = pipeline.stats();
    assert_eq!(stats.cancelled, 18);
    // Which rows had a slot depends on how the actor batched the requests;
    // every one of the 18 was cancelled either in the queue or in flight.
    assert_eq!(
        stats.fetches_cancelled_in_flight + stats.fetches_cancelled_queued,
        18,
        "{stats:?}"
    );
    assert!(stats.fetches_cancelled_in_flight >= 4, "{stats:?}");
    assert_eq!(stats.fetches_started, 2 + stats.fetches_cancelled_in_flight);
    assert_eq!((stats.decodes_started, stats.decodes_completed), (2, 2));
    let served = server.stats();
    // Every request that reached the server but the two was aborted on the
    // wire (a fetch cancelled before its request was sent never got there).
    assert_eq!(served.responses_completed, 2);
    assert_eq!(served.responses_aborted, served.requests_started - 2);
    assert!(served.responses_aborted <= stats.fetches_cancelled_in_flight);
}

#[test]
fn cancel_row_cancels_and_a_bad_url_is_an_error_not_a_request() {
    let server = server(300);
    let mut pipeline = Pipeline::<u32>::new(Config::default()).unwrap();
    pipeline.request(
        0,
        &server.image_url(0),
        TargetSize::square(32),
        Priority::Visible,
    );
    assert!(eventually(|| server.stats().in_flight == 1));
    pipeline.cancel_row(&0);
    assert!(eventually(|| server.stats().responses_aborted == 1));

    pipeline.request(
        1,
        "ftp://example.com/1.jpg",
        TargetSize::square(32),
        Priority::Visible,
    );
    pipeline.request(2, "not a url", TargetSize::square(32), Priority::Visible);
    let done = pipeline.drain();
    assert_eq!(done.len(), 2);
    for completion in done {
        assert!(
            matches!(
                completion.result,
                Err(thumbpipe::Error::UnsupportedUrl { .. })
            ),
            "{:?}",
            completion.result
        );
    }
    assert_eq!(server.stats().requests_started, 1);
}
