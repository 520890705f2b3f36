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
//!
//! This file runs the demo and writes the report; `tables.rs` makes the
//! tables of the flick, browse and windowed runs and their targets,
//! `flings.rs` the fling runs, their table and targets, and `plot.rs` the
//! plot.

mod flings;
mod plot;
mod tables;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use clap::Parser;
use fixture_server::RunReport;
use indicatif::{ProgressBar, ProgressStyle};
use thumbpipe_benches::runs::{FlickArgs, demo_report};
use thumbpipe_benches::{ServerProcess, Targets, machine, workspace_binary};

use flings::{FLING_COLUMNS, fling_only, fling_report, fling_runs};
use plot::plot_frame_times;
use tables::report;

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
    // One run of the demo in `mode` with `script`, at `refresh`.
    let flick = |mode, script, refresh| Flick {
        demo: &demo,
        server: server.base_url(),
        mode,
        script,
        args: &args,
        refresh,
        coast_prediction: None,
    };
    let settings = [None, Some(args.flick.refresh_ms)];
    let mut tables = Vec::new();
    for refresh in settings {
        let mut columns = Vec::new();
        for mode in MODES {
            let mut runs = Vec::new();
            for run in 0..args.flick.runs {
                bar.set_message(format!("{mode}, run {}{}", run + 1, refresh_label(refresh)));
                runs.push(flick(mode, "flick", refresh).run(false)?);
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
            runs.push(flick(mode, "browse", None).run(false)?);
            bar.inc(1);
        }
        browsing.push(Column { mode, runs });
    }
    let mut windowed = Vec::new();
    if window {
        for mode in MODES {
            bar.set_message(format!("{mode} in a window"));
            let run = flick(mode, "flick", Some(args.flick.refresh_ms)).run(true)?;
            windowed.push(Column {
                mode,
                runs: vec![run],
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

/// Ends the run with failure when a target was missed; the report says
/// which.
fn exit_if_missed(targets: &Targets) -> anyhow::Result<()> {
    if !targets.all_met() {
        eprintln!("scroll-report: {}", targets.summary().trim_end());
        std::process::exit(1);
    }
    Ok(())
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
