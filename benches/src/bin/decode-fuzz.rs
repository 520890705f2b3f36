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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use peak_alloc::PeakAlloc;
use thumbpipe::thumbnail_from_bytes;
use thumbpipe::{Config, Error, TargetSize};
use thumbpipe_benches::{ResidentTrace, Rng, machine, mutate};

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

/// What a worker is running now, for the watchdog.
#[derive(Default)]
struct Running {
    now: std::sync::Mutex<Option<Current>>,
}

struct Current {
    index: u64,
    started: Instant,
    input: Arc<Vec<u8>>,
    /// Already reported as slow.
    reported: bool,
}

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

/// The watchdog's view of the workers.
struct Watch {
    running: Arc<Vec<Running>>,
    /// Inputs started since the last window.
    window: Arc<std::sync::Mutex<Vec<u64>>>,
    finished: Arc<std::sync::atomic::AtomicBool>,
    bar: ProgressBar,
    out: PathBuf,
    slow: Duration,
    /// The decode limit, in bytes.
    limit: usize,
    /// Every input's peak is measured by its worker (one thread).
    exact: bool,
}

impl Watch {
    /// Every 50 ms, reports and saves each input running longer than
    /// `slow` (once), and reads the process's peak allocation over the
    /// window. Returns the inputs of windows whose peak grew by more than
    /// `limit` (none when `exact`: every input is measured then), the
    /// largest growth of a window, and the process's resident memory
    /// sampled at each look.
    fn run(self) -> (Vec<u64>, usize, ResidentTrace) {
        let Watch {
            running,
            window,
            finished,
            bar,
            out,
            slow,
            limit,
            exact,
        } = self;
        let mut heavy = Vec::new();
        let mut largest = 0;
        let mut resident = ResidentTrace::default();
        let mut base = ALLOCATOR.current_usage();
        if !exact {
            ALLOCATOR.reset_peak_usage();
        }
        while !finished.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            resident.sample();
            for slot in running.iter() {
                let Ok(mut now) = slot.now.lock() else {
                    continue;
                };
                let Some(current) = now.as_mut() else {
                    continue;
                };
                let took = current.started.elapsed();
                if took >= slow && !current.reported {
                    current.reported = true;
                    let saved = save(&out, current.index, &current.input)
                        .map_or_else(|e| format!("not written: {e:#}"), |()| "written".into());
                    bar.println(format!(
                        "input {} still running after {took:.1?} ({saved})",
                        current.index
                    ));
                }
            }
            if exact {
                continue;
            }
            let peak = ALLOCATOR.peak_usage().saturating_sub(base);
            let started: Vec<u64> = window
                .lock()
                .map(|mut w| std::mem::take(&mut *w))
                .unwrap_or_default();
            largest = largest.max(peak);
            if peak > limit {
                heavy.extend(started);
            }
            base = ALLOCATOR.current_usage();
            ALLOCATOR.reset_peak_usage();
        }
        (heavy, largest, resident)
    }
}

/// The seed files: the decoder's test corpus (with Pillow's files and the
/// AVIF files beside it) and a few fixture images; with `avif_only`, the
/// AVIF files alone.
fn seeds(avif_only: bool) -> anyhow::Result<Vec<Vec<u8>>> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pipeline/tests/it/corpus");
    let dirs = if avif_only {
        vec![corpus.join("avif")]
    } else {
        vec![corpus.clone(), corpus.join("pillow"), corpus.join("avif")]
    };
    let mut seeds = Vec::new();
    let mut names = Vec::new();
    for dir in dirs {
        names.extend(
            std::fs::read_dir(&dir)
                .with_context(|| format!("cannot read the corpus at {}", dir.display()))?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_file() && path.extension().is_some_and(|e| e != "md"))
                .filter(|path| !avif_only || path.extension().is_some_and(|e| e == "avif")),
        );
    }
    names.sort();
    for path in names {
        seeds.push(std::fs::read(&path).with_context(|| format!("{}", path.display()))?);
    }
    if avif_only {
        return Ok(seeds);
    }
    for id in [1, 77, 4242] {
        let picture = fixture_server::picture::render(id, 128, 96);
        seeds.push(picture.encode_jpeg(80).context("encoding a seed JPEG")?);
        seeds.push(picture.encode_png().context("encoding a seed PNG")?);
    }
    seeds.push(
        fixture_server::picture::render(5, 48, 48)
            .encode_animated_gif(4, 50)
            .context("encoding a seed GIF")?,
    );
    Ok(seeds)
}

/// Input `index`: a seed with one to four mutations, half of them of its
/// boxes when `boxes`.
fn mutate(seeds: &[Vec<u8>], seed: u64, index: u64, boxes: bool) -> Vec<u8> {
    let mut rng = Rng::new(seed, index);
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(4) {
        if boxes && rng.below(2) == 0 {
            mutate::boxes_of(&mut rng, &mut data, seeds);
        } else {
            mutate::bytes(&mut rng, &mut data, seeds);
        }
    }
    data
}

#[derive(Clone, Debug)]
enum Verdict {
    Thumbnail,
    DecodeError,
    TooLarge,
    Crash(String),
}

impl Verdict {
    fn describe(&self) -> &str {
        match self {
            Verdict::Thumbnail => "thumbnail",
            Verdict::DecodeError => "decode error",
            Verdict::TooLarge => "refused as too large",
            Verdict::Crash(what) => what,
        }
    }
}

/// Runs one input and says whether the answer is acceptable.
fn judge(input: &[u8], config: &Config) -> Verdict {
    // The decode pool reads sizes with imagesize to tell large images from
    // small ones before any decode; it must survive the same bytes.
    if std::panic::catch_unwind(|| imagesize::blob_size(input)).is_err() {
        return Verdict::Crash("the header probe (imagesize) panicked".into());
    }
    match thumbnail_from_bytes("fuzz", input, TARGET, &config.decode) {
        Ok(thumbnail) => {
            let (w, h) = (thumbnail.width, thumbnail.height);
            let frames = thumbnail.animation.as_ref().map_or(&[][..], |a| a.frames());
            let wrong_frame = frames
                .iter()
                .position(|frame| frame.pixels.len() != (w as usize) * (h as usize) * 4);
            if thumbnail.pixels.len() != (w as usize) * (h as usize) * 4 {
                Verdict::Crash(format!(
                    "{w}x{h} thumbnail with {} bytes",
                    thumbnail.pixels.len()
                ))
            } else if let Some(index) = wrong_frame {
                Verdict::Crash(format!(
                    "{w}x{h} thumbnail whose frame {index} is another size"
                ))
            } else if w == 0 || h == 0 || w > TARGET.width || h > TARGET.height {
                Verdict::Crash(format!("{w}x{h} thumbnail for a 64x64 target"))
            } else {
                Verdict::Thumbnail
            }
        }
        Err(Error::Decode { reason, .. }) if reason.contains("panicked") => Verdict::Crash(reason),
        Err(Error::Decode { .. }) => Verdict::DecodeError,
        Err(Error::TooLarge { .. }) => Verdict::TooLarge,
        Err(other) => Verdict::Crash(format!("unexpected error: {other}")),
    }
}

type Finding = (u64, Vec<u8>, Verdict, Duration);

#[derive(Default)]
struct Tally {
    thumbnails: AtomicU64,
    decode_errors: AtomicU64,
    too_large: AtomicU64,
    crashes: AtomicU64,
    slowest_us: AtomicU64,
    total_us: AtomicU64,
    /// Crashes and every input slower than `slow`.
    findings: std::sync::Mutex<Vec<Finding>>,
    slow: Duration,
    /// The largest peaks measured, largest first: (input, bytes).
    peaks: std::sync::Mutex<Vec<(u64, usize)>>,
}

/// How many of the largest peaks are kept.
const PEAKS_KEPT: usize = 20;

impl Tally {
    fn record(&self, index: u64, input: &[u8], verdict: &Verdict, took: Duration) {
        let counter = match verdict {
            Verdict::Thumbnail => &self.thumbnails,
            Verdict::DecodeError => &self.decode_errors,
            Verdict::TooLarge => &self.too_large,
            Verdict::Crash(_) => &self.crashes,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let us = took.as_micros() as u64;
        self.total_us.fetch_add(us, Ordering::Relaxed);
        self.slowest_us.fetch_max(us, Ordering::Relaxed);
        // Every crash and every slow input, to be written out.
        let keep = matches!(verdict, Verdict::Crash(_)) || took >= self.slow;
        if keep && let Ok(mut findings) = self.findings.lock() {
            findings.push((index, input.to_vec(), verdict.clone(), took));
        }
    }

    /// Keeps `peak` if it is among the largest.
    fn record_peak(&self, index: u64, peak: usize) {
        let Ok(mut peaks) = self.peaks.lock() else {
            return;
        };
        if peaks.len() == PEAKS_KEPT && peaks.last().is_some_and(|p| p.1 >= peak) {
            return;
        }
        peaks.push((index, peak));
        peaks.sort_by_key(|p| std::cmp::Reverse(p.1));
        peaks.truncate(PEAKS_KEPT);
    }

    fn summary_short(&self) -> String {
        format!("crashes {}", self.crashes.load(Ordering::Relaxed))
    }

    fn report(&self, inputs: u64, elapsed: Duration, slow: Duration) -> String {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let slow_count = self
            .findings
            .lock()
            .map(|f| f.iter().filter(|(_, _, _, took)| *took >= slow).count())
            .unwrap_or(0);
        format!(
            "{inputs} inputs in {:.1} s ({:.0} per second): {} thumbnails, {} decode errors, \
             {} refused as too large, {} crashes; mean {:.0} us, slowest {:.1} ms, {slow_count} over {slow:?}",
            elapsed.as_secs_f64(),
            inputs as f64 / elapsed.as_secs_f64(),
            load(&self.thumbnails),
            load(&self.decode_errors),
            load(&self.too_large),
            load(&self.crashes),
            load(&self.total_us) as f64 / inputs as f64,
            load(&self.slowest_us) as f64 / 1000.0,
        )
    }
}

fn save(dir: &Path, index: u64, input: &[u8]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("input-{index}.bin"));
    std::fs::write(&path, input).with_context(|| format!("cannot write {}", path.display()))
}
