//! SVG to a thumbnail, from bytes in memory: thumbpipe's route against the
//! one egui_extras takes.
//!
//! Four SVGs, each drawn to fit 64, 128 and 256 px squares:
//!
//! - `logo`: the test corpus's 96x48 logo (gradients, a clip path);
//! - `icon`: a 24x24 icon of three paths, the common case in a list;
//! - `illustration`: 1,000x750, 2,000 filled Bézier shapes with opacity;
//! - `shadows`: 512x512, 40 shapes under a Gaussian-blur drop shadow (a
//!   filter, whose cost grows with the drawn size).
//!
//! Two ways, interleaved (each round runs both, so a noisy moment costs
//! them alike):
//!
//! - `thumbpipe`: `thumbnail_from_bytes` with the `svg` feature: the
//!   reference count and limits, then usvg and resvg at the drawn size;
//! - `egui_extras`: egui_extras 0.37's `load_svg_bytes_with_size` as it is
//!   written (usvg's default options, fit inside the size hint, resvg into a
//!   pixmap, `ColorImage::from_rgba_premultiplied`), run with the resvg
//!   thumbpipe builds (0.49; egui_extras 0.37 pins 0.45).
//!
//! Per SVG and size: the median time of one decode on one core and the
//! peak of the bytes allocated (resvg is pure Rust: every allocation goes
//! through the counting allocator). The table is printed and written to
//! `benches/results/decode-svg.md`.

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use peak_alloc::PeakAlloc;
use resvg::tiny_skia::Pixmap;
use resvg::usvg::{Options, Transform, Tree};
use thumbpipe::{Config, TargetSize};
use thumbpipe_benches::Rng;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

const SIDES: [u32; 3] = [64, 128, 256];
const ROUNDS: usize = 31;

type Way = fn(&[u8], u32, &Config) -> usize;

fn thumbpipe_way(bytes: &[u8], side: u32, config: &Config) -> usize {
    let thumbnail = thumbpipe::thumbnail_from_bytes(
        "bench.svg",
        black_box(bytes),
        TargetSize::square(side),
        &config.decode,
    )
    .unwrap();
    thumbnail.pixels.len()
}

/// egui_extras' `load_svg_bytes_with_size` with `SizeHint::Size { width:
/// side, height: side, maintain_aspect_ratio: true }`.
fn egui_extras_way(bytes: &[u8], side: u32, _: &Config) -> usize {
    let tree = Tree::from_data(black_box(bytes), &Options::default()).unwrap();
    let (source_w, source_h) = (tree.size().width(), tree.size().height());
    let mut scale = side as f32 / source_w;
    if source_h * scale > side as f32 {
        scale = side as f32 / source_h;
    }
    let (w, h) = (
        (source_w * scale).round() as u32,
        (source_h * scale).round() as u32,
    );
    let mut pixmap = Pixmap::new(w, h).unwrap();
    resvg::render(
        &tree,
        Transform::from_scale(w as f32 / source_w, h as f32 / source_h),
        &mut pixmap.as_mut(),
    );
    egui::ColorImage::from_rgba_premultiplied([w as usize, h as usize], pixmap.data())
        .pixels
        .len()
}

const WAYS: [(&str, Way); 2] = [
    ("thumbpipe", thumbpipe_way),
    ("egui_extras", egui_extras_way),
];

fn icon() -> String {
    r##"<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24">
  <path fill="#5f6368" d="M12 2C6.48 2 2 6.48 2 12s4.48 10 10 10 10-4.48 10-10S17.52 2 12 2zm0 18c-4.41 0-8-3.59-8-8s3.59-8 8-8 8 3.59 8 8-3.59 8-8 8z"/>
  <path fill="#1a73e8" d="M12 6.5a5.5 5.5 0 1 0 0 11 5.5 5.5 0 0 0 0-11z"/>
  <path fill="none" stroke="#fff" stroke-width="1.5" stroke-linecap="round" d="M9.5 12.5l1.8 1.8 3.4-4"/>
</svg>"##
        .to_owned()
}

fn illustration() -> String {
    let mut rng = Rng::new(7, 0);
    let mut svg = String::from(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="750" viewBox="0 0 1000 750">"#,
    );
    for _ in 0..2000 {
        let mut p = || rng.below(1000);
        let (x, y) = (p(), p() * 3 / 4);
        let d = format!(
            "M{x} {y}c{} {} {} {} {} {}z",
            p() / 10,
            p() / 12,
            p() / 8,
            p() / 9,
            p() / 7,
            p() / 20
        );
        let colour = rng.next_u64() & 0xff_ffff;
        write!(
            svg,
            r##"<path d="{d}" fill="#{colour:06x}" fill-opacity="0.6"/>"##
        )
        .unwrap();
    }
    svg.push_str("</svg>");
    svg
}

fn shadows() -> String {
    let mut rng = Rng::new(11, 0);
    let mut svg = String::from(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">
  <defs><filter id="shadow" x="-20%" y="-20%" width="140%" height="140%">
    <feGaussianBlur in="SourceAlpha" stdDeviation="6"/>
    <feOffset dx="4" dy="6" result="blur"/>
    <feMerge><feMergeNode in="blur"/><feMergeNode in="SourceGraphic"/></feMerge>
  </filter></defs>
  <g filter="url(#shadow)">"#,
    );
    for _ in 0..40 {
        let colour = rng.next_u64() & 0xff_ffff;
        let (x, y, r) = (rng.below(512), rng.below(512), 10 + rng.below(50));
        write!(
            svg,
            r##"<circle cx="{x}" cy="{y}" r="{r}" fill="#{colour:06x}"/>"##
        )
        .unwrap();
    }
    svg.push_str("</g></svg>");
    svg
}

fn svgs() -> Vec<(&'static str, Vec<u8>)> {
    let logo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../pipeline/tests/it/corpus/logo.svg");
    vec![
        ("logo", std::fs::read(logo).unwrap()),
        ("icon", icon().into_bytes()),
        ("illustration", illustration().into_bytes()),
        ("shadows", shadows().into_bytes()),
    ]
}

/// Median of `values`.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The bytes `way` allocates at its peak, beyond what was live before.
fn peak_bytes(way: Way, bytes: &[u8], side: u32, config: &Config) -> usize {
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    black_box(way(bytes, side, config));
    ALLOCATOR.peak_usage().saturating_sub(before)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter word is not taken.
    let config = Config::default();
    let mut out = String::new();
    writeln!(
        out,
        "Decode of SVGs to a thumbnail, {}. Median ms of one decode on one core \
         ({ROUNDS} rounds, ways interleaved); peak = the most bytes allocated at once \
         during one decode (KB).\n",
        thumbpipe_benches::machine(),
    )
    .unwrap();
    writeln!(
        out,
        "| SVG | bytes | px | thumbpipe ms | egui_extras ms | egui_extras / thumbpipe \
         | peak KB thumbpipe | peak KB egui_extras |"
    )
    .unwrap();
    writeln!(out, "|---|---|---|---|---|---|---|---|").unwrap();
    for (name, bytes) in svgs() {
        for side in SIDES {
            let mut times: [Vec<f64>; 2] = Default::default();
            for _ in 0..ROUNDS {
                for (i, (_, way)) in WAYS.iter().enumerate() {
                    let started = Instant::now();
                    black_box(way(&bytes, side, &config));
                    times[i].push(started.elapsed().as_secs_f64() * 1000.0);
                }
            }
            let ms = times.map(|mut t| median(&mut t));
            let peak = WAYS.map(|(_, way)| peak_bytes(way, &bytes, side, &config) as f64 / 1e3);
            eprintln!("{name} {side}: {:.3} ms (egui_extras {:.3})", ms[0], ms[1]);
            writeln!(
                out,
                "| {name} | {} | {side} | {:.3} | {:.3} | {:.2}x | {:.0} | {:.0} |",
                bytes.len(),
                ms[0],
                ms[1],
                ms[1] / ms[0],
                peak[0],
                peak[1],
            )
            .unwrap();
        }
    }
    println!("{out}");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/decode-svg.md");
    if let Err(e) = std::fs::write(&path, &out) {
        eprintln!("could not write {}: {e}", path.display());
    }
}
