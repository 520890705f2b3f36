//! `camera-report`: a list of camera photos over HTTP, made from their
//! embedded EXIF thumbnails (read only as far as them) against made from
//! the photos themselves, as before; with `--progressive`, a list of
//! progressive photos with no EXIF thumbnail, made from their DC scans
//! (read only as far as them) against libjpeg's route over the whole file.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin camera-report
//! cargo run --release -p thumbpipe-benches --bin camera-report -- --progressive
//! cargo run --release -p thumbpipe-benches --bin camera-report -- --rows 50 --runs 1
//! ```
//!
//! An in-process fixture server at `--latency-ms` serves `--rows` 12 MP
//! camera JPEGs (4000x3000, a photo's texture, EXIF thumbnails of 160x120:
//! `?exif=160`; with `--progressive`, progressive and with none:
//! `?exif=0&progressive=1`), drawn once before the runs. Each run is a
//! fresh pipeline with the default config, `DecodeConfig::embedded_thumbnails`
//! (`progressive_dc_scans` with `--progressive`) on (the default) or off,
//! that loads the list at 64 px: the first screen
//! (`--screen` rows, visible) first, then the rest (prefetch). Per mode,
//! over `--runs` runs (median and range): the time until the first screen
//! shows, until every row has its thumbnail, the bytes the pipeline read,
//! and the bytes the server handed its HTTP stack: a body is one frame,
//! counted whole once hyper takes it, even when the client closes the
//! connection after reading its start (on loopback the kernel's buffers
//! take a 2.4 MB body at once; over a network the close stops it after
//! what is in flight). Writes `camera-report.md` to `--out` and prints it.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Parser;
use fixture_server::{Config as ServerConfig, FixtureServer};
use thumbpipe::{Config, Pipeline, Priority, TargetSize};

#[derive(Parser, Debug)]
#[command(about = "camera photos: embedded thumbnails against the photos")]
struct Args {
    /// Photos in the list.
    #[arg(long, default_value_t = 200)]
    rows: u32,
    /// Rows on the first screen.
    #[arg(long, default_value_t = 12)]
    screen: u32,
    /// Server latency, ms.
    #[arg(long, default_value_t = 250)]
    latency_ms: u64,
    /// Runs per mode.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Progressive photos with no EXIF thumbnail, made from their DC
    /// scans or not.
    #[arg(long)]
    progressive: bool,
    /// Where the report goes.
    #[arg(long, default_value = "benches/results")]
    out: PathBuf,
}

/// What one run measured.
struct Run {
    first_screen: Duration,
    all: Duration,
    bytes_read: u64,
    bytes_sent: u64,
}

fn url(server: &FixtureServer, args: &Args, id: u32) -> String {
    let kind = if args.progressive {
        "exif=0&progressive=1"
    } else {
        "exif=160"
    };
    format!("{}?w=4000&h=3000&{kind}", server.image_url(id))
}

/// A run with the route the report is about on (`from_prefix`) or off.
fn run(server: &FixtureServer, args: &Args, from_prefix: bool) -> anyhow::Result<Run> {
    let mut config = Config::default();
    if args.progressive {
        config.decode.progressive_dc_scans = from_prefix;
    } else {
        config.decode.embedded_thumbnails = from_prefix;
    }
    let mut pipeline = Pipeline::<u32>::new(config)?;
    server.reset_stats();
    let target = TargetSize::square(64);
    let started = Instant::now();
    for row in 0..args.rows {
        let priority = if row < args.screen {
            Priority::Visible
        } else {
            Priority::Prefetch
        };
        pipeline.request(row, &url(server, args, row), target, priority);
    }
    let (mut done, mut first_screen) = (Vec::new(), None);
    let deadline = started + Duration::from_secs(600);
    while done.len() < args.rows as usize {
        ensure!(
            Instant::now() < deadline,
            "the list did not load in 10 minutes"
        );
        for completion in pipeline.drain() {
            let thumbnail = completion
                .result
                .with_context(|| format!("row {}", completion.row))?;
            ensure!(
                (thumbnail.width, thumbnail.height) == (64, 48),
                "row {}: {}x{}",
                completion.row,
                thumbnail.width,
                thumbnail.height
            );
            done.push(completion.row);
        }
        if first_screen.is_none() && (0..args.screen).all(|row| done.contains(&row)) {
            first_screen = Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let all = started.elapsed();
    let bytes_read = pipeline.stats().bytes_fetched;
    // The server's count settles once its connections are closed.
    drop(pipeline);
    std::thread::sleep(Duration::from_millis(200));
    Ok(Run {
        first_screen: first_screen.unwrap_or(all),
        all,
        bytes_read,
        bytes_sent: server.stats().bytes_sent,
    })
}

/// One figure of a run, as the report prints it.
type Figure = dyn Fn(&Run) -> f64;

/// The report: per mode, the median (range) of each figure.
fn report(args: &Args, photo_bytes: u64, runs: &[Vec<Run>; 2]) -> String {
    let cell = |mode: usize, figure: &Figure| {
        let mut values: Vec<f64> = runs[mode].iter().map(figure).collect();
        match thumbpipe_benches::median_and_range(&mut values) {
            Some((median, low, high)) if runs[mode].len() > 1 => {
                format!("{median:.1} ({low:.1}-{high:.1})")
            }
            Some((median, ..)) => format!("{median:.1}"),
            None => "-".into(),
        }
    };
    let rows: [(&str, &Figure); 4] = [
        ("first screen shown, ms", &|r: &Run| {
            r.first_screen.as_secs_f64() * 1e3
        }),
        ("every row shown, ms", &|r: &Run| r.all.as_secs_f64() * 1e3),
        ("bytes read by the pipeline, MB", &|r: &Run| {
            r.bytes_read as f64 / 1e6
        }),
        ("bytes the server's HTTP stack was given, MB", &|r: &Run| {
            r.bytes_sent as f64 / 1e6
        }),
    ];
    let mut out = String::new();
    let (photos, flag, on, off) = if args.progressive {
        (
            "progressive photos (4000x3000 4:2:0, no EXIF thumbnail",
            " --progressive",
            "DC scans (default)",
            "libjpeg at 1/8, whole files (`progressive_dc_scans = false`)",
        )
    } else {
        (
            "camera photos (4000x3000, EXIF thumbnails of 160x120",
            "",
            "embedded thumbnails (default)",
            "from the photos (`embedded_thumbnails = false`)",
        )
    };
    let _ = writeln!(
        out,
        "# camera-report{flag}: {} {photos}, {:.1} MB in all) to 64 px, {} ms latency\n\n\
         {}; {} runs per mode, median (range). The first screen is the first {} rows \
         (visible), the rest prefetched.\n\
         Command: `cargo run --release -p thumbpipe-benches --bin camera-report --{flag} \
         --rows {} --runs {} --latency-ms {}`.\n",
        args.rows,
        photo_bytes as f64 / 1e6,
        args.latency_ms,
        thumbpipe_benches::machine(),
        args.runs,
        args.screen,
        args.rows,
        args.runs,
        args.latency_ms,
    );
    let _ = writeln!(out, "| | {on} | {off} |");
    let _ = writeln!(out, "|---|---|---|");
    for (name, figure) in rows {
        let _ = writeln!(
            out,
            "| {name} | {} | {} |",
            cell(0, figure),
            cell(1, figure)
        );
    }
    let _ = writeln!(
        out,
        "\nThe server's figure counts a body whole once hyper takes it (one frame), also \
         when the client closed the connection after reading its start: on loopback the \
         kernel's buffers take it at once. What crosses a real network after the close \
         is what was in flight."
    );
    out
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let server = FixtureServer::start_dedicated(ServerConfig {
        latency: Duration::from_millis(args.latency_ms),
        shutdown_grace: Duration::from_millis(100),
        ..ServerConfig::default()
    })?;
    // Draw every photo once, at no latency, outside the runs.
    let drawn = Instant::now();
    let mut photo_bytes = 0;
    for id in 0..args.rows {
        let body = fixture_server::blocking_client::get(&format!(
            "{}&latency_ms=0",
            url(&server, &args, id)
        ))
        .map_err(anyhow::Error::msg)?;
        photo_bytes += body.len() as u64;
    }
    eprintln!(
        "drew {} photos ({:.1} MB) in {:.1} s",
        args.rows,
        photo_bytes as f64 / 1e6,
        drawn.elapsed().as_secs_f64()
    );
    let mut runs: [Vec<Run>; 2] = Default::default();
    for round in 0..args.runs {
        for (mode, from_prefix) in [true, false].into_iter().enumerate() {
            let run = run(&server, &args, from_prefix)?;
            eprintln!(
                "run {round} from a prefix={from_prefix}: first screen {:.0} ms, all {:.0} ms, read {:.1} \
                 MB, sent {:.1} MB",
                run.first_screen.as_secs_f64() * 1e3,
                run.all.as_secs_f64() * 1e3,
                run.bytes_read as f64 / 1e6,
                run.bytes_sent as f64 / 1e6
            );
            runs[mode].push(run);
        }
    }
    let report = report(&args, photo_bytes, &runs);
    println!("{report}");
    std::fs::create_dir_all(&args.out)?;
    let name = if args.progressive {
        "camera-report-progressive.md"
    } else {
        "camera-report.md"
    };
    std::fs::write(args.out.join(name), report)?;
    Ok(())
}
