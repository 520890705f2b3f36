//! The fling script's runs (`--script fling`, every mode, with the coast
//! prediction on and off), their table and the targets they are held to;
//! `--fling-only` writes them alone.

use std::path::Path;

use anyhow::Context as _;
use fixture_server::{FlingReport, RunReport};
use indicatif::ProgressBar;
use thumbpipe_benches::runs::{median, spread};
use thumbpipe_benches::{ServerProcess, Targets, median_and_range};

use crate::tables::{Row, rows, table, wrong_rows};
use crate::{
    Args, Column, Flick, THUMBPIPE_MODES, exit_if_missed, heading, output_suffix, progress,
};

/// The fling section's columns: (label, mode, `--coast-prediction`).
pub(crate) const FLING_COLUMNS: [(&str, &str, Option<&str>); 6] = [
    ("naive", "naive", None),
    ("egui-extras", "egui-extras", None),
    ("egui-image", "egui-image", Some("on")),
    ("egui-image, prediction off", "egui-image", Some("off")),
    ("pipeline", "pipeline", Some("on")),
    ("pipeline, prediction off", "pipeline", Some("off")),
];

/// The fling script `--runs` times in every column of [`FLING_COLUMNS`].
pub(crate) fn fling_runs(
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

/// `--fling-only`: the flings alone, to `fling-report.md`.
pub(crate) fn fling_only(args: &Args, demo: &Path, server: &ServerProcess) -> anyhow::Result<()> {
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
pub(crate) fn fling_report(args: &Args, columns: &[Column], targets: &mut Targets) -> String {
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
