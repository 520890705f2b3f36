//! The fetch and decode stages can be replaced: a custom decoder's
//! thumbnails are delivered, and a decoder that panics costs one typed
//! error, not a decode thread.

use std::sync::Arc;

use crate::common::drain_until;
use bytes::Bytes;
use futures::future::BoxFuture;
use thumbpipe::{Decode, Error, Fetch, Pipeline, Priority, TargetSize, Thumbnail};

/// Serves the URL's last path segment as the body.
struct Echo;

impl Fetch for Echo {
    fn fetch(&self, url: url::Url, _max: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        let name = url.path().trim_start_matches('/').to_owned();
        Box::pin(async move { Ok(Bytes::from(name)) })
    }
}

/// A 1x1 thumbnail whose red channel is the body's length; panics on
/// "boom".
struct Measure;

impl Decode for Measure {
    fn decode(
        &self,
        url: &Arc<str>,
        bytes: &thumbpipe::Body,
        _: TargetSize,
    ) -> Result<Thumbnail, Error> {
        assert_ne!(&bytes[..], b"boom", "the decoder blew up");
        Ok(Thumbnail {
            url: Arc::clone(url),
            width: 1,
            height: 1,
            pixels: Arc::from([bytes.len() as u8, 0, 0, 255]),
            source_size: (1, 1),
            animation: None,
        })
    }
}

#[test]
fn a_custom_decoder_is_used_and_its_panics_become_decode_errors() {
    let mut pipeline = Pipeline::<&str>::builder()
        .fetcher(Echo)
        .decoder(Measure)
        .config({
            let mut config = thumbpipe::Config::default();
            config.decode.threads = 1;
            config
        })
        .build()
        .unwrap();
    // One decode thread: if the panic killed it, the later rows would never
    // complete.
    for (row, url) in [
        ("a", "http://m/abc"),
        ("boom", "http://m/boom"),
        ("b", "http://m/abcdefg"),
    ] {
        pipeline.request(row, url, TargetSize::square(8), Priority::Visible);
    }
    let mut done = drain_until(&mut pipeline, |all| all.len() == 3);
    done.sort_by_key(|c| c.row);
    let rows: Vec<&str> = done.iter().map(|c| c.row).collect();
    assert_eq!(rows, ["a", "b", "boom"]);
    assert_eq!(done[0].result.as_ref().unwrap().pixels[0], 3);
    assert_eq!(done[1].result.as_ref().unwrap().pixels[0], 7);
    match &done[2].result {
        Err(Error::Decode { reason, .. }) => assert!(reason.contains("panicked"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// A decoder that takes as long as the test says: it reports that it has
/// started, then waits for the word to finish.
struct Endless {
    started: std::sync::mpsc::SyncSender<()>,
    finish: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl Decode for Endless {
    fn decode(
        &self,
        url: &Arc<str>,
        _: &thumbpipe::Body,
        _: TargetSize,
    ) -> Result<Thumbnail, Error> {
        let _ = self.started.try_send(());
        let _ = self.finish.lock().unwrap().recv();
        Err(Error::Decode {
            url: url.to_string(),
            reason: "finished".into(),
        })
    }
}

/// Regression: dropping the pipeline joined every decode thread, so a
/// decode that ran for minutes (a hostile file) held up closing the app
/// for minutes.
#[test]
fn drop_during_a_decode_that_never_ends_returns_at_once() {
    let (started, decoding) = std::sync::mpsc::sync_channel(1);
    let (finish, finished) = std::sync::mpsc::channel();
    let mut pipeline = Pipeline::<u8>::builder()
        .fetcher(Echo)
        .decoder(Endless {
            started,
            finish: std::sync::Mutex::new(finished),
        })
        .build()
        .unwrap();
    pipeline.request(0, "http://m/slow", TargetSize::square(8), Priority::Visible);
    decoding
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    let dropping = std::time::Instant::now();
    drop(pipeline);
    let took = dropping.elapsed();
    // The thread left behind finishes its decode when told, and exits.
    finish.send(()).unwrap();
    assert!(
        took < std::time::Duration::from_secs(1),
        "drop took {took:?}"
    );
}

/// Regression: dropped on a current-thread runtime (`#[tokio::main]` with
/// that flavour, or a default `#[tokio::test]`), the pipeline waited a
/// whole second for tasks that only this thread could run.
#[tokio::test]
async fn drop_on_a_current_thread_runtime_does_not_wait_for_its_tasks() {
    let mut pipeline = Pipeline::<u8>::builder()
        .runtime(tokio::runtime::Handle::current())
        .fetcher(thumbpipe::fetch_fn(|_, _| std::future::pending()))
        .build()
        .unwrap();
    pipeline.request(
        0,
        "http://m/never",
        TargetSize::square(8),
        Priority::Visible,
    );
    tokio::task::yield_now().await;
    let dropping = std::time::Instant::now();
    drop(pipeline);
    let took = dropping.elapsed();
    assert!(
        took < std::time::Duration::from_millis(500),
        "drop took {took:?}"
    );
}
