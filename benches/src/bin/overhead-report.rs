//! `overhead-report`: what the pipeline itself costs a request, against the
//! smallest round trip through a runtime, with the two interleaved round
//! by round so that both see the same machine.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin overhead-report
//! cargo run --release -p thumbpipe-benches --bin overhead-report -- --runs 1 --batches 100
//! cargo run --release -p thumbpipe-benches --bin overhead-report -- --io-threads 1
//! ```
//!
//! The pipeline ([`thumbpipe_benches::overhead`]) has the default config,
//! an in-memory fetcher and a decoder that does nothing; the baseline is
//! `tokio::spawn` of a task answering on a oneshot, on a runtime of as many
//! workers as the pipeline's I/O runtime. Each run builds both afresh and
//! measures:
//!
//! - latency: `--singles` rounds of one request, waited for, and
//!   `--batches` rounds of 100 requests then drained (time / 100),
//!   alternating pipeline and baseline round by round (which goes first
//!   alternates too); the median round of each, after a tenth of warm-up;
//! - one request's path: `--singles` rounds of one request on a pipeline
//!   whose fetcher and decoder mark a clock, the median time of each hop;
//! - cost: `--batches` rounds of 100 of one, then of the other, reading
//!   this process's threads from `/proc/self/task` around each: context
//!   switches per request, and CPU time per request of every thread but
//!   the calling one (which spins, waiting).
//!
//! `--io-threads` and `--decode-threads` change the config; the report
//! says so, and goes to a file of its own.
//!
//! The criterion bench (`cargo bench -p thumbpipe-criterion --bench
//! overhead`) measures the same round trips one after the other, each for
//! seconds; on a machine whose load moves, its ratios move with it.
//! Writes `overhead-report.md` to `--out` and prints it; exits with failure
//! when a target is missed.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Context as _;
use clap::Parser;
use thumbpipe::Config;
use thumbpipe_benches::overhead::{
    HopClock, ThreadReading, bare_round_trip, current_thread_id, memory_pipeline, round_trip,
};
use thumbpipe_benches::{Targets, median_and_range};

#[derive(Parser, Debug)]
#[command(about = "per-request overhead of the pipeline against spawn + oneshot")]
struct Args {
    /// Runs (the tables give median and range over them).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Rounds of one request per run, each side.
    #[arg(long, default_value_t = 20000)]
    singles: usize,
    /// Rounds of 100 requests per run, each side, in each part.
    #[arg(long, default_value_t = 1500)]
    batches: usize,
    /// The pipeline's I/O runtime threads (and the baseline's workers),
    /// if not the default's.
    #[arg(long)]
    io_threads: Option<usize>,
    /// The pipeline's decode threads, if not the default's.
    #[arg(long)]
    decode_threads: Option<usize>,
    /// Where the report goes.
    #[arg(long, default_value = "benches/results")]
    out: PathBuf,
}

impl Args {
    /// The pipeline's config: the default, but for the threads asked for.
    fn config(&self) -> Config {
        let mut config = Config::default();
        config.io_threads = self.io_threads.unwrap_or(config.io_threads);
        config.decode.threads = self.decode_threads.unwrap_or(config.decode.threads);
        config
    }

    /// The report's file name: `overhead-report.md` for the default
    /// config, with the threads in it otherwise.
    fn file_name(&self) -> String {
        match (self.io_threads, self.decode_threads) {
            (None, None) => "overhead-report.md".to_owned(),
            _ => {
                let config = self.config();
                format!(
                    "overhead-report-io{}-decode{}.md",
                    config.io_threads, config.decode.threads
                )
            }
        }
    }
}

/// What one run measured, per request.
#[derive(Debug, Default)]
struct Run {
    /// Microseconds: [pipeline, baseline].
    single: [f64; 2],
    batch: [f64; 2],
    switches: [f64; 2],
    /// Microseconds of CPU besides the waiting thread.
    cpu: [f64; 2],
    /// One request's path, microseconds: to the actor's turn that starts
    /// its fetch, to the fetch task's first poll, to the decoder's call,
    /// to its completion drained.
    hops: [f64; 4],
}

const BATCH: u64 = 100;

/// One figure of a run: [pipeline, baseline].
type Figure = fn(&Run) -> [f64; 2];

fn median(mut values: Vec<f64>) -> f64 {
    median_and_range(&mut values).map_or(f64::NAN, |(median, _, _)| median)
}

/// Microseconds per request of `rounds` alternated rounds of `count`
/// requests: [pipeline, baseline], medians after a tenth of warm-up.
fn interleaved(
    rounds: usize,
    count: u64,
    mut pipeline: impl FnMut(u64),
    mut bare: impl FnMut(u64),
) -> [f64; 2] {
    let mut times: [Vec<f64>; 2] = Default::default();
    for round in 0..rounds {
        let mut took = [0.0; 2];
        for side in [round % 2, 1 - round % 2] {
            let started = Instant::now();
            if side == 0 {
                pipeline(count);
            } else {
                bare(count);
            }
            took[side] = started.elapsed().as_secs_f64() * 1e6 / count as f64;
        }
        if round >= rounds / 10 {
            times[0].push(took[0]);
            times[1].push(took[1]);
        }
    }
    let [pipeline, bare] = times;
    [median(pipeline), median(bare)]
}

/// Context switches and others' CPU microseconds per request over
/// `rounds` rounds of `work`.
fn cost(me: u32, rounds: usize, mut work: impl FnMut()) -> anyhow::Result<(f64, f64)> {
    let before = ThreadReading::now().context("no /proc/self/task")?;
    for _ in 0..rounds {
        work();
    }
    let spent = ThreadReading::now()
        .context("no /proc/self/task")?
        .since(&before, me);
    let requests = (rounds as u64 * BATCH) as f64;
    Ok((
        spent.switches as f64 / requests,
        spent.others_cpu_ns as f64 / 1e3 / requests,
    ))
}

fn run(args: &Args) -> anyhow::Result<Run> {
    let config = args.config();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads)
        .build()?;
    let mut pipeline = memory_pipeline(config, None)?;
    let me = current_thread_id().context("no /proc/thread-self")?;
    let mut next = 0;
    let mut run = Run {
        single: interleaved(
            args.singles,
            1,
            |n| {
                round_trip(&mut pipeline, &mut next, n);
            },
            |n| bare_round_trip(&runtime, n as usize),
        ),
        batch: interleaved(
            args.batches,
            BATCH,
            |n| {
                round_trip(&mut pipeline, &mut next, n);
            },
            |n| bare_round_trip(&runtime, n as usize),
        ),
        ..Run::default()
    };
    (run.switches[0], run.cpu[0]) = cost(me, args.batches, || {
        round_trip(&mut pipeline, &mut next, BATCH);
    })?;
    (run.switches[1], run.cpu[1]) = cost(me, args.batches, || {
        bare_round_trip(&runtime, BATCH as usize)
    })?;
    drop(pipeline);
    run.hops = hops(args)?;
    Ok(run)
}

/// One request's path, on a pipeline of its own whose fetcher and decoder
/// mark a clock: medians over `--singles` rounds, after a tenth of warm-up.
fn hops(args: &Args) -> anyhow::Result<[f64; 4]> {
    let clock = HopClock::new();
    let mut pipeline = memory_pipeline(args.config(), Some(Arc::clone(&clock)))?;
    let mut hops: [Vec<f64>; 4] = Default::default();
    let mut next = 0;
    for round in 0..args.singles {
        let asked = clock.now();
        let drained = clock.at(round_trip(&mut pipeline, &mut next, 1));
        let marks = [
            asked,
            clock.fetch_asked.load(Ordering::Acquire),
            clock.fetch_polled.load(Ordering::Acquire),
            clock.decode_started.load(Ordering::Acquire),
            drained,
        ];
        if round >= args.singles / 10 {
            for (hop, pair) in hops.iter_mut().zip(marks.windows(2)) {
                hop.push(pair[1].saturating_sub(pair[0]) as f64 / 1e3);
            }
        }
    }
    Ok(hops.map(median))
}

/// "median (low-high)" of `values`, with `digits` decimals.
fn spread(mut values: Vec<f64>, digits: usize) -> String {
    match median_and_range(&mut values) {
        Some((median, low, high)) => {
            format!("{median:.digits$} ({low:.digits$}-{high:.digits$})")
        }
        None => "-".to_owned(),
    }
}

fn report(args: &Args, runs: &[Run]) -> (String, bool) {
    let column = |pick: Figure, side: usize| -> Vec<f64> {
        runs.iter().map(|run| pick(run)[side]).collect()
    };
    let ratios =
        |pick: Figure| -> Vec<f64> { runs.iter().map(|run| pick(run)[0] / pick(run)[1]).collect() };
    let rows: [(&str, Figure, usize); 4] = [
        ("one request, waited for: us", |run| run.single, 2),
        (
            "100 requests, then drained: us per request",
            |run| run.batch,
            2,
        ),
        (
            "context switches per request (100 at a time)",
            |run| run.switches,
            3,
        ),
        (
            "CPU besides the waiting thread: us per request",
            |run| run.cpu,
            2,
        ),
    ];
    let config = args.config();
    let mut threads = String::new();
    if let Some(io) = args.io_threads {
        let _ = write!(threads, " --io-threads {io}");
    }
    if let Some(decode) = args.decode_threads {
        let _ = write!(threads, " --decode-threads {decode}");
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# overhead-report: per-request overhead, {} runs\n\n\
         {}; {} (I/O runtime of {} threads, {} decode threads); in-memory \
         fetcher, a decoder that does nothing. Median (range) over the runs; ratio = \
         pipeline / baseline within each run.\n\
         Command: `cargo run --release -p thumbpipe-benches --bin overhead-report -- --runs {} \
         --singles {} --batches {}{threads}`.\n",
        args.runs,
        thumbpipe_benches::machine(),
        if threads.is_empty() {
            "default config"
        } else {
            "**not the default config**"
        },
        config.io_threads,
        config.decode.threads,
        args.runs,
        args.singles,
        args.batches,
    );
    let _ = writeln!(out, "| per request | pipeline | spawn + oneshot | ratio |");
    let _ = writeln!(out, "|---|---|---|---|");
    for (name, pick, digits) in rows {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {}x |",
            spread(column(pick, 0), digits),
            spread(column(pick, 1), digits),
            spread(ratios(pick), 1),
        );
    }
    let hop_names = [
        "`request` -> the actor's turn that starts its fetch",
        "-> the fetch task's first poll",
        "-> the decoder called on a decode thread (via the actor)",
        "-> its completion drained (via the actor)",
    ];
    let _ = writeln!(
        out,
        "\nOne request's path, on a pipeline of its own whose fetcher and decoder mark \
         a clock ({} rounds a run, one at a time; each run's median):\n\n\
         | hop | us |\n|---|---|",
        args.singles
    );
    for (index, name) in hop_names.iter().enumerate() {
        let values = runs.iter().map(|run| run.hops[index]).collect();
        let _ = writeln!(out, "| {name} | {} |", spread(values, 2));
    }
    let mut targets = Targets::default();
    targets.group("Targets");
    let single = median(ratios(|run| run.single));
    let batch = median(ratios(|run| run.batch));
    let batch_us = median(column(|run| run.batch, 0));
    targets.check(
        "one request <= 2x spawn + oneshot",
        single <= 2.0,
        format!("{single:.1}x"),
    );
    targets.check(
        "100 requests <= 2x spawn + oneshot, per request",
        batch <= 2.0,
        format!("{batch:.1}x"),
    );
    targets.check(
        "100 requests <= 2 us per request",
        batch_us <= 2.0,
        format!("{batch_us:.2} us"),
    );
    let _ = write!(out, "\n{}\n{}", targets.table("##"), targets.summary());
    (out, targets.all_met())
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        args.runs > 0 && args.batches > 0 && args.singles > 0,
        "nothing to run"
    );
    let mut runs = Vec::new();
    for index in 0..args.runs {
        let run = run(&args)?;
        eprintln!("run {index}: {run:?}");
        runs.push(run);
    }
    let (report, all_met) = report(&args, &runs);
    println!("{report}");
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join(args.file_name()), report)?;
    if !all_met {
        std::process::exit(1);
    }
    Ok(())
}
