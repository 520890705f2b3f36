//! The report's tables of the flick, browse and windowed runs: one row a
//! figure, one column a mode, and the targets for thumbpipe's modes.

use std::fmt::Write as _;
use std::path::Path;

use fixture_server::RunReport;
use thumbpipe_benches::Targets;
use thumbpipe_benches::runs::{cancelled_share, median, settle, spread};

use crate::{Args, CACHE_MB, Column, TEXTURE_MB, THUMBPIPE_MODES, heading};

/// Wrong-row images as a figure; an unknown count (`None`) counts as the
/// worst, so that it can never pass for zero.
pub(crate) fn wrong_rows(report: &RunReport) -> f64 {
    report.wrong_row_images.map_or(f64::INFINITY, |n| n as f64)
}

/// The nominal flick time: 438 frames per 200 rows at 60 Hz.
fn nominal_flick_s(rows: usize) -> f64 {
    (438 * rows).div_ceil(200) as f64 / 60.0
}

/// Two figures of each run, side by side: `a`'s spread, `between`, `b`'s.
fn both(
    runs: &[RunReport],
    digits: usize,
    a: impl Fn(&RunReport) -> f64,
    between: &str,
    b: impl Fn(&RunReport) -> f64,
) -> String {
    format!(
        "{}{between}{}",
        spread(runs, digits, a),
        spread(runs, digits, b)
    )
}

pub(crate) type Row = (&'static str, Box<dyn Fn(&[RunReport]) -> String>);

/// The table's rows, in the order of the design's before/after table.
pub(crate) fn rows(nominal: f64, refreshing: bool) -> Vec<Row> {
    let mut rows: Vec<Row> = vec![
        (
            "peak threads (baseline)",
            Box::new(|r| {
                both(
                    r,
                    0,
                    |x| x.peak_threads as f64,
                    " (",
                    |x| x.baseline_threads as f64,
                ) + ")"
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
                both(
                    r,
                    0,
                    |x| x.stalls_over_50ms as f64,
                    ", ",
                    |x| x.stall_total_ms,
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
            Box::new(|r| both(r, 1, |x| x.rss_start_mb, " -> ", |x| x.rss_peak_mb)),
        ),
        (
            "requests completed / cancelled",
            Box::new(|r| {
                both(
                    r,
                    0,
                    |x| x.requests_completed as f64,
                    " / ",
                    |x| x.requests_cancelled as f64,
                )
            }),
        ),
        (
            "server: completed / aborted",
            Box::new(|r| {
                both(
                    r,
                    0,
                    |x| x.server_completed as f64,
                    " / ",
                    |x| x.server_aborted as f64,
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
            Box::new(|r| both(r, 0, wrong_rows, " of ", |x| x.images_shown as f64)),
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

pub(crate) fn table(out: &mut String, columns: &[Column], rows: &[Row]) {
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

pub(crate) fn report(
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
