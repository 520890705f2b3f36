//! `scroll-report`: the before/after table. The demo's scripted flick in
//! each mode, as separate processes against one fixture server, repeated,
//! with and without the list refreshing, and once more in a real window.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin scroll-report
//! cargo run --release -p thumbpipe-benches --bin scroll-report -- --rows 2000 --runs 1 --no-window
//! cargo run --release -p thumbpipe-benches --bin scroll-report -- --fling-only
//! cargo run --release -p thumbpipe-benches --bin scroll-report -- --fling-only --layout grid
//! ```
//!
//! Starts `fixture-server` (600x600 JPEGs at `--latency-ms`), then runs
//! `demo-app --headless --script flick --json` for `naive`, `egui-extras`,
//! `egui-image` and `pipeline`, `--runs` times each, without refresh and with
//! `--refresh-ms`; then `--script browse` (down three screens at a reading
//! pace, a stop, back up) `--runs` times per mode. Each run is a fresh
//! process, so no mode inherits another's threads, memory or connections.
//! Then, unless `--no-window`, one windowed flick per mode under `xvfb-run`
//! (software rendering, real texture uploads). Then `--script fling` (four
//! flicks through egui's kinetic scrolling, 2 s at rest after each coast)
//! `--runs` times per mode, and for `egui-image` and `pipeline` once more
//! with `--coast-prediction off`; `--fling-only` runs only these and writes
//! them to `fling-report.md`. `--layout grid` runs every script on the
//! demo's photo grid instead of its list (`fling-report-grid.md`, ...).
//!
//! Writes `scroll-report.md` (the tables, the targets for thumbpipe's two
//! modes and whether each is met) and `frame-times.png` (frame time over the
//! flick for every mode) to `--out`, and prints the tables. Exits with
//! failure when a target is missed, after writing the report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use clap::Parser;
use fixture_server::{FlingReport, RunReport};
use indicatif::{ProgressBar, ProgressStyle};
use thumbpipe_benches::runs::{FlickArgs, cancelled_share, demo_report, median, settle, spread};
use thumbpipe_benches::{ServerProcess, Targets, machine, median_and_range, workspace_binary};

#[derive(Debug, Parser)]
#[command(about = "The demo's scripted flick in every mode: the before/after table")]
struct Args {
    #[command(flatten)]
    flick: FlickArgs,
    /// Skip the runs in a window under Xvfb.
    #[arg(long)]
    no_window: bool,
    /// Run only the flings (every mode, prediction on and off) and write
    /// `fling-report.md`.
    #[arg(long)]
    fling_only: bool,
    /// The demo's layout: `list`, or `grid` (`--rows` rows of as many
    /// cells as fit the window; the reports end in `-grid`).
    #[arg(long, default_value = "list", value_parser = ["list", "grid"])]
    layout: String,
    /// Where the report and the plot go.
    #[arg(long, default_value = "benches/results")]
    out: PathBuf,
}

const MODES: [&str; 4] = ["naive", "egui-extras", "egui-image", "pipeline"];
/// The modes that load through thumbpipe, held to its targets.
const THUMBPIPE_MODES: [&str; 2] = ["egui-image", "pipeline"];
/// thumbpipe's default cache and texture budgets (`Config`), in MB.
const CACHE_MB: f64 = 64.0 * 1024.0 * 1024.0 / 1e6;
const TEXTURE_MB: f64 = 32.0 * 1024.0 * 1024.0 / 1e6;

/// The fling section's columns: (label, mode, `--coast-prediction`).
const FLING_COLUMNS: [(&str, &str, Option<&str>); 6] = [
    ("naive", "naive", None),
    ("egui-extras", "egui-extras", None),
    ("egui-image", "egui-image", Some("on")),
    ("egui-image, prediction off", "egui-image", Some("off")),
    ("pipeline", "pipeline", Some("on")),
    ("pipeline, prediction off", "pipeline", Some("off")),
];

/// The runs of one mode in one setting.
struct Column {
    mode: &'static str,
    runs: Vec<RunReport>,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("scroll-report: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    if args.flick.runs == 0 || args.flick.rows == 0 {
        bail!("--runs and --rows must be at least 1");
    }
    let demo = workspace_binary("demo-app", "demo-app")?;
    let server = ServerProcess::fixture_server(&[
        "--latency-ms".into(),
        args.flick.latency_ms.to_string(),
        "--size".into(),
        "600".into(),
    ])?;
    if args.fling_only {
        return fling_only(&args, &demo, &server);
    }
    let window = !args.no_window && xvfb_available();
    let total = MODES.len() * (3 * args.flick.runs + usize::from(window))
        + FLING_COLUMNS.len() * args.flick.runs;
    let bar = progress(total)?;
    let settings = [None, Some(args.flick.refresh_ms)];
    let mut tables = Vec::new();
    for refresh in settings {
        let mut columns = Vec::new();
        for mode in MODES {
            let mut runs = Vec::new();
            for run in 0..args.flick.runs {
                bar.set_message(format!("{mode}, run {}{}", run + 1, refresh_label(refresh)));
                let flick = Flick {
                    demo: &demo,
                    server: server.base_url(),
                    mode,
                    script: "flick",
                    args: &args,
                    refresh,
                    coast_prediction: None,
                };
                runs.push(flick.run(false)?);
                bar.inc(1);
            }
            columns.push(Column { mode, runs });
        }
        tables.push((refresh, columns));
    }
    let mut browsing = Vec::new();
    for mode in MODES {
        let mut runs = Vec::new();
        for run in 0..args.flick.runs {
            bar.set_message(format!("{mode}, browse {}", run + 1));
            let browse = Flick {
                demo: &demo,
                server: server.base_url(),
                mode,
                script: "browse",
                args: &args,
                refresh: None,
                coast_prediction: None,
            };
            runs.push(browse.run(false)?);
            bar.inc(1);
        }
        browsing.push(Column { mode, runs });
    }
    let mut windowed = Vec::new();
    if window {
        for mode in MODES {
            bar.set_message(format!("{mode} in a window"));
            let flick = Flick {
                demo: &demo,
                server: server.base_url(),
                mode,
                script: "flick",
                args: &args,
                refresh: Some(args.flick.refresh_ms),
                coast_prediction: None,
            };
            windowed.push(Column {
                mode,
                runs: vec![flick.run(true)?],
            });
            bar.inc(1);
        }
    }
    let flinging = fling_runs(&args, &demo, &server, &bar)?;
    bar.finish_and_clear();

    let suffix = output_suffix(&args)?;
    let plot = args.out.join(format!("frame-times{suffix}.png"));
    if let Some((_, columns)) = tables.last() {
        plot_frame_times(&plot, columns, &args)?;
    }
    let mut targets = Targets::default();
    let mut markdown = report(
        &args,
        &tables,
        &browsing,
        &windowed,
        window,
        &plot,
        &mut targets,
    );
    markdown.push('\n');
    markdown.push_str(&fling_report(&args, &flinging, &mut targets));
    markdown.push('\n');
    markdown.push_str(&targets.summary());
    let path = args.out.join(format!("scroll-report{suffix}.md"));
    std::fs::write(&path, &markdown).with_context(|| format!("cannot write {}", path.display()))?;
    println!("{markdown}");
    println!("written: {} and {}", path.display(), plot.display());
    exit_if_missed(&targets)
}

/// Creates `--out`; the suffix of the files written there: none for the
/// default 200 rows, `-N` for N rows.
fn output_suffix(args: &Args) -> anyhow::Result<String> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let rows = if args.flick.rows == 200 {
        String::new()
    } else {
        format!("-{}", args.flick.rows)
    };
    let layout = if args.layout == "list" {
        String::new()
    } else {
        format!("-{}", args.layout)
    };
    Ok(format!("{rows}{layout}"))
}

/// A progress bar of `total` runs.
fn progress(total: usize) -> anyhow::Result<ProgressBar> {
    Ok(ProgressBar::new(total as u64).with_style(
        ProgressStyle::with_template(
            "{bar:40} {pos}/{len} runs, elapsed {elapsed}, eta {eta} {msg}",
        )
        .context("progress bar template")?,
    ))
}

fn refresh_label(refresh: Option<u64>) -> String {
    refresh.map_or_else(String::new, |ms| format!(", refresh {ms} ms"))
}

/// One run of the demo's scripted flick.
struct Flick<'a> {
    demo: &'a Path,
    server: &'a str,
    mode: &'a str,
    /// `flick`, `browse` or `fling`.
    script: &'a str,
    args: &'a Args,
    refresh: Option<u64>,
    /// `--coast-prediction`, for the modes that have it.
    coast_prediction: Option<&'a str>,
}

impl Flick<'_> {
    fn run(&self, window: bool) -> anyhow::Result<RunReport> {
        let mut command = if window {
            let mut xvfb = Command::new("xvfb-run");
            xvfb.args(["-a", "-s", "-screen 0 900x1000x24"])
                .arg(self.demo);
            // winit wants a runtime directory, which a bare session lacks.
            if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
                let dir = std::env::temp_dir().join("scroll-report-xdg");
                std::fs::create_dir_all(&dir)?;
                xvfb.env("XDG_RUNTIME_DIR", dir);
            }
            xvfb
        } else {
            let mut demo = Command::new(self.demo);
            demo.arg("--headless");
            demo
        };
        command.args(["--script", self.script, "--json", "--mode", self.mode]);
        command.args(["--rows", &self.args.flick.rows.to_string()]);
        command.args(["--layout", &self.args.layout]);
        command.args(["--server", self.server]);
        command.args(["--latency-ms", &self.args.flick.latency_ms.to_string()]);
        if let Some(ms) = self.refresh {
            command.args(["--refresh-ms", &ms.to_string()]);
        }
        if let Some(switch) = self.coast_prediction {
            command.args(["--coast-prediction", switch]);
        }
        demo_report(&mut command, &format!("demo-app --mode {}", self.mode))
    }
}

/// The fling script `--runs` times in every column of [`FLING_COLUMNS`].
fn fling_runs(
    args: &Args,
    demo: &Path,
    server: &ServerProcess,
    bar: &ProgressBar,
) -> anyhow::Result<Vec<Column>> {
    let mut columns = Vec::new();
    for (label, mode, coast_prediction) in FLING_COLUMNS {
        let mut runs = Vec::new();
        for run in 0..args.flick.runs {
            bar.set_message(format!("{label}, fling {}", run + 1));
            let fling = Flick {
                demo,
                server: server.base_url(),
                mode,
                script: "fling",
                args,
                refresh: None,
                coast_prediction,
            };
            runs.push(fling.run(false)?);
            bar.inc(1);
        }
        columns.push(Column { mode: label, runs });
    }
    Ok(columns)
}

/// A report's title, machine and the command that makes it again, with
/// `flags` (each followed by a space) before the shared ones.
fn heading(title: &str, args: &Args, flags: &str) -> String {
    format!(
        "# {title}: {} rows{}, {} ms latency\n\n{}; {} runs per cell, median (range).\n\
         Command: `cargo run --release -p thumbpipe-benches --bin scroll-report -- {flags}--rows \
         {} --runs {} --latency-ms {}{}`.\n",
        args.flick.rows,
        if args.layout == "grid" {
            " of a grid (cells of 64 points, as many to a row as fit the window)"
        } else {
            ""
        },
        args.flick.latency_ms,
        machine(),
        args.flick.runs,
        args.flick.rows,
        args.flick.runs,
        args.flick.latency_ms,
        if args.layout == "list" {
            String::new()
        } else {
            format!(" --layout {}", args.layout)
        },
    )
}

/// `--fling-only`: the flings alone, to `fling-report.md`.
fn fling_only(args: &Args, demo: &Path, server: &ServerProcess) -> anyhow::Result<()> {
    let bar = progress(FLING_COLUMNS.len() * args.flick.runs)?;
    let columns = fling_runs(args, demo, server, &bar)?;
    bar.finish_and_clear();
    let mut targets = Targets::default();
    let flings = fling_report(args, &columns, &mut targets);
    let markdown = format!(
        "{}\n{flings}\n{}",
        heading("fling-report", args, "--fling-only "),
        targets.summary()
    );
    let suffix = output_suffix(args)?;
    let path = args.out.join(format!("fling-report{suffix}.md"));
    std::fs::write(&path, &markdown).with_context(|| format!("cannot write {}", path.display()))?;
    println!("{markdown}");
    println!("written: {}", path.display());
    exit_if_missed(&targets)
}

/// One figure of every fling, per fling: `a / b / c / d`, each the median
/// over the runs; `-` where a run has no such fling or figure.
fn per_fling(
    runs: &[RunReport],
    decimals: usize,
    figure: impl Fn(&FlingReport) -> Option<f64>,
) -> String {
    let flings = runs
        .iter()
        .filter_map(|run| run.flings.as_ref().map(Vec::len))
        .max()
        .unwrap_or(0);
    (0..flings)
        .map(|i| {
            let mut values: Vec<f64> = runs
                .iter()
                .filter_map(|run| run.flings.as_ref()?.get(i))
                .filter_map(&figure)
                .collect();
            let missing = values.len() < runs.len();
            match median_and_range(&mut values) {
                Some((median, ..)) if !missing => format!("{median:.decimals$}"),
                Some((median, ..)) => format!("{median:.decimals$}*"),
                None => "-".to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

fn fling_rows() -> Vec<Row> {
    let own: Vec<Row> = vec![
        (
            "release velocity, points/s",
            Box::new(|r| per_fling(r, 0, |f| Some(f64::from(f.release_velocity)))),
        ),
        (
            "coast: distance, points",
            Box::new(|r| per_fling(r, 0, |f| Some(f64::from(f.distance)))),
        ),
        (
            "coast: duration (egui's velocity to 0), s",
            Box::new(|r| per_fling(r, 2, |f| Some(f.coast_ms / 1000.0))),
        ),
        (
            "settle after the coast stops, ms",
            Box::new(|r| per_fling(r, 0, |f| f.settle_ms)),
        ),
        (
            "settle after the list slows under a point a frame, ms",
            Box::new(|r| per_fling(r, 0, |f| f.settle_from_slow_ms)),
        ),
        (
            "last placeholder after the release, ms",
            Box::new(|r| per_fling(r, 0, |f| Some(f.last_placeholder_ms))),
        ),
        (
            "(frame, drawn row) pairs without their image",
            Box::new(|r| per_fling(r, 0, |f| Some(f.placeholder_row_frames as f64))),
        ),
        (
            "server requests",
            Box::new(|r| per_fling(r, 0, |f| Some(f.requests as f64))),
        ),
        (
            "image bytes sent, KB",
            Box::new(|r| per_fling(r, 0, |f| Some(f.bytes as f64 / 1000.0))),
        ),
        (
            "all flings: server requests, KB sent",
            Box::new(|r| {
                format!(
                    "{}, {}",
                    spread(r, 0, |x| fling_total(x, |f| f.requests as f64)),
                    spread(r, 0, |x| fling_total(x, |f| f.bytes as f64 / 1000.0))
                )
            }),
        ),
    ];
    const SHARED: [&str; 4] = [
        "frame time p99, ms",
        "stalls over 50 ms: count, total ms",
        "peak threads (baseline)",
        "wrong-row images, of images shown",
    ];
    own.into_iter()
        .chain(
            rows(0.0, true)
                .into_iter()
                .filter(|(name, _)| SHARED.contains(name)),
        )
        .collect()
}

fn fling_total(run: &RunReport, figure: impl Fn(&FlingReport) -> f64) -> f64 {
    run.flings.iter().flatten().map(figure).sum()
}

/// The fling section: the table and the targets of the thumbpipe modes.
fn fling_report(args: &Args, columns: &[Column], targets: &mut Targets) -> String {
    let mut out = format!(
        "## Flings: four flicks through egui's kinetic scrolling, 2 s at rest after each \
         (headless, {} ms latency)\n\n\
         Each cell gives fling 1 / 2 / 3 / 4 (drag speeds {}), the median over the runs. \
         The coast stops when egui's velocity is 0; the list moves under a point a frame \
         about 2 s before that. Settle: to the first frame in which every row drawn shows \
         its own image.\n\n",
        args.flick.latency_ms, "2500 / 5000 / 12000 / -9000 points/s",
    );
    table(&mut out, columns, &fling_rows());
    out.push('\n');
    for mode in THUMBPIPE_MODES {
        let on = columns.iter().find(|c| c.mode == mode);
        let off_label = format!("{mode}, prediction off");
        let off = columns.iter().find(|c| c.mode == off_label);
        if let (Some(on), Some(off)) = (on, off) {
            out.push_str(&fling_targets(mode, &on.runs, &off.runs, targets));
            out.push('\n');
        }
    }
    out
}

/// A thumbpipe mode's fling targets, with the prediction on, against the
/// same mode with it off.
fn fling_targets(mode: &str, on: &[RunReport], off: &[RunReport], targets: &mut Targets) -> String {
    let flings = |runs: &[RunReport]| -> Vec<FlingReport> {
        runs.iter()
            .flat_map(|r| r.flings.clone().unwrap_or_default())
            .collect()
    };
    let (on_flings, off_flings) = (flings(on), flings(off));
    let long: Vec<&FlingReport> = on_flings.iter().filter(|f| f.coast_ms >= 500.0).collect();
    let worst_settle = long
        .iter()
        .map(|f| f.settle_ms.unwrap_or(f64::INFINITY))
        .fold(0.0, f64::max);
    let total = |runs: &[RunReport], figure: &dyn Fn(&FlingReport) -> f64| {
        median(runs, |x| fling_total(x, figure))
    };
    let (requests_on, requests_off) = (
        total(on, &|f| f.requests as f64),
        total(off, &|f| f.requests as f64),
    );
    let (bytes_on, bytes_off) = (
        total(on, &|f| f.bytes as f64),
        total(off, &|f| f.bytes as f64),
    );
    let worst_off_settle = off_flings
        .iter()
        .map(|f| f.settle_ms.unwrap_or(f64::INFINITY))
        .fold(0.0, f64::max);
    let worst = |runs: &[RunReport], figure: &dyn Fn(&RunReport) -> f64| {
        runs.iter().map(figure).fold(f64::MIN, f64::max)
    };
    let last_placeholder = |flings: &[FlingReport]| {
        flings
            .iter()
            .map(|f| f.last_placeholder_ms)
            .fold(0.0, f64::max)
    };
    let checks: Vec<(String, bool, String)> = vec![
        (
            "settle <= 17 ms after every coast of 0.5 s or more".into(),
            !long.is_empty() && worst_settle <= 17.0,
            format!(
                "worst {worst_settle:.0} ms over {} flings (prediction off: worst {worst_off_settle:.0} ms)",
                long.len()
            ),
        ),
        (
            "every drawn row shows its image within 1 s of the release, in every fling".into(),
            !on_flings.is_empty() && last_placeholder(&on_flings) <= 1000.0,
            format!(
                "worst {:.0} ms (prediction off: worst {:.0} ms)",
                last_placeholder(&on_flings),
                last_placeholder(&off_flings)
            ),
        ),
        (
            "fewer server requests than with the prediction off".into(),
            requests_on < requests_off,
            format!("{requests_on:.0} against {requests_off:.0} (median of the runs' totals)"),
        ),
        (
            "fewer image bytes than with the prediction off".into(),
            bytes_on < bytes_off,
            format!(
                "{:.0} KB against {:.0} KB",
                bytes_on / 1000.0,
                bytes_off / 1000.0
            ),
        ),
        (
            "0 wrong-row images".into(),
            worst(on, &|x| wrong_rows(x)) == 0.0,
            format!("worst {}", worst(on, &|x| wrong_rows(x))),
        ),
        (
            "frame p99 <= 16.7 ms, no stall over 50 ms".into(),
            worst(on, &|x| x.frame_ms_p99) <= 16.7
                && worst(on, &|x| x.stalls_over_50ms as f64) == 0.0,
            format!(
                "worst p99 {:.2} ms, {} stalls",
                worst(on, &|x| x.frame_ms_p99),
                worst(on, &|x| x.stalls_over_50ms as f64)
            ),
        ),
    ];
    targets.group(format!(
        "Fling targets for `{mode}` (prediction on; every run must meet them)"
    ));
    for (target, met, measured) in checks {
        targets.check(target, met, measured);
    }
    targets.table("###")
}

/// Ends the run with failure when a target was missed; the report says
/// which.
fn exit_if_missed(targets: &Targets) -> anyhow::Result<()> {
    if !targets.all_met() {
        eprintln!("scroll-report: {}", targets.summary().trim_end());
        std::process::exit(1);
    }
    Ok(())
}

/// Wrong-row images as a figure; an unknown count (`None`) counts as the
/// worst, so that it can never pass for zero.
fn wrong_rows(report: &RunReport) -> f64 {
    report.wrong_row_images.map_or(f64::INFINITY, |n| n as f64)
}

fn xvfb_available() -> bool {
    let found = Command::new("sh")
        .args(["-c", "command -v xvfb-run"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        eprintln!(
            "scroll-report: xvfb-run not found, skipping the windowed runs \
             (apt-get install -y xvfb libgl1-mesa-dri)"
        );
    }
    found
}

/// The nominal flick time: 438 frames per 200 rows at 60 Hz.
fn nominal_flick_s(rows: usize) -> f64 {
    (438 * rows).div_ceil(200) as f64 / 60.0
}

type Row = (&'static str, Box<dyn Fn(&[RunReport]) -> String>);

/// The table's rows, in the order of the design's before/after table.
fn rows(nominal: f64, refreshing: bool) -> Vec<Row> {
    let mut rows: Vec<Row> = vec![
        (
            "peak threads (baseline)",
            Box::new(|r| {
                format!(
                    "{} ({})",
                    spread(r, 0, |x| x.peak_threads as f64),
                    spread(r, 0, |x| x.baseline_threads as f64)
                )
            }),
        ),
        (
            "peak threads parked in a blocking fetch",
            Box::new(|r| spread(r, 0, |x| x.peak_blocked_io_threads as f64)),
        ),
        (
            "frame time p50, ms",
            Box::new(|r| spread(r, 2, |x| x.frame_ms_p50)),
        ),
        (
            "frame time p99, ms",
            Box::new(|r| spread(r, 2, |x| x.frame_ms_p99)),
        ),
        (
            "frame time max, ms",
            Box::new(|r| spread(r, 1, |x| x.frame_ms_max)),
        ),
        (
            "stalls over 50 ms: count, total ms",
            Box::new(|r| {
                format!(
                    "{}, {}",
                    spread(r, 0, |x| x.stalls_over_50ms as f64),
                    spread(r, 0, |x| x.stall_total_ms)
                )
            }),
        ),
        (
            "flick wall time, s",
            Box::new(move |r| {
                let over = (median(r, |x| x.flick_s) / nominal - 1.0) * 100.0;
                format!("{} ({over:+.1}%)", spread(r, 2, |x| x.flick_s))
            }),
        ),
        (
            "RSS start -> peak, MB",
            Box::new(|r| {
                format!(
                    "{} -> {}",
                    spread(r, 1, |x| x.rss_start_mb),
                    spread(r, 1, |x| x.rss_peak_mb)
                )
            }),
        ),
        (
            "requests completed / cancelled",
            Box::new(|r| {
                format!(
                    "{} / {}",
                    spread(r, 0, |x| x.requests_completed as f64),
                    spread(r, 0, |x| x.requests_cancelled as f64)
                )
            }),
        ),
        (
            "server: completed / aborted",
            Box::new(|r| {
                format!(
                    "{} / {}",
                    spread(r, 0, |x| x.server_completed as f64),
                    spread(r, 0, |x| x.server_aborted as f64)
                )
            }),
        ),
        (
            "loads for rows that left: cancelled in time",
            Box::new(|r| {
                if r.iter().any(|x| x.requests_abandoned.is_none()) {
                    return "never cancelled".to_owned();
                }
                spread(r, 1, |x| cancelled_share(x) * 100.0) + "%"
            }),
        ),
    ];
    if refreshing {
        rows.push((
            "wrong-row images, of images shown",
            Box::new(|r| {
                format!(
                    "{} of {}",
                    spread(r, 0, wrong_rows),
                    spread(r, 0, |x| x.images_shown as f64)
                )
            }),
        ));
    }
    rows.push((
        "requests still finishing after the scroll stopped, ms",
        Box::new(|r| spread(r, 0, |x| x.tail_after_stop_ms)),
    ));
    rows.push((
        "settled (every visible row shows its image) after the scroll stopped, ms",
        Box::new(settle),
    ));
    rows.push(("live textures at peak, MB", Box::new(texture_peak)));
    rows
}

/// The browse table's rows: its own, then some of the flick table's.
fn browse_rows(nominal: f64) -> Vec<Row> {
    const SHARED: [&str; 5] = [
        "settled (every visible row shows its image) after the scroll stopped, ms",
        "live textures at peak, MB",
        "frame time p99, ms",
        "RSS start -> peak, MB",
        "requests completed / cancelled",
    ];
    let placeholders: Row = (
        "(frame, visible row) pairs without their image on the way back",
        Box::new(|r| spread(r, 0, |x| x.placeholder_row_frames_back.unwrap_or(0) as f64)),
    );
    std::iter::once(placeholders)
        .chain(
            rows(nominal, false)
                .into_iter()
                .filter(|(name, _)| SHARED.contains(name)),
        )
        .collect()
}

fn texture_peak(runs: &[RunReport]) -> String {
    if runs.iter().any(|x| x.texture_bytes_peak.is_none()) {
        return "-".to_owned();
    }
    spread(runs, 1, |x| x.texture_bytes_peak.unwrap_or(0) as f64 / 1e6)
}

fn table(out: &mut String, columns: &[Column], rows: &[Row]) {
    let _ = write!(out, "| |");
    for column in columns {
        let _ = write!(out, " {} |", column.mode);
    }
    let _ = write!(out, "\n|---|");
    for _ in columns {
        let _ = write!(out, "---|");
    }
    out.push('\n');
    for (name, cell) in rows {
        let _ = write!(out, "| {name} |");
        for column in columns {
            let _ = write!(out, " {} |", cell(&column.runs));
        }
        out.push('\n');
    }
}

fn report(
    args: &Args,
    tables: &[(Option<u64>, Vec<Column>)],
    browsing: &[Column],
    windowed: &[Column],
    window: bool,
    plot: &Path,
    targets: &mut Targets,
) -> String {
    let nominal = nominal_flick_s(args.flick.rows);
    let mut out = String::new();
    let flags = format!(
        "--refresh-ms {}{} ",
        args.flick.refresh_ms,
        if args.no_window { " --no-window" } else { "" }
    );
    let _ = writeln!(
        out,
        "{}Headless: the demo's UI code at a 60 Hz pace without a renderer. Flick: top to \
         bottom and back in {:.1} s nominal ({} frames).\n",
        heading("scroll-report", args, &flags),
        nominal,
        (438 * args.flick.rows).div_ceil(200),
    );
    for (refresh, columns) in tables {
        let title = match refresh {
            None => "## Headless, no refresh".to_owned(),
            Some(ms) => format!("## Headless, the list refreshed every {ms} ms"),
        };
        let _ = writeln!(out, "{title}\n");
        table(&mut out, columns, &rows(nominal, refresh.is_some()));
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "## Headless, browsing: 1 s on the first screen, down three screens at a row every \
         250 ms, 2 s still, back up\n"
    );
    table(&mut out, browsing, &browse_rows(nominal));
    out.push('\n');
    if window {
        let _ = writeln!(
            out,
            "## In a window under Xvfb (software rendering), refresh every {} ms, one run\n",
            args.flick.refresh_ms
        );
        table(&mut out, windowed, &rows(nominal, true));
        out.push('\n');
    } else {
        out.push_str("No windowed runs (`--no-window`, or xvfb-run missing).\n\n");
    }
    for mode in THUMBPIPE_MODES {
        let flicks = tables
            .last()
            .and_then(|(_, columns)| columns.iter().find(|c| c.mode == mode));
        let browses = browsing.iter().find(|c| c.mode == mode);
        if let (Some(flicks), Some(browses)) = (flicks, browses) {
            out.push_str(&mode_targets(
                mode,
                &flicks.runs,
                &browses.runs,
                args,
                nominal,
                targets,
            ));
            out.push('\n');
        }
    }
    let _ = writeln!(
        out,
        "\n![frame time over the flick]({})",
        plot.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    );
    out
}

/// A thumbpipe mode's targets, from the refreshing flicks and the browses,
/// each met or not.
fn mode_targets(
    mode: &str,
    runs: &[RunReport],
    browses: &[RunReport],
    args: &Args,
    nominal: f64,
    targets: &mut Targets,
) -> String {
    let decode_threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let budget_mb = CACHE_MB + TEXTURE_MB;
    let texture_peak_mb = |x: &RunReport| x.texture_bytes_peak.unwrap_or(u64::MAX) as f64 / 1e6;
    let worst =
        |figure: &dyn Fn(&RunReport) -> f64| runs.iter().map(figure).fold(f64::MIN, f64::max);
    let least =
        |figure: &dyn Fn(&RunReport) -> f64| runs.iter().map(figure).fold(f64::MAX, f64::min);
    let thread_limit = |x: &RunReport| (x.baseline_threads + 2 + decode_threads + 2) as f64;
    let checks: Vec<(String, bool, String)> = vec![
        (
            format!("peak threads <= baseline + 2 io + {decode_threads} decode + 2"),
            runs.iter()
                .all(|x| x.peak_threads as f64 <= thread_limit(x)),
            format!(
                "worst {} over baseline",
                worst(&|x| (x.peak_threads - x.baseline_threads.min(x.peak_threads)) as f64)
            ),
        ),
        (
            "0 threads parked in blocking I/O".into(),
            worst(&|x| x.peak_blocked_io_threads as f64) == 0.0,
            format!("worst {}", worst(&|x| x.peak_blocked_io_threads as f64)),
        ),
        (
            "frame p99 <= 16.7 ms".into(),
            worst(&|x| x.frame_ms_p99) <= 16.7,
            format!("worst {:.2} ms", worst(&|x| x.frame_ms_p99)),
        ),
        (
            "no frame over 50 ms".into(),
            worst(&|x| x.frame_ms_max) <= 50.0,
            format!("worst {:.1} ms", worst(&|x| x.frame_ms_max)),
        ),
        (
            format!("flick wall time within 2% of {nominal:.2} s"),
            worst(&|x| (x.flick_s / nominal - 1.0).abs()) <= 0.02,
            format!(
                "worst {:+.1}%",
                worst(&|x| (x.flick_s / nominal - 1.0) * 100.0)
            ),
        ),
        (
            format!(
                "RSS peak - start <= cache ({CACHE_MB:.1} MB) + texture ({TEXTURE_MB:.1} MB) \
                 budgets + 16 MB"
            ),
            worst(&|x| x.rss_peak_mb - x.rss_start_mb) <= budget_mb + 16.0,
            format!("worst {:.1} MB", worst(&|x| x.rss_peak_mb - x.rss_start_mb)),
        ),
        (
            format!("live textures within the texture budget ({TEXTURE_MB:.1} MB)"),
            runs.iter()
                .chain(browses)
                .all(|x| texture_peak_mb(x) <= TEXTURE_MB),
            format!(
                "worst {:.1} MB",
                runs.iter()
                    .chain(browses)
                    .map(texture_peak_mb)
                    .fold(0.0, f64::max)
            ),
        ),
        (
            "browse: 0 (frame, row) pairs without their image on the way back".into(),
            browses
                .iter()
                .all(|x| x.placeholder_row_frames_back == Some(0)),
            format!(
                "worst {}",
                browses
                    .iter()
                    .map(|x| x.placeholder_row_frames_back.unwrap_or(u64::MAX))
                    .max()
                    .unwrap_or(0)
            ),
        ),
        (
            "cancelled >= 90% of loads for rows that scrolled away".into(),
            least(&cancelled_share) >= 0.9,
            format!("least {:.1}%", least(&cancelled_share) * 100.0),
        ),
        (
            "0 wrong-row images".into(),
            worst(&|x| wrong_rows(x)) == 0.0,
            format!("worst {}", worst(&|x| wrong_rows(x))),
        ),
        (
            "requests still finishing after the scroll stopped <= 0.4 s".into(),
            worst(&|x| x.tail_after_stop_ms) <= 400.0,
            format!("worst {:.0} ms", worst(&|x| x.tail_after_stop_ms)),
        ),
    ];
    targets.group(format!(
        "Targets for `{mode}` ({} rows, {} ms, refresh {} ms, and the browses; every run must \
         meet them)",
        args.flick.rows, args.flick.latency_ms, args.flick.refresh_ms
    ));
    for (target, met, measured) in checks {
        targets.check(target, met, measured);
    }
    targets.table("##")
}

/// Frame time over the flick, one line per mode (each mode's first
/// refreshing run), on a log scale so that 0.3 ms and 300 ms both read.
fn plot_frame_times(path: &Path, columns: &[Column], args: &Args) -> anyhow::Result<()> {
    use plotters::prelude::*;

    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        epaint_default_fonts::UBUNTU_LIGHT,
    )
    .map_err(|_| anyhow::anyhow!("cannot load the plot's font"))?;
    let series: Vec<(&str, &[f64])> = columns
        .iter()
        .filter_map(|c| c.runs.first().map(|r| (c.mode, r.frame_ms.as_slice())))
        .collect();
    let frames = series
        .iter()
        .map(|(_, s)| s.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let highest = series
        .iter()
        .flat_map(|(_, s)| s.iter().copied())
        .fold(20.0_f64, f64::max);
    // Drawn into memory and encoded with the workspace's own `image`:
    // plotters' PNG encoder would build a second, older `image` crate.
    let (width, height) = (1200_u32, 600_u32);
    let mut pixels = vec![0_u8; width as usize * height as usize * 3];
    let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "UI frame time during the flick: {} rows, {} ms latency, refresh {} ms (headless)",
                args.flick.rows, args.flick.latency_ms, args.flick.refresh_ms
            ),
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0..frames, (0.05_f64..highest * 1.5).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("frame (60 Hz)")
        .y_desc("UI thread time per frame, ms (log)")
        .label_style(("sans-serif", 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let budget = RGBColor(120, 120, 120);
    chart
        .draw_series(LineSeries::new(
            [(0, 16.7), (frames, 16.7)],
            budget.stroke_width(1),
        ))?
        .label("16.7 ms: one 60 Hz frame")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], budget));
    let colours = [
        RGBColor(214, 69, 65),
        RGBColor(230, 145, 30),
        RGBColor(40, 160, 90),
        RGBColor(40, 110, 200),
    ];
    for ((mode, frame_ms), colour) in series.iter().zip(colours) {
        chart
            .draw_series(LineSeries::new(
                frame_ms.iter().enumerate().map(|(i, ms)| (i, ms.max(0.05))),
                colour.stroke_width(2),
            ))?
            .label(*mode)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 16))
        .draw()?;
    root.present()?;
    drop(chart);
    drop(root);
    image::RgbImage::from_raw(width, height, pixels)
        .context("the plot's buffer has the wrong size")?
        .save(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
