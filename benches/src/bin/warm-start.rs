//! `warm-start`: what the disk cache gives a restarted app, what a disk hit
//! costs, and whether the directory keeps its budget and survives a kill.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin warm-start
//! cargo run --release -p thumbpipe-benches --bin warm-start -- --runs 1 --soak-requests 20000
//! ```
//!
//! 1. **Launches.** The demo's 200-row list (`demo-app --headless --script
//!    browse --json`, default config) against `fixture-server` processes at
//!    `--latency-ms`, each launch a fresh process. For 600x600 originals
//!    (the demo's) and 3000x3000 ones: without a disk cache; cold (an empty
//!    directory) then warm (the same directory, images fresh by
//!    `max-age=3600`), with the decoded thumbnails kept on disk (the
//!    default) and with the responses only. Then against a server whose
//!    images are stale at once (`max-age=0`), cold then warm, which
//!    revalidates. For each: the time from the first frame to the first
//!    frame in which every visible row shows its image, what the server was
//!    asked and sent, and the bytes left on disk.
//! 2. **One thumbnail.** One image at a time, in this process, against an
//!    in-process server at 0 ms: a network fetch and decode (no disk cache),
//!    a disk hit (read, check, decode), and a memory hit, for the demo's
//!    600x600 JPEGs and for 4000x3000 ones; and the decode alone.
//! 3. **Soak.** `--soak-requests` requests over `--soak-urls` images
//!    (160x160) with a `--soak-budget-mib` disk budget, from a child
//!    process killed with SIGKILL halfway and started again on the same
//!    directory. The directory's bytes are summed every 100 ms: they must
//!    stay within the budget and one entry. The second child must open the
//!    cache, deliver every image with its own id, and not panic.
//!
//! Writes `warm-start.md` to `--out` and prints it. Exits with status 1 if
//! a target is missed.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use fixture_server::{DiskReport, FixtureServer, RunReport};
use serde::{Deserialize, Serialize};
use thumbpipe::{Config, Pipeline, Priority, TargetSize};
use thumbpipe_benches::runs::demo_report;
use thumbpipe_benches::{ServerProcess, Targets, machine, median_and_range, workspace_binary};

#[derive(Debug, Parser)]
#[command(about = "The disk cache: warm launches, the cost of a disk hit, and a soak with a kill")]
struct Args {
    /// Launches of each kind.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Rows in the demo's list.
    #[arg(long, default_value_t = 200)]
    rows: usize,
    /// The fixture server's latency for the launches.
    #[arg(long, default_value_t = 250)]
    latency_ms: u64,
    /// Images timed one at a time, per kind.
    #[arg(long, default_value_t = 60)]
    singles: u32,
    /// Requests of the soak (0 skips it).
    #[arg(long, default_value_t = 100_000)]
    soak_requests: u64,
    /// Distinct images the soak asks for.
    #[arg(long, default_value_t = 20_000)]
    soak_urls: u32,
    /// The soak's disk budget.
    #[arg(long, default_value_t = 64)]
    soak_budget_mib: u64,
    /// Where to write warm-start.md.
    #[arg(long, default_value = "benches/results")]
    out: PathBuf,
    /// Internal: run as the soak's child, loading into this directory.
    #[arg(long, hide = true)]
    soak_child: Option<PathBuf>,
    /// Internal: the soak child's server.
    #[arg(long, hide = true)]
    soak_server: Option<String>,
    /// Internal: the soak child's first request number (its random seed).
    #[arg(long, hide = true, default_value_t = 0)]
    soak_from: u64,
}

fn main() {
    let args = Args::parse();
    let result = match &args.soak_child {
        Some(dir) => soak_child(&args, dir),
        None => run(&args),
    };
    if let Err(error) = result {
        eprintln!("warm-start: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    let scratch = std::env::temp_dir().join(format!("thumbpipe-warm-start-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).context("cannot create a scratch directory")?;
    let mut report = String::new();
    writeln!(report, "# warm-start: the disk cache\n")?;
    writeln!(
        report,
        "Machine: {}. Command: `cargo run --release -p thumbpipe-benches --bin warm-start`. \
         Default config unless a line says otherwise.\n",
        machine()
    )?;
    let mut targets = Targets::default();
    launches(args, &scratch, &mut report, &mut targets)?;
    singles(args, &scratch, &mut report)?;
    if args.soak_requests > 0 {
        soak(args, &scratch, &mut report, &mut targets)?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    write!(report, "\n{}", targets.summary())?;
    print!("{report}");
    std::fs::create_dir_all(&args.out)?;
    let path = args.out.join("warm-start.md");
    std::fs::write(&path, &report).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    if !targets.all_met() {
        std::process::exit(1);
    }
    Ok(())
}

/// One kind of launch, and what its runs measured.
struct Launch {
    name: String,
    /// Which server: an index into the run's servers.
    server: usize,
    /// The disk cache's directory, by name; `None` runs without one.
    dir: Option<String>,
    thumbnails: bool,
    reports: Vec<RunReport>,
}

/// The servers a run starts: (max-age, image side).
const SERVERS: [(u64, u32); 3] = [(3600, 600), (3600, 3000), (0, 600)];

/// The launch kinds, in the order they run (each cold launch before the
/// warm one on its directory), and which of them the targets are about.
struct Kinds {
    all: Vec<Launch>,
    /// The demo's list, default config, warm and fresh.
    warm_fresh: usize,
    /// The warm launch against the server whose images are stale at once.
    warm_stale: usize,
}

fn launch_kinds() -> Kinds {
    let mut all = Vec::new();
    let mut add = |name: String, server: usize, dir: Option<String>, thumbnails: bool| {
        all.push(Launch {
            name,
            server,
            dir,
            thumbnails,
            reports: Vec::new(),
        });
        all.len() - 1
    };
    let mut warm_fresh = 0;
    for (server, side) in [(0, 600), (1, 3000)] {
        add(format!("{side}²: no disk cache"), server, None, true);
        for (thumbnails, what) in [
            (true, "with thumbnails (default)"),
            (false, "responses only"),
        ] {
            let dir = Some(format!("{side}-{thumbnails}"));
            add(
                format!("{side}²: cold, {what}"),
                server,
                dir.clone(),
                thumbnails,
            );
            let warm = add(
                format!("{side}²: **warm**, {what}"),
                server,
                dir,
                thumbnails,
            );
            if side == 600 && thumbnails {
                warm_fresh = warm;
            }
        }
    }
    let dir = Some("stale".to_owned());
    add("600², max-age=0: cold".into(), 2, dir.clone(), true);
    let warm_stale = add(
        "600², max-age=0: **warm, revalidated**".into(),
        2,
        dir,
        true,
    );
    Kinds {
        all,
        warm_fresh,
        warm_stale,
    }
}

fn launches(
    args: &Args,
    scratch: &Path,
    report: &mut String,
    targets: &mut Targets,
) -> anyhow::Result<()> {
    let demo = workspace_binary("demo-app", "demo-app")?;
    let run_demo = |server: &ServerProcess, launch: &Launch, dir: Option<&Path>| {
        let mut command = Command::new(&demo);
        command.args([
            "--headless",
            "--script",
            "browse",
            "--json",
            "--mode",
            "pipeline",
            "--rows",
            &args.rows.to_string(),
            "--server",
            server.base_url(),
            "--disk-thumbnails",
            if launch.thumbnails { "on" } else { "off" },
        ]);
        if let Some(dir) = dir {
            command.arg("--disk-cache").arg(dir);
        }
        demo_report(&mut command, "demo-app")
    };
    let Kinds {
        all: mut kinds,
        warm_fresh,
        warm_stale,
    } = launch_kinds();
    let mut bytes_on_disk = std::collections::BTreeMap::new();
    for run in 0..args.runs {
        eprintln!("launches: run {} of {}", run + 1, args.runs);
        let servers = SERVERS
            .iter()
            .map(|(max_age, side)| {
                ServerProcess::fixture_server(&[
                    "--latency-ms".into(),
                    args.latency_ms.to_string(),
                    "--max-age".into(),
                    max_age.to_string(),
                    "--size".into(),
                    side.to_string(),
                ])
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        for kind in &mut kinds {
            let dir = kind
                .dir
                .as_ref()
                .map(|dir| scratch.join(format!("launch-{run}-{dir}")));
            let launched = run_demo(&servers[kind.server], kind, dir.as_deref())?;
            kind.reports.push(launched);
            if let Some(dir) = &dir {
                bytes_on_disk.insert(kind.name.clone(), bytes_under(dir).0);
            }
        }
    }

    writeln!(
        report,
        "## Launches: the demo's {}-row list at {} ms\n\n\
         `demo-app --headless --script browse --json --mode pipeline --server URL [--disk-cache DIR] \
         [--disk-thumbnails off]`, {} runs of each, each a fresh process; the whole run (first \
         screen, three screens down at a row every 250 ms, back) is counted at the server. The \
         server's images are 600x600 JPEGs (the demo's; 21-25 KB) or 3000x3000 ones (`--size \
         3000`; about 300 KB, a photo library's originals). First screen: from the first frame \
         that drew the list to the first in which every visible row showed its image. Counts \
         are per run, separated by `/`; bytes on disk after the last run.\n",
        args.rows, args.latency_ms, args.runs
    )?;
    writeln!(
        report,
        "| launch | first screen, ms: median (range) | requests by then | requests in all | 304s | image bodies | thumbnails from disk | images from disk | revalidated | from the network | bytes on disk |"
    )?;
    writeln!(report, "|---|---|---|---|---|---|---|---|---|---|---|")?;
    for kind in &kinds {
        let mut first: Vec<f64> = kind
            .reports
            .iter()
            .filter_map(|r| r.first_screen_ms)
            .collect();
        let never = kind.reports.len() - first.len();
        let mut first = median_and_range(&mut first).map_or("never".to_owned(), |(m, lo, hi)| {
            format!("{m:.0} ({lo:.0}-{hi:.0})")
        });
        if never > 0 && first != "never" {
            write!(first, "; never in {never} runs")?;
        }
        let per_run = |f: &dyn Fn(&RunReport) -> u64| -> String {
            let values: Vec<String> = kind.reports.iter().map(|r| f(r).to_string()).collect();
            values.join(" / ")
        };
        let disk = |f: &dyn Fn(&DiskReport) -> u64| -> String {
            let values: Vec<String> = kind
                .reports
                .iter()
                .map(|r| r.disk.as_ref().map_or("-".to_owned(), |d| f(d).to_string()))
                .collect();
            values.join(" / ")
        };
        let bytes = bytes_on_disk
            .get(&kind.name)
            .map_or("-".to_owned(), |b| format!("{:.2} MB", *b as f64 / 1e6));
        writeln!(
            report,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            kind.name,
            first,
            per_run(&|r| r.server_requests_at_first_screen.unwrap_or(0)),
            per_run(&|r| r.server_requests),
            per_run(&|r| r.server_not_modified),
            per_run(&|r| r.server_image_bodies),
            disk(&|d| d.thumbnail_hits),
            disk(&|d| d.hits),
            disk(&|d| d.revalidated),
            disk(&|d| d.misses),
            bytes,
        )?;
    }
    let wrong: u64 = kinds
        .iter()
        .flat_map(|kind| &kind.reports)
        // The fixture's images carry ids: an unknown count cannot pass
        // for zero.
        .map(|r| r.wrong_row_images.unwrap_or(u64::MAX))
        .fold(0, u64::saturating_add);
    writeln!(
        report,
        "\nWrong-row images in every launch together: {wrong}.\n"
    )?;

    let warm = &kinds[warm_fresh].reports;
    let worst_first = warm
        .iter()
        .map(|r| r.first_screen_ms.unwrap_or(f64::INFINITY))
        .fold(0.0, f64::max);
    // Requests for images the cold launch left on disk: by the first
    // screen, and image bodies and disk misses over the whole run (a row
    // whose cold load was cancelled while scrolling is not on disk, and is
    // requested).
    let early: u64 = warm
        .iter()
        .map(|r| r.server_requests_at_first_screen.unwrap_or(u64::MAX))
        .fold(0, u64::saturating_add);
    let fetched_again: u64 = warm
        .iter()
        .map(|r| r.server_image_bodies + r.disk.as_ref().map_or(0, |d| d.misses))
        .sum();
    let requests: u64 = warm.iter().map(|r| r.server_requests).sum();
    let bodies: u64 = kinds[warm_stale]
        .reports
        .iter()
        .map(|r| r.server_image_bodies)
        .sum();
    targets.group("Targets for the launches (the demo's 600x600 list, default config)");
    targets.check(
        "a warm launch with fresh entries asks for none of them by its first screen",
        early == 0,
        format!("{early} requests by the first screen"),
    );
    targets.check(
        "a warm launch with fresh entries fetches none of them again",
        fetched_again == 0,
        format!(
            "{fetched_again} image bodies or disk misses; {requests} requests in all, for rows \
             whose cold load was cancelled while scrolling and so never written"
        ),
    );
    targets.check(
        "a warm launch shows its first screen within 50 ms",
        worst_first <= 50.0,
        format!("slowest {worst_first:.0} ms"),
    );
    targets.check(
        "a stale warm launch gets 304s only",
        bodies == 0,
        format!("{bodies} image bodies sent"),
    );
    targets.check("0 wrong-row images", wrong == 0, format!("{wrong}"));
    writeln!(report, "{}", targets.table("##"))?;
    Ok(())
}

/// Times one image at a time through `pipeline`: request, then wait for
/// the pipeline's waker (as a UI's next frame would) and drain. Returns
/// the times in milliseconds.
fn one_at_a_time(pipeline: &mut Pipeline<u32>, urls: &[String]) -> anyhow::Result<Vec<f64>> {
    let (wake, woken) = std::sync::mpsc::channel();
    let wake = std::sync::Mutex::new(wake);
    pipeline.set_waker(move || {
        if let Ok(wake) = wake.lock() {
            let _ = wake.send(());
        }
    });
    let mut times = Vec::with_capacity(urls.len());
    for url in urls {
        while woken.try_recv().is_ok() {}
        let started = Instant::now();
        pipeline.request(0, url, TargetSize::square(64), Priority::Visible);
        let deadline = started + Duration::from_secs(30);
        let done = loop {
            if let Some(done) = pipeline.drain().pop() {
                break done;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("{url} did not arrive in 30 s");
            }
            let _ = woken.recv_timeout(left);
        };
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        done.result.with_context(|| format!("loading {url}"))?;
        // A new request each time, not the row's current one.
        pipeline.cancel_row(&0);
    }
    Ok(times)
}

fn singles(args: &Args, scratch: &Path, report: &mut String) -> anyhow::Result<()> {
    let server = FixtureServer::start_dedicated(fixture_server::Config {
        latency: Duration::ZERO,
        max_age: Some(Duration::from_secs(3600)),
        ..fixture_server::Config::default()
    })?;
    writeln!(
        report,
        "## One thumbnail: network, disk, memory\n\n\
         One image at a time to 64x64 (request, then drain until it arrives; the pipeline's \
         own threads do the work), {} images of each size, against an in-process server at \
         0 ms. Milliseconds, median (range).\n",
        args.singles
    )?;
    writeln!(
        report,
        "| original | network at 0 ms: fetch + decode | disk, responses only: read + check + decode | disk, thumbnail kept: read + check | memory hit | decode alone | original bytes |"
    )?;
    writeln!(report, "|---|---|---|---|---|---|---|")?;
    for (label, query, offset) in [
        ("600x600 JPEG (the demo's)", "", 0),
        ("4000x3000 JPEG", "?w=4000&h=3000", 1000),
    ] {
        eprintln!("one thumbnail: {label}");
        let urls: Vec<String> = (0..args.singles)
            .map(|i| format!("{}{query}", server.image_url(offset + i)))
            .collect();
        let other: Vec<String> = (0..args.singles)
            .map(|i| format!("{}{query}", server.image_url(offset + 500 + i)))
            .collect();
        // The server draws an image the first time it is asked and keeps
        // it, up to 1 megapixel: ask once before timing, so that drawing
        // the small ones is not counted. Larger ones are drawn for every
        // request, and the network column includes it.
        for url in urls.iter().chain(&other) {
            fixture_server::blocking_client::get(url).map_err(anyhow::Error::msg)?;
        }
        let mut network = Pipeline::<u32>::new(Config::default())?;
        one_at_a_time(&mut network, &other[..2])?; // a connection, warm code
        let mut network_ms = one_at_a_time(&mut network, &urls)?;
        drop(network);

        let dir = scratch.join(format!("singles-{offset}"));
        let mut config = Config::default();
        config.disk.dir = Some(dir.clone());
        let mut filling = Pipeline::<u32>::new(config.clone())?;
        one_at_a_time(&mut filling, &urls)?;
        one_at_a_time(&mut filling, &other[..2])?;
        // Each image's response and its thumbnail.
        let written = || filling.stats().disk.written >= 2 * (u64::from(args.singles) + 2);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !written() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(filling);
        let mut responses = config.clone();
        responses.disk.thumbnails = false;
        let mut warm = Pipeline::<u32>::new(responses)?;
        one_at_a_time(&mut warm, &other[..2])?;
        let mut disk_ms = one_at_a_time(&mut warm, &urls)?;
        let hits = warm.stats().disk.hits;
        if hits < u64::from(args.singles) {
            bail!("only {hits} of {} disk reads were hits", args.singles);
        }
        drop(warm);
        let mut warm = Pipeline::<u32>::new(config)?;
        one_at_a_time(&mut warm, &other[..2])?;
        let mut thumbnail_ms = one_at_a_time(&mut warm, &urls)?;
        let hits = warm.stats().disk.thumbnail_hits;
        if hits < u64::from(args.singles) {
            bail!("only {hits} of {} thumbnail reads were hits", args.singles);
        }
        let mut memory_ms = one_at_a_time(&mut warm, &urls)?;
        drop(warm);

        let mut decode_ms = Vec::new();
        let mut sizes = Vec::new();
        for url in &urls {
            let bytes = fixture_server::blocking_client::get(url).map_err(anyhow::Error::msg)?;
            sizes.push(bytes.len() as f64);
            let started = Instant::now();
            thumbpipe::thumbnail_from_bytes(
                url,
                &bytes,
                TargetSize::square(64),
                &Config::default().decode,
            )?;
            decode_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let cell = |values: &mut Vec<f64>| {
            median_and_range(values).map_or("-".to_owned(), |(m, lo, hi)| {
                format!("{m:.3} ({lo:.3}-{hi:.3})")
            })
        };
        let size = median_and_range(&mut sizes).map_or(0.0, |(m, _, _)| m);
        writeln!(
            report,
            "| {label} | {} | {} | {} | {} | {} | {:.0} KB |",
            cell(&mut network_ms),
            cell(&mut disk_ms),
            cell(&mut thumbnail_ms),
            cell(&mut memory_ms),
            cell(&mut decode_ms),
            size / 1000.0
        )?;
    }
    writeln!(report)?;
    Ok(())
}

/// What a soak child prints, one JSON object a line.
#[derive(Debug, Serialize, Deserialize)]
struct Progress {
    done: u64,
    wrong: u64,
    failed: u64,
    disk_thumbnail_hits: u64,
    disk_hits: u64,
    disk_misses: u64,
    disk_corrupt: u64,
    disk_errors: u64,
    disk_evicted: u64,
    disk_bytes: u64,
    largest_body: u64,
}

/// The soak's child: loads `--soak-requests` random images (from
/// `--soak-urls`) into the cache at `dir`, 64 rows at a time, checking
/// every image's id, and prints its progress every 1,000 requests.
fn soak_child(args: &Args, dir: &Path) -> anyhow::Result<()> {
    let base = args.soak_server.as_deref().context("--soak-server")?;
    let mut config = Config::default();
    config.disk.dir = Some(dir.to_path_buf());
    config.disk.max_bytes = args.soak_budget_mib << 20;
    // A small memory cache, so that repeats go to the disk.
    config.cache.max_entries = 16;
    let mut pipeline = Pipeline::<u32>::new(config)?;
    let mut state = args.soak_from.wrapping_add(1);
    let mut progress = Progress {
        done: 0,
        wrong: 0,
        failed: 0,
        disk_thumbnail_hits: 0,
        disk_hits: 0,
        disk_misses: 0,
        disk_corrupt: 0,
        disk_errors: 0,
        disk_evicted: 0,
        disk_bytes: 0,
        largest_body: 0,
    };
    let mut ids = std::collections::HashMap::new();
    while progress.done < args.soak_requests {
        let batch = (args.soak_requests - progress.done).min(64) as u32;
        for row in 0..batch {
            let id = (fixture_server::splitmix64(&mut state) % u64::from(args.soak_urls)) as u32;
            let url = format!("{base}/img/{id}.jpg?w=160&h=160");
            pipeline.request(row, &url, TargetSize::square(64), Priority::Visible);
            ids.insert(row, id);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut arrived = 0;
        while arrived < batch {
            for done in pipeline.drain() {
                arrived += 1;
                match done.result {
                    Ok(thumbnail) => {
                        let id = fixture_server::decode_id(
                            &thumbnail.pixels,
                            thumbnail.width,
                            thumbnail.height,
                        );
                        if id != ids.get(&done.row).copied() {
                            progress.wrong += 1;
                        }
                    }
                    Err(_) => progress.failed += 1,
                }
            }
            if Instant::now() > deadline {
                bail!("a batch did not finish in 60 s");
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        pipeline.end_frame();
        pipeline.end_frame();
        let before = progress.done;
        progress.done += u64::from(batch);
        if progress.done / 1000 != before / 1000 || progress.done == args.soak_requests {
            let disk = pipeline.stats().disk;
            progress.disk_thumbnail_hits = disk.thumbnail_hits;
            progress.disk_hits = disk.hits;
            progress.disk_misses = disk.misses;
            progress.disk_corrupt = disk.corrupt;
            progress.disk_errors = disk.errors;
            progress.disk_evicted = disk.evicted;
            progress.disk_bytes = disk.bytes;
            println!("{}", serde_json::to_string(&progress)?);
        }
    }
    Ok(())
}

/// Bytes of the files under `dir` (apparent sizes), and the largest.
fn bytes_under(dir: &Path) -> (u64, u64) {
    let (mut total, mut largest) = (0, 0);
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                total += metadata.len();
                largest = largest.max(metadata.len());
            }
        }
    }
    (total, largest)
}

fn soak(
    args: &Args,
    scratch: &Path,
    report: &mut String,
    targets: &mut Targets,
) -> anyhow::Result<()> {
    let server = ServerProcess::fixture_server(&[
        "--latency-ms".into(),
        "0".into(),
        "--max-age".into(),
        "3600".into(),
    ])?;
    let dir = scratch.join("soak");
    let budget = args.soak_budget_mib << 20;
    // Sums the directory every 100 ms while the children run, each time
    // with the child stopped (SIGSTOP), so that the sum is of one moment:
    // summed while files are renamed and removed, a walk counts some twice.
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let largest = Arc::new(AtomicU64::new(0));
    let running = Arc::new(AtomicU32::new(0));
    let samples = Arc::new(AtomicU64::new(0));
    let watcher = {
        let (dir, stop, peak, largest, running, samples) = (
            dir.clone(),
            Arc::clone(&stop),
            Arc::clone(&peak),
            Arc::clone(&largest),
            Arc::clone(&running),
            Arc::clone(&samples),
        );
        std::thread::Builder::new()
            .name("soak-watcher".into())
            .spawn(move || {
                let signal = |signal: &str, pid: u32| {
                    Command::new("kill")
                        .args([signal, &pid.to_string()])
                        .status()
                        .is_ok_and(|status| status.success())
                };
                while !stop.load(Ordering::Relaxed) {
                    let pid = running.load(Ordering::Relaxed);
                    if pid != 0 && signal("-STOP", pid) {
                        let (total, big) = bytes_under(&dir);
                        signal("-CONT", pid);
                        peak.fetch_max(total, Ordering::Relaxed);
                        largest.fetch_max(big, Ordering::Relaxed);
                        samples.fetch_add(1, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })?
    };
    let exe = std::env::current_exe()?;
    let child = |from: u64, requests: u64| -> anyhow::Result<std::process::Child> {
        Command::new(&exe)
            .arg("--soak-child")
            .arg(&dir)
            .args(["--soak-server", server.base_url()])
            .args(["--soak-from", &from.to_string()])
            .args(["--soak-requests", &requests.to_string()])
            .args(["--soak-urls", &args.soak_urls.to_string()])
            .args(["--soak-budget-mib", &args.soak_budget_mib.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .context("could not start the soak child")
    };
    let read_progress = |line: std::io::Result<String>| -> Option<Progress> {
        serde_json::from_str(&line.ok()?).ok()
    };

    let half = args.soak_requests / 2;
    eprintln!("soak: first child, killed after {half} requests");
    let started = Instant::now();
    let mut first = child(0, args.soak_requests)?;
    running.store(first.id(), Ordering::Relaxed);
    let mut killed_at = None;
    let stdout = first.stdout.take().context("no stdout")?;
    for progress in BufReader::new(stdout).lines().map_while(&read_progress) {
        if progress.done >= half {
            running.store(0, Ordering::Relaxed);
            first.kill()?; // SIGKILL
            killed_at = Some(progress);
            break;
        }
    }
    let status = first.wait()?;
    let first_took = started.elapsed();
    let killed_at = killed_at.context("the first soak child ended before it was killed")?;
    let (at_kill, _) = bytes_under(&dir);

    let rest = args.soak_requests - killed_at.done;
    eprintln!("soak: second child, {rest} requests on the same directory");
    let started = Instant::now();
    let mut second = child(killed_at.done, rest)?;
    running.store(second.id(), Ordering::Relaxed);
    let stdout = second.stdout.take().context("no stdout")?;
    let last = BufReader::new(stdout)
        .lines()
        .map_while(&read_progress)
        .last();
    running.store(0, Ordering::Relaxed);
    let second_status = second.wait()?;
    let second_took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    let (at_end, _) = bytes_under(&dir);
    let peak = peak.load(Ordering::Relaxed);
    let largest = largest.load(Ordering::Relaxed);
    let last = last.context("the second soak child printed nothing")?;

    writeln!(
        report,
        "## Soak: {} requests over {} images, {} MiB budget, killed halfway\n\n\
         Images 160x160 JPEG at 0 ms, to 64x64 thumbnails (kept on disk too: 16 KB of RGBA \
         each, beside the 5-6 KB response), 64 rows at a time, ids checked. Non-default: the memory \
         cache holds 16 thumbnails (`cache.max_entries = 16`), so that repeats go to the disk. \
         The directory's bytes (apparent sizes of every file: bodies, index, temporary files) \
         summed every 100 ms with the child stopped (SIGSTOP), so that each sum is of one \
         moment.\n",
        args.soak_requests, args.soak_urls, args.soak_budget_mib
    )?;
    writeln!(
        report,
        "| child | requests | took | wrong ids | failed | thumbnails from disk | images from disk | from the network | evicted | corrupt | errors | exit |"
    )?;
    writeln!(report, "|---|---|---|---|---|---|---|---|---|---|---|---|")?;
    for (name, progress, took, status) in [
        (
            "first (SIGKILL)",
            &killed_at,
            first_took,
            status.to_string(),
        ),
        (
            "second (reopened)",
            &last,
            second_took,
            second_status.to_string(),
        ),
    ] {
        writeln!(
            report,
            "| {name} | {} | {:.1} s | {} | {} | {} | {} | {} | {} | {} | {} | {status} |",
            progress.done,
            took.as_secs_f64(),
            progress.wrong,
            progress.failed,
            progress.disk_thumbnail_hits,
            progress.disk_hits,
            progress.disk_misses,
            progress.disk_evicted,
            progress.disk_corrupt,
            progress.disk_errors,
        )?;
    }
    let mib = |bytes: u64| bytes as f64 / f64::from(1 << 20);
    // One entry: its body and an index file of a few lines.
    let allowed = budget + largest + 4096;
    writeln!(
        report,
        "\nDirectory: peak {:.2} MiB over {} samples (budget {} MiB, largest file {:.1} KiB), \
         {:.2} MiB at the kill, {:.2} MiB at the end; the ledger's count at the end: {:.2} MiB. \
         Peak {peak} bytes against {budget} + one entry = {allowed}.\n",
        mib(peak),
        samples.load(Ordering::Relaxed),
        args.soak_budget_mib,
        largest as f64 / 1024.0,
        mib(at_kill),
        mib(at_end),
        mib(last.disk_bytes),
    )?;
    targets.group(format!(
        "Targets for the soak ({} requests, a {} MiB budget, a kill halfway)",
        args.soak_requests, args.soak_budget_mib
    ));
    targets.check(
        "the directory stays within the budget and one entry",
        peak <= allowed,
        format!("peak {:.2} MiB against {:.2} MiB", mib(peak), mib(allowed)),
    );
    targets.check(
        "the reopened child opens the cache and finishes every request",
        second_status.success() && last.done == rest,
        format!("{second_status} after {} of {rest} requests", last.done),
    );
    let wrong = killed_at.wrong + last.wrong;
    targets.check("0 images with another id", wrong == 0, format!("{wrong}"));
    writeln!(report, "{}", targets.table("##"))?;
    Ok(())
}
