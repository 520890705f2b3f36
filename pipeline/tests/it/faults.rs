//! Every way the fixture server can fail a request becomes its typed error
//! within the configured timeouts, with no panic and nothing left in flight.

use std::time::Duration;

use crate::common::{FAULTS, drain_until, eventually, is_error_for_fault, server};
use thumbpipe::{Config, Pipeline, Priority, TargetSize};

#[test]
fn every_fault_kind_yields_its_typed_error() {
    let server = server(0);
    let mut config = Config::default();
    config.fetch.connect_timeout = Duration::from_secs(1);
    config.fetch.total_timeout = Duration::from_secs(2);
    config.fetch.max_body_bytes = 4 * 1024 * 1024;
    let mut pipeline = Pipeline::<&str>::new(config).unwrap();
    for fault in FAULTS {
        let url = format!("{}?fault={fault}", server.image_url(1));
        pipeline.request(fault, &url, TargetSize::square(32), Priority::Visible);
    }
    let done = drain_until(&mut pipeline, |all| all.len() == FAULTS.len());
    assert_eq!(done.len(), FAULTS.len());
    for completion in &done {
        let error = completion.result.as_ref().expect_err(completion.row);
        let fault = completion.row;
        assert!(error.url().contains(fault), "{error}");
        assert!(
            is_error_for_fault(fault, error),
            "fault {fault} gave {error:?}"
        );
    }
    // The gauges are published after the results are sent: wait for them.
    let idle = || {
        let stats = pipeline.stats();
        (stats.in_flight, stats.queued, stats.decoding) == (0, 0, 0)
    };
    assert!(eventually(idle), "{:?}", pipeline.stats());
    assert!(
        eventually(|| server.stats().in_flight == 0),
        "{:?}",
        server.stats()
    );
}

/// With one fetch slot, a `hang` and a `slow` response each hold it until
/// `total_timeout` and not a moment longer: the request queued behind them
/// runs as soon as the first times out.
#[test]
fn hang_and_slow_give_their_slot_back_at_the_timeout() {
    let server = server(0);
    let timeout = Duration::from_millis(700);
    let mut config = Config::default();
    config.fetch.max_per_host = 1;
    config.fetch.total_timeout = timeout;
    let mut pipeline = Pipeline::<&str>::new(config).unwrap();
    let url = |fault: &str| format!("{}?fault={fault}", server.image_url(7));
    pipeline.request(
        "hang",
        &url("hang"),
        TargetSize::square(32),
        Priority::Visible,
    );
    assert!(eventually(|| server.stats().in_flight == 1));
    // Queued behind the hang; the newest runs first.
    pipeline.request(
        "slow",
        &url("slow"),
        TargetSize::square(32),
        Priority::Visible,
    );
    pipeline.request(
        "plain",
        &url("none"),
        TargetSize::square(32),
        Priority::Visible,
    );
    let started = std::time::Instant::now();
    let mut order = Vec::new();
    let done = drain_until(&mut pipeline, |all| {
        for completion in &all[order.len()..] {
            order.push((completion.row, started.elapsed()));
        }
        all.len() == 3
    });
    let rows: Vec<&str> = order.iter().map(|(row, _)| *row).collect();
    assert_eq!(rows, ["hang", "plain", "slow"], "{order:?}");
    for completion in &done {
        match completion.row {
            "plain" => assert!(completion.result.is_ok()),
            fault => assert!(is_error_for_fault(
                fault,
                completion.result.as_ref().unwrap_err()
            )),
        }
    }
    // The plain request waited for the hang's timeout only, and the slow
    // one for its own: two timeouts in all, with room for a busy machine.
    let (_, slow_at) = order[2];
    assert!(
        slow_at < timeout * 2 + Duration::from_millis(1500),
        "{order:?}"
    );
    assert!(
        eventually(|| pipeline.stats().in_flight == 0),
        "{:?}",
        pipeline.stats()
    );
}

/// A 200 MB body is cut at `max_body_bytes`: the client stops reading, so
/// the server gets no further than the cap plus the sockets' buffers.
#[test]
fn huge_is_cut_at_the_body_cap() {
    let server = server(0);
    let cap = 1024 * 1024;
    let mut config = Config::default();
    config.fetch.max_body_bytes = cap;
    let mut pipeline = Pipeline::<u8>::new(config).unwrap();
    let url = format!("{}?fault=huge", server.image_url(3));
    pipeline.request(0, &url, TargetSize::square(32), Priority::Visible);
    let done = drain_until(&mut pipeline, |all| !all.is_empty());
    let error = done[0].result.as_ref().unwrap_err();
    assert!(is_error_for_fault("huge", error), "{error:?}");
    assert!(eventually(|| server.stats().in_flight == 0));
    let sent = server.stats().bytes_sent;
    assert!(sent < cap + 32 * 1024 * 1024, "{sent} bytes sent of 200 MB");
    assert_eq!(server.stats().responses_aborted, 1);
}

/// A redirect loop is followed `max_redirects` times and no more: the
/// server sees the first request and one per redirect.
#[test]
fn a_redirect_loop_stops_at_the_redirect_limit() {
    let server = server(0);
    let mut pipeline = Pipeline::<u8>::new(Config::default()).unwrap();
    let url = format!("{}?fault=redirect-loop", server.image_url(4));
    pipeline.request(0, &url, TargetSize::square(32), Priority::Visible);
    let done = drain_until(&mut pipeline, |all| !all.is_empty());
    let error = done[0].result.as_ref().unwrap_err();
    assert!(is_error_for_fault("redirect-loop", error), "{error:?}");
    assert!(error.to_string().contains("more than 5 times"), "{error}");
    assert!(eventually(|| server.stats().in_flight == 0));
    assert_eq!(server.stats().requests_started, 1 + 5);
}
