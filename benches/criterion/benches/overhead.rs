//! What the pipeline itself costs a request: `request` -> completion
//! drained, with an in-memory fetcher and a decoder that does nothing, so
//! that only the pipeline's own hops remain (UI side -> load actor -> fetch
//! task -> actor -> decode thread -> actor -> UI side). The baseline is the
//! smallest round trip through a runtime: `tokio::spawn` of a task that
//! answers on a oneshot, from a thread outside the runtime.
//!
//! `one`: a single request at a time, waited for (latency). `batch_100`:
//! 100 requests, then drained until all are back (time per request =
//! time / 100). Both sides wait by spinning on a non-blocking check, as a UI
//! frame loop polls.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use thumbpipe::{Config, Decode, Error, Pipeline, Priority, TargetSize, Thumbnail};
use tokio::sync::oneshot;

/// Makes a 1x1 thumbnail of anything.
struct NoDecode;

impl Decode for NoDecode {
    fn decode(&self, url: &Arc<str>, _: &[u8], _: TargetSize) -> Result<Thumbnail, Error> {
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

/// Requests `count` new URLs and drains until all have completed.
fn round_trip(pipeline: &mut Pipeline<u64>, next: &mut u64, count: u64) {
    let first = *next;
    for _ in 0..count {
        *next += 1;
        let url = format!("http://memory/{next}");
        pipeline.request(*next, &url, TargetSize::square(1), Priority::Visible);
    }
    let mut done = 0;
    while done < count {
        for completion in pipeline.drain() {
            assert!(completion.result.is_ok());
            done += 1;
        }
        std::hint::spin_loop();
    }
    for row in first + 1..=*next {
        pipeline.cancel_row(&row);
    }
}

/// Spawns `count` tasks that each answer on a oneshot; spins until all have.
fn bare(runtime: &tokio::runtime::Runtime, count: usize) {
    let mut answers: Vec<oneshot::Receiver<()>> = (0..count)
        .map(|_| {
            let (tx, rx) = oneshot::channel();
            runtime.spawn(async move {
                let _ = tx.send(());
            });
            rx
        })
        .collect();
    while !answers.is_empty() {
        answers.retain_mut(|rx| rx.try_recv().is_err());
        std::hint::spin_loop();
    }
}

fn overhead(c: &mut Criterion) {
    let mut pipeline = Pipeline::<u64>::builder()
        .config(Config::default())
        // Every URL answers at once with one byte.
        .fetcher(thumbpipe::fetch_fn(|_, _| async {
            Ok(Bytes::from_static(b"x"))
        }))
        .decoder(NoDecode)
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let mut next = 0;

    let mut group = c.benchmark_group("overhead/one");
    group.throughput(Throughput::Elements(1));
    group.bench_function("pipeline", |b| {
        b.iter(|| round_trip(&mut pipeline, &mut next, 1))
    });
    group.bench_function("spawn_oneshot", |b| b.iter(|| bare(&runtime, 1)));
    group.finish();

    let mut group = c.benchmark_group("overhead/batch_100");
    group.throughput(Throughput::Elements(100));
    group.bench_function("pipeline", |b| {
        b.iter(|| round_trip(&mut pipeline, &mut next, 100))
    });
    group.bench_function("spawn_oneshot", |b| b.iter(|| bare(&runtime, 100)));
    group.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
