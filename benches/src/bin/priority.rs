//! `priority`: how long a small thumbnail waits when large images keep the
//! decode threads busy. The delay measured is from the small image's
//! response arriving (its fetch future completing) to its completion being
//! drained on the UI thread, which waits on the pipeline's waker.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin priority
//! ```
//!
//! An in-memory fetcher answers at once: large URLs with a 4000x3000 JPEG (a
//! phone photo, 12 MP), small URLs with a 600x600 JPEG; every URL is new, so
//! nothing comes from the cache. Thumbnails are 64x64. A small request is
//! made every 25 ms while, in the busy scenarios, `3 x decode.threads` large
//! requests are kept outstanding (each finished one is replaced at once,
//! until the last small image has been asked for):
//!
//! - `idle`: no large images; the floor (decode + the pipeline's hops).
//! - `busy, lane`: the default config; large images may hold at most
//!   `decode.threads - 1` threads.
//! - `busy, no lane`: `large_image_pixels: u64::MAX`, so large images may
//!   hold every thread, as in a plain pool: the baseline.
//!
//! Each scenario runs `--runs` times with `--samples` small images each
//! (the first 10 are warm-up and not counted); the table gives the median
//! and range over runs of each run's p50 and p99.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use clap::Parser;
use fixture_server::percentile;
use thumbpipe::{Config, Fetch, Pipeline, Priority, TargetSize};
use thumbpipe_benches::{machine, median_and_range};

#[derive(Debug, Parser)]
#[command(about = "Delay of a small thumbnail while large images keep the decode threads busy")]
struct Args {
    /// Runs of each scenario.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Small images timed per run (after 10 of warm-up).
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// Decode threads (default: one per core).
    #[arg(long)]
    decode_threads: Option<usize>,
}

const WARM_UP: usize = 10;
const SMALL_EVERY: Duration = Duration::from_millis(25);
const TARGET: TargetSize = TargetSize::square(64);

/// Answers every URL at once and notes when each response arrived.
fn answer_from_memory(
    large: Bytes,
    small: Bytes,
    arrived: Arc<Mutex<HashMap<String, Instant>>>,
) -> impl Fetch {
    thumbpipe::fetch_fn(move |url, _| {
        let body = if url.path().starts_with("/large/") {
            large.clone()
        } else {
            small.clone()
        };
        let arrived = Arc::clone(&arrived);
        // Stamped when the fetch future runs, as a network response would
        // arrive, not when the load actor starts the fetch.
        async move {
            if let Ok(mut arrived) = arrived.lock() {
                arrived.insert(url.to_string(), Instant::now());
            }
            Ok(body)
        }
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    Idle,
    BusyLane,
    BusyNoLane,
}

impl Scenario {
    const ALL: [Scenario; 3] = [Scenario::Idle, Scenario::BusyLane, Scenario::BusyNoLane];

    fn name(self) -> &'static str {
        match self {
            Scenario::Idle => "idle",
            Scenario::BusyLane => "busy, lane (default)",
            Scenario::BusyNoLane => "busy, no lane (baseline)",
        }
    }
}

/// One run's outcome.
struct Run {
    /// Response arrived -> drained, of each small image, in ms.
    delays: Vec<f64>,
    large_done: u64,
    wall: Duration,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("priority: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let threads = args
        .decode_threads
        .unwrap_or_else(|| Config::default().decode.threads);
    let large = Bytes::from(fixture_server::picture::render(7, 4000, 3000).encode_jpeg(85)?);
    let small = Bytes::from(fixture_server::picture::render(8, 600, 600).encode_jpeg(85)?);
    let alone = |bytes: &[u8]| -> anyhow::Result<f64> {
        let mut times = (0..5)
            .map(|_| {
                let start = Instant::now();
                thumbpipe::thumbnail_from_bytes("x", bytes, TARGET, &Config::default().decode)
                    .map(|_| start.elapsed().as_secs_f64() * 1000.0)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(median_and_range(&mut times).map_or(0.0, |(median, _, _)| median))
    };
    println!(
        "priority: {threads} decode threads, {} runs x {} small images, on {}",
        args.runs,
        args.samples,
        machine()
    );
    println!(
        "one decode on one thread, median of 5: 4000x3000 -> 64x64 {:.1} ms, 600x600 -> 64x64 {:.2} ms",
        alone(&large)?,
        alone(&small)?
    );
    println!();
    println!("| scenario | p50 ms | p99 ms | max ms | p99 vs idle | large decoded per s |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut idle_p99 = None;
    for scenario in Scenario::ALL {
        let (mut p50s, mut p99s, mut maxes, mut rates) = (vec![], vec![], vec![], vec![]);
        for _ in 0..args.runs {
            let mut run = measure(scenario, threads, &large, &small, args.samples)?;
            run.delays.sort_by(f64::total_cmp);
            p50s.push(percentile(&run.delays, 50.0));
            p99s.push(percentile(&run.delays, 99.0));
            maxes.push(run.delays.last().copied().unwrap_or(0.0));
            rates.push(run.large_done as f64 / run.wall.as_secs_f64());
        }
        let cell = |values: &mut Vec<f64>, digits: usize| match median_and_range(values) {
            Some((median, low, high)) => {
                format!("{median:.digits$} ({low:.digits$}-{high:.digits$})")
            }
            None => "-".into(),
        };
        let p99 = median_and_range(&mut p99s.clone()).map_or(0.0, |(median, _, _)| median);
        if scenario == Scenario::Idle {
            idle_p99 = Some(p99);
        }
        let ratio = idle_p99.map_or("-".into(), |idle| format!("{:.1}x", p99 / idle));
        let rate = if scenario == Scenario::Idle {
            "-".into()
        } else {
            cell(&mut rates, 1)
        };
        println!(
            "| {} | {} | {} | {} | {ratio} | {rate} |",
            scenario.name(),
            cell(&mut p50s, 2),
            cell(&mut p99s, 2),
            cell(&mut maxes, 1),
        );
    }
    Ok(())
}

fn measure(
    scenario: Scenario,
    threads: usize,
    large: &Bytes,
    small: &Bytes,
    samples: usize,
) -> anyhow::Result<Run> {
    let arrived = Arc::new(Mutex::new(HashMap::new()));
    let mut config = Config::default();
    config.decode.threads = threads;
    config.fetch.max_per_host = 64;
    config.fetch.max_in_flight = 64;
    config.decode.large_image_pixels = match scenario {
        Scenario::BusyNoLane => u64::MAX,
        Scenario::Idle | Scenario::BusyLane => Config::default().decode.large_image_pixels,
    };
    let mut pipeline = Pipeline::<u64>::builder()
        .config(config)
        .fetcher(answer_from_memory(
            large.clone(),
            small.clone(),
            Arc::clone(&arrived),
        ))
        .build()?;
    let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
    pipeline.set_waker(move || {
        let _ = wake.try_send(());
    });
    // Even rows are small images, odd rows large ones.
    let mut next_row = 0u64;
    let mut request = |pipeline: &mut Pipeline<u64>, large: bool| {
        next_row += 1;
        let row = next_row * 2 + u64::from(large);
        let kind = if large { "large" } else { "small" };
        pipeline.request(
            row,
            &format!("http://memory/{kind}/{row}.jpg"),
            TARGET,
            Priority::Visible,
        );
    };
    let outstanding_large = if scenario == Scenario::Idle {
        0
    } else {
        3 * threads
    };
    for _ in 0..outstanding_large {
        request(&mut pipeline, true);
    }
    // Let the large decodes start before the first small image.
    std::thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let mut next_small = start;
    let (mut delays, mut small_made, mut small_done, mut large_done) = (Vec::new(), 0, 0, 0u64);
    let deadline = start + SMALL_EVERY * (samples + WARM_UP) as u32 + Duration::from_secs(60);
    while delays.len() < samples {
        let now = Instant::now();
        if now > deadline {
            bail!(
                "{}: timed out with {} of {samples} samples",
                scenario.name(),
                delays.len()
            );
        }
        if now >= next_small && small_made < samples + WARM_UP {
            request(&mut pipeline, false);
            small_made += 1;
            next_small += SMALL_EVERY;
        }
        let _ = woken.recv_timeout(next_small.saturating_duration_since(now).min(SMALL_EVERY));
        for done in pipeline.drain() {
            let drained = Instant::now();
            let thumbnail = done.result.context("a load failed")?;
            if done.row % 2 == 1 {
                large_done += 1;
                pipeline.cancel_row(&done.row);
                // Once every small image has been asked for, the large
                // ones run out, so that a starved small one finishes too.
                if small_made < samples + WARM_UP {
                    request(&mut pipeline, true);
                }
                continue;
            }
            let arrival = arrived
                .lock()
                .ok()
                .and_then(|arrived| arrived.get(thumbnail.url.as_ref()).copied())
                .context("a thumbnail with no recorded arrival")?;
            pipeline.cancel_row(&done.row);
            small_done += 1;
            if small_done > WARM_UP {
                delays.push(drained.duration_since(arrival).as_secs_f64() * 1000.0);
            }
        }
    }
    Ok(Run {
        delays,
        large_done,
        wall: start.elapsed(),
    })
}
