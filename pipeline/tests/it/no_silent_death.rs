//! Nothing a caller passes in or does around the pipeline makes it die in
//! silence: a time to live of `Duration::MAX`, a custom fetcher that panics,
//! and a runtime shut down under the pipeline each end in a thumbnail or a
//! typed error, and later requests still complete.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use thumbpipe::{Config, Error, Pipeline, Priority, TargetSize};

use crate::common::{drain_until, eventually};

const SIZE: TargetSize = TargetSize::square(16);

fn png() -> Bytes {
    let mut out = std::io::Cursor::new(Vec::new());
    image::RgbaImage::new(32, 32)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    Bytes::from(out.into_inner())
}

/// Regression: `now + ttl` panicked for `Duration::MAX`, killing the load
/// actor, after which no request ever completed again.
#[test]
fn a_ttl_of_duration_max_is_cached_not_a_panic() {
    let body = png();
    let mut config = Config::default();
    config.cache.ttl = Duration::MAX;
    let mut pipeline = Pipeline::<u32>::builder()
        .config(config)
        .fetcher(thumbpipe::fetch_fn(move |_, _| {
            std::future::ready(Ok(body.clone()))
        }))
        .build()
        .unwrap();
    let url = "http://h/a.png";
    pipeline.request_with_ttl(0, url, SIZE, Priority::Visible, Duration::MAX);
    let done = drain_until(&mut pipeline, |done| !done.is_empty());
    assert!(done[0].result.is_ok(), "{:?}", done[0].result);
    // A second row is answered from the cache: the entry lives.
    pipeline.request(1, url, SIZE, Priority::Visible);
    let done = drain_until(&mut pipeline, |done| !done.is_empty());
    assert!(done[0].result.is_ok(), "{:?}", done[0].result);
    assert_eq!(pipeline.stats().cache_hits, 1);
    assert!(pipeline.cached(url, SIZE).is_some());
}

/// Regression: a fetcher that panicked never reported back, so its rows
/// waited forever and its host's slot was lost.
#[test]
fn a_panicking_fetcher_is_a_typed_error_and_gives_its_slot_back() {
    let body = png();
    let mut config = Config::default();
    // One slot: the last request loads only if both panics gave it back.
    config.fetch.max_per_host = 1;
    let mut pipeline = Pipeline::<u32>::builder()
        .config(config)
        .fetcher(thumbpipe::fetch_fn(move |url, _| {
            let body = body.clone();
            assert!(
                !url.path().contains("panic-now"),
                "the fetcher blew up at once"
            );
            async move {
                assert!(!url.path().contains("panic-later"), "the fetch blew up");
                Ok(body)
            }
        }))
        .build()
        .unwrap();
    let urls = [
        "http://h/panic-now.png",
        "http://h/panic-later.png",
        "http://h/fine.png",
    ];
    for (row, url) in (0..).zip(urls) {
        pipeline.request(row, url, SIZE, Priority::Visible);
    }
    let mut done = drain_until(&mut pipeline, |done| done.len() == 3);
    done.sort_by_key(|completion| completion.row);
    for completion in &done[..2] {
        assert!(
            matches!(&completion.result, Err(Error::FetcherPanicked { reason, .. }) if reason.contains("blew up")),
            "{:?}",
            completion.result
        );
    }
    assert!(done[2].result.is_ok(), "{:?}", done[2].result);
    // The gauge is published at the end of the actor's turn, which may come
    // just after the completions are seen.
    assert!(
        eventually(|| pipeline.stats().in_flight == 0),
        "{:?}",
        pipeline.stats()
    );
}

/// Regression: with a runtime of the caller's that was shut down under the
/// pipeline, pending requests waited forever and new ones were never
/// answered. Now the UI is woken, and both end with `Error::Shutdown`.
#[test]
fn requests_end_with_an_error_when_the_runtime_is_shut_down_under_the_pipeline() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut pipeline = Pipeline::<u32>::builder()
        .runtime(runtime.handle().clone())
        // Never answers: the request stays pending until the runtime goes.
        .fetcher(thumbpipe::fetch_fn(|_, _| std::future::pending()))
        .build()
        .unwrap();
    let wakes = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&wakes);
    pipeline.set_waker(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    pipeline.request(0, "http://h/pending.png", SIZE, Priority::Visible);
    assert!(eventually(|| pipeline.stats().in_flight == 1));
    assert!(pipeline.drain().is_empty());
    drop(runtime);
    assert!(eventually(|| wakes.load(Ordering::SeqCst) > 0));
    let done = pipeline.drain();
    assert_eq!(done.len(), 1);
    assert!(
        matches!(done[0].result, Err(Error::Shutdown { .. })),
        "{:?}",
        done[0].result
    );
    pipeline.request(1, "http://h/later.png", SIZE, Priority::Visible);
    let done = pipeline.drain();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].row, 1);
    assert!(
        matches!(done[0].result, Err(Error::Shutdown { .. })),
        "{:?}",
        done[0].result
    );
    assert_eq!(pipeline.pending_rows(), 0);
}
