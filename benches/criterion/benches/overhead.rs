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
//! frame loop polls. The round trips are `thumbpipe_benches::overhead`'s,
//! which `overhead-report` also measures, interleaved, with the context
//! switches and CPU time they cost.

#![allow(clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use thumbpipe::Config;
use thumbpipe_benches::overhead::{bare_round_trip, memory_pipeline, round_trip};

fn overhead(c: &mut Criterion) {
    let mut pipeline = memory_pipeline(Config::default(), None).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(Config::default().io_threads)
        .build()
        .unwrap();
    let mut next = 0;

    let mut group = c.benchmark_group("overhead/one");
    group.throughput(Throughput::Elements(1));
    group.bench_function("pipeline", |b| {
        b.iter(|| round_trip(&mut pipeline, &mut next, 1))
    });
    group.bench_function("spawn_oneshot", |b| b.iter(|| bare_round_trip(&runtime, 1)));
    group.finish();

    let mut group = c.benchmark_group("overhead/batch_100");
    group.throughput(Throughput::Elements(100));
    group.bench_function("pipeline", |b| {
        b.iter(|| round_trip(&mut pipeline, &mut next, 100))
    });
    group.bench_function("spawn_oneshot", |b| {
        b.iter(|| bare_round_trip(&runtime, 100))
    });
    group.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
