//! `load-path`: one `egui::Image::new(url)` load through `thumbpipe::egui`,
//! in a headless egui context against an in-process fixture server, paced
//! so that a profiler can watch the load alone: it prints `ready` once the
//! pipeline, the server and egui are up (and one image has been loaded and
//! forgotten, so that first-use work is done, and the server has drawn the
//! image to load), waits for a line on standard input, loads the image (its JPEG read and decoded, its texture drawn),
//! prints `loaded`, and waits for another line before it ends.
//!
//! `benches/scripts/load_path_files.py` runs it under callgrind, turns the
//! instrumentation on between the two lines, and counts the files of
//! `pipeline/src` whose code ran: the files a load passes through.
//!
//! ```text
//! cargo build -p thumbpipe-benches --bin load-path
//! python3 benches/scripts/load_path_files.py target/debug/load-path [-- --disk-cache DIR]
//! target/debug/load-path --image progressive   # by hand: type Enter twice
//! ```
//!
//! `--image plain` (the default) is a 600x600 baseline JPEG; `camera` a
//! 4000x3000 photo with a 160x120 EXIF thumbnail; `progressive` a 4000x3000
//! progressive photo with none, read and decoded from its DC scans.

use std::io::BufRead as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Parser, ValueEnum};
use egui::load::TexturePoll;
use fixture_server::{Config as ServerConfig, FixtureServer};

#[derive(Parser, Debug)]
#[command(about = "one egui::Image load through thumbpipe, paced for a profiler")]
struct Args {
    /// Which image to load.
    #[arg(long, value_enum, default_value_t = Kind::Plain)]
    image: Kind,
    /// Keep responses and thumbnails in a disk cache in this directory
    /// (emptied first).
    #[arg(long)]
    disk_cache: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Kind {
    Plain,
    Camera,
    Progressive,
}

impl Kind {
    fn url(self, base: &str, id: u32) -> String {
        match self {
            Kind::Plain => format!("{base}/img/{id}.jpg"),
            Kind::Camera => format!("{base}/img/{id}.jpg?w=4000&h=3000&exif=160"),
            Kind::Progressive => {
                format!("{base}/img/{id}.jpg?w=4000&h=3000&exif=0&progressive=1")
            }
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let server = FixtureServer::start_dedicated(ServerConfig {
        latency: Duration::ZERO,
        ..ServerConfig::default()
    })
    .context("starting the fixture server")?;
    let mut config = thumbpipe::egui::EguiConfig::default();
    if let Some(dir) = &args.disk_cache {
        let _ = std::fs::remove_dir_all(dir);
        config.pipeline.disk.dir = Some(dir.clone());
    }
    let ctx = egui::Context::default();
    let loader = thumbpipe::egui::install(&ctx, config).context("installing thumbpipe")?;
    // First use of every part (threads, connections, egui's fonts), then
    // nothing of it left in the caches.
    let base = server.base_url();
    load(&ctx, &args.image.url(&base, 1))?;
    loader.clear();
    // The image to load, drawn by the server now: its encoding is not the
    // load's work.
    let url = args.image.url(&base, 2);
    fixture_server::blocking_client::get(&url)
        .map_err(|error| anyhow::anyhow!("{url}: {error}"))?;
    println!("ready");
    wait_for_a_line()?;
    load(&ctx, &url)?;
    println!("loaded");
    wait_for_a_line()?;
    drop(loader);
    Ok(())
}

/// Draws `url` as a 64-point image, pass after pass, until its texture is
/// drawn (120 s at most: a profiler slows everything down).
fn load(ctx: &egui::Context, url: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut ready = None;
        let _ = ctx.run_ui(egui::RawInput::default(), |ui| {
            let image = egui::Image::new(url).fit_to_exact_size(egui::vec2(64.0, 64.0));
            ready = Some(image.load_for_size(ui.ctx(), ui.available_size()));
            ui.add(image);
        });
        match ready {
            Some(Ok(TexturePoll::Ready { .. })) => return Ok(()),
            Some(Err(error)) => bail!("{url}: {error}"),
            _ if Instant::now() > deadline => bail!("{url}: not loaded in 120 s"),
            _ => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

fn wait_for_a_line() -> anyhow::Result<()> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(())
}
