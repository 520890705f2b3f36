//! Decode + downscale of the fixture server's 600x600 JPEG to 64x64 and
//! 128x128 thumbnails, three ways: thumbpipe's decode path; `image`'s decode
//! and `resize` with the Triangle filter; and egui_extras' image loader's
//! path (a full decode, `to_rgba8`, then an `egui::ColorImage`), which
//! keeps the full-size image.
//!
//! `one_core`: one thumbnail per iteration on one thread. `all_cores`: every
//! core decodes a batch at once (scoped threads), and the time is per
//! thumbnail, so thumbnails per second on all cores = 1 / time.
//! The JPEG is encoded once before measuring.

#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use image::imageops::FilterType;
use thumbpipe::{Config, TargetSize};

/// Thumbnails each thread makes per `all_cores` iteration.
const BATCH: usize = 8;

type Path = fn(&[u8], u32, &Config) -> usize;

fn thumbpipe_path(jpeg: &[u8], side: u32, config: &Config) -> usize {
    let thumbnail =
        thumbpipe::thumbnail_from_bytes("bench", black_box(jpeg), TargetSize::square(side), config)
            .unwrap();
    thumbnail.pixels.len()
}

fn image_resize_path(jpeg: &[u8], side: u32, _: &Config) -> usize {
    let image = image::load_from_memory(black_box(jpeg)).unwrap();
    image::imageops::resize(&image.into_rgba8(), side, side, FilterType::Triangle).len()
}

/// egui_extras' `ImageCrateLoader`: decode in full, convert, keep it all.
fn egui_extras_path(jpeg: &[u8], _side: u32, _: &Config) -> usize {
    let image = image::load_from_memory(black_box(jpeg)).unwrap();
    let rgba = image.to_rgba8();
    let size = [rgba.width() as usize, rgba.height() as usize];
    egui::ColorImage::from_rgba_unmultiplied(size, rgba.as_raw())
        .pixels
        .len()
}

const PATHS: [(&str, Path); 3] = [
    ("thumbpipe", thumbpipe_path),
    ("image_resize_triangle", image_resize_path),
    ("egui_extras", egui_extras_path),
];

fn decode(c: &mut Criterion) {
    let jpeg = fixture_server::picture::render(4242, 600, 600)
        .encode_jpeg(85)
        .unwrap();
    let config = Config::default();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());

    let mut one = c.benchmark_group("decode_600x600_jpeg/one_core");
    one.throughput(Throughput::Elements(1));
    for side in [64u32, 128] {
        for (name, path) in PATHS {
            one.bench_with_input(BenchmarkId::new(name, side), &side, |b, &side| {
                b.iter(|| path(&jpeg, side, &config))
            });
        }
    }
    one.finish();

    let mut all = c.benchmark_group("decode_600x600_jpeg/all_cores");
    all.throughput(Throughput::Elements((cores * BATCH) as u64));
    for side in [64u32, 128] {
        for (name, path) in PATHS {
            all.bench_with_input(BenchmarkId::new(name, side), &side, |b, &side| {
                b.iter(|| {
                    std::thread::scope(|scope| {
                        for _ in 0..cores {
                            scope.spawn(|| {
                                (0..BATCH)
                                    .map(|_| path(&jpeg, side, &config))
                                    .sum::<usize>()
                            });
                        }
                    })
                })
            });
        }
    }
    all.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
