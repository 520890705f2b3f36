//! Decode + downscale, from bytes in memory to a thumbnail.
//!
//! Part 1, criterion: the fixture server's 600x600 JPEG (quality 85) to
//! 64x64 and 128x128 on one core and on all cores (scoped threads, batches
//! of 8; the time is per thumbnail), as in earlier runs.
//!
//! Part 2, the photo corpus (`fixture_server::photo::corpus`: JPEGs of
//! 600x600 to 4000x3000, baseline and progressive, 4:2:0 and 4:4:4, one
//! with EXIF orientation 6, and a 4000x3000 PNG and WebP) to 64, 128 and
//! 256 px, and the camera corpus (`camera_corpus`: 12 and 24 MP JPEGs
//! with EXIF thumbnails of 160x120 to 320x240), four ways, measured in one
//! run with the ways interleaved (each round runs every way once, so a
//! noisy moment costs them all alike):
//!
//! - `thumbpipe`: `thumbnail_from_bytes` (libjpeg at the smallest DCT scale
//!   that covers the thumbnail, fast_image_resize's Lanczos3, EXIF turns);
//! - `before`: the route thumbpipe took before, kept as the baseline:
//!   jpeg-decoder's 1/8 decode when that output is at most 128 wide, else
//!   `image`'s full decode, then `thumbnail_exact`;
//! - `image_resize`: `image`'s full decode and `resize` (Triangle);
//! - `egui_extras`: egui_extras' image loader (full decode, `to_rgba8`,
//!   `egui::ColorImage`), which keeps the full image whatever the size.
//!
//! Per image, size and way: the median time, the peak growth of resident
//! memory in a process of its own (this binary again, which counts
//! libjpeg's `malloc` as well as Rust's allocations), and the PSNR of
//! thumbpipe's and the old route's thumbnails against `image`'s Lanczos3
//! resize of the full decode. The table is printed and written to
//! `benches/results/decode.md`. `THUMBPIPE_DECODE_CORPUS=0` skips part 2;
//! `THUMBPIPE_DECODE_ONLY=bmp,tif` measures the images whose names hold
//! one of the words, into `benches/results/decode-bmp-tif.md`.

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput};
use fixture_server::photo::{self, CorpusImage};
use image::DynamicImage;
use image::imageops::FilterType;
use thumbpipe::{Config, TargetSize};

/// Thumbnails each thread makes per `all_cores` iteration.
const BATCH: usize = 8;
/// The corpus's thumbnail sides: 64 and 128 points at 1x and 2x.
const SIDES: [u32; 3] = [64, 128, 256];
/// Set in a child process that measures one decode's memory:
/// `way`, `side`, the image's path and a small file to decode first.
const MEMORY_CHILD: &str = "THUMBPIPE_DECODE_MEMORY";

type Way = fn(&[u8], u32, &Config) -> usize;

fn thumbpipe_way(bytes: &[u8], side: u32, config: &Config) -> usize {
    let thumbnail = thumbpipe::thumbnail_from_bytes(
        "bench",
        black_box(bytes),
        TargetSize::square(side),
        &config.decode,
    )
    .unwrap();
    thumbnail.pixels.len()
}

/// The route before libjpeg and fast_image_resize, as it was.
fn before_way(bytes: &[u8], side: u32, _: &Config) -> usize {
    before_thumbnail(black_box(bytes), side).len()
}

fn before_thumbnail(bytes: &[u8], side: u32) -> image::RgbaImage {
    // The size from the header, as the old route read it: the full decode
    // runs only when the scaled one does not apply.
    let size = imagesize::blob_size(bytes).unwrap();
    let (width, height) = fit_inside(size.width as u32, size.height as u32, side);
    if image::guess_format(bytes).ok() == Some(image::ImageFormat::Jpeg)
        && let Some(scaled) = before_jpeg_scaled(bytes, width, height)
    {
        return scaled.thumbnail_exact(width, height).into_rgba8();
    }
    let image = image::load_from_memory(bytes).unwrap();
    image.thumbnail_exact(width, height).into_rgba8()
}

/// jpeg-decoder's DCT-scaled decode, where its output is at most 128 wide
/// (wider, it starts a thread per component).
fn before_jpeg_scaled(bytes: &[u8], width: u32, height: u32) -> Option<DynamicImage> {
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    let (out_width, _) = decoder.scale(width as u16, height as u16).ok()?;
    if out_width > 128 {
        return None;
    }
    let pixels = decoder.decode().ok()?;
    let info = decoder.info()?;
    let (w, h) = (u32::from(info.width), u32::from(info.height));
    match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => {
            image::RgbImage::from_raw(w, h, pixels).map(DynamicImage::ImageRgb8)
        }
        _ => None,
    }
}

fn image_resize_way(bytes: &[u8], side: u32, _: &Config) -> usize {
    let image = image::load_from_memory(black_box(bytes)).unwrap();
    let (width, height) = fit_inside(image.width(), image.height(), side);
    image::imageops::resize(&image.into_rgba8(), width, height, FilterType::Triangle).len()
}

/// egui_extras' `ImageCrateLoader`: decode in full, convert, keep it all.
fn egui_extras_way(bytes: &[u8], _side: u32, _: &Config) -> usize {
    let image = image::load_from_memory(black_box(bytes)).unwrap();
    let rgba = image.to_rgba8();
    let size = [rgba.width() as usize, rgba.height() as usize];
    egui::ColorImage::from_rgba_unmultiplied(size, rgba.as_raw())
        .pixels
        .len()
}

const WAYS: [(&str, Way); 4] = [
    ("thumbpipe", thumbpipe_way),
    ("before", before_way),
    ("image_resize", image_resize_way),
    ("egui_extras", egui_extras_way),
];

/// The size that fits inside a `side` square, keeping the aspect ratio.
fn fit_inside(width: u32, height: u32, side: u32) -> (u32, u32) {
    if width <= side && height <= side {
        return (width, height);
    }
    let scale = f64::from(side) / f64::from(width.max(height));
    let scaled = |s: u32| ((f64::from(s) * scale).round() as u32).max(1);
    (scaled(width), scaled(height))
}

fn criterion_part(c: &mut Criterion) {
    let jpeg = fixture_server::picture::render(4242, 600, 600)
        .encode_jpeg(85)
        .unwrap();
    let config = Config::default();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let ways = [WAYS[0], WAYS[2], WAYS[3]];

    let mut one = c.benchmark_group("decode_600x600_jpeg/one_core");
    one.throughput(Throughput::Elements(1));
    for side in [64u32, 128] {
        for (name, way) in ways {
            one.bench_with_input(BenchmarkId::new(name, side), &side, |b, &side| {
                b.iter(|| way(&jpeg, side, &config))
            });
        }
    }
    one.finish();

    let mut all = c.benchmark_group("decode_600x600_jpeg/all_cores");
    all.throughput(Throughput::Elements((cores * BATCH) as u64));
    for side in [64u32, 128] {
        for (name, way) in ways {
            all.bench_with_input(BenchmarkId::new(name, side), &side, |b, &side| {
                b.iter(|| {
                    std::thread::scope(|scope| {
                        for _ in 0..cores {
                            scope.spawn(|| {
                                (0..BATCH).map(|_| way(&jpeg, side, &config)).sum::<usize>()
                            });
                        }
                    })
                })
            });
        }
    }
    all.finish();
}

/// Median of `values`, in ms.
fn median_ms(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Decodes one file the way the parent asked, after a small one, and
/// prints the peak growth of resident memory: the child's half of
/// [`peak_memory`].
fn memory_child(spec: &str) {
    let mut parts = spec.split('\n');
    let (Some(way), Some(side), Some(path), Some(warm)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        panic!("bad {MEMORY_CHILD}: {spec:?}");
    };
    let way = WAYS.iter().find(|(name, _)| *name == way).unwrap().1;
    let side: u32 = side.parse().unwrap();
    let mut config = Config::default();
    config.decode.max_alloc_bytes = u64::MAX;
    // Code pages run for the first time count as resident: the same route
    // on a small image first.
    way(&std::fs::read(warm).unwrap(), side.min(64), &config);
    let bytes = std::fs::read(path).unwrap();
    let (_, grew) = fixture_server::peak_resident_growth(|| way(&bytes, side, &config)).unwrap();
    println!("peak {grew}");
}

/// The peak growth of resident memory of one decode, in MB, measured in a
/// process of its own.
fn peak_memory(way: &str, side: u32, path: &std::path::Path, warm: &std::path::Path) -> f64 {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .env(
            MEMORY_CHILD,
            format!("{way}\n{side}\n{}\n{}", path.display(), warm.display()),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let bytes: f64 = stdout
        .lines()
        .find_map(|line| line.strip_prefix("peak "))
        .unwrap_or_else(|| {
            panic!(
                "no figure from the child: {stdout} {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
        .parse()
        .unwrap();
    bytes / 1e6
}

/// A small file of the same kind as `image`, to run its route once first.
fn warm_file(image: &CorpusImage) -> Vec<u8> {
    let photo = fixture_server::photo::render_photo(1, 400, 300);
    match (image.format, image.jpeg) {
        (_, Some(options)) => photo.encode_jpeg_with(&options).unwrap(),
        ("PNG", _) => photo.encode_png().unwrap(),
        ("BMP", _) => photo.encode_bmp().unwrap(),
        ("TIFF", _) => photo.encode_tiff_lzw().unwrap(),
        ("ICO", _) => fixture_server::photo::icon(1, &[32, 16]).unwrap(),
        _ => photo.encode_webp().unwrap(),
    }
}

/// One row of the corpus table.
struct Row {
    image: String,
    bits_per_pixel: f64,
    side: u32,
    /// Median ms per way, in `WAYS` order.
    ms: [f64; 4],
    /// Peak resident growth, MB, per way.
    peak_mb: [f64; 4],
    psnr_thumbpipe: Option<f64>,
    psnr_before: Option<f64>,
}

fn corpus_part(only: Option<&str>) -> String {
    let corpus: Vec<CorpusImage> = fixture_server::photo::corpus()
        .unwrap()
        .into_iter()
        .chain(fixture_server::photo::camera_corpus().unwrap())
        .filter(|image| only.is_none_or(|words| words.split(',').any(|w| image.name.contains(w))))
        .collect();
    let config = Config::default();
    let dir = std::env::temp_dir().join(format!("thumbpipe-decode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rows = Vec::new();
    for image in &corpus {
        let path = dir.join(&image.name);
        let warm = dir.join(format!("{}-warm", image.name));
        std::fs::write(&path, &image.bytes).unwrap();
        std::fs::write(&warm, warm_file(image)).unwrap();
        // Rounds: enough for a second or so of the slowest way.
        let rounds = if image.width * image.height > 2_000_000 {
            9
        } else {
            31
        };
        for side in SIDES {
            let mut times: [Vec<f64>; 4] = Default::default();
            for _ in 0..rounds {
                for (i, (_, way)) in WAYS.iter().enumerate() {
                    let started = Instant::now();
                    black_box(way(&image.bytes, side, &config));
                    times[i].push(started.elapsed().as_secs_f64() * 1000.0);
                }
            }
            let ms = times.map(|mut t| median_ms(&mut t));
            let peak_mb = WAYS.map(|(name, _)| peak_memory(name, side, &path, &warm));
            let ours = thumbpipe::thumbnail_from_bytes(
                "psnr",
                &image.bytes,
                TargetSize::square(side),
                &config.decode,
            )
            .unwrap();
            let ours =
                image::RgbaImage::from_raw(ours.width, ours.height, ours.pixels.to_vec()).unwrap();
            let reference =
                photo::reference_thumbnail(&image.bytes, ours.width(), ours.height()).unwrap();
            let row = Row {
                image: image.name.clone(),
                bits_per_pixel: image.bits_per_pixel(),
                side,
                ms,
                peak_mb,
                psnr_thumbpipe: photo::psnr(&ours, &reference),
                psnr_before: photo::psnr(&before_thumbnail(&image.bytes, side), &reference),
            };
            eprintln!(
                "{} {side}: {:.2} ms (before {:.2}, egui_extras {:.2}), peak {:.1} MB",
                row.image, ms[0], ms[1], ms[3], peak_mb[0]
            );
            rows.push(row);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    table(&rows)
}

fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "Decode of the photo corpus, {}. Median ms of one decode on one core \
         (ways interleaved); peak = growth of resident memory in a process of its own \
         (MB); PSNR against `image`'s Lanczos3 of the full decode (dB; the old route \
         ignores EXIF, so its exif6 PSNR is n/a).\n",
        thumbpipe_benches::machine(),
    )
    .unwrap();
    writeln!(
        out,
        "| image | bpp | px | thumbpipe ms | before ms | image+resize ms | egui_extras ms \
         | before / thumbpipe | egui_extras / thumbpipe | peak MB thumbpipe | before | \
         image+resize | egui_extras | PSNR thumbpipe | PSNR before |"
    )
    .unwrap();
    writeln!(
        out,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    .unwrap();
    let db = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{v:.1}"));
    for row in rows {
        writeln!(
            out,
            "| {} | {:.2} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1}x | {:.1}x | {:.1} | {:.1} | \
             {:.1} | {:.1} | {} | {} |",
            row.image,
            row.bits_per_pixel,
            row.side,
            row.ms[0],
            row.ms[1],
            row.ms[2],
            row.ms[3],
            row.ms[1] / row.ms[0],
            row.ms[3] / row.ms[0],
            row.peak_mb[0],
            row.peak_mb[1],
            row.peak_mb[2],
            row.peak_mb[3],
            db(row.psnr_thumbpipe),
            db(row.psnr_before),
        )
        .unwrap();
    }
    let find = |image: &str, side: u32| rows.iter().find(|r| r.image == image && r.side == side);
    writeln!(out, "\nTargets:").unwrap();
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    if let Some(row) = find("4000x3000-baseline-420", 256) {
        let before = row.ms[1] / row.ms[0];
        let egui = row.ms[3] / row.ms[0];
        writeln!(
            out,
            "- 4000x3000 baseline -> 256 px: {before:.2}x the old route (target >= 4x: {}), \
             {egui:.2}x egui_extras' path (target >= 5x: {}), {:.1} ms (aim 25 ms: {}); \
             peak {:.1} MB (target <= 12 MB: {})",
            verdict(before >= 4.0),
            verdict(egui >= 5.0),
            row.ms[0],
            verdict(row.ms[0] <= 25.0),
            row.peak_mb[0],
            verdict(row.peak_mb[0] <= 12.0),
        )
        .unwrap();
    }
    for side in [64, 128] {
        if let Some(row) = find("4000x3000-baseline-420-exif160", side) {
            writeln!(
                out,
                "- 12 MP photo with a 160x120 EXIF thumbnail -> {side} px: {:.2} ms (target <= 2 \
                 ms: {}), {:.1} dB (target >= 25 dB: {})",
                row.ms[0],
                verdict(row.ms[0] <= 2.0),
                row.psnr_thumbpipe.unwrap_or(0.0),
                verdict(row.psnr_thumbpipe.unwrap_or(0.0) >= 25.0),
            )
            .unwrap();
        }
    }
    if let Some(row) = find("600x600-baseline-420", 128) {
        let egui = row.ms[3] / row.ms[0];
        writeln!(
            out,
            "- 600x600 baseline -> 128 px: {egui:.2}x egui_extras' path (target >= 2x: {})",
            if egui >= 2.0 { "met" } else { "NOT met" }
        )
        .unwrap();
    }
    out
}

fn main() {
    if let Ok(spec) = std::env::var(MEMORY_CHILD) {
        return memory_child(&spec);
    }
    let mut criterion = Criterion::default().configure_from_args();
    criterion_part(&mut criterion);
    criterion.final_summary();
    if std::env::var("THUMBPIPE_DECODE_CORPUS").as_deref() == Ok("0") {
        return;
    }
    // A subset of the corpus (names containing one of these words) goes
    // to a results file of its own.
    let only = std::env::var("THUMBPIPE_DECODE_ONLY").ok();
    let table = corpus_part(only.as_deref());
    println!("{table}");
    let file = match &only {
        Some(words) => format!("results/decode-{}.md", words.replace(',', "-")),
        None => "results/decode.md".into(),
    };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(file);
    if let Err(e) = std::fs::write(&path, &table) {
        eprintln!("could not write {}: {e}", path.display());
    }
}
