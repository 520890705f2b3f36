//! `iced-report`: `thumbpipe::iced` against the pattern iced's gallery
//! example teaches (reqwest, a full-size decode on `spawn_blocking`,
//! `image::Handle::from_rgba`, kept by URL), driven the way an iced app
//! drives its loader, without a window.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin iced-report
//! cargo run --release -p thumbpipe-benches --bin iced-report -- --runs 1 --rows 2000
//! ```
//!
//! Four modes: the gallery pattern, `thumbpipe::iced` asked for every row
//! in view, `thumbpipe::iced` as its docs show it, a `ScrollWatch`'s
//! coast followed first in each pass (rows it flies past not asked for),
//! and `thumbpipe::egui`'s list helper given the same script
//! (`loaders.rs`).
//! Starts `fixture-server` (600x600 JPEGs at `--latency-ms`), then runs
//! itself once per mode and run, each a fresh process: a 60 Hz loop over
//! a list of `--rows` rows of 72 px, 12 in view, that flicks to the bottom
//! and back in 7 s, every row's URL changing every `--refresh-ms` during
//! the flick, then rests at the top until its loader is idle (or 10 s).
//! Each frame asks the loader for the rows in view as an iced app's
//! `update` would, and reads what each row shows as its `view` would. Both
//! modes share the process's executor (a tokio runtime, as iced's `tokio`
//! feature makes), started before the baseline.
//!
//! Prints a table and writes `iced-report.md` to `--out`: peak threads
//! over the baseline, RSS start -> peak, images shown in a row whose URL
//! had changed, how long requests went on after the scroll stopped, the
//! handles alive at the end, and the image requests the server received
//! (and how many of them were dropped before their body was sent). No renderer runs, so RSS counts the
//! loaders' pixels and buffers, not textures.

mod loaders;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use serde::{Deserialize, Serialize};
use thumbpipe::iced::{ScrollWatch, Thumbnails};
use thumbpipe_benches::{ServerProcess, machine, median_and_range};

use self::loaders::{EguiList, Gallery, Loader, Piped};

#[derive(Debug, Parser)]
#[command(about = "thumbpipe::iced against iced's gallery pattern, scrolled by script")]
struct Args {
    /// Rows in the list.
    #[arg(long, default_value_t = 1000)]
    rows: usize,
    /// Runs per mode.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The fixture server's latency.
    #[arg(long, default_value_t = 250)]
    latency_ms: u64,
    /// How often every row's URL changes during the flick.
    #[arg(long, default_value_t = 400)]
    refresh_ms: u64,
    /// Where the report goes.
    #[arg(long, default_value = "benches/results")]
    out: PathBuf,
    /// Internal: run one mode against this server and print its figures.
    #[arg(long, requires = "server")]
    mode: Option<Mode>,
    #[arg(long)]
    server: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
enum Mode {
    Gallery,
    /// `thumbpipe::iced` as its docs show it: a `ScrollWatch` on the
    /// scrolls, its coast followed.
    Thumbpipe,
    /// The same without the watch: every row in view asked for.
    ThumbpipeUnwatched,
    /// `thumbpipe::egui`'s list helper, for the same script in egui.
    Egui,
}

/// One run's figures.
#[derive(Debug, Serialize, Deserialize)]
struct Run {
    baseline_threads: usize,
    peak_threads: usize,
    rss_start_mb: f64,
    rss_peak_mb: f64,
    /// (row, image) pairs shown in a row whose current URL is another's.
    wrong_rows: usize,
    /// From the scroll's last frame to the last frame with requests
    /// unfinished.
    tail_ms: f64,
    handles_at_end: usize,
    /// Loads finished (thumbnails or full images made).
    loads: usize,
    /// Image requests the server received in the run.
    requests: u64,
    /// Of those, responses dropped before their body was all sent (a
    /// cancelled load; over HTTP/1.1 each costs its connection).
    dropped: u64,
}

const VISIBLE: usize = 12;
const ROW_HEIGHT: f32 = 72.0;
const FRAME: Duration = Duration::from_micros(16_667);
const FLICK: Duration = Duration::from_secs(7);

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let (Some(mode), Some(server)) = (args.mode, &args.server) {
        let run = run(mode, server, &args)?;
        println!("{}", serde_json::to_string(&run)?);
        return Ok(());
    }
    let server =
        ServerProcess::fixture_server(&["--latency-ms".into(), args.latency_ms.to_string()])?;
    let exe = std::env::current_exe()?;
    let mut runs: HashMap<&str, Vec<Run>> = HashMap::new();
    for index in 0..args.runs {
        for (name, mode) in [
            ("gallery", "gallery"),
            ("unwatched", "thumbpipe-unwatched"),
            ("thumbpipe", "thumbpipe"),
            ("egui", "egui"),
        ] {
            eprintln!("run {} of {}: {name}", index + 1, args.runs);
            let output = Command::new(&exe)
                .args(["--mode", mode, "--server", server.base_url()])
                .args(["--rows", &args.rows.to_string()])
                .args(["--refresh-ms", &args.refresh_ms.to_string()])
                .output()
                .with_context(|| format!("could not run {name}"))?;
            if !output.status.success() {
                bail!(
                    "{name} failed: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                );
            }
            let stdout = String::from_utf8_lossy(&output.stdout);
            let last = stdout.lines().last().unwrap_or_default();
            runs.entry(name)
                .or_default()
                .push(serde_json::from_str(last)?);
        }
    }
    let report = table(&args, &runs);
    println!("{report}");
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("iced-report.md"), report)?;
    Ok(())
}

fn table(args: &Args, runs: &HashMap<&str, Vec<Run>>) -> String {
    let spread = |runs: &[Run], figure: Figure| {
        let mut values: Vec<f64> = runs.iter().map(figure).collect();
        match median_and_range(&mut values) {
            Some((median, low, high)) if format!("{low:.0}") != format!("{high:.0}") => {
                format!("{median:.0} ({low:.0}-{high:.0})")
            }
            Some((median, ..)) => format!("{median:.0}"),
            None => "-".into(),
        }
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# iced: thumbpipe::iced against the gallery pattern\n\n{} rows of 600x600 JPEGs at {} ms, \
         every URL changed every {} ms during a 7 s flick, {} runs per mode (medians, ranges), {}.\n",
        args.rows,
        args.latency_ms,
        args.refresh_ms,
        args.runs,
        machine()
    );
    let _ = writeln!(
        out,
        "| | gallery pattern | thumbpipe::iced, no scroll watch | thumbpipe::iced | thumbpipe::egui's list |\n|---|---|---|---|---|"
    );
    let rows: [(&str, Figure); 10] = [
        ("threads over baseline (peak)", |r| {
            (r.peak_threads - r.baseline_threads.min(r.peak_threads)) as f64
        }),
        ("baseline threads", |r| r.baseline_threads as f64),
        ("RSS start (MB)", |r| r.rss_start_mb),
        ("RSS peak (MB)", |r| r.rss_peak_mb),
        ("images in a row whose URL changed", |r| r.wrong_rows as f64),
        ("requests after the scroll stopped (ms)", |r| r.tail_ms),
        ("handles alive at the end", |r| r.handles_at_end as f64),
        ("loads finished", |r| r.loads as f64),
        ("requests the server received", |r| r.requests as f64),
        ("of them dropped before their body was sent", |r| {
            r.dropped as f64
        }),
    ];
    let none = Vec::new();
    for (label, figure) in rows {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} |",
            spread(runs.get("gallery").unwrap_or(&none), figure),
            spread(runs.get("unwatched").unwrap_or(&none), figure),
            spread(runs.get("thumbpipe").unwrap_or(&none), figure),
            spread(runs.get("egui").unwrap_or(&none), figure)
        );
    }
    out
}

/// One figure of a run, as the table shows it (whole numbers).
type Figure = fn(&Run) -> f64;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |tasks| tasks.count())
}

/// The list's top row at `elapsed` into the flick: down with an ease in
/// and out, then back.
fn top_row(elapsed: Duration, rows: usize) -> usize {
    let half = FLICK.as_secs_f32() / 2.0;
    let t = elapsed.as_secs_f32();
    let phase = if t < half { t / half } else { 2.0 - t / half }.clamp(0.0, 1.0);
    let eased = phase * phase * (3.0 - 2.0 * phase);
    (eased * rows.saturating_sub(VISIBLE) as f32).round() as usize
}

fn run(mode: Mode, server: &str, args: &Args) -> anyhow::Result<Run> {
    // iced's executor, which every iced app has.
    let executor = tokio::runtime::Runtime::new()?;
    let baseline_threads = threads();
    let rss_start_mb = fixture_server::resident_mb().unwrap_or(0.0);
    let mut loader: Box<dyn Loader> = match mode {
        Mode::Gallery => {
            let (sender, receiver) = std::sync::mpsc::channel();
            Box::new(Gallery {
                runtime: executor.handle().clone(),
                client: reqwest::Client::new(),
                asked: HashSet::new(),
                images: HashMap::new(),
                sender,
                receiver,
                unfinished: Arc::new(AtomicUsize::new(0)),
            })
        }
        Mode::Thumbpipe | Mode::ThumbpipeUnwatched => Box::new(Piped {
            thumbnails: Thumbnails::new(thumbpipe::Config::default())?,
            scrolls: (mode == Mode::Thumbpipe).then(ScrollWatch::default),
            rows: args.rows,
            last_top: None,
        }),
        Mode::Egui => Box::new(EguiList::new()?),
    };
    let stats = |path: &str| format!("{server}/stats{path}");
    fixture_server::blocking_client::post(&stats("/reset"))
        .map_err(|e| anyhow::anyhow!("resetting the server's counters: {e}"))?;
    let (mut peak_threads, mut rss_peak_mb) = (threads(), rss_start_mb);
    let mut wrong: HashSet<(usize, u32)> = HashSet::new();
    let refresh = Duration::from_millis(args.refresh_ms.max(1));
    let start = Instant::now();
    let mut generation = 0;
    let mut last_busy = None;
    let mut next_frame = start;
    loop {
        let elapsed = start.elapsed();
        let flicking = elapsed < FLICK;
        if flicking {
            generation = (elapsed.as_millis() / refresh.as_millis()) as u32;
        }
        let top = if flicking {
            top_row(elapsed, args.rows)
        } else {
            0
        };
        let id =
            |row: usize| (generation as usize * args.rows + row) as u32 % fixture_server::MAX_ID;
        let url_of = |row: usize| format!("{server}/img/{}.jpg", id(row));
        let rows: Vec<(usize, String)> = thumbpipe::iced::rows_in_view(
            top as f32 * ROW_HEIGHT,
            VISIBLE as f32 * ROW_HEIGHT,
            ROW_HEIGHT,
            args.rows,
        )
        .map(|row| (row, url_of(row)))
        .collect();
        loader.show(top as f32 * ROW_HEIGHT, &rows, &url_of);
        // The view: what each row in it shows.
        for (row, url) in &rows {
            if let Some(shown) = loader.shown(*row, url)
                && shown != id(*row)
            {
                wrong.insert((*row, shown));
            }
        }
        peak_threads = peak_threads.max(threads());
        rss_peak_mb = rss_peak_mb.max(fixture_server::resident_mb().unwrap_or(0.0));
        let busy = loader.busy();
        if !flicking {
            if busy {
                last_busy = Some(start.elapsed());
            } else if elapsed > FLICK + Duration::from_millis(500) {
                break;
            }
            if elapsed > FLICK + Duration::from_secs(10) {
                break;
            }
        }
        next_frame += FRAME;
        std::thread::sleep(next_frame.saturating_duration_since(Instant::now()));
    }
    let counted: fixture_server::StatsSnapshot = serde_json::from_slice(
        &fixture_server::blocking_client::get(&stats(""))
            .map_err(|e| anyhow::anyhow!("reading the server's counters: {e}"))?,
    )?;
    let tail_ms = last_busy.map_or(0.0, |busy| {
        busy.saturating_sub(FLICK).as_secs_f64() * 1000.0
    });
    Ok(Run {
        baseline_threads,
        peak_threads,
        rss_start_mb,
        rss_peak_mb,
        wrong_rows: wrong.len(),
        tail_ms,
        handles_at_end: loader.handles(),
        loads: loader.loads(),
        requests: counted.requests_started,
        dropped: counted.responses_aborted + counted.responses_cut,
    })
}
