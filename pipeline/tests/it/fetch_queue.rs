//! The fetch queue serves visible rows before prefetched ones and, within a
//! priority, the newest request first; fetches in flight stay under the
//! global limit however many hosts there are.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{drain_until, eventually, server};
use bytes::Bytes;
use futures::future::BoxFuture;
use thumbpipe::{Config, Error, Fetch, HttpFetcher, Pipeline, Priority, TargetSize};

/// An HTTP fetcher that records the order fetches start in.
struct Recording {
    inner: HttpFetcher,
    started: Arc<Mutex<Vec<String>>>,
}

impl Fetch for Recording {
    fn fetch(&self, url: url::Url, max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        self.started.lock().unwrap().push(url.path().to_owned());
        self.inner.fetch(url, max_bytes)
    }
}

/// A pipeline with one fetch slot whose fetcher records the start order.
fn one_slot_pipeline() -> (
    Pipeline<u32>,
    Arc<Mutex<Vec<String>>>,
    tokio::runtime::Runtime,
) {
    let mut config = Config::default();
    config.fetch.max_per_host = 1;
    let started = Arc::new(Mutex::new(Vec::new()));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fetcher = Recording {
        inner: runtime
            .block_on(async { HttpFetcher::new(&config.fetch) })
            .unwrap(),
        started: Arc::clone(&started),
    };
    let pipeline = Pipeline::<u32>::builder()
        .config(config)
        .runtime(runtime.handle().clone())
        .fetcher(fetcher)
        .build()
        .unwrap();
    (pipeline, started, runtime)
}

#[test]
fn visible_first_then_newest_first() {
    let server = server(100);
    let (mut pipeline, started, _runtime) = one_slot_pipeline();
    let size = TargetSize::square(16);
    pipeline.request(0, &server.image_url(0), size, Priority::Visible);
    assert!(
        eventually(|| started.lock().unwrap().len() == 1),
        "the first fetch holds the slot"
    );
    pipeline.request(1, &server.image_url(1), size, Priority::Prefetch);
    pipeline.request(2, &server.image_url(2), size, Priority::Visible);
    pipeline.request(3, &server.image_url(3), size, Priority::Prefetch);
    pipeline.request(4, &server.image_url(4), size, Priority::Visible);
    // Row 1 becomes visible: it keeps its age, so it goes after row 2.
    pipeline.request(1, &server.image_url(1), size, Priority::Visible);
    drain_until(&mut pipeline, |all| all.len() == 5);
    assert_eq!(
        *started.lock().unwrap(),
        [
            "/img/0.jpg",
            "/img/4.jpg",
            "/img/2.jpg",
            "/img/1.jpg",
            "/img/3.jpg"
        ]
    );
}

#[test]
fn a_shared_load_takes_the_highest_priority_of_its_subscribers() {
    let server = server(100);
    let (mut pipeline, started, _runtime) = one_slot_pipeline();
    let size = TargetSize::square(16);
    pipeline.request(0, &server.image_url(0), size, Priority::Visible);
    assert!(eventually(|| started.lock().unwrap().len() == 1));
    // Two prefetches: newest first would serve image 2 before image 1...
    pipeline.request(1, &server.image_url(1), size, Priority::Prefetch);
    pipeline.request(2, &server.image_url(2), size, Priority::Prefetch);
    // ...but a visible row joins image 1's load, which makes it visible.
    pipeline.request(10, &server.image_url(1), size, Priority::Visible);
    drain_until(&mut pipeline, |all| all.len() == 4);
    assert_eq!(
        *started.lock().unwrap(),
        ["/img/0.jpg", "/img/1.jpg", "/img/2.jpg"]
    );
    assert_eq!(pipeline.stats().coalesced, 1);
}

/// Counts the fetches running at once, and the most there ever were.
#[derive(Default)]
struct Running {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// Takes one off `Running::now` when the fetch ends or is dropped.
struct Leaving(Arc<Running>);

impl Drop for Leaving {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Regression: 6 (now 16) fetches per host had no bound across hosts, so a
/// list of 1,000 hosts' images could open 16,000 sockets.
#[test]
fn fetches_in_flight_stay_under_the_global_limit_across_many_hosts() {
    let running = Arc::new(Running::default());
    let seen = Arc::clone(&running);
    let body = {
        let mut out = std::io::Cursor::new(Vec::new());
        image::RgbaImage::new(8, 8)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        Bytes::from(out.into_inner())
    };
    let mut pipeline = Pipeline::<u32>::builder()
        .fetcher(thumbpipe::fetch_fn(move |_, _| {
            let (running, body) = (Arc::clone(&seen), body.clone());
            async move {
                let now = running.now.fetch_add(1, Ordering::SeqCst) + 1;
                running.most.fetch_max(now, Ordering::SeqCst);
                let _leaving = Leaving(running);
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok(body)
            }
        }))
        .build()
        .unwrap();
    let limit = Config::default().fetch.max_in_flight;
    for row in 0..300 {
        let url = format!("http://host-{row}.test/a.png");
        pipeline.request(row, &url, TargetSize::square(8), Priority::Visible);
    }
    let done = drain_until(&mut pipeline, |all| all.len() == 300);
    assert_eq!(done.len(), 300);
    assert!(done.iter().all(|c| c.result.is_ok()));
    // The limit held, and it was what held the fetches back.
    assert_eq!(running.most.load(Ordering::SeqCst), limit);
}

/// A decoder held until `release`, then a 1x1 thumbnail.
struct HeldUntil(std::time::Instant);

impl thumbpipe::Decode for HeldUntil {
    fn decode(
        &self,
        url: &Arc<str>,
        _: &thumbpipe::Body,
        _: TargetSize,
    ) -> Result<thumbpipe::Thumbnail, Error> {
        std::thread::sleep(self.0.saturating_duration_since(std::time::Instant::now()));
        Ok(thumbpipe::Thumbnail {
            url: Arc::clone(url),
            width: 1,
            height: 1,
            pixels: Arc::from([0u8, 0, 0, 255]),
            source_size: (1, 1),
            animation: None,
        })
    }
}

/// Regression: a fetch waiting for the body budget (its bytes unread while
/// the decoders catch up) counted that wait against `total_timeout`, so
/// with slow decodes the later loads failed as timeouts though the server
/// had answered at once.
#[test]
fn waiting_for_the_body_budget_is_not_a_timeout() {
    let server = server(0);
    let mut config = Config::default();
    config.decode.threads = 1;
    // One body at a time between the network and the decoder.
    config.fetch.body_budget_bytes = 1;
    config.fetch.total_timeout = Duration::from_millis(300);
    // The decoder holds the first body for a second: the other fetches
    // wait for the budget three times their timeout.
    let release = std::time::Instant::now() + Duration::from_secs(1);
    let mut pipeline = Pipeline::<u32>::builder()
        .config(config)
        .decoder(HeldUntil(release))
        .build()
        .unwrap();
    // Requested together, so that every fetch starts before the first
    // body arrives and fills the budget.
    for row in 0..3 {
        pipeline.request(
            row,
            &server.image_url(row),
            TargetSize::square(8),
            Priority::Visible,
        );
    }
    let done = drain_until(&mut pipeline, |all| all.len() == 3);
    assert_eq!(done.len(), 3);
    for completion in &done {
        assert!(completion.result.is_ok(), "{:?}", completion.result);
    }
    assert_eq!(pipeline.stats().fetches_started, 3);
}
