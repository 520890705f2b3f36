//! A decompression bomb (a 4 KB PNG claiming 60000x60000 pixels) is refused
//! from its header, before any large allocation: measured with a global
//! allocator that records the peak of the whole process.

#![allow(clippy::unwrap_used)]

mod common;

use common::{drain_until, server};
use peak_alloc::PeakAlloc;
use thumbpipe::{Config, Error, Pipeline, Priority, TargetSize};

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// What the bomb's pixels would take decoded: 60000 x 60000 x RGBA.
const CLAIMED: usize = 60_000 * 60_000 * 4;
/// The most the process may grow while refusing it.
const ALLOWED: usize = 16 * 1024 * 1024;

#[test]
fn the_bomb_is_refused_before_any_large_allocation() {
    let server = server(0);
    // The default limits refuse it by its dimensions; with the dimension
    // limit raised, by the bytes its pixels would need.
    let configs = [
        (Config::default(), "max_dimension"),
        (
            {
                let mut config = Config::default();
                config.max_dimension = 100_000;
                config
            },
            "max_decode_alloc",
        ),
    ];
    for (config, setting) in configs {
        let mut pipeline = Pipeline::<u8>::new(config).unwrap();
        // Warm up: connections, decoder tables, the server's caches.
        pipeline.request(
            0,
            &server.image_url(1),
            TargetSize::square(32),
            Priority::Visible,
        );
        let warm = drain_until(&mut pipeline, |all| !all.is_empty());
        assert!(warm[0].result.is_ok());

        let before = ALLOCATOR.current_usage();
        ALLOCATOR.reset_peak_usage();
        let url = format!("{}?fault=bomb", server.image_url(2));
        pipeline.request(1, &url, TargetSize::square(32), Priority::Visible);
        let done = drain_until(&mut pipeline, |all| !all.is_empty());
        let grew = ALLOCATOR.peak_usage().saturating_sub(before);

        match &done[0].result {
            Err(Error::TooLarge { setting: got, .. }) => assert_eq!(*got, setting),
            other => panic!("the bomb gave {other:?}"),
        }
        assert!(
            grew < ALLOWED,
            "refusing the bomb took {grew} bytes at the peak (it claims {CLAIMED})"
        );
        eprintln!("{setting}: peak growth {grew} bytes while refusing a {CLAIMED}-byte bomb");
    }
}
