//! `jpeg-routes`: what the cargo feature `libjpeg` buys. thumbpipe's two
//! JPEG routes on the photo corpus's JPEGs, interleaved in one run: libjpeg
//! at the smallest DCT scale that covers the thumbnail (the default), and
//! the route a build without `libjpeg` takes, `image`'s pure-Rust decoder
//! in full (the same as `decode.jpeg_dct_scaling = false`). Both end in the
//! same Lanczos3 resize.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin jpeg-routes
//! ```
//!
//! Prints a markdown table: median ms of one decode on this thread, and
//! the ratio.

use std::hint::black_box;
use std::time::Instant;

use anyhow::Context as _;
use thumbpipe::{DecodeConfig, TargetSize, thumbnail_from_bytes};
use thumbpipe_benches::{machine, median_and_range};

/// Thumbnail sides, in pixels.
const SIDES: [u32; 2] = [64, 256];

fn main() -> anyhow::Result<()> {
    let corpus = fixture_server::photo::corpus().context("cannot make the photo corpus")?;
    let libjpeg = DecodeConfig::default();
    let mut pure_rust = DecodeConfig::default();
    pure_rust.jpeg_dct_scaling = false;
    println!(
        "# jpeg-routes\n\n{}. Command: `cargo run --release -p thumbpipe-benches --bin \
         jpeg-routes`. Median of the rounds, the two routes interleaved.\n",
        machine()
    );
    println!("| image | px | libjpeg (default) | pure Rust (no `libjpeg`) | pure Rust / libjpeg |");
    println!("|---|---|---|---|---|");
    for image in corpus.iter().filter(|image| image.format == "JPEG") {
        let rounds = if image.width * image.height > 2_000_000 {
            9
        } else {
            31
        };
        for side in SIDES {
            let mut times = [Vec::new(), Vec::new()];
            for _ in 0..rounds {
                for (i, config) in [&libjpeg, &pure_rust].into_iter().enumerate() {
                    let started = Instant::now();
                    let thumbnail = thumbnail_from_bytes(
                        "corpus",
                        &image.bytes,
                        TargetSize::square(side),
                        config,
                    )
                    .with_context(|| format!("{} does not decode", image.name))?;
                    black_box(thumbnail);
                    times[i].push(started.elapsed().as_secs_f64() * 1000.0);
                }
            }
            let [fast, slow] =
                times.map(|mut t| median_and_range(&mut t).map_or(f64::NAN, |m| m.0));
            println!(
                "| {} | {side} | {fast:.1} ms | {slow:.1} ms | {:.1}x |",
                image.name,
                slow / fast
            );
        }
    }
    Ok(())
}
