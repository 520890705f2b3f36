//! `demo-app`: a list of thumbnails loaded four ways — the classic broken
//! loader (`naive`), egui's default loaders (`egui-extras`), plain
//! `egui::Image::new(url)` through thumbpipe (`egui-image`) and thumbpipe's
//! row-keyed list (`pipeline`) — with live measurements, scripted scrolls
//! and a JSON report.
//!
//! ```text
//! cargo run --release -p demo-app                                  # a window, pipeline mode
//! cargo run --release -p demo-app -- --mode naive --refresh-ms 400 --script flick
//! cargo run --release -p demo-app -- --headless --script browse --json --mode egui-image
//! cargo run --release -p demo-app -- --headless --script fling --json --coast-prediction off
//! cargo run --release -p demo-app -- --urls my-images.txt         # your own images
//! cargo run --release -p demo-app -- --folder ~/Pictures           # a folder, as a grid
//! cargo run --release -p demo-app -- --tls h2                      # HTTPS, HTTP/2
//! ```

mod app;
mod fling;
mod loaders;
mod measure;
mod script;
mod server;
mod sources;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;

use app::{Demo, Layout, Mode, Setup};
use script::ScriptKind;
use server::ServerLink;

/// A list of thumbnails loaded four ways, with live measurements.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// How the rows' images are loaded.
    #[arg(long, value_enum, default_value = "pipeline")]
    mode: Mode,
    /// Rows in the list (or the grid).
    #[arg(long, default_value_t = 200)]
    rows: usize,
    /// A row per image (`list`), or a grid of cells, as many to a row as
    /// fit the window (`grid`: `--rows` rows of them).
    #[arg(long, value_enum, default_value = "list")]
    layout: Layout,
    /// Image server; row images are {URL}/img/{id}.jpg. Without it, an
    /// embedded fixture server starts on loopback.
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// Keep thumbpipe's HTTP cache on disk in DIR (pipeline and egui-image
    /// modes): a second launch on the same DIR shows the images it has
    /// without the network, or after a 304 once they are stale.
    #[arg(long, value_name = "DIR")]
    disk_cache: Option<std::path::PathBuf>,
    /// With --disk-cache, keep the decoded thumbnails on disk too (`on`:
    /// a warm launch skips decoding), or only the responses (`off`).
    #[arg(long, value_enum, default_value = "on")]
    disk_thumbnails: OnOff,
    /// `Cache-Control: max-age` of the embedded server's images, in
    /// seconds; 0 makes a kept image stale at once (revalidated: 304).
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    max_age: u64,
    /// Serve the embedded server over TLS (its self-signed certificate,
    /// trusted by thumbpipe's modes), offering HTTP/2 and HTTP/1.1 (`h2`) or
    /// HTTP/1.1 only (`h1`). The naive and egui-extras modes speak plain
    /// HTTP only.
    #[arg(long, value_name = "h1|h2")]
    tls: Option<fixture_server::TlsOffer>,
    /// thumbpipe's fetches in flight per host (`fetch.max_per_host`), if
    /// not its default.
    #[arg(long, value_name = "N")]
    max_per_host: Option<usize>,
    /// thumbpipe's threads that read local files (`fetch.file_readers`),
    /// if not its default.
    #[arg(long, value_name = "N")]
    file_readers: Option<usize>,
    /// thumbpipe's fetches in flight over every host
    /// (`fetch.max_in_flight`), if not its default.
    #[arg(long, value_name = "N")]
    max_in_flight: Option<usize>,
    /// Latency of the embedded server, in milliseconds.
    #[arg(long, default_value_t = 250)]
    latency_ms: u64,
    /// Port of the embedded server. Default: any free port, or 47615 with
    /// --disk-cache, so that the next launch asks for the same URLs (and
    /// finds them on disk).
    #[arg(long)]
    server_port: Option<u16>,
    /// Give every row a new image every N ms, like a feed that refreshes.
    #[arg(long, value_name = "N")]
    refresh_ms: Option<u64>,
    /// Run a script, wait for the loads to end (3 s at least) and exit:
    /// `flick` scrolls to the bottom and back; `browse` stays 1 s on the
    /// first screen, scrolls down three screens at a row every 250 ms, stops
    /// 2 s and comes back; `fling` flicks the list four times with the
    /// pointer (egui's kinetic scrolling coasts it) and rests 2 s after
    /// each coast; `open` stays on the first screen until its loads end.
    #[arg(long, value_enum)]
    script: Option<ScriptKind>,
    /// A file of image URLs, one per line: rows cycle through them instead
    /// of the fixture server's numbered images (wrong-row images are then
    /// unknown, not counted).
    #[arg(long, value_name = "FILE")]
    urls: Option<std::path::PathBuf>,
    /// Show every image under DIR (recursive, sorted by path) as a grid,
    /// one cell each, loaded as `file://` URLs: thumbpipe's modes read
    /// them under DIR (`fetch.file_roots`) and use the desktop's shared
    /// thumbnails (--shared-thumbnails); `egui-extras` uses its file
    /// loader.
    #[arg(long, value_name = "DIR")]
    folder: Option<std::path::PathBuf>,
    /// Where thumbpipe's modes read and write thumbnails of local files:
    /// `desktop` (the freedesktop.org shared cache, `~/.cache/thumbnails`),
    /// `off`, or a directory of the same layout.
    #[arg(long, value_name = "desktop|off|DIR", default_value = "desktop")]
    shared_thumbnails: String,
    /// Run the UI without a window, paced at 60 Hz.
    #[arg(long)]
    headless: bool,
    /// Print the run's report as one JSON line at the end (with --script).
    #[arg(long)]
    json: bool,
    /// In `pipeline` and `egui-image` modes, load where a coasting list
    /// will come to rest first and skip rows it flies past (`on`), or load
    /// every row that shows (`off`).
    #[arg(long, value_enum, default_value = "on")]
    coast_prediction: OnOff,
    /// Ask for the first screen's images before the first frame (`on`), as
    /// an app that knows what it will show can, or leave it to the first
    /// frame (`off`).
    #[arg(long, value_enum, default_value = "on")]
    ask_first_screen: OnOff,
    /// Save a PNG of the window: a third of the way into the flick with
    /// --script flick or browse, half a second into the third fling's coast
    /// with --script fling, otherwise after two seconds. Needs a window.
    #[arg(long, value_name = "PATH")]
    screenshot: Option<std::path::PathBuf>,
    /// Rows show animated GIFs (128x128, 8 frames of 100 ms), which
    /// thumbpipe's modes play (`decode.animation` on).
    #[arg(long)]
    animated: bool,
}

/// A switch on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum OnOff {
    On,
    Off,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("demo-app: {error:#}");
        std::process::exit(1);
    }
}

/// The embedded server's port when the disk cache is on: a launch finds
/// the images of the last one only under the same URLs.
const DISK_CACHE_PORT: u16 = 47615;

fn run(args: Args) -> anyhow::Result<()> {
    if args.rows == 0 {
        bail!("--rows must be at least 1");
    }
    if args.json && args.script.is_none() {
        bail!("--json reports a scripted run: add --script flick (or browse, or fling)");
    }
    if args.headless && args.screenshot.is_some() {
        bail!("--screenshot needs a window: leave out --headless");
    }
    if args.folder.is_some() && (args.urls.is_some() || args.animated) {
        bail!("--folder shows the folder's images: leave out --urls and --animated");
    }
    if args.animated && args.urls.is_some() {
        bail!("--animated shows the fixture server's GIFs: leave out --urls");
    }
    if args.tls.is_some() && args.server.is_some() {
        bail!("--tls serves the embedded server over TLS: leave out --server");
    }
    if args.tls.is_some() && !args.mode.speaks_https() {
        bail!(
            "--tls: the {} loader speaks plain HTTP only (use --mode pipeline or egui-image)",
            args.mode.name()
        );
    }
    let server = match &args.server {
        Some(url) => ServerLink::External(url.trim_end_matches('/').to_owned()),
        None => {
            let start = |port: u16| {
                fixture_server::FixtureServer::start_dedicated(fixture_server::Config {
                    addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
                    latency: Duration::from_millis(args.latency_ms),
                    max_age: Some(Duration::from_secs(args.max_age)),
                    tls: args.tls,
                    ..fixture_server::Config::default()
                })
            };
            let port = match (args.server_port, &args.disk_cache) {
                (Some(port), _) => port,
                (None, Some(_)) => DISK_CACHE_PORT,
                (None, None) => 0,
            };
            let server = match start(port) {
                Ok(server) => server,
                Err(error) if args.server_port.is_none() && port != 0 => {
                    eprintln!(
                        "demo-app: {error}; the embedded server takes another port, so images \
                         kept on disk by another launch will not be found"
                    );
                    start(0).context("could not start the embedded fixture server")?
                }
                Err(error) => {
                    return Err(error).context("could not start the embedded fixture server");
                }
            };
            let base = server.base_url();
            ServerLink::Embedded(server, base)
        }
    };
    let urls = match (&args.urls, &args.folder) {
        (Some(path), _) => Some(sources::read_urls(path)?),
        (None, Some(dir)) => Some(sources::folder_urls(dir)?),
        (None, None) => None,
    };
    // Frames before the screenshot: a third of the way into the flick.
    let screenshot_frame = if args.script.is_some() {
        script::Flick::new(args.rows).frames() / 3
    } else {
        120
    };
    let mut fetch = fetch_config(&args);
    if let Some(dir) = &args.folder {
        fetch.file_roots.push(dir.clone());
    }
    let mut shared_thumbnails = thumbpipe::SharedThumbnailsConfig::default();
    let store = match args.shared_thumbnails.as_str() {
        "desktop" => thumbpipe::ThumbnailStore::Desktop,
        "off" => thumbpipe::ThumbnailStore::Off,
        dir => thumbpipe::ThumbnailStore::Dir(dir.into()),
    };
    shared_thumbnails.read = store.clone();
    shared_thumbnails.write = store;
    let setup = Setup {
        mode: args.mode,
        rows: args.rows,
        layout: match args.folder {
            Some(_) => Layout::Grid,
            None => args.layout,
        },
        refresh: args
            .refresh_ms
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis),
        latency_ms: args.latency_ms,
        script: args.script,
        coast_prediction: args.coast_prediction == OnOff::On,
        disk_cache: args.disk_cache,
        disk_thumbnails: args.disk_thumbnails == OnOff::On,
        animated: args.animated,
        fetch,
        folder: args.folder.is_some(),
        shared_thumbnails,
    };
    let mut demo = Demo::new(setup, server, urls);
    if args.ask_first_screen == OnOff::On {
        demo.ask_first_screen(SCREEN);
    }
    let report = if args.headless {
        run_headless(demo)?
    } else {
        run_window(demo, args.screenshot.map(|path| (path, screenshot_frame)))?
    };
    if args.json {
        let report = report.context("the run ended before its report")?;
        println!("{}", serde_json::to_string(&report)?);
    }
    Ok(())
}

/// thumbpipe's fetch settings: the defaults, with the command line's
/// limits, and the embedded server's certificate trusted when it serves
/// over TLS.
fn fetch_config(args: &Args) -> thumbpipe::FetchConfig {
    let mut fetch = thumbpipe::FetchConfig::default();
    if args.tls.is_some() {
        fetch.extra_root_certificates = vec![fixture_server::tls::CERTIFICATE_DER.to_vec()];
    }
    if let Some(max) = args.max_per_host {
        fetch.max_per_host = max;
    }
    if let Some(max) = args.max_in_flight {
        fetch.max_in_flight = max;
    }
    if let Some(readers) = args.file_readers {
        fetch.file_readers = readers;
    }
    fetch
}

/// The window's size in points, headless or not.
const SCREEN: egui::Vec2 = egui::vec2(900.0, 1000.0);

/// Drives the UI without a window at a 60 Hz pace until the script ends.
fn run_headless(mut demo: Demo) -> anyhow::Result<Option<fixture_server::RunReport>> {
    let ctx = egui::Context::default();
    let frame = Duration::from_secs_f64(1.0 / 60.0);
    let started = Instant::now();
    let mut next = started;
    let mut scripted_frames = 0u64;
    loop {
        let time = scripted_frames as f64 / 60.0;
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, SCREEN)),
            // egui's clock advances a frame a pass, so that its physics
            // (the fling script's coasts) runs alike in every run.
            time: Some(time),
            events: demo.input_events(time),
            ..egui::RawInput::default()
        };
        let _ = ctx.run_ui(input, |ui| demo.ui(ui));
        if let Some(report) = demo.report() {
            return Ok(Some(clone_report(report)?));
        }
        scripted_frames += 1;
        if scripted_frames > 10 * 60 * 60 {
            bail!(
                "headless runs need --script flick, browse or fling (none ended after 10 minutes)"
            );
        }
        next += frame;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
}

/// Writes a screenshot; a failure is reported and the demo goes on.
fn save_png(path: &std::path::Path, image: &egui::ColorImage) {
    let [width, height] = image.size;
    let rgba: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
    let saved = image::RgbaImage::from_raw(width as u32, height as u32, rgba)
        .ok_or_else(|| "the screenshot has the wrong size".to_owned())
        .and_then(|png| png.save(path).map_err(|e| e.to_string()));
    match saved {
        Ok(()) => eprintln!("demo-app: screenshot saved to {}", path.display()),
        Err(error) => eprintln!("demo-app: could not save {}: {error}", path.display()),
    }
}

fn clone_report(report: &fixture_server::RunReport) -> anyhow::Result<fixture_server::RunReport> {
    Ok(serde_json::from_value(serde_json::to_value(report)?)?)
}

/// Opens the window; returns the report if a script ran to its end.
fn run_window(
    demo: Demo,
    screenshot: Option<(std::path::PathBuf, usize)>,
) -> anyhow::Result<Option<fixture_server::RunReport>> {
    let report = std::sync::Arc::new(std::sync::Mutex::new(None));
    let out = std::sync::Arc::clone(&report);
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("thumbpipe demo")
            .with_inner_size(SCREEN),
        ..eframe::NativeOptions::default()
    };
    eframe::run_native(
        "thumbpipe demo",
        options,
        Box::new(move |_cc| {
            Ok(Box::new(Window {
                demo,
                out,
                screenshot,
                frames: 0,
            }))
        }),
    )
    .map_err(|e| anyhow::anyhow!("could not open the window: {e}"))?;
    let taken = report.lock().map(|mut r| r.take()).unwrap_or(None);
    Ok(taken)
}

struct Window {
    demo: Demo,
    out: std::sync::Arc<std::sync::Mutex<Option<fixture_server::RunReport>>>,
    /// Where to save a screenshot, and at which frame.
    screenshot: Option<(std::path::PathBuf, usize)>,
    frames: usize,
}

impl eframe::App for Window {
    /// The `fling` script's pointer, added to the window's own input.
    fn raw_input_hook(&mut self, ctx: &egui::Context, raw_input: &mut egui::RawInput) {
        let time = raw_input.time.unwrap_or_else(|| ctx.input(|i| i.time));
        raw_input.events.extend(self.demo.input_events(time));
    }

    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.demo.ui(ui);
        self.frames += 1;
        // A fling's moment is the demo's to say; a scripted scroll's is a frame.
        let due = |frame: usize| match self.demo.flinging() {
            true => self.demo.fling_screenshot_due(),
            false => frame <= self.frames,
        };
        if self
            .screenshot
            .as_ref()
            .is_some_and(|(_, frame)| due(*frame))
            && let Some((path, _)) = self.screenshot.take()
        {
            ui.ctx()
                .request_screenshot(move |image| save_png(&path, &image));
        }
        if self.screenshot.is_some() {
            // An idle list stops asking for frames; count them on anyway
            // until the screenshot's frame comes.
            ui.ctx().request_repaint();
        }
        if let Some(report) = self.demo.report() {
            if let (Ok(mut out), Ok(report)) = (self.out.lock(), clone_report(report)) {
                *out = Some(report);
            }
            ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
        }
    }
}
