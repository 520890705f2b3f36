//! The disk cache is a layer in front of any fetcher: an app's own fetcher
//! gets responses kept, served fresh without it, and revalidated through
//! it with the stored copy's validators; a fetcher of bodies alone (no
//! headers) gets nothing kept.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use thumbpipe::{
    Config, Error, Fetch, FetchRequest, FetchResponse, HttpFetcher, Pipeline, Priority, TargetSize,
};

use crate::common::{Scratch, drain_until, eventually, idle};
use crate::disk::{load, server, url, written};

/// An app's fetcher: HTTP underneath, recording the headers of every
/// request it is given.
#[derive(Clone)]
struct Recording {
    inner: Arc<HttpFetcher>,
    requests: Arc<Mutex<Vec<http::HeaderMap>>>,
}

impl Fetch for Recording {
    fn fetch(&self, url: url::Url, max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        self.inner.fetch(url, max_bytes)
    }

    fn fetch_response(
        &self,
        request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        self.requests.lock().unwrap().push(request.headers.clone());
        self.inner.fetch_response(request)
    }
}

/// A pipeline keeping a disk cache in `dir` over a [`Recording`] fetcher;
/// the runtime is the pipeline's, lent to build the inner client.
fn over_recording(
    dir: &std::path::Path,
    thumbnails: bool,
) -> (Pipeline<usize>, Recording, tokio::runtime::Runtime) {
    let mut config = Config::default();
    config.disk.dir = Some(dir.to_path_buf());
    config.disk.max_bytes = 1 << 20;
    config.disk.thumbnails = thumbnails;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fetcher = Recording {
        inner: Arc::new(
            runtime
                .block_on(async { HttpFetcher::new(&config.fetch) })
                .unwrap(),
        ),
        requests: Arc::default(),
    };
    let pipeline = Pipeline::builder()
        .config(config)
        .runtime(runtime.handle().clone())
        .fetcher(fetcher.clone())
        .build()
        .unwrap();
    (pipeline, fetcher, runtime)
}

#[test]
fn an_apps_fetcher_gets_fresh_responses_served_from_disk() {
    let scratch = Scratch::new("layer-fresh");
    let server = server(Some(Duration::from_secs(600)));
    let urls: Vec<String> = (0..4).map(|id| url(&server, id)).collect();
    {
        let (mut first, fetcher, _runtime) = over_recording(&scratch.0, false);
        assert_eq!(load(&mut first, &urls), (0..4).map(Ok).collect::<Vec<_>>());
        written(&first, 4);
        assert_eq!(fetcher.requests.lock().unwrap().len(), 4);
    }
    let (mut second, fetcher, _runtime) = over_recording(&scratch.0, false);
    assert_eq!(load(&mut second, &urls), (0..4).map(Ok).collect::<Vec<_>>());
    assert!(
        fetcher.requests.lock().unwrap().is_empty(),
        "the fetcher was asked: every response was fresh on disk"
    );
    let disk = second.stats().disk;
    assert_eq!((disk.hits, disk.misses), (4, 0));
}

#[test]
fn an_apps_fetcher_gets_stored_thumbnails_and_revalidations() {
    let scratch = Scratch::new("layer-stale");
    // Stale at once, with an ETag: each reuse asks the server first.
    let server = server(Some(Duration::ZERO));
    let urls: Vec<String> = (20..23).map(|id| url(&server, id)).collect();
    {
        let (mut first, _fetcher, _runtime) = over_recording(&scratch.0, true);
        assert_eq!(
            load(&mut first, &urls),
            (20..23).map(Ok).collect::<Vec<_>>()
        );
        // Three responses and three thumbnails.
        written(&first, 6);
    }
    server.reset_stats();
    let (mut second, fetcher, _runtime) = over_recording(&scratch.0, true);
    assert_eq!(
        load(&mut second, &urls),
        (20..23).map(Ok).collect::<Vec<_>>()
    );
    let asked = fetcher.requests.lock().unwrap().clone();
    assert_eq!(asked.len(), 3);
    assert!(
        asked
            .iter()
            .all(|headers| headers.contains_key(http::header::IF_NONE_MATCH)),
        "{asked:?}"
    );
    assert_eq!(server.stats().not_modified, 3);
    assert_eq!(server.stats().image_bodies, 0);
    assert_eq!(second.stats().disk.revalidated, 3);
}

#[test]
fn a_fetcher_of_bodies_alone_gets_nothing_kept() {
    let scratch = Scratch::new("layer-bodies");
    let png = fixture_server::picture::render(5, 40, 40)
        .encode_png()
        .unwrap();
    let png = Bytes::from(png);
    let mut config = Config::default();
    config.disk.dir = Some(scratch.0.clone());
    let mut pipeline = Pipeline::<usize>::builder()
        .config(config)
        .fetcher(thumbpipe::fetch_fn(move |_url, _max_bytes| {
            let png = png.clone();
            async move { Ok(png) }
        }))
        .build()
        .unwrap();
    for row in 0..3 {
        let url = format!("http://bodies.test/{row}.png");
        pipeline.request(row, &url, TargetSize::square(16), Priority::Visible);
    }
    let done = drain_until(&mut pipeline, |all| all.len() == 3);
    assert!(done.iter().all(|c| c.result.is_ok()), "{done:?}");
    assert!(eventually(|| idle(&pipeline)));
    // Asked of the disk, and fetched; with no headers, nothing is worth
    // keeping.
    let disk = pipeline.stats().disk;
    assert_eq!(
        (disk.misses, disk.written, disk.entries),
        (3, 0, 0),
        "{disk:?}"
    );
}

/// Serves one PNG with `Cache-Control: max-age=1`, its headers received
/// `age` ago.
struct AgedBy(Bytes, Duration);

impl Fetch for AgedBy {
    fn fetch(&self, _url: url::Url, _max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        let body = self.0.clone();
        Box::pin(async move { Ok(body) })
    }

    fn fetch_response(
        &self,
        request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::CACHE_CONTROL, "max-age=1".parse().unwrap());
        let response = FetchResponse::new(request.url, self.0.clone())
            .with_headers(http::StatusCode::OK, headers)
            .received_at(std::time::SystemTime::now() - self.1);
        Box::pin(async move { Ok(response) })
    }
}

/// Regression: the disk layer aged a response from when its body had been
/// read, not from when its headers arrived, so a response whose body took
/// longer to read than its max-age was kept as fresh.
#[test]
fn a_response_ages_from_when_its_headers_arrived() {
    let png = fixture_server::picture::render(9, 40, 40)
        .encode_png()
        .unwrap();
    let mut written = Vec::new();
    for (name, age) in [
        ("layer-age-new", Duration::ZERO),
        ("layer-age-old", Duration::from_secs(2)),
    ] {
        let scratch = Scratch::new(name);
        let mut config = Config::default();
        config.disk.dir = Some(scratch.0.clone());
        let mut pipeline = Pipeline::<usize>::builder()
            .config(config)
            .fetcher(AgedBy(Bytes::from(png.clone()), age))
            .build()
            .unwrap();
        pipeline.request(
            0,
            "http://aged.test/9.png",
            TargetSize::square(16),
            Priority::Visible,
        );
        let done = drain_until(&mut pipeline, |all| !all.is_empty());
        assert!(done[0].result.is_ok(), "{done:?}");
        assert!(eventually(|| idle(&pipeline)));
        if age.is_zero() {
            assert!(eventually(|| pipeline.stats().disk.written >= 1));
        } else {
            // A write, were there one, lands within milliseconds (as the
            // fresh response's does).
            std::thread::sleep(Duration::from_millis(500));
        }
        written.push(pipeline.stats().disk.written);
    }
    // Fresh for a second from its headers: kept when they have just
    // arrived; stale on arrival, with nothing to revalidate, when they
    // arrived two seconds before.
    assert_eq!(written[1], 0, "{written:?}");
    assert!(written[0] >= 1, "{written:?}");
}
