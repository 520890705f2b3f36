//! `raw-report`: a folder of camera RAW files made into thumbnails from
//! their previews, file by file: how much of each file thumbpipe read,
//! how long each took, and, where `dcraw` is installed, how long dcraw
//! takes to decode the same file's sensor data in full (`dcraw -c -w -q 0`,
//! its fastest demosaic) and to copy out its largest preview (`dcraw -e`).
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin raw-report -- --dir FOLDER
//! cargo run --release -p thumbpipe-benches --bin raw-report -- --dir FOLDER --side 256
//! ```
//!
//! Each file is requested alone as a `file://` URL of a pipeline with the
//! default config (the folder its one root), at `--side` px; its time is
//! from the request to its thumbnail (median of `--runs`, each a fresh
//! pipeline, so nothing is cached; the desktop's shared thumbnails off),
//! its bytes the pipeline's `file_bytes_read`. Writes `raw-report.md` to `--out` and prints it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use thumbpipe::{Config, Pipeline, Priority, TargetSize, ThumbnailStore};
use thumbpipe_benches::{machine, median_and_range};

#[derive(Debug, Parser)]
#[command(about = "camera RAW folders: thumbnails from previews, bytes read and time")]
struct Args {
    /// The folder of RAW files.
    #[arg(long)]
    dir: PathBuf,
    /// The side of the square the thumbnails fit.
    #[arg(long, default_value_t = 64)]
    side: u32,
    /// Runs per file (thumbpipe; dcraw runs once).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Where the report goes.
    #[arg(long, default_value = "benches/results")]
    out: PathBuf,
}

/// One file's figures.
struct Row {
    name: String,
    format: String,
    size: u64,
    outcome: Result<(u32, u32), String>,
    read: u64,
    ms: f64,
    dcraw_full_ms: Option<f64>,
    dcraw_preview_ms: Option<f64>,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("raw-report: {error:#}");
        std::process::exit(1);
    }
}

/// What one request gave: the thumbnail's size or the error, the bytes
/// read, and the milliseconds it took.
type Loaded = (Result<(u32, u32), String>, u64, f64);

/// One request of `path` at `side` on a fresh pipeline.
fn load(dir: &Path, path: &Path, side: u32) -> anyhow::Result<Loaded> {
    let mut config = Config::default();
    config.fetch.file_roots.push(dir.to_path_buf());
    // Each load reads its file: not the desktop's thumbnail of it.
    config.shared_thumbnails.read = ThumbnailStore::Off;
    config.shared_thumbnails.write = ThumbnailStore::Off;
    let mut pipeline = Pipeline::<u32>::new(config)?;
    let url = format!("file://{}", path.display());
    let started = Instant::now();
    pipeline.request(0, &url, TargetSize::square(side), Priority::Visible);
    loop {
        if let Some(done) = pipeline.drain().into_iter().next() {
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let outcome = done
                .result
                .map(|thumbnail| (thumbnail.width, thumbnail.height))
                .map_err(|error| error.to_string());
            return Ok((outcome, pipeline.stats().file_bytes_read, ms));
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60),
            "{url}: no answer in 60 s"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Milliseconds `dcraw args path` takes, its output thrown away; `None`
/// where dcraw is missing or fails.
fn dcraw_ms(args: &[&str], path: &Path) -> Option<f64> {
    let started = Instant::now();
    let status = Command::new("dcraw")
        .args(args)
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    status
        .success()
        .then(|| started.elapsed().as_secs_f64() * 1000.0)
}

fn run(args: Args) -> anyhow::Result<()> {
    let dir = args.dir.canonicalize().context("the folder")?;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    let mut rows = Vec::new();
    for path in &paths {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let format = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_uppercase())
            .unwrap_or_default();
        let size = std::fs::metadata(path)?.len();
        let mut times = Vec::new();
        let (mut outcome, mut read) = (Err(String::new()), 0);
        for _ in 0..args.runs.max(1) {
            let (result, bytes, ms) = load(&dir, path, args.side)?;
            (outcome, read) = (result, bytes);
            times.push(ms);
        }
        let ms = median_and_range(&mut times).map_or(0.0, |(median, _, _)| median);
        rows.push(Row {
            name,
            format,
            size,
            outcome,
            read,
            ms,
            dcraw_full_ms: dcraw_ms(&["-c", "-w", "-q", "0"], path),
            dcraw_preview_ms: dcraw_ms(&["-e", "-c"], path),
        });
        eprint!(".");
    }
    eprintln!();
    let report = report(&args, &rows);
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("raw-report.md"), &report)?;
    print!("{report}");
    Ok(())
}

fn report(args: &Args, rows: &[Row]) -> String {
    let mut out = format!(
        "# raw-report: camera RAW folders from their previews\n\n{} files of `{}`, at {side}x{side}, \
         default config, on {machine}; thumbpipe's time the median of {runs} fresh pipelines.\n\n",
        rows.len(),
        args.dir.display(),
        side = args.side,
        runs = args.runs,
        machine = machine()
    );
    let mut by_format: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for row in rows {
        by_format.entry(&row.format).or_default().push(row);
    }
    let median = |mut values: Vec<f64>| median_and_range(&mut values).map(|(m, _, _)| m);
    let cell =
        |value: Option<f64>, unit: &str| value.map_or("-".into(), |v| format!("{v:.1}{unit}"));
    out.push_str(
        "| format | files | shown | read of the file (median, max) | thumbpipe ms (median) | dcraw full decode ms | dcraw -e ms |\n|---|---|---|---|---|---|---|\n",
    );
    let mut all: Vec<&Row> = Vec::new();
    for (format, rows) in by_format
        .iter()
        .map(|(f, r)| (f.to_string(), r.clone()))
        .chain([("all".to_string(), rows.iter().collect())])
    {
        if format != "all" {
            all.extend(&rows);
        }
        let shown = rows.iter().filter(|row| row.outcome.is_ok()).count();
        let shares: Vec<f64> = rows
            .iter()
            .map(|row| row.read as f64 * 100.0 / row.size.max(1) as f64)
            .collect();
        let max = shares.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "| {format} | {} | {shown} | {} ({max:.1}%) | {} | {} | {} |",
            rows.len(),
            cell(median(shares), "%"),
            cell(median(rows.iter().map(|row| row.ms).collect()), ""),
            cell(
                median(rows.iter().filter_map(|row| row.dcraw_full_ms).collect()),
                ""
            ),
            cell(
                median(rows.iter().filter_map(|row| row.dcraw_preview_ms).collect()),
                ""
            ),
        );
    }
    out.push_str(
        "\n| file | bytes | read | thumbnail | ms | dcraw full ms |\n|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let shown = match &row.outcome {
            Ok((width, height)) => format!("{width}x{height}"),
            Err(error) => format!("refused: {}", error.replace('|', "/")),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} ({:.1}%) | {shown} | {:.1} | {} |",
            row.name,
            row.size,
            row.read,
            row.read as f64 * 100.0 / row.size.max(1) as f64,
            row.ms,
            cell(row.dcraw_full_ms, ""),
        );
    }
    out
}
