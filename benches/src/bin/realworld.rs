//! `realworld`: thumbpipe's thumbnails of real-world files it did not make,
//! against a reference decoder's (Pillow's), file by file.
//!
//! ```text
//! # The corpus: the test images of Pillow's source (HPND licence), e.g.
//! # its sdist from PyPI, or a checkout: Tests/images/*.{jpg,png,gif,webp}.
//! python3 benches/scripts/pillow_thumbnails.py CORPUS /tmp/pillow-ref 64
//! cargo run --release -p thumbpipe-benches --bin realworld -- \
//!     --corpus CORPUS --reference /tmp/pillow-ref --out benches/results/realworld.md
//! ```
//!
//! A file agrees when both decoders give a thumbnail of the same size
//! (within a pixel a side) at 22 dB or more (`--agree-db`) (PSNR of the RGB channels, each
//! image composited on mid grey by its alpha, over the pixels both cover),
//! or when both refuse it. Everything else is listed: thumbnails that
//! differ, and files one side alone refuses. Where Pillow and browsers
//! disagree, thumbpipe follows the browsers (the report says so beside the
//! file).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;
use thumbpipe::{Config, TargetSize};
use thumbpipe_benches::machine;

#[derive(Debug, Parser)]
#[command(about = "thumbpipe's thumbnails of real-world files against Pillow's")]
struct Args {
    /// The directory of images.
    #[arg(long)]
    corpus: PathBuf,
    /// The directory `pillow_thumbnails.py` wrote.
    #[arg(long)]
    reference: PathBuf,
    /// The side of the square the thumbnails fit (as given to the script).
    #[arg(long, default_value_t = 64)]
    side: u32,
    /// Where the report is written (Markdown); printed as well.
    #[arg(long)]
    out: Option<PathBuf>,
    /// What made the reference thumbnails, for the report.
    #[arg(long, default_value = "Pillow")]
    reference_name: String,
    /// The smallest PSNR (dB) at which two thumbnails agree.
    #[arg(long, default_value_t = 22.0)]
    agree_db: f64,
    /// A directory to write thumbpipe's thumbnail of each file that
    /// differs into (NAME.png), to look at beside Pillow's.
    #[arg(long)]
    dump: Option<PathBuf>,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("realworld: {error:#}");
        std::process::exit(1);
    }
}

/// A thumbnail as RGBA bytes.
struct Rgba {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

/// PSNR of the RGB channels composited on mid grey, over the pixels both
/// images cover.
fn psnr(a: &Rgba, b: &Rgba) -> f64 {
    let (width, height) = (a.width.min(b.width), a.height.min(b.height));
    let on_grey = |image: &Rgba, x: u32, y: u32, c: usize| {
        let i = ((y * image.width + x) * 4) as usize;
        let alpha = f64::from(image.pixels[i + 3]) / 255.0;
        f64::from(image.pixels[i + c]) * alpha + 128.0 * (1.0 - alpha)
    };
    let mut sum = 0.0;
    for y in 0..height {
        for x in 0..width {
            for c in 0..3 {
                let d = on_grey(a, x, y, c) - on_grey(b, x, y, c);
                sum += d * d;
            }
        }
    }
    let mse = sum / f64::from(width * height * 3).max(1.0);
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0 * 255.0 / mse).log10()
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let index = std::fs::read_to_string(args.reference.join("index.tsv"))
        .context("reading the reference's index.tsv (run pillow_thumbnails.py first)")?;
    let config = Config::default();
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    // Per format (the file's extension, `tif` counted as `tiff`): outcome
    // counts.
    let mut by_format: BTreeMap<String, BTreeMap<&str, u64>> = BTreeMap::new();
    let mut listed = String::new();
    for line in index.lines() {
        let Some((name, verdict)) = line.split_once('\t') else {
            continue;
        };
        let bytes = std::fs::read(args.corpus.join(name))
            .with_context(|| format!("reading {name} from the corpus"))?;
        let ours = thumbpipe::thumbnail_from_bytes(
            name,
            &bytes,
            TargetSize::square(args.side),
            &config.decode,
        );
        let theirs = match verdict.strip_prefix("ok ") {
            Some(size) => {
                let mut sides = size.split(' ').filter_map(|s| s.parse::<u32>().ok());
                let (width, height) = (sides.next().unwrap_or(0), sides.next().unwrap_or(0));
                let pixels = std::fs::read(args.reference.join(format!("{name}.rgba")))?;
                Ok(Rgba {
                    width,
                    height,
                    pixels,
                })
            }
            None => Err(verdict.trim_start_matches("refused ").to_owned()),
        };
        let (kind, detail) = match (&ours, &theirs) {
            (Err(_), Err(_)) => ("both refuse", String::new()),
            (Err(error), Ok(_)) => ("refused by thumbpipe only", error.to_string()),
            (Ok(thumbnail), Err(reason)) => (
                "refused by the reference only",
                format!(
                    "thumbpipe: {}x{}; {}: {reason}",
                    thumbnail.width, thumbnail.height, args.reference_name
                ),
            ),
            (Ok(thumbnail), Ok(reference)) => {
                let ours = Rgba {
                    width: thumbnail.width,
                    height: thumbnail.height,
                    pixels: thumbnail.pixels.to_vec(),
                };
                let close = ours.width.abs_diff(reference.width) <= 1
                    && ours.height.abs_diff(reference.height) <= 1;
                let db = psnr(&ours, reference);
                let detail = format!(
                    "thumbpipe {}x{}, {} {}x{}, {db:.1} dB",
                    ours.width, ours.height, args.reference_name, reference.width, reference.height
                );
                if close && db >= args.agree_db {
                    ("agree", detail)
                } else {
                    if let Some(dump) = &args.dump {
                        std::fs::create_dir_all(dump)?;
                        image::RgbaImage::from_raw(ours.width, ours.height, ours.pixels)
                            .context("a thumbnail's pixels do not match its size")?
                            .save(dump.join(format!("{name}.png")))?;
                    }
                    ("differ", detail)
                }
            }
        };
        *counts.entry(kind).or_default() += 1;
        let extension = std::path::Path::new(name)
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .map(|e| if e == "tif" { "tiff".into() } else { e })
            .unwrap_or_default();
        *by_format
            .entry(extension)
            .or_default()
            .entry(kind)
            .or_default() += 1;
        if kind != "agree" && kind != "both refuse" {
            let _ = writeln!(listed, "| {name} | {kind} | {} |", detail.replace('|', "/"));
        }
    }
    let total: u64 = counts.values().sum();
    let mut report = format!(
        "# realworld: thumbpipe against {reference}\n\n{total} files, thumbnails fitted to {side}x{side}, \
         agreeing at {db} dB or more, default config, on {machine}.\n\n| outcome | files |\n|---|---|\n",
        reference = args.reference_name,
        side = args.side,
        db = args.agree_db,
        machine = machine()
    );
    for (kind, count) in &counts {
        let _ = writeln!(report, "| {kind} | {count} |");
    }
    if by_format.len() > 1 {
        let kinds: Vec<&str> = counts.keys().copied().collect();
        let _ = write!(
            report,
            "\n| format | files | {} |\n|---|---|{}\n",
            kinds.join(" | "),
            "---|".repeat(kinds.len())
        );
        for (format, outcomes) in &by_format {
            let files: u64 = outcomes.values().sum();
            let cells: Vec<String> = kinds
                .iter()
                .map(|kind| outcomes.get(kind).copied().unwrap_or(0).to_string())
                .collect();
            let _ = writeln!(report, "| {format} | {files} | {} |", cells.join(" | "));
        }
    }
    let _ = write!(
        report,
        "\n| file | outcome | detail |\n|---|---|---|\n{listed}"
    );
    print!("{report}");
    if let Some(out) = args.out {
        std::fs::write(&out, &report).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}
