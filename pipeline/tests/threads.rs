//! A thousand requests waiting on the network cost no threads: the process
//! never grows past the pipeline's fixed threads, and no thread is ever
//! parked in blocking network I/O.

#![allow(clippy::unwrap_used)]

mod common;

use common::{drain_until, require_census, server};
use fixture_server::ThreadCensus;
use thumbpipe::{Config, Pipeline, Priority, TargetSize};

#[cfg_attr(
    not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )),
    ignore = "counts threads: needs Linux's /proc/self/task on x86_64 or aarch64"
)]
#[test]
fn a_thousand_concurrent_requests_use_only_the_fixed_threads() {
    require_census();
    // The server's threads are named fixture-* and left out of the count.
    let server = server(200);
    let outside_server = |census: &ThreadCensus| census.total - census.with_prefix("fixture-");
    let baseline = outside_server(&ThreadCensus::take().unwrap());
    let mut config = Config::default();
    config.fetch.max_per_host = 1000;
    config.fetch.max_in_flight = 1000;
    config.decode.threads = 2;
    config.io_threads = 2;
    // 2 I/O workers, at most 1 blocking thread (name lookups), 2 decoders.
    let fixed = 2 + 1 + 2;
    let mut pipeline = Pipeline::<u32>::new(config).unwrap();
    for row in 0..1000 {
        let url = format!("{}/img/{row}.jpg?w=48&h=48", server.base_url());
        pipeline.request(row, &url, TargetSize::square(32), Priority::Visible);
    }
    let mut peak = 0;
    let mut parked = Vec::new();
    let mut in_flight_peak = 0;
    let done = drain_until(&mut pipeline, |all| {
        let census = ThreadCensus::take().unwrap();
        peak = peak.max(outside_server(&census));
        parked.extend(census.blocked_names);
        in_flight_peak = in_flight_peak.max(server.stats().in_flight);
        all.len() == 1000
    });
    assert_eq!(done.len(), 1000);
    assert!(done.iter().all(|c| c.result.is_ok()));
    assert!(
        in_flight_peak > 500,
        "the requests did wait together: {in_flight_peak}"
    );
    assert!(
        peak <= baseline + fixed,
        "peak {peak} threads, baseline {baseline} + {fixed}"
    );
    assert!(
        parked.is_empty(),
        "threads parked in blocking network I/O: {parked:?}"
    );
}

/// A decode runs on the thread that calls it: decoding photos (libjpeg at
/// every DCT scale, fast_image_resize, the PNG, WebP, BMP and TIFF
/// decoders) starts no thread. A watcher takes a census every millisecond
/// while this thread decodes; the process never has more threads than
/// before plus the watcher.
#[cfg_attr(
    not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )),
    ignore = "counts threads: needs Linux's /proc/self/task on x86_64 or aarch64"
)]
#[test]
fn a_decode_starts_no_threads() {
    use std::sync::atomic::{AtomicBool, Ordering};
    require_census();
    let corpus = fixture_server::photo::corpus().unwrap();
    let baseline = ThreadCensus::take().unwrap().total;
    let done = AtomicBool::new(false);
    let peak = std::thread::scope(|scope| {
        let watcher = std::thread::Builder::new()
            .name("census-watcher".into())
            .spawn_scoped(scope, || {
                let mut peak = 0;
                let mut censuses = 0;
                while !done.load(Ordering::Relaxed) {
                    peak = peak.max(ThreadCensus::take().unwrap().total);
                    censuses += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                (peak, censuses)
            })
            .unwrap();
        for image in corpus.iter().filter(|image| image.width >= 1920) {
            // libjpeg at each DCT scale; the other decoders once (a whole
            // 12 MP decode each, seconds in a test build).
            let sides: &[u32] = if image.jpeg.is_some() {
                &[64, 128, 256]
            } else {
                &[128]
            };
            for &side in sides {
                let thumbnail = thumbpipe::thumbnail_from_bytes(
                    &image.name,
                    &image.bytes,
                    TargetSize::square(side),
                    &Config::default().decode,
                )
                .unwrap();
                assert_eq!(thumbnail.width.max(thumbnail.height), side);
            }
        }
        done.store(true, Ordering::Relaxed);
        watcher.join().unwrap()
    });
    let (peak, censuses) = peak;
    assert!(censuses > 20, "the watcher looked {censuses} times");
    assert_eq!(
        peak,
        baseline + 1,
        "threads during the decodes: {peak}, before: {baseline} (+1 watcher)"
    );
}
