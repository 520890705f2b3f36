//! Decode + downscale of the fixture server's 600x600 JPEG to 64x64 and
//! 128x128 thumbnails: thumbpipe's decode path against `image`'s decode and
//! `resize` with the Triangle filter, on one thread. The JPEG is encoded once
//! before measuring; each iteration decodes it from the same bytes.

#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use image::imageops::FilterType;
use thumbpipe::{Config, TargetSize};

fn decode(c: &mut Criterion) {
    let jpeg = fixture_server::picture::render(4242, 600, 600)
        .encode_jpeg(85)
        .unwrap();
    let config = Config::default();
    let mut group = c.benchmark_group("decode_600x600_jpeg");
    group.throughput(Throughput::Elements(1));
    for side in [64u32, 128] {
        group.bench_function(format!("thumbpipe_{side}"), |b| {
            b.iter(|| {
                thumbpipe::decode::thumbnail_from_bytes(
                    "bench",
                    black_box(&jpeg),
                    TargetSize::square(side),
                    &config,
                )
                .unwrap()
            })
        });
        group.bench_function(format!("image_resize_triangle_{side}"), |b| {
            b.iter(|| {
                let image = image::load_from_memory(black_box(&jpeg)).unwrap();
                image::imageops::resize(&image.into_rgba8(), side, side, FilterType::Triangle)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
