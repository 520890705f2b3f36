//! Every way the fixture server can fail a request becomes its typed error
//! within the configured timeouts, with no panic and nothing left in flight.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{drain_until, eventually, server};
use thumbpipe::{Config, Error, Pipeline, Priority, TargetSize};

#[test]
fn every_fault_kind_yields_its_typed_error() {
    let server = server(0);
    let config = Config {
        connect_timeout: Duration::from_secs(1),
        total_timeout: Duration::from_secs(2),
        max_body_bytes: 4 * 1024 * 1024,
        ..Config::default()
    };
    let mut pipeline = Pipeline::<&str>::new(config).unwrap();
    let faults = [
        "404",
        "500",
        "503",
        "reset",
        "truncate",
        "garbage",
        "wrong-type",
        "slow",
        "hang",
        "bomb",
        "huge",
        "redirect-loop",
    ];
    for fault in faults {
        let url = format!("{}?fault={fault}", server.image_url(1));
        pipeline.request(fault, &url, TargetSize::square(32), Priority::Visible);
    }
    let done = drain_until(&mut pipeline, |all| all.len() == faults.len());
    assert_eq!(done.len(), faults.len());
    for completion in &done {
        let error = completion.result.as_ref().expect_err(completion.row);
        let fault = completion.row;
        assert!(error.url().contains(fault), "{error}");
        let expected = match (fault, error) {
            ("404", Error::Status { status: 404, .. })
            | ("500", Error::Status { status: 500, .. })
            | ("503", Error::Status { status: 503, .. })
            | ("reset" | "truncate", Error::Network { .. })
            | ("garbage" | "wrong-type", Error::Decode { .. })
            | (
                "slow" | "hang",
                Error::Timeout {
                    setting: "total_timeout",
                    ..
                },
            ) => true,
            ("bomb", Error::TooLarge { setting, .. }) => *setting == "max_dimension",
            ("huge", Error::TooLarge { setting, .. }) => *setting == "max_body_bytes",
            ("redirect-loop", Error::Network { reason, .. }) => reason.contains("redirected"),
            _ => false,
        };
        assert!(expected, "fault {fault} gave {error:?}");
    }
    let stats = pipeline.stats();
    assert_eq!((stats.in_flight, stats.queued, stats.decoding), (0, 0, 0));
    assert!(
        eventually(|| server.stats().in_flight == 0),
        "{:?}",
        server.stats()
    );
}
