//! What a frame costs the UI thread: `request` for 30 visible rows, `drain`
//! and `end_frame`, with a fetcher that answers from memory
//! (`thumbpipe::fetch_fn`) and one small PNG, so that no network time lands
//! in the measurement.
//!
//! - `steady`: the list is still; every row is loaded and asks again (the
//!   fast path every frame takes).
//! - `scrolling`: the list moves one row per frame; one row enters (a new
//!   request, answered from the cache) and one leaves (cancelled).
//! - `cached_30`: `Pipeline::cached` for 30 rows whose thumbnails are in the
//!   cache: what a UI pays to draw decoded thumbnails in the pass that asks
//!   for them (a lock and a hash lookup each) instead of a message round
//!   trip to the load actor a frame later.
//! - `coast_prediction`: what following a coast adds to a frame: a
//!   `CoastPrediction` from the scroll state, its resting rows, and for the
//!   visible rows (and one either side) and a screen ahead, when each
//!   leaves, as `thumbpipe::egui`'s `follow_coast` asks (the prediction
//!   alone; the rows' requests are the frames above).

// Benchmark set-up unwraps: a failure there is a broken benchmark.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use thumbpipe::{
    CoastPrediction, Config, ExponentialDecay, ListGeometry, Pipeline, Priority, TargetSize,
};

fn png() -> Bytes {
    let mut out = std::io::Cursor::new(Vec::new());
    image::RgbaImage::new(64, 64)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    Bytes::from(out.into_inner())
}

const VISIBLE: usize = 30;
const ROWS: usize = 200;
const SIZE: TargetSize = TargetSize::square(64);

fn url(row: usize) -> String {
    format!("http://127.0.0.1:1/img/{row}.jpg")
}

/// A pipeline whose cache holds every row's thumbnail.
fn warm_pipeline() -> Pipeline<usize> {
    let mut pipeline = Pipeline::<usize>::builder()
        .config(Config::default())
        .fetcher({
            let png = png();
            thumbpipe::fetch_fn(move |_, _| std::future::ready(Ok(png.clone())))
        })
        .build()
        .unwrap();
    let urls: Vec<String> = (0..ROWS).map(url).collect();
    for (row, url) in urls.iter().enumerate() {
        pipeline.request(row, url, SIZE, Priority::Visible);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut done = 0;
    while done < ROWS && Instant::now() < deadline {
        done += pipeline.drain().len();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(done, ROWS, "warm-up did not finish");
    pipeline.end_frame();
    pipeline
}

fn frame(pipeline: &mut Pipeline<usize>, urls: &[String], first: usize) -> usize {
    for row in first..first + VISIBLE {
        pipeline.request(row, &urls[row % ROWS], SIZE, Priority::Visible);
    }
    let delivered = pipeline.drain().len();
    pipeline.end_frame();
    delivered
}

fn ui_frame(c: &mut Criterion) {
    let urls: Vec<String> = (0..ROWS).map(url).collect();
    let mut group = c.benchmark_group("ui_frame_30_rows");

    let mut pipeline = warm_pipeline();
    frame(&mut pipeline, &urls, 0);
    group.bench_function("steady", |b| {
        b.iter(|| black_box(frame(&mut pipeline, &urls, 0)))
    });

    let mut pipeline = warm_pipeline();
    let mut first = 0;
    group.bench_function("scrolling", |b| {
        b.iter(|| {
            first = (first + 1) % (ROWS - VISIBLE);
            black_box(frame(&mut pipeline, &urls, first))
        })
    });

    let pipeline = warm_pipeline();
    group.bench_function("cached_30", |b| {
        b.iter(|| {
            (0..VISIBLE)
                .filter(|row| pipeline.cached(&urls[*row], SIZE).is_some())
                .count()
        })
    });
    // A coast under way: 200 rows 76 points apart, 13 in view, at 3000
    // points a second and changing every frame like egui's.
    let list = ListGeometry::new(76.0, ROWS, 1000.0);
    let mut step = 0_u32;
    group.bench_function("coast_prediction", |b| {
        b.iter(|| {
            step = (step + 1) % 100;
            let velocity = 3000.0 - step as f32 * 10.0;
            let offset = 2000.0 + step as f32 * 40.0;
            let coast =
                CoastPrediction::new(ExponentialDecay::EGUI, offset, velocity, black_box(list));
            let visible = coast.visible_rows();
            let mut leaving = Duration::ZERO;
            for row in visible.start.saturating_sub(1)..visible.end + 1 {
                leaving += coast.leaves_after(row).unwrap_or_default();
            }
            for row in coast.rows_ahead(visible.len()) {
                leaving += coast.leaves_after(row).unwrap_or_default();
            }
            black_box((coast.resting_rows(), leaving))
        })
    });
    group.finish();
}

criterion_group!(benches, ui_frame);
criterion_main!(benches);
