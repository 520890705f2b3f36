//! `soak`: a long run of the whole pipeline against the fixture server, to
//! show that memory levels off, threads stay constant and nothing is left
//! in flight, and to time dropping a busy pipeline.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin soak -- --requests 100000
//! ```
//!
//! The server runs as a separate process with 10-50 ms latency and 10% of
//! responses faulty (every fault kind, equally likely). The pipeline runs
//! here, driven like a UI: every millisecond or so it starts requests for
//! new rows, up to `--live` at once, each for a new image; half of them are
//! cancelled at a random point within 60 ms, the rest run to completion or
//! failure. Every 1,000 requests the report samples this process's RSS and
//! thread count, and every tenth of the run (10,000 requests by default) it
//! prints the median and range of the samples since the last line: RSS
//! moves by a few MB as the allocator reuses memory, and the median shows
//! the level under that movement. At the end it waits for the pipeline to
//! go idle, then drops pipelines with 1,000 requests in flight and times
//! the drops. It exits with status 1 if a target is missed: RSS growth over
//! the second half under 5% of the first half's peak, no thread started
//! during the run, idle at the end, and a median drop under 100 ms.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use fixture_server::FaultKind;
use indicatif::{ProgressBar, ProgressStyle};
use peak_alloc::PeakAlloc;
use thumbpipe::{Config, Pipeline, Priority, Stats, TargetSize};
use thumbpipe_benches::{ServerProcess, machine, median_and_range, thread_count};

/// Counts the bytes this process has allocated and not freed: with RSS,
/// it tells live memory from memory the allocator keeps.
#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

#[derive(Debug, Parser)]
#[command(about = "A long run of the pipeline: RSS, threads and in-flight work over time")]
struct Args {
    /// Requests to make; at least 2,000, so that each half of the run has
    /// an RSS level.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(2_000..))]
    requests: u64,
    /// Requests alive at once.
    #[arg(long, default_value_t = 256)]
    live: usize,
    /// Fraction of requests cancelled at a random point.
    #[arg(long, default_value_t = 0.5)]
    cancel: f64,
    /// Fraction of responses that are faults, spread over every kind.
    #[arg(long, default_value_t = 0.1)]
    faults: f64,
    /// Pipelines dropped with 1,000 requests in flight, to time the drop.
    #[arg(long, default_value_t = 5)]
    drops: usize,
}

/// One live request.
struct Live {
    url: String,
    /// When to cancel it, if it is one of the cancelled ones.
    cancel_at: Option<Instant>,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("soak: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let mut server_args: Vec<String> = ["--latency-ms", "10", "--jitter-ms", "40", "--size", "128"]
        .map(String::from)
        .into();
    let per_kind = args.faults / FaultKind::ALL.len() as f64;
    for kind in FaultKind::ALL {
        server_args.push("--fault".into());
        server_args.push(format!("{kind}:{per_kind}"));
    }
    let server = ServerProcess::fixture_server(&server_args)?;
    let base = server.base_url().to_owned();
    let mut config = Config::default();
    config.fetch.max_per_host = 64;
    config.fetch.max_in_flight = 64;
    config.fetch.connect_timeout = Duration::from_secs(1);
    config.fetch.total_timeout = Duration::from_secs(1);
    config.fetch.max_body_bytes = 2 * 1024 * 1024;
    println!(
        "soak: {} requests, {} live, {:.0}% cancelled, {:.0}% faults, on {}",
        args.requests,
        args.live,
        args.cancel * 100.0,
        args.faults * 100.0,
        machine()
    );
    let pid = std::process::id();
    let mut pipeline = Pipeline::<u64>::new(config.clone())?;
    let bar = ProgressBar::new(args.requests).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} requests, {per_sec}, eta {eta} {msg}")
            .context("progress bar template")?,
    );
    let mut rng = Rng(0x5eed);
    let mut live: HashMap<u64, Live> = HashMap::new();
    let mut made = 0u64;
    let mut planned_cancels = 0u64;
    let mut samples: Vec<Sample> = vec![Sample::take(pid, 0, &pipeline.stats())?];
    let started = Instant::now();
    while made < args.requests || !live.is_empty() {
        let now = Instant::now();
        while made < args.requests && live.len() < args.live {
            made += 1;
            let row = made;
            let url = format!("{base}/img/{}.jpg?w=128&h=128", made % 1_000_000);
            let cancel_at = (rng.unit() < args.cancel)
                .then(|| now + Duration::from_micros((rng.unit() * 60_000.0) as u64));
            planned_cancels += u64::from(cancel_at.is_some());
            pipeline.request(row, &url, TargetSize::square(64), Priority::Visible);
            live.insert(row, Live { url, cancel_at });
            if made.is_multiple_of(1_000) {
                samples.push(Sample::take(pid, made, &pipeline.stats())?);
                bar.set_message(format!(
                    "RSS {:.1} MB",
                    samples.last().map_or(0.0, |s| s.rss_mb)
                ));
            }
        }
        // Keep every live row's request alive, as a UI's frame does.
        for (row, request) in &live {
            pipeline.request(
                *row,
                &request.url,
                TargetSize::square(64),
                Priority::Visible,
            );
        }
        let due: Vec<u64> = live
            .iter()
            .filter(|(_, request)| request.cancel_at.is_some_and(|at| at <= now))
            .map(|(row, _)| *row)
            .collect();
        for row in due {
            pipeline.cancel_row(&row);
            live.remove(&row);
            bar.inc(1);
        }
        for completion in pipeline.drain() {
            pipeline.cancel_row(&completion.row); // forget the finished row
            live.remove(&completion.row);
            bar.inc(1);
        }
        pipeline.end_frame();
        std::thread::sleep(Duration::from_millis(1));
    }
    let elapsed = started.elapsed();
    bar.finish();
    let idle = wait_idle(&pipeline);
    let stats = pipeline.stats();
    samples.push(Sample::take(pid, made, &stats)?);
    drop(pipeline);

    let drops = time_drops(&base, &config, args.drops)?;
    let run = Run {
        elapsed,
        stats,
        idle,
        planned_cancels,
    };
    report(&args, &run, &samples, drops)
}

/// Waits up to 5 s for nothing to be queued, fetching or decoding.
fn wait_idle(pipeline: &Pipeline<u64>) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let stats = pipeline.stats();
        if (stats.in_flight, stats.queued, stats.decoding) == (0, 0, 0) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Drops `runs` pipelines, each with 1,000 requests queued and in flight
/// against a 500 ms server, and returns how long each drop took.
fn time_drops(base: &str, config: &Config, runs: usize) -> anyhow::Result<Vec<f64>> {
    let mut took = Vec::new();
    for run in 0..runs {
        let mut warm_config = config.clone();
        warm_config.fetch.max_per_host = 400;
        warm_config.fetch.max_in_flight = 400;
        let mut pipeline = Pipeline::<u32>::new(warm_config)?;
        for row in 0..1000 {
            let id = 900_000 + run as u32 * 1000 + row;
            let url = format!("{base}/img/{id}.jpg?w=128&h=128&latency_ms=500&fault=none");
            pipeline.request(row, &url, TargetSize::square(64), Priority::Visible);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while pipeline.stats().in_flight < 300 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let stats = pipeline.stats();
        if stats.in_flight == 0 {
            bail!("no request reached the server before the drop: {stats:?}");
        }
        let started = Instant::now();
        drop(pipeline);
        took.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(took)
}

/// The process at one point of the run.
struct Sample {
    requests: u64,
    rss_mb: f64,
    heap_mb: f64,
    threads: usize,
    in_flight: u64,
    cache_mb: f64,
}

impl Sample {
    fn take(pid: u32, requests: u64, stats: &Stats) -> anyhow::Result<Self> {
        Ok(Self {
            requests,
            rss_mb: fixture_server::resident_mb()
                .context("cannot read VmRSS from /proc/self/status")?,
            heap_mb: ALLOCATOR.current_usage() as f64 / (1024.0 * 1024.0),
            threads: thread_count(pid).context("cannot count /proc/self/task")?,
            in_flight: stats.in_flight,
            cache_mb: stats.cache.cost as f64 / 1e6,
        })
    }
}

/// What the main run ended with.
struct Run {
    elapsed: Duration,
    stats: Stats,
    idle: bool,
    planned_cancels: u64,
}

fn report(args: &Args, run: &Run, samples: &[Sample], mut drops: Vec<f64>) -> anyhow::Result<()> {
    let Run {
        elapsed,
        ref stats,
        idle,
        planned_cancels,
    } = *run;
    // Ten windows of samples, one per tenth of the run (in whole
    // thousands: a sample is taken every 1,000 requests).
    let per_window = (args.requests / 10_000).max(1) as usize;
    let window_requests = per_window as u64 * 1_000;
    let windows: Vec<(u64, f64, f64, f64, &Sample)> = samples
        .iter()
        .enumerate()
        .take(samples.len() - 1) // the last one is the idle sample
        .filter(|(_, s)| s.requests > 0 && s.requests.is_multiple_of(window_requests))
        .map(|(end, s)| {
            let mut rss: Vec<f64> = samples[(end + 1).saturating_sub(per_window).max(1)..=end]
                .iter()
                .map(|s| s.rss_mb)
                .collect();
            let (median, low, high) = median_and_range(&mut rss).unwrap_or_default();
            (s.requests, median, low, high, s)
        })
        .collect();
    println!();
    println!(
        "| requests | RSS (MB), median of the samples since the last line (range) | heap in \
         use (MB) | threads | in flight | cache (MB) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    let first = &samples[0];
    println!(
        "| 0 | {:.1} | {:.1} | {} | 0 | 0.0 |",
        first.rss_mb, first.heap_mb, first.threads
    );
    for (requests, median, low, high, s) in &windows {
        println!(
            "| {requests} | {median:.1} ({low:.1}-{high:.1}) | {:.1} | {} | {} | {:.1} |",
            s.heap_mb, s.threads, s.in_flight, s.cache_mb
        );
    }
    let last = samples.last().context("no samples")?;
    println!(
        "| idle after the run | {:.1} | {:.1} | {} | {} | {:.1} |",
        last.rss_mb, last.heap_mb, last.threads, last.in_flight, last.cache_mb
    );
    println!();
    let made = stats.requested;
    println!(
        "{} requests in {:.1} s: {:.0} per second",
        args.requests,
        elapsed.as_secs_f64(),
        args.requests as f64 / elapsed.as_secs_f64()
    );
    println!(
        "outcomes: {} delivered, {} failed, {} cancelled (of {planned_cancels} chosen for \
         cancelling; the rest ended first), of {made} requested; {} fetches, {} cancelled in \
         flight, {} cancelled queued",
        stats.delivered,
        stats.failed,
        stats.cancelled,
        stats.fetches_started,
        stats.fetches_cancelled_in_flight,
        stats.fetches_cancelled_queued,
    );
    // Memory levels off: the level's growth over the second half against
    // the first half's peak level.
    let half = args.requests / 2;
    let first_peak = windows
        .iter()
        .filter(|w| w.0 <= half)
        .map(|w| w.1)
        .fold(0.0, f64::max);
    let at_half = windows.iter().find(|w| w.0 >= half).map_or(0.0, |w| w.1);
    let at_end = windows.last().map_or(0.0, |w| w.1);
    let growth = if first_peak > 0.0 {
        (at_end - at_half) / first_peak * 100.0
    } else {
        f64::INFINITY
    };
    let mut missed = Vec::new();
    if growth >= 5.0 {
        missed.push(format!(
            "RSS grew {growth:+.1}% over the second half (target < 5%)"
        ));
    }
    println!(
        "RSS level: first half peak {first_peak:.1} MB, {at_half:.1} MB at {half} requests, \
         {at_end:.1} MB at {}: second-half growth {growth:+.1}% of the first half's peak \
         (target < 5%)",
        args.requests
    );
    let (min_t, max_t) = samples[1..].iter().fold((usize::MAX, 0), |(lo, hi), s| {
        (lo.min(s.threads), hi.max(s.threads))
    });
    println!(
        "threads during the run: {min_t}..={max_t} ({} before the first request)",
        first.threads
    );
    // The pipeline's threads start with it; the one blocking thread for
    // host names may come and go.
    if max_t > first.threads + 1 {
        missed.push(format!(
            "threads rose to {max_t} from {} (target: none started)",
            first.threads
        ));
    }
    if !idle {
        missed.push("not idle at the end".into());
    }
    println!(
        "idle at the end: {} (in flight {}, queued {}, decoding {})",
        if idle { "yes" } else { "NO" },
        stats.in_flight,
        stats.queued,
        stats.decoding
    );
    if let Some((median, low, high)) = median_and_range(&mut drops) {
        println!(
            "drop with 1,000 requests in flight: median {median:.1} ms ({low:.1}-{high:.1}) over {} runs (target < 100 ms)",
            drops.len()
        );
        if median >= 100.0 {
            missed.push(format!("median drop {median:.1} ms (target < 100 ms)"));
        }
    }
    if !missed.is_empty() {
        bail!("targets missed: {}", missed.join("; "));
    }
    println!("every target met");
    Ok(())
}

/// xorshift64*: enough to pick which requests to cancel and when.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}
