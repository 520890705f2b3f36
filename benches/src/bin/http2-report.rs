//! `http2-report`: what HTTP/2 changes for a list whose loads are cancelled.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin http2-report
//! cargo run --release -p thumbpipe-benches --bin http2-report -- --runs 1
//! ```
//!
//! Runs the demo's refreshing flick (`demo-app --headless --script flick
//! --refresh-ms 400 --mode pipeline --json`: every row gets a new image
//! every 400 ms while the list scrolls to the bottom and back, so hundreds
//! of loads are cancelled) against the demo's embedded fixture server at
//! `--latency-ms`, in these columns: plain HTTP/1.1 (the other reports'
//! setting); TLS offering HTTP/1.1 only; TLS offering HTTP/2; each at
//! `fetch.max_per_host` 16 (thumbpipe's default) and, for HTTP/2, at 32
//! and 64 (with `fetch.max_in_flight` raised to match, so that its default
//! of 24 does not cap them). Over HTTP/1.1 a cancelled load in flight closes its connection
//! and the next load to the host opens another (TCP and TLS handshakes);
//! over HTTP/2 a cancel resets one stream of one connection.
//!
//! For each column, the median (and range) over `--runs` runs, the columns
//! interleaved: connections and TLS handshakes the server saw, requests,
//! cancellations, the tail after the scroll, the settle, frame times and
//! wrong-row images. Prints the markdown report and exits with status 1 if
//! a target is missed.

use std::fmt::Write as _;
use std::process::Command;

use anyhow::bail;
use clap::Parser;
use fixture_server::RunReport;
use thumbpipe_benches::runs::{FlickArgs, cancelled_share, demo_report, median, settle, spread};
use thumbpipe_benches::{Targets, machine, workspace_binary};

#[derive(Debug, Parser)]
#[command(about = "The refreshing flick over TLS: HTTP/1.1 against HTTP/2")]
struct Args {
    #[command(flatten)]
    flick: FlickArgs,
}

/// One column: its label, the demo's `--tls` (none: plain HTTP) and its
/// `--max-per-host`.
struct Column {
    label: &'static str,
    tls: Option<&'static str>,
    max_per_host: usize,
    runs: Vec<RunReport>,
}

const COLUMNS: [(&str, Option<&str>, usize); 5] = [
    ("plain HTTP/1.1, 16/host", None, 16),
    ("TLS HTTP/1.1, 16/host", Some("h1"), 16),
    ("TLS HTTP/2, 16/host", Some("h2"), 16),
    ("TLS HTTP/2, 32/host", Some("h2"), 32),
    ("TLS HTTP/2, 64/host", Some("h2"), 64),
];

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("http2-report: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    if args.flick.runs == 0 || args.flick.rows == 0 {
        bail!("--runs and --rows must be at least 1");
    }
    let demo = workspace_binary("demo-app", "demo-app")?;
    let mut columns: Vec<Column> = COLUMNS
        .iter()
        .map(|&(label, tls, max_per_host)| Column {
            label,
            tls,
            max_per_host,
            runs: Vec::new(),
        })
        .collect();
    // Interleaved, so that a noisy minute of the machine falls on every
    // column alike.
    for run in 0..args.flick.runs {
        for column in &mut columns {
            eprintln!("run {}/{}: {}", run + 1, args.flick.runs, column.label);
            let mut command = Command::new(&demo);
            command.args(["--headless", "--script", "flick", "--json"]);
            command.args(["--mode", "pipeline"]);
            command.args(["--rows", &args.flick.rows.to_string()]);
            command.args(["--latency-ms", &args.flick.latency_ms.to_string()]);
            command.args(["--refresh-ms", &args.flick.refresh_ms.to_string()]);
            command.args(["--max-per-host", &column.max_per_host.to_string()]);
            // Room for every host's fetches: the default of 24 in all
            // would cap the wider columns.
            let in_flight = column.max_per_host.max(24);
            command.args(["--max-in-flight", &in_flight.to_string()]);
            if let Some(tls) = column.tls {
                command.args(["--tls", tls]);
            }
            column.runs.push(demo_report(
                &mut command,
                &format!("demo-app ({})", column.label),
            )?);
        }
    }
    let mut targets = Targets::default();
    let report = report(&args, &columns, &mut targets);
    print!("{report}");
    if !targets.all_met() {
        std::process::exit(1);
    }
    Ok(())
}

type Row = (&'static str, fn(&[RunReport]) -> String);

const ROWS: [Row; 12] = [
    ("TCP connections", |r| {
        spread(r, 0, |x| x.server_connections as f64)
    }),
    ("TLS handshakes: full / resumed", |r| {
        format!(
            "{} / {}",
            spread(r, 0, |x| x.server_tls_full_handshakes as f64),
            spread(r, 0, |x| x.server_tls_resumed_handshakes as f64)
        )
    }),
    ("connections in HTTP/2", |r| {
        spread(r, 0, |x| x.server_http2_connections as f64)
    }),
    ("image requests at the server", |r| {
        spread(r, 0, |x| x.server_requests as f64)
    }),
    ("server: completed / aborted", |r| {
        format!(
            "{} / {}",
            spread(r, 0, |x| x.server_completed as f64),
            spread(r, 0, |x| x.server_aborted as f64)
        )
    }),
    ("loads completed / cancelled", |r| {
        format!(
            "{} / {}",
            spread(r, 0, |x| x.requests_completed as f64),
            spread(r, 0, |x| x.requests_cancelled as f64)
        )
    }),
    ("loads for rows that left: cancelled in time", |r| {
        spread(r, 1, |x| cancelled_share(x) * 100.0) + "%"
    }),
    (
        "requests still finishing after the scroll stopped, ms",
        |r| spread(r, 0, |x| x.tail_after_stop_ms),
    ),
    ("settled after the scroll stopped, ms", settle),
    ("frame time p50 / p99, ms", |r| {
        format!(
            "{} / {}",
            spread(r, 2, |x| x.frame_ms_p50),
            spread(r, 2, |x| x.frame_ms_p99)
        )
    }),
    ("peak threads", |r| spread(r, 0, |x| x.peak_threads as f64)),
    ("wrong-row images, of images shown", |r| {
        format!(
            "{} of {}",
            spread(r, 0, wrong_rows),
            spread(r, 0, |x| x.images_shown as f64)
        )
    }),
];

/// Wrong-row images as a figure; unknown counts as the worst.
fn wrong_rows(report: &RunReport) -> f64 {
    report.wrong_row_images.map_or(f64::INFINITY, |n| n as f64)
}

fn report(args: &Args, columns: &[Column], targets: &mut Targets) -> String {
    let mut out = format!(
        "# http2-report\n\n{}. Command: `cargo run --release -p thumbpipe-benches --bin \
         http2-report -- --runs {} --rows {} --latency-ms {} --refresh-ms {}`. The demo's \
         refreshing flick in pipeline mode, its embedded server over plain HTTP or TLS; \
         median (range) of {} runs per column, the columns interleaved.\n\n",
        machine(),
        args.flick.runs,
        args.flick.rows,
        args.flick.latency_ms,
        args.flick.refresh_ms,
        args.flick.runs
    );
    let _ = write!(out, "| |");
    for column in columns {
        let _ = write!(out, " {} |", column.label);
    }
    let _ = write!(out, "\n|---|");
    for _ in columns {
        out.push_str("---|");
    }
    out.push('\n');
    for (name, cell) in ROWS {
        let _ = write!(out, "| {name} |");
        for column in columns {
            let _ = write!(out, " {} |", cell(&column.runs));
        }
        out.push('\n');
    }
    out.push('\n');
    check(columns, targets);
    out.push_str(&targets.table("##"));
    out.push('\n');
    out.push_str(&targets.summary());
    out
}

/// The targets: no wrong row anywhere; HTTP/2 at the default per-host
/// limit opens no connection per cancel, finishes its tail no later and
/// draws its frames no slower than HTTP/1.1 over TLS.
fn check(columns: &[Column], targets: &mut Targets) {
    let by_label = |label: &str| columns.iter().find(|c| c.label == label);
    targets.group("Targets");
    for column in columns {
        let wrong = median(&column.runs, wrong_rows);
        targets.check(
            format!("{}: no wrong-row image", column.label),
            wrong == 0.0,
            format!("median {wrong}"),
        );
    }
    let (Some(h1), Some(h2)) = (
        by_label("TLS HTTP/1.1, 16/host"),
        by_label("TLS HTTP/2, 16/host"),
    ) else {
        return;
    };
    // Before the first handshake says HTTP/2, hyper's pool opens a
    // connection per fetch in flight; those that lose the race close. So a
    // cold flick opens at most `max_per_host`, and a cancel opens none.
    let connections = median(&h2.runs, |x| x.server_connections as f64);
    let connections_h1 = median(&h1.runs, |x| x.server_connections as f64);
    targets.check(
        "HTTP/2, 16/host: at most 16 connections per flick (the cold burst), none per cancel",
        connections <= 16.0,
        format!("median {connections}"),
    );
    targets.check(
        "HTTP/2: at most 1/20 of HTTP/1.1's connections",
        connections * 20.0 <= connections_h1,
        format!("{connections} against {connections_h1}"),
    );
    let http2 = median(&h2.runs, |x| x.server_http2_connections as f64);
    targets.check(
        "HTTP/2, 16/host: every connection in HTTP/2",
        http2 == connections,
        format!("{http2} of {connections}"),
    );
    // Both tails end when the last response of the flick arrives, a
    // latency after the scroll stopped; measured in 60 Hz frames.
    let (tail_h1, tail_h2) = (
        median(&h1.runs, |x| x.tail_after_stop_ms),
        median(&h2.runs, |x| x.tail_after_stop_ms),
    );
    targets.check(
        "HTTP/2 tail after the scroll <= HTTP/1.1's + 2 frames (34 ms)",
        tail_h2 <= tail_h1 + 34.0,
        format!("{tail_h2:.0} ms against {tail_h1:.0} ms"),
    );
    let (p99_h1, p99_h2) = (
        median(&h1.runs, |x| x.frame_ms_p99),
        median(&h2.runs, |x| x.frame_ms_p99),
    );
    targets.check(
        "HTTP/2 frame p99 <= HTTP/1.1's x 1.2",
        p99_h2 <= p99_h1 * 1.2,
        format!("{p99_h2:.2} ms against {p99_h1:.2} ms"),
    );
}
