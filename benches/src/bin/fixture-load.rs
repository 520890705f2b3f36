//! `fixture-load`: N concurrent image requests against the fixture server,
//! run as a separate process, to show that waiting costs it no threads.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin fixture-load -- --requests 10000
//! ```
//!
//! Every request is in flight at once (one connection each); the server waits
//! `--latency-ms` on every one with an async sleep. The report gives the wall
//! time of each run (median and range) and the server's thread count, sampled
//! every 2 ms, before and during the runs. Images are drawn once before the
//! first run so that encoding does not count against the wait.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use thumbpipe_benches::{ServerProcess, check_file_limit, machine, median_and_range, thread_count};

#[derive(Debug, Parser)]
#[command(about = "Concurrent requests against the fixture server: wall time and its threads")]
struct Args {
    /// Requests in flight at once, per run.
    #[arg(long, default_value_t = 10_000)]
    requests: usize,
    /// Server latency, in milliseconds.
    #[arg(long, default_value_t = 250)]
    latency_ms: u64,
    /// Runs (the report gives median and range).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Distinct image ids; requests cycle through them.
    #[arg(long, default_value_t = 200)]
    ids: u32,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("fixture-load: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    check_file_limit(args.requests)?;
    let server = ServerProcess::fixture_server(&[
        "--port".into(),
        "0".into(),
        "--latency-ms".into(),
        args.latency_ms.to_string(),
    ])?;
    let pid = server.pid();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.requests)
        .timeout(Duration::from_secs(120))
        .build()?;

    // Draw every image once, without latency.
    runtime.block_on(async {
        for id in 0..args.ids {
            let url = format!("{}/img/{id}.jpg?latency_ms=0", server.base_url());
            client
                .get(url)
                .send()
                .await?
                .error_for_status()?
                .bytes()
                .await?;
        }
        anyhow::Ok(())
    })?;
    let idle_threads = thread_count(pid).context("no /proc: cannot count the server's threads")?;

    let peak = Arc::new(AtomicUsize::new(idle_threads));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (Arc::clone(&peak), Arc::clone(&sampling));
        std::thread::Builder::new()
            .name("thread-census".into())
            .spawn(move || {
                while sampling.load(Ordering::Relaxed) {
                    if let Some(now) = thread_count(pid) {
                        peak.fetch_max(now, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            })?
    };

    let bar = ProgressBar::new((args.runs * args.requests) as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} requests  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut walls = Vec::new();
    for run in 1..=args.runs {
        bar.set_message(format!("run {run} of {}", args.runs));
        let started = Instant::now();
        let failures = runtime.block_on(async {
            let requests = (0..args.requests).map(|i| {
                let url = format!("{}/img/{}.jpg", server.base_url(), i as u32 % args.ids);
                let (client, bar) = (client.clone(), bar.clone());
                async move {
                    let outcome = async {
                        client
                            .get(url)
                            .send()
                            .await?
                            .error_for_status()?
                            .bytes()
                            .await
                    }
                    .await;
                    bar.inc(1);
                    outcome.err()
                }
            });
            futures::future::join_all(requests)
                .await
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
        });
        let wall = started.elapsed();
        if let Some(first) = failures.first() {
            bail!(
                "{} of {} requests failed in run {run}; first: {first:#}",
                failures.len(),
                args.requests
            );
        }
        walls.push(wall.as_secs_f64() * 1000.0);
    }
    bar.finish_and_clear();
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.join();

    let stats: serde_json::Value = runtime.block_on(async {
        client
            .get(format!("{}/stats", server.base_url()))
            .send()
            .await?
            .json()
            .await
    })?;
    let (median, low, high) = median_and_range(&mut walls).context("no runs")?;
    println!("fixture-load on {}", machine());
    println!(
        "{} concurrent requests at {} ms latency, {} runs, all succeeded",
        args.requests, args.latency_ms, args.runs
    );
    println!("wall time: median {median:.0} ms (range {low:.0}-{high:.0} ms)");
    println!(
        "server threads: {idle_threads} idle, peak {} during the runs",
        peak.load(Ordering::Relaxed)
    );
    println!(
        "server counted: {} started, {} completed, {} aborted",
        stats["requests_started"], stats["responses_completed"], stats["responses_aborted"]
    );
    Ok(())
}
