//! The decode queue through the whole pipeline: large images never hold the
//! last free decode thread, so small ones complete while large decodes run,
//! and a row's new priority follows its load into the decode queue.

use std::sync::{Arc, Condvar, Mutex};

use crate::common::{drain_until, eventually};
use bytes::Bytes;
use futures::future::BoxFuture;
use thumbpipe::{Config, Decode, Error, Fetch, Pipeline, Priority, TargetSize, Thumbnail};

/// The first bytes of a PNG declaring `width` x `height`: all the decode
/// pool reads to tell a large image from a small one.
fn png_header(width: u32, height: u32) -> Bytes {
    let mut header = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    Bytes::from(header)
}

/// `/large/...` is a 3000x3000 image (9 MP), everything else 10x10.
struct Headers;

impl Fetch for Headers {
    fn fetch(&self, url: url::Url, _max: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        let body = if url.path().starts_with("/large/") {
            png_header(3000, 3000)
        } else {
            png_header(10, 10)
        };
        Box::pin(async move { Ok(body) })
    }
}

/// Records the order of decodes, and holds every URL containing "hold"
/// until the gate opens.
#[derive(Default)]
struct Gate {
    started: Mutex<Vec<String>>,
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    fn started(&self) -> Vec<String> {
        self.started.lock().unwrap().clone()
    }
}

struct Gated(Arc<Gate>);

impl Decode for Gated {
    fn decode(
        &self,
        url: &Arc<str>,
        _: &thumbpipe::Body,
        _: TargetSize,
    ) -> Result<Thumbnail, Error> {
        let gate = &self.0;
        gate.started.lock().unwrap().push(url.to_string());
        if url.contains("hold") {
            let mut open = gate.open.lock().unwrap();
            while !*open {
                open = gate.opened.wait(open).unwrap();
            }
        }
        Ok(Thumbnail {
            url: Arc::clone(url),
            width: 1,
            height: 1,
            pixels: Arc::from([0u8; 4]),
            source_size: (1, 1),
            animation: None,
        })
    }
}

fn pipeline(gate: &Arc<Gate>, config: Config) -> Pipeline<String> {
    Pipeline::builder()
        .fetcher(Headers)
        .decoder(Gated(Arc::clone(gate)))
        .config(config)
        .build()
        .unwrap()
}

const SIZE: TargetSize = TargetSize::square(8);

#[test]
fn small_images_complete_while_large_ones_hold_the_other_threads() {
    let gate = Arc::new(Gate::default());
    let mut pipeline = pipeline(&gate, {
        let mut config = Config::default();
        config.decode.threads = 2;
        config
    });
    for n in 0..4 {
        let url = format!("http://m/large/hold-{n}.png");
        pipeline.request(format!("large-{n}"), &url, SIZE, Priority::Visible);
    }
    assert!(eventually(|| !gate.started().is_empty()));
    for n in 0..3 {
        let url = format!("http://m/small/{n}.png");
        pipeline.request(format!("small-{n}"), &url, SIZE, Priority::Visible);
    }
    let done = drain_until(&mut pipeline, |done| done.len() >= 3);
    let mut rows: Vec<_> = done.iter().map(|c| c.row.as_str()).collect();
    rows.sort_unstable();
    assert_eq!(rows, ["small-0", "small-1", "small-2"]);
    assert!(done.iter().all(|c| c.result.is_ok()));
    // Of two decode threads, large images held one; the other served the
    // small ones.
    let large_started = gate
        .started()
        .iter()
        .filter(|u| u.contains("large"))
        .count();
    assert_eq!(large_started, 1, "{:?}", gate.started());
    // Published after the results are sent: wait for it.
    assert!(
        eventually(|| pipeline.stats().decoding == 4),
        "{:?}",
        pipeline.stats()
    );

    gate.open();
    let done = drain_until(&mut pipeline, |done| done.len() >= 4);
    assert_eq!(done.len(), 4);
    assert!(
        done.iter()
            .all(|c| c.row.starts_with("large") && c.result.is_ok())
    );
    let stats = pipeline.stats();
    assert_eq!((stats.delivered, stats.failed), (7, 0));
}

#[test]
fn a_raised_priority_follows_the_load_into_the_decode_queue() {
    let gate = Arc::new(Gate::default());
    let mut pipeline = pipeline(&gate, {
        let mut config = Config::default();
        config.decode.threads = 1;
        config
    });
    pipeline.request("held".into(), "http://m/hold.png", SIZE, Priority::Visible);
    assert!(eventually(|| gate.started().len() == 1));
    // One at a time, so that they reach the decode queue in this order: a
    // is the oldest there, served last unless its priority changes.
    for (waiting, name) in ["a", "b", "c"].into_iter().enumerate() {
        let url = format!("http://m/{name}.png");
        pipeline.request(name.into(), &url, SIZE, Priority::Prefetch);
        assert!(eventually(
            || pipeline.stats().decoding == waiting as u64 + 2
        ));
    }
    pipeline.request("a".into(), "http://m/a.png", SIZE, Priority::Visible);
    // The actor handles commands in order: once a later request has been
    // seen, the priority change has too.
    pipeline.request("d".into(), "http://m/d.png", SIZE, Priority::Prefetch);
    assert!(eventually(|| pipeline.stats().decoding == 5));
    gate.open();
    let done = drain_until(&mut pipeline, |done| done.len() >= 5);
    assert_eq!(done.len(), 5);
    // Visible first, then the prefetches newest first.
    let order: Vec<_> = gate
        .started()
        .iter()
        .map(|u| u.replace("http://m/", ""))
        .collect();
    assert_eq!(order, ["hold.png", "a.png", "d.png", "c.png", "b.png"]);
}
