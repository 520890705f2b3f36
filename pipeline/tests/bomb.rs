//! A decompression bomb (a 4 KB PNG claiming 60000x60000 pixels) is refused
//! from its header, and a body that claims 1 GiB is not reserved up front:
//! both measured with a global allocator that records the peak of the whole
//! process.

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

/// The tests measure the whole process's peak: one at a time.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn the_bomb_is_refused_before_any_large_allocation() {
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
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

/// Regression: the fetch reserved the server's `Content-Length` up front
/// (up to `max_body_bytes`), so a server claiming 1 GiB made the process
/// allocate 1 GiB before a byte of the body arrived.
#[test]
fn a_claimed_content_length_is_not_reserved_up_front() {
    const LENGTH: u64 = 1024 * 1024 * 1024;
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let liar = std::thread::Builder::new()
        .name("test-liar-server".into())
        .spawn(move || {
            use std::io::{Read, Write};
            let (mut socket, _) = listener.accept().unwrap();
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).unwrap();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {LENGTH}\r\nContent-Type: image/png\r\n\r\n"
            );
            socket.write_all(head.as_bytes()).unwrap();
            socket.write_all(&[0u8; 100]).unwrap();
            // Closing here ends the body 1 GiB early.
        })
        .unwrap();
    let mut config = Config::default();
    config.max_body_bytes = 2 * LENGTH;
    let mut pipeline = Pipeline::<u8>::new(config).unwrap();
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let url = format!("http://127.0.0.1:{port}/liar.png");
    pipeline.request(0, &url, TargetSize::square(32), Priority::Visible);
    let done = drain_until(&mut pipeline, |all| !all.is_empty());
    let grew = ALLOCATOR.peak_usage().saturating_sub(before);
    liar.join().unwrap();
    assert!(
        matches!(done[0].result, Err(Error::Network { .. })),
        "{:?}",
        done[0].result
    );
    assert!(
        grew < ALLOWED,
        "a claimed {LENGTH}-byte body took {grew} bytes at the peak"
    );
}
