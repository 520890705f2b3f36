//! `decode-fuzz`: hostile bytes into thumbpipe's decode path, a million at a
//! time, to find inputs that panic, hang or return a malformed thumbnail.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin decode-fuzz -- --inputs 1000000
//! ```
//!
//! A seeded random-mutation fuzzer: every input is a seed file (the
//! decoder's test corpus plus fixture-server images: JPEG, PNG, WebP, GIF,
//! and AVIF, BMP, ICO, TIFF and SVG) with one to four mutations stacked on it: bit flips, interesting
//! bytes and integers written over header fields, deleted, duplicated and
//! spliced ranges, truncation. Input `i` depends only on `--seed` and `i`,
//! so `--replay i` rebuilds one input exactly.
//!
//! `--format avif` fuzzes the AVIF container: AVIF seeds alone, and half
//! the mutations made on its boxes (a size, a field, a box repeated or
//! removed with its parents' sizes kept true, a table's last entry
//! repeated: `thumbpipe_benches::mutate`), so that inputs go past the
//! first check into the item tables, the grid and the AV1 data:
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin decode-fuzz -- --format avif --inputs 1000000
//! ```
//!
//! A crash is a panic (caught by thumbpipe and reported as "the decoder
//! panicked", or in the decode pool's header probe), a thumbnail whose
//! pixel buffer does not match its size or that does not fit the target,
//! or an error of a type a decoder cannot give. Crashes and every input
//! slower than `--slow-ms` are written to `--out` to be replayed.
//!
//! A watchdog checks the workers every 50 ms: an input still running after
//! `--slow-ms` is reported and written out at once, so one that never ends
//! is not lost. It also reads the process's peak allocation over each
//! window; when a window's peak grew by more than the decode limit
//! (`DecodeConfig::max_alloc_bytes`), the inputs run in it are replayed alone
//! at the end and their own peaks measured (with `--threads 1`, every
//! input's peak is measured as it runs). An input whose own peak is over
//! the limit is a finding.
//!
//! This file runs the workers; `inputs.rs` makes the inputs, `watch.rs`
//! is the watchdog and `findings.rs` judges each result and keeps the
//! findings.

mod findings;
mod inputs;
mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use peak_alloc::PeakAlloc;
use thumbpipe::{Config, TargetSize};
use thumbpipe_benches::machine;

use findings::{Tally, judge, save};
use inputs::{mutate, seeds};
use watch::{Current, Running, Watch};

#[derive(Debug, Parser)]
#[command(about = "Random-mutation fuzzing of thumbpipe's decode path")]
struct Args {
    /// Inputs to run.
    #[arg(long, default_value_t = 1_000_000)]
    inputs: u64,
    /// Seed of the mutations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads.
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(2, |n| n.get()))]
    threads: usize,
    /// Inputs slower than this are saved as slow.
    #[arg(long, default_value_t = 1000)]
    slow_ms: u64,
    /// Where crashing and slow inputs are written.
    #[arg(long, default_value = "benches/results/fuzz-findings")]
    out: PathBuf,
    /// Rebuild input N, run it once and report what happens.
    #[arg(long)]
    replay: Option<u64>,
    /// Decode animations' frames (`DecodeConfig::animation`), as an app
    /// that plays them does.
    #[arg(long)]
    animation: bool,
    /// Only this format's seeds, with mutations that know its structure:
    /// `avif` (ISO BMFF boxes).
    #[arg(long, value_parser = ["avif"])]
    format: Option<String>,
}

const TARGET: TargetSize = TargetSize::square(64);

/// Records the process's peak allocation, for each input's memory.
#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// The bytes `input` allocates at its peak, run alone on this thread.
fn peak_of(input: &[u8], config: &Config) -> usize {
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let _ = judge(input, config);
    ALLOCATOR.peak_usage().saturating_sub(before)
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("decode-fuzz: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let boxes = args.format.as_deref() == Some("avif");
    let seeds = Arc::new(seeds(boxes)?);
    let mut config = Config::default();
    config.decode.animation = args.animation;
    let config = Arc::new(config);
    if let Some(index) = args.replay {
        let input = mutate(&seeds, args.seed, index, boxes);
        let started = Instant::now();
        let verdict = judge(&input, &config);
        let took = started.elapsed();
        println!(
            "input {index}: {} bytes, {took:?}, {}, {:.1} MB at its peak",
            input.len(),
            verdict.describe(),
            peak_of(&input, &config) as f64 / 1e6
        );
        return Ok(());
    }
    println!(
        "{} seeds, {} inputs, seed {}, {} threads on {}",
        seeds.len(),
        args.inputs,
        args.seed,
        args.threads,
        machine()
    );
    let tally = Arc::new(Tally {
        slow: Duration::from_millis(args.slow_ms),
        ..Tally::default()
    });
    let bar = ProgressBar::new(args.inputs).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} inputs, {per_sec}, eta {eta} {msg}")
            .context("progress bar template")?,
    );
    let started = Instant::now();
    let heap_before = ALLOCATOR.current_usage();
    let slow = Duration::from_millis(args.slow_ms);
    let running: Arc<Vec<Running>> =
        Arc::new((0..args.threads).map(|_| Running::default()).collect());
    // Inputs started since the watchdog's last look at the peak.
    let window: Arc<std::sync::Mutex<Vec<u64>>> = Arc::default();
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let exact = args.threads == 1;
    let watchdog = {
        let (running, window, finished, bar) = (
            Arc::clone(&running),
            Arc::clone(&window),
            Arc::clone(&finished),
            bar.clone(),
        );
        let watch = Watch {
            running,
            window,
            finished,
            bar,
            out: args.out.clone(),
            slow,
            limit: config.decode.max_alloc_bytes as usize,
            exact,
        };
        std::thread::Builder::new()
            .name("fuzz-watchdog".into())
            .spawn(move || watch.run())
            .context("could not start the watchdog")?
    };
    let workers: Vec<_> = (0..args.threads)
        .map(|worker| {
            let (seeds, config, tally, bar, running, window) = (
                Arc::clone(&seeds),
                Arc::clone(&config),
                Arc::clone(&tally),
                bar.clone(),
                Arc::clone(&running),
                Arc::clone(&window),
            );
            let args = (args.inputs, args.threads as u64, args.seed, boxes);
            std::thread::Builder::new()
                .name(format!("fuzz-{worker}"))
                .spawn(move || {
                    let (inputs, threads, seed, boxes) = args;
                    let mut done = 0;
                    for index in (worker as u64..inputs).step_by(threads as usize) {
                        let input = Arc::new(mutate(&seeds, seed, index, boxes));
                        if !exact && let Ok(mut window) = window.lock() {
                            window.push(index);
                        }
                        let began = Instant::now();
                        if let Ok(mut now) = running[worker].now.lock() {
                            *now = Some(Current {
                                index,
                                started: began,
                                input: Arc::clone(&input),
                                reported: false,
                            });
                        }
                        let (verdict, peak) = if exact {
                            let before = ALLOCATOR.current_usage();
                            ALLOCATOR.reset_peak_usage();
                            let verdict = judge(&input, &config);
                            (verdict, Some(ALLOCATOR.peak_usage().saturating_sub(before)))
                        } else {
                            (judge(&input, &config), None)
                        };
                        let took = began.elapsed();
                        if let Ok(mut now) = running[worker].now.lock() {
                            *now = None;
                        }
                        tally.record(index, &input, &verdict, took);
                        if let Some(peak) = peak {
                            tally.record_peak(index, peak);
                        }
                        done += 1;
                        if done % 1024 == 0 {
                            bar.inc(1024);
                            bar.set_message(tally.summary_short());
                        }
                    }
                    bar.inc(done % 1024);
                })
        })
        .collect::<Result<_, _>>()
        .context("could not start the fuzz threads")?;
    for worker in workers {
        let _ = worker.join();
    }
    finished.store(true, Ordering::Relaxed);
    let (heavy_windows, largest_window, resident) = watchdog.join().unwrap_or_default();
    bar.finish();
    let elapsed = started.elapsed();
    // The inputs of windows whose peak was over the limit, measured alone.
    for index in &heavy_windows {
        let input = mutate(&seeds, args.seed, *index, boxes);
        tally.record_peak(*index, peak_of(&input, &config));
    }
    let findings = tally.findings.lock().map(|f| f.clone()).unwrap_or_default();
    let limit = config.decode.max_alloc_bytes as usize;
    let mut saved = 0;
    for (index, input, _, _) in &findings {
        save(&args.out, *index, input)?;
        saved += 1;
    }
    println!("{}", tally.report(args.inputs, elapsed, slow));
    for (index, _, verdict, took) in findings.iter().take(20) {
        println!("  input {index}: {} in {took:?}", verdict.describe());
    }
    let peaks = tally.peaks.lock().map(|p| p.clone()).unwrap_or_default();
    let measured = if exact {
        "every input's own peak measured".to_owned()
    } else {
        format!(
            "largest growth in a 50 ms window {:.1} MB (all threads together); {} inputs of \
             windows over the limit replayed alone",
            largest_window as f64 / 1e6,
            heavy_windows.len()
        )
    };
    let over: Vec<_> = peaks.iter().filter(|(_, peak)| *peak > limit).collect();
    let largest = peaks
        .first()
        .map_or("none measured alone".to_owned(), |(index, peak)| {
            format!("largest {:.1} MB (input {index})", *peak as f64 / 1e6)
        });
    println!(
        "memory: {measured}; {largest}; {} over the {:.0} MB decode limit",
        over.len(),
        limit as f64 / 1e6,
    );
    for (index, peak) in &over {
        let input = mutate(&seeds, args.seed, *index, boxes);
        save(&args.out, *index, &input)?;
        saved += 1;
        println!("  input {index}: {:.1} MB at its peak", *peak as f64 / 1e6);
    }
    println!(
        "memory: {}; heap in use {:.1} MB before the run, {:.1} MB after",
        resident.summary(),
        heap_before as f64 / 1e6,
        ALLOCATOR.current_usage() as f64 / 1e6
    );
    if saved > 0 {
        println!("{saved} inputs written to {}", args.out.display());
    }
    Ok(())
}
