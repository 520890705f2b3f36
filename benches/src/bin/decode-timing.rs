//! `decode-timing`: how long thumbpipe takes to make the thumbnail of each
//! file given, in memory (the decode alone: no fetch, no cache), with the
//! default config: the median and range of `--runs`, one after another
//! on this thread. For one photo in two formats, say.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin decode-timing -- --side 256 photo.jxl photo.jpg
//! ```

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use clap::Parser;
use thumbpipe::{Config, TargetSize};
use thumbpipe_benches::{machine, median_and_range};

#[derive(Debug, Parser)]
#[command(about = "the time each file's thumbnail takes to decode")]
struct Args {
    /// The side of the square the thumbnails fit.
    #[arg(long, default_value_t = 256)]
    side: u32,
    /// Decodes of each file.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The files.
    files: Vec<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = Config::default();
    println!("| file | bytes | thumbnail | ms (median) | range |\n|---|---|---|---|---|");
    for path in &args.files {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path.display().to_string();
        let mut times = Vec::new();
        let mut size = String::new();
        for _ in 0..args.runs.max(1) {
            let started = Instant::now();
            let thumbnail = thumbpipe::thumbnail_from_bytes(
                &name,
                &bytes,
                TargetSize::square(args.side),
                &config.decode,
            )?;
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            size = format!(
                "{}x{} of {}x{}",
                thumbnail.width, thumbnail.height, thumbnail.source_size.0, thumbnail.source_size.1
            );
        }
        let (median, low, high) = median_and_range(&mut times).unwrap_or_default();
        println!(
            "| {name} | {} | {size} | {median:.1} | {low:.1}-{high:.1} |",
            bytes.len()
        );
    }
    println!(
        "\nAt {side} px, {runs} runs each, on {machine}.",
        side = args.side,
        runs = args.runs,
        machine = machine()
    );
    Ok(())
}
