//! `avif-report`: thumbpipe's AVIF decode against Pillow's (libavif with
//! dav1d) on the same files in the same run: median time to a thumbnail
//! at each side, their ratio, and thumbpipe's peak allocation against the
//! decode limit.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin avif-report -- FILE...
//! # rav1d's assembly (needs NASM):
//! cargo run --release -p thumbpipe-benches --features avif-asm --bin avif-report -- FILE...
//! ```
//!
//! The files used in `benches/README.md` ("AVIF") are written by Pillow;
//! the commands are there. Pillow runs as `python3
//! benches/scripts/pillow_decode_timing.py` (`--python` to use another
//! interpreter); its time includes opening the file, as thumbpipe's does.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use clap::Parser;
use peak_alloc::PeakAlloc;
use thumbpipe::{Config, TargetSize};
use thumbpipe_benches::machine;

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

#[derive(Debug, Parser)]
#[command(about = "thumbpipe's AVIF decode against Pillow's")]
struct Args {
    /// AVIF files.
    files: Vec<PathBuf>,
    /// The sides of the square the thumbnails fit.
    #[arg(long, value_delimiter = ',', default_value = "64,128,256")]
    sides: Vec<u32>,
    /// Runs of each (file, side); the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The Python with Pillow 11.2 or later.
    #[arg(long, default_value = "python3")]
    python: String,
    /// Threads libavif may decode one image on (0: Pillow's default, one
    /// per CPU). thumbpipe decodes each image on one of its decode threads.
    #[arg(long, default_value_t = 1)]
    pillow_threads: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = Config::default();
    let asm = if cfg!(feature = "avif-asm") {
        "with"
    } else {
        "without"
    };
    println!(
        "thumbpipe {asm} rav1d's asm against Pillow decoding on {} thread(s) (0: one per CPU), \
         median of {} runs, on {}\n",
        args.pillow_threads,
        args.runs,
        machine()
    );
    println!(
        "| file | side | thumbpipe ms | Pillow ms | ratio | peak MB (limit {}) |",
        config.decode.max_alloc_bytes >> 20
    );
    println!("|---|---|---|---|---|---|");
    for &side in &args.sides {
        let pillow = pillow_medians(&args, side)?;
        for (file, pillow_ms) in args.files.iter().zip(pillow) {
            let bytes =
                std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
            let mut times = Vec::new();
            let mut peak = 0;
            for _ in 0..args.runs {
                PEAK.reset_peak_usage();
                let before = PEAK.current_usage();
                let started = Instant::now();
                thumbpipe::thumbnail_from_bytes(
                    "avif",
                    &bytes,
                    TargetSize::square(side),
                    &config.decode,
                )?;
                times.push(started.elapsed().as_secs_f64() * 1000.0);
                peak = peak.max(PEAK.peak_usage() - before);
            }
            times.sort_by(f64::total_cmp);
            let ours = times[times.len() / 2];
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            println!(
                "| {name} | {side} | {ours:.1} | {pillow_ms:.1} | {:.2} | {:.0} |",
                ours / pillow_ms,
                peak as f64 / 1e6
            );
        }
    }
    Ok(())
}

/// Pillow's median for each file at `side`, in the order given.
fn pillow_medians(args: &Args, side: u32) -> anyhow::Result<Vec<f64>> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/pillow_decode_timing.py"
    );
    let output = std::process::Command::new(&args.python)
        .arg(script)
        .arg(args.runs.to_string())
        .arg(side.to_string())
        .arg(args.pillow_threads.to_string())
        .args(&args.files)
        .output()
        .context("running Pillow's timing script")?;
    anyhow::ensure!(
        output.status.success(),
        "Pillow's timing script failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            line.rsplit('\t')
                .next()
                .and_then(|ms| ms.parse().ok())
                .context("a line of Pillow's timings")
        })
        .collect()
}
