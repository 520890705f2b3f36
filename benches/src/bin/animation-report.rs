//! `animation-report`: what playing animated avatars costs a list, drawn
//! and scrolled away.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin animation-report
//! cargo run --release -p thumbpipe-benches --bin animation-report -- --avatars 30 --seconds 3
//! ```
//!
//! `--avatars` `egui::Image`s of 48x48 points at 2 pixels a point (96x96
//! pixel thumbnails) drawn through `thumbpipe::egui` in a headless
//! `egui::Context`, against an in-process fixture server at 0 ms, in
//! three setups in the same run, each a fresh loader and context:
//!
//! - **still**: the avatars as PNGs (the baseline);
//! - **first frame**: as animated GIFs (8 frames of 100 ms), the default
//!   config, which draws their first frame;
//! - **animated**: the same GIFs with `DecodeConfig::animation` on.
//!
//! Once every avatar is drawn, the report runs an event loop as eframe's
//! is, for `--seconds`: a pass whenever egui asked for one (the repaint
//! delay of the last pass) and the UI thread asleep otherwise. It does so
//! with the avatars on screen, then scrolled away (passes that draw
//! nothing). For each it gives the passes run, the process's CPU time per
//! second (every thread: the UI thread's passes and the pipeline's), and
//! the textures alive. Before the loops, 300 passes drawing the avatars
//! back to back give the UI thread's time a pass (median and p99 of their
//! wall time, and the median's ratio to still images').
//!
//! Writes `animation-report.md` to `--out` and prints it.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use egui::load::TexturePoll;
use egui::{Context, RawInput, ViewportId, vec2};
use fixture_server::{Config as ServerConfig, FixtureServer};
use thumbpipe::egui::{EguiConfig, Loader};
use thumbpipe_benches::machine;

#[derive(Debug, Parser)]
#[command(about = "What animated avatars cost a list: UI time, CPU, textures")]
struct Args {
    /// Avatars on screen.
    #[arg(long, default_value_t = 30)]
    avatars: u32,
    /// Seconds of each event loop (on screen, then scrolled away).
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Where the report is written.
    #[arg(long, default_value = "benches/results")]
    out: PathBuf,
}

/// How an avatar is drawn: its size in points, and pixels a point.
const AVATAR_POINTS: f32 = 48.0;
const PIXELS_PER_POINT: f32 = 2.0;

#[derive(Clone, Copy, Debug)]
enum Setup {
    Still,
    FirstFrame,
    Animated,
}

impl Setup {
    fn name(self) -> &'static str {
        match self {
            Setup::Still => "still (PNG)",
            Setup::FirstFrame => "first frame (GIF, default config)",
            Setup::Animated => "animated (GIF, `decode.animation` on)",
        }
    }
}

/// One event loop's figures.
struct Loop {
    passes: usize,
    cpu_ms_per_s: f64,
    textures: usize,
    texture_kib: usize,
}

/// Passes measured back to back for the UI thread's time a pass.
const TIMED_PASSES: usize = 300;

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("animation-report: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let server = FixtureServer::start_dedicated(ServerConfig {
        latency: Duration::ZERO,
        ..ServerConfig::default()
    })
    .context("starting the fixture server")?;
    let seconds = Duration::from_secs_f64(args.seconds);
    let mut rows = Vec::new();
    for setup in [Setup::Still, Setup::FirstFrame, Setup::Animated] {
        let extension = match setup {
            Setup::Still => "png",
            Setup::FirstFrame | Setup::Animated => "gif",
        };
        let uris: Vec<String> = (0..args.avatars)
            .map(|id| {
                format!(
                    "{}/img/{}.{extension}?w=128&h=128",
                    server.base_url(),
                    id + 1
                )
            })
            .collect();
        let mut config = EguiConfig::default();
        config.pipeline.decode.animation = matches!(setup, Setup::Animated);
        let ctx = Context::default();
        ctx.set_pixels_per_point(PIXELS_PER_POINT);
        let loader = thumbpipe::egui::install(&ctx, config).context("installing thumbpipe")?;
        let clock = Instant::now();
        load_all(&ctx, &uris, clock)?;
        let mut pass_us: Vec<f64> = (0..TIMED_PASSES)
            .map(|_| {
                let at = Instant::now();
                pass(&ctx, Some(&uris), clock);
                at.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        pass_us.sort_by(f64::total_cmp);
        let share = |share: f64| pass_us[((TIMED_PASSES - 1) as f64 * share).round() as usize];
        let shown = event_loop(&ctx, &loader, Some(&uris), seconds, clock);
        let away = event_loop(&ctx, &loader, None, seconds, clock);
        rows.push(Row {
            setup,
            pass_median_us: share(0.5),
            pass_p99_us: share(0.99),
            shown,
            away,
        });
    }
    let report = report(&args, &rows);
    print!("{report}");
    std::fs::create_dir_all(&args.out)?;
    let path = args.out.join("animation-report.md");
    std::fs::write(&path, report).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// One pass at the time since `clock`, drawing `uris` (or nothing): how
/// many were drawn, and the repaint egui was asked for.
fn pass(ctx: &Context, uris: Option<&[String]>, clock: Instant) -> (usize, Duration) {
    let input = RawInput {
        time: Some(clock.elapsed().as_secs_f64()),
        ..RawInput::default()
    };
    let mut drawn = 0;
    let output = ctx.run_ui(input, |ui| {
        for uri in uris.unwrap_or_default() {
            let image = egui::Image::new(uri.as_str())
                .fit_to_exact_size(vec2(AVATAR_POINTS, AVATAR_POINTS));
            if let Ok(TexturePoll::Ready { .. }) =
                image.load_for_size(ui.ctx(), ui.available_size())
            {
                drawn += 1;
            }
            ui.add(image);
        }
    });
    let repaint = output
        .viewport_output
        .get(&ViewportId::ROOT)
        .map_or(Duration::MAX, |viewport| viewport.repaint_delay);
    (drawn, repaint)
}

/// Draws `uris` until every one is drawn (30 s at most).
fn load_all(ctx: &Context, uris: &[String], clock: Instant) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while pass(ctx, Some(uris), clock).0 < uris.len() {
        if Instant::now() > deadline {
            bail!("the avatars were not all drawn within 30 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// eframe's loop for `length`: a pass when the last one's repaint delay
/// has passed, asleep until then (never longer than the time left).
fn event_loop(
    ctx: &Context,
    loader: &Loader,
    uris: Option<&[String]>,
    length: Duration,
    clock: Instant,
) -> Loop {
    let mut passes = 0;
    let cpu_before = process_cpu();
    let started = Instant::now();
    let end = started + length;
    // The first pass shows the new state (scrolled away: nothing drawn).
    let mut next = started;
    while next < end {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let (_, repaint) = pass(ctx, uris, clock);
        passes += 1;
        next = Instant::now()
            .checked_add(repaint)
            .map_or(end, |next| next.min(end));
    }
    // No pass asked for: asleep until the loop's end.
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    let cpu = process_cpu().saturating_sub(cpu_before);
    let stats = loader.texture_stats();
    Loop {
        passes,
        cpu_ms_per_s: cpu.as_secs_f64() * 1e3 / started.elapsed().as_secs_f64(),
        textures: stats.textures,
        texture_kib: stats.bytes / 1024,
    }
}

/// The CPU time of every live thread of this process so far, in
/// nanoseconds (the first field of each `/proc/self/task/*/schedstat`);
/// zero where it cannot be read.
fn process_cpu() -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let nanos = tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

/// One setup's figures.
struct Row {
    setup: Setup,
    pass_median_us: f64,
    pass_p99_us: f64,
    shown: Loop,
    away: Loop,
}

fn report(args: &Args, rows: &[Row]) -> String {
    let mut out = String::new();
    let still_median = rows.first().map_or(1.0, |row| row.pass_median_us);
    let _ = writeln!(out, "# Animated avatars\n");
    let _ = writeln!(
        out,
        "`cargo run --release -p thumbpipe-benches --bin animation-report -- --avatars {} \
         --seconds {}` on {}.\n",
        args.avatars,
        args.seconds,
        machine()
    );
    let _ = writeln!(
        out,
        "{} `egui::Image`s of {AVATAR_POINTS}x{AVATAR_POINTS} points at {PIXELS_PER_POINT} \
         pixels a point, through `thumbpipe::egui` (its default config but for \
         `decode.animation`), in a headless egui context; the fixture server's 128x128 images \
         at 0 ms (GIFs: 8 frames of 100 ms). Each setup runs an event loop as eframe's for {} s \
         with the avatars on screen, then {} s scrolled away: a pass when egui asks for one, \
         asleep otherwise. CPU is the whole process's (UI thread and pipeline; each thread's \
         `schedstat`) a second of the loop. UI time a pass: {TIMED_PASSES} passes drawing the avatars, back to back.\n",
        args.avatars, args.seconds, args.seconds
    );
    let _ = writeln!(
        out,
        "| setup | on screen: passes | UI time a pass, median (p99) | vs still | CPU ms/s | \
         textures (KiB) | scrolled away: passes | CPU ms/s | textures |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for Row {
        setup,
        pass_median_us,
        pass_p99_us,
        shown,
        away,
    } in rows
    {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} us ({:.0} us) | {:.2}x | {:.2} | {} ({}) | {} | {:.2} | {} |",
            setup.name(),
            shown.passes,
            pass_median_us,
            pass_p99_us,
            pass_median_us / still_median,
            shown.cpu_ms_per_s,
            shown.textures,
            shown.texture_kib,
            away.passes,
            away.cpu_ms_per_s,
            away.textures,
        );
    }
    out
}
