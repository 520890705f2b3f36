//! The demo as a child process: one scripted run's report, and the figures
//! of several runs summarised as a median and a range.
//!
//! Used by the report binaries that drive `demo-app --script ... --json`
//! (scroll-report, warm-start, http2-report). Nothing here outlives a call:
//! each run is a process that has ended when [`demo_report`] returns.

use std::process::Command;

use anyhow::{Context as _, bail};
use fixture_server::RunReport;

use crate::median_and_range;

/// The command-line settings of the demo's scripted flick, shared by the
/// reports that run it, so that their defaults agree.
#[derive(Debug, Clone, clap::Args)]
pub struct FlickArgs {
    /// Runs of each column (the tables give median and range).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Rows in the list; the flick keeps the same speed in rows per second.
    #[arg(long, default_value_t = 200)]
    pub rows: usize,
    /// Server latency, in milliseconds.
    #[arg(long, default_value_t = 250)]
    pub latency_ms: u64,
    /// The list's refresh period in the refreshing runs, in milliseconds.
    #[arg(long, default_value_t = 400)]
    pub refresh_ms: u64,
}

/// Runs `command` (a `demo-app ... --json` invocation) to its end and reads
/// the report it prints as its last line of stdout. `what` names the run
/// in errors (`demo-app --mode pipeline`).
pub fn demo_report(command: &mut Command, what: &str) -> anyhow::Result<RunReport> {
    let output = command
        .output()
        .with_context(|| format!("could not run {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).with_context(|| format!("{what} printed no report: {last:?}"))
}

/// `median (low-high)` of one figure over the runs, with `decimals`; the
/// median alone when the runs agree, `-` when there are none.
pub fn spread(runs: &[RunReport], decimals: usize, figure: impl Fn(&RunReport) -> f64) -> String {
    let mut values: Vec<f64> = runs.iter().map(figure).collect();
    match median_and_range(&mut values) {
        Some((median, low, high)) if values.len() > 1 && low != high => {
            format!("{median:.decimals$} ({low:.decimals$}-{high:.decimals$})")
        }
        Some((median, ..)) => format!("{median:.decimals$}"),
        None => "-".to_owned(),
    }
}

/// The median of one figure over the runs; 0 when there are none.
pub fn median(runs: &[RunReport], figure: impl Fn(&RunReport) -> f64) -> f64 {
    let mut values: Vec<f64> = runs.iter().map(figure).collect();
    median_and_range(&mut values).map_or(0.0, |(median, ..)| median)
}

/// Of the loads whose rows all left, the share cancelled before their
/// download finished (1 when none left, or the loader does not count them).
pub fn cancelled_share(report: &RunReport) -> f64 {
    match report.requests_abandoned {
        Some(0) | None => 1.0,
        Some(abandoned) => report.requests_cancelled as f64 / abandoned as f64,
    }
}

/// The settle time after the scroll stopped, as [`spread`] gives it, or
/// how many runs never settled.
pub fn settle(runs: &[RunReport]) -> String {
    if runs.iter().any(|x| x.settle_ms.is_none()) {
        let never = runs.iter().filter(|x| x.settle_ms.is_none()).count();
        return format!("never, in {never} of {} runs", runs.len());
    }
    spread(runs, 0, |x| x.settle_ms.unwrap_or(0.0))
}
