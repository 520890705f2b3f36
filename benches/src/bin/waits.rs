//! `waits`: what waiting costs. N requests to the fixture server at 200 ms
//! latency, three ways: thumbpipe's fetch stage (futures on its 2-thread
//! runtime), a thread per request, and a 64-thread pool of blocking
//! fetches. Wall time and this process's peak thread count for each.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin waits
//! ```
//!
//! The server runs as a separate process, so only the client's threads are
//! counted; a sampler thread reads `/proc/self/task` every millisecond (it
//! is one of the threads counted, in every column alike). Images are 64x64
//! and drawn once before the runs, so the server's encoding is not measured.
//! Each N is run `--runs` times per way; the table gives median and range.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use thumbpipe::{Fetch, FetchConfig, HttpFetcher};
use thumbpipe_benches::{ServerProcess, check_file_limit, machine, median_and_range, thread_count};

#[derive(Debug, Parser)]
#[command(about = "N concurrent 200 ms waits: futures vs a thread each vs a 64-thread pool")]
struct Args {
    /// Request counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,64,100,1000,10000")]
    requests: Vec<usize>,
    /// Server latency, in milliseconds.
    #[arg(long, default_value_t = 200)]
    latency_ms: u64,
    /// Runs per way and count.
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    Futures,
    ThreadEach,
    Pool64,
}

impl Way {
    const ALL: [Way; 3] = [Way::Futures, Way::ThreadEach, Way::Pool64];

    fn name(self) -> &'static str {
        match self {
            Way::Futures => "thumbpipe fetch (futures, 2 threads)",
            Way::ThreadEach => "a thread per request",
            Way::Pool64 => "64-thread pool, blocking",
        }
    }
}

/// How one run went.
struct Outcome {
    wall_ms: f64,
    peak_threads: usize,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("waits: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let largest = args.requests.iter().copied().max().unwrap_or(0);
    check_file_limit(largest)?;
    let server = ServerProcess::fixture_server(&[
        "--latency-ms".into(),
        args.latency_ms.to_string(),
        "--size".into(),
        "64".into(),
    ])?;
    let urls: Vec<String> = (0..largest)
        .map(|i| format!("{}/img/{}.jpg", server.base_url(), i % 100))
        .collect();
    // Draw the 100 images once.
    for url in urls.iter().take(100) {
        fixture_server::blocking_client::get(&format!("{url}?latency_ms=0"))
            .map_err(anyhow::Error::msg)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(1)
        .enable_all()
        .build()?;
    let fetcher = {
        let _entered = runtime.enter();
        HttpFetcher::new(&{
            let mut config = FetchConfig::default();
            config.max_per_host = largest.max(1);
            config
        })?
    };
    let baseline = thread_count(std::process::id()).context("no /proc/self/task")?;
    println!(
        "waits: {:?} requests at {} ms, {} runs each, on {}; {baseline} threads before the runs",
        args.requests,
        args.latency_ms,
        args.runs,
        machine()
    );
    let bar = ProgressBar::new((args.requests.len() * Way::ALL.len() * args.runs) as u64)
        .with_style(ProgressStyle::with_template(
            "{bar:40} {pos}/{len} runs {msg}",
        )?);
    let mut rows = Vec::new();
    for &n in &args.requests {
        let mut cells = Vec::new();
        for way in Way::ALL {
            let mut walls = Vec::new();
            let mut peaks = Vec::new();
            for _ in 0..args.runs {
                bar.set_message(format!("{n} requests, {}", way.name()));
                let outcome = measure(|| match way {
                    Way::Futures => futures_way(&runtime, &fetcher, &urls[..n]),
                    Way::ThreadEach => thread_each(&urls[..n]),
                    Way::Pool64 => pool_64(&urls[..n]),
                })?;
                walls.push(outcome.wall_ms);
                peaks.push(outcome.peak_threads as f64);
                bar.inc(1);
            }
            cells.push((walls, peaks));
        }
        rows.push((n, cells));
    }
    bar.finish_and_clear();
    println!();
    print!("| requests |");
    for way in Way::ALL {
        print!(" {}: wall ms | threads |", way.name());
    }
    println!();
    println!("|---:|{}", "---:|---:|".repeat(Way::ALL.len()));
    for (n, cells) in &mut rows {
        print!("| {n} |");
        for (walls, peaks) in cells.iter_mut() {
            let (wall, low, high) = median_and_range(walls).unwrap_or_default();
            let (peak, peak_low, peak_high) = median_and_range(peaks).unwrap_or_default();
            let peak_text = if peak_low == peak_high {
                format!("{peak:.0}")
            } else {
                format!("{peak:.0} ({peak_low:.0}-{peak_high:.0})")
            };
            print!(" {wall:.0} ({low:.0}-{high:.0}) | {peak_text} |");
        }
        println!();
    }
    println!();
    println!(
        "threads: this process's peak during the run (baseline {baseline}, the sampler included)"
    );
    Ok(())
}

/// Runs `work`, sampling this process's threads every millisecond.
fn measure(work: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<Outcome> {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (stop, peak) = (Arc::clone(&stop), Arc::clone(&peak));
        std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || {
                let pid = std::process::id();
                while !stop.load(Ordering::Relaxed) {
                    if let Some(count) = thread_count(pid) {
                        peak.fetch_max(count, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            })?
    };
    let started = Instant::now();
    let result = work();
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    result?;
    // Threads of the previous way must be gone before the next run starts.
    std::thread::sleep(Duration::from_millis(50));
    Ok(Outcome {
        wall_ms,
        peak_threads: peak.load(Ordering::Relaxed),
    })
}

fn futures_way(
    runtime: &tokio::runtime::Runtime,
    fetcher: &HttpFetcher,
    urls: &[String],
) -> anyhow::Result<()> {
    runtime.block_on(async {
        let fetches = urls.iter().map(|url| {
            let url = url::Url::parse(url).map_err(anyhow::Error::from);
            async move {
                fetcher
                    .fetch(url?, 1 << 20)
                    .await
                    .map_err(anyhow::Error::from)
            }
        });
        let results = futures::future::join_all(fetches).await;
        results.into_iter().try_for_each(|r| r.map(|_| ()))
    })
}

fn thread_each(urls: &[String]) -> anyhow::Result<()> {
    let handles: Vec<_> = urls
        .iter()
        .map(|url| {
            let url = url.clone();
            std::thread::Builder::new()
                .name("fetch".into())
                .stack_size(64 * 1024)
                .spawn(move || fixture_server::blocking_client::get(&url))
        })
        .collect::<Result<_, _>>()?;
    for handle in handles {
        match handle.join() {
            Ok(result) => {
                result.map_err(anyhow::Error::msg)?;
            }
            Err(_) => bail!("a fetch thread panicked"),
        }
    }
    Ok(())
}

fn pool_64(urls: &[String]) -> anyhow::Result<()> {
    let queue = Arc::new(Mutex::new(urls.to_vec()));
    let (done, results) = mpsc::channel();
    let workers: Vec<_> = (0..64.min(urls.len()))
        .map(|i| {
            let (queue, done) = (Arc::clone(&queue), done.clone());
            std::thread::Builder::new()
                .name(format!("pool-{i}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    loop {
                        let next = queue.lock().ok().and_then(|mut q| q.pop());
                        let Some(url) = next else { return };
                        let _ = done.send(fixture_server::blocking_client::get(&url));
                    }
                })
        })
        .collect::<Result<_, _>>()?;
    drop(done);
    for result in results {
        result.map_err(anyhow::Error::msg)?;
    }
    for worker in workers {
        let _ = worker.join();
    }
    Ok(())
}
