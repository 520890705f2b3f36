//! The demo's UI: a top bar (mode switch and live measurements, `bar.rs`)
//! over a virtualized list of rows or grid of cells (`list.rs`), and the
//! scripts and measures that run through it; a scripted run ends by itself
//! and leaves its [`RunReport`] (`report.rs`). The same code runs in a
//! window and headless.
//!
//! Owned by `main`; runs on the UI thread, one call of [`Demo::ui`] per
//! frame.

mod bar;
mod list;
mod modes;
mod report;
mod watch;

pub use modes::{Layout, Mode};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use std::sync::Arc;

use crate::loaders::{
    EguiExtrasLoader, EguiImageLoader, Loader, LocalCounts, NaiveLoader, PipelineLoader, THUMB_SIDE,
};
use fixture_server::RunReport;

use crate::fling::{FlingDriver, FlingMeasures, ListSeen};
use crate::measure::Measurements;
use crate::script::{Script, ScriptKind};
use crate::server::ServerLink;

const ROW_HEIGHT: f32 = THUMB_SIDE + 8.0;

pub struct Demo {
    mode: Mode,
    /// Rows of the list, or of the grid.
    rows: usize,
    layout: Layout,
    /// Images to a row in the last pass: 1 in a list.
    columns_seen: Option<usize>,
    refresh: Option<Duration>,
    latency_ms: u64,
    server: ServerLink,
    /// Images of the user's (`--urls`), which rows cycle through; `None`
    /// for the fixture server's numbered images.
    urls: Option<Arc<Vec<String>>>,
    /// With `--folder`, its images are the grid's cells, one each: the
    /// grid has as many rows as they need.
    folder: bool,
    /// thumbpipe's modes read and write the desktop's thumbnails of local
    /// files as this says.
    shared_thumbnails: thumbpipe::SharedThumbnailsConfig,
    script: Option<ScriptKind>,
    /// The script laid out for the list, on the first frame of a run.
    plan: Option<Script>,
    /// The `fling` script's pointer, and its measures.
    fling: Option<FlingDriver>,
    flings: FlingMeasures,
    /// The frame the script ended at.
    script_ended_at: Option<usize>,
    /// Whether thumbpipe's modes follow a coast's prediction.
    coast_prediction: bool,
    /// thumbpipe's modes keep an HTTP cache on disk here.
    disk_cache: Option<PathBuf>,
    /// And keep decoded thumbnails in it.
    disk_thumbnails: bool,
    /// Rows show the fixture server's animated GIFs, played by thumbpipe.
    animated: bool,
    /// thumbpipe's fetch settings for its modes.
    fetch: thumbpipe::FetchConfig,
    /// The list's scroll area, watched for coasts.
    coast_watch: thumbpipe::egui::CoastWatch,
    /// The list as the last pass left it.
    list_seen: Option<ListSeen>,
    /// The coast the last pass followed, for the top bar.
    coast: Option<thumbpipe::CoastPrediction>,
    loader: Option<Box<dyn Loader>>,
    measurements: Measurements,
    mode_started: Instant,
    frame: usize,
    flick_started: Option<Instant>,
    flick_ended: Option<Instant>,
    /// Last time the loader or the server had a request unfinished, after
    /// the flick.
    last_busy: Option<Instant>,
    /// The scroll offset of the last frame, and when it last changed.
    last_offset: Option<f32>,
    last_moved: Option<Instant>,
    /// The first frame since the list last moved in which every visible row
    /// showed its image.
    settled: Option<Instant>,
    /// (frame, visible row) pairs without their image on the way back.
    placeholders_back: u64,
    /// When the mode drew its first list, and the first frame in which
    /// every visible row showed its image.
    first_list: Option<Instant>,
    first_screen: Option<Instant>,
    /// A pipeline asked for the first screen before the first frame
    /// ([`Demo::ask_first_screen`]), for the loader to take, and when.
    early: Option<EarlyAsk>,
    asked_first: Option<Instant>,
    /// Frames drawn since the mode started, and the one that first drew
    /// the list.
    passes: u64,
    first_list_pass: Option<u64>,
    /// Frames after that one until the first screen was whole.
    first_screen_frames: Option<u64>,
    /// Image requests the server had received at `first_screen`.
    requests_at_first_screen: Option<u64>,
    /// A folder's counts (decodes, shared thumbnails) at `first_screen`.
    local_at_first_screen: Option<LocalCounts>,
    texture_bytes_peak: Option<u64>,
    report: Option<RunReport>,
    error: Option<String>,
}

/// A pipeline built and asked for the first screen before the window, and
/// the threads and memory (MB) building it brought.
struct EarlyAsk {
    pipeline: thumbpipe::Pipeline<usize>,
    threads: usize,
    rss_mb: f64,
}

/// What the command line chose for a run.
pub struct Setup {
    pub mode: Mode,
    pub rows: usize,
    pub layout: Layout,
    /// Every row's image changes this often.
    pub refresh: Option<Duration>,
    pub latency_ms: u64,
    pub script: Option<ScriptKind>,
    /// Whether thumbpipe's modes follow a coast's prediction.
    pub coast_prediction: bool,
    /// A directory for thumbpipe's HTTP cache on disk.
    pub disk_cache: Option<PathBuf>,
    /// Whether that cache keeps decoded thumbnails too.
    pub disk_thumbnails: bool,
    /// Whether rows show animated GIFs (thumbpipe's modes play them).
    pub animated: bool,
    /// thumbpipe's fetch settings for its modes: the defaults, with the
    /// command line's limits and, over TLS, the embedded server's
    /// certificate trusted.
    pub fetch: thumbpipe::FetchConfig,
    /// Whether the images (`urls`) are a folder's, one cell each.
    pub folder: bool,
    pub shared_thumbnails: thumbpipe::SharedThumbnailsConfig,
}

impl Demo {
    pub fn new(setup: Setup, server: ServerLink, urls: Option<Vec<String>>) -> Self {
        let Setup {
            mode,
            rows,
            layout,
            refresh,
            latency_ms,
            script,
            coast_prediction,
            disk_cache,
            disk_thumbnails,
            animated,
            fetch,
            folder,
            shared_thumbnails,
        } = setup;
        Self {
            mode,
            rows,
            layout,
            columns_seen: None,
            refresh,
            latency_ms,
            server,
            urls: urls.map(Arc::new),
            folder,
            shared_thumbnails,
            script,
            plan: None,
            fling: None,
            flings: FlingMeasures::default(),
            script_ended_at: None,
            coast_prediction,
            disk_cache,
            disk_thumbnails,
            animated,
            fetch,
            coast_watch: thumbpipe::egui::CoastWatch::new(),
            list_seen: None,
            coast: None,
            loader: None,
            measurements: Measurements::default(),
            mode_started: Instant::now(),
            frame: 0,
            flick_started: None,
            flick_ended: None,
            last_busy: None,
            last_offset: None,
            last_moved: None,
            settled: None,
            placeholders_back: 0,
            first_list: None,
            first_screen: None,
            early: None,
            asked_first: None,
            passes: 0,
            first_list_pass: None,
            first_screen_frames: None,
            requests_at_first_screen: None,
            local_at_first_screen: None,
            texture_bytes_peak: None,
            report: None,
            error: None,
        }
    }

    /// The input events of the next pass, whose input time is `time`
    /// seconds: the `fling` script's pointer.
    pub fn input_events(&mut self, time: f64) -> Vec<egui::Event> {
        match &mut self.fling {
            Some(driver) => driver.events(self.list_seen, time),
            None => Vec::new(),
        }
    }

    /// Whether now is the moment for the screenshot of a `fling` run: half
    /// a second into the long fling's coast, its resting rows loading.
    pub fn fling_screenshot_due(&self) -> bool {
        self.flings
            .coasting_for(2)
            .is_some_and(|coasted| coasted >= Duration::from_millis(500))
    }

    /// Whether the `fling` script runs.
    pub fn flinging(&self) -> bool {
        self.fling.is_some()
    }

    /// The report, once a scripted run has finished.
    pub fn report(&self) -> Option<&RunReport> {
        self.report.as_ref()
    }

    /// thumbpipe's settings for its modes: the defaults, with the command
    /// line's coast prediction, disk cache and fetch settings.
    fn pipeline_config(&self) -> thumbpipe::egui::EguiConfig {
        let mut config = thumbpipe::egui::EguiConfig::default();
        config.coast_prediction = self.coast_prediction;
        config.pipeline.disk.dir = self.disk_cache.clone();
        config.pipeline.disk.thumbnails = self.disk_thumbnails;
        config.pipeline.decode.animation = self.animated;
        config.pipeline.fetch = self.fetch.clone();
        config.pipeline.shared_thumbnails = self.shared_thumbnails.clone();
        config
    }

    /// Starts `mode` afresh: a new loader, new counters, the list at the top.
    fn reset(&mut self, ctx: &egui::Context, mode: Mode) {
        self.loader = None; // drop the old loader before measuring anew
        self.mode = mode;
        // A pipeline asked for the first screen before the first frame was
        // measured from then on.
        let early = self.early.take().filter(|_| mode == Mode::Pipeline);
        match &early {
            Some(early) => self.measurements.rebase(early.threads, early.rss_mb),
            None => {
                self.server.reset_stats();
                self.measurements = Measurements::start();
                self.asked_first = None;
            }
        }
        let early = early.map(|early| early.pipeline);
        self.loader = match mode {
            Mode::Naive => Some(Box::new(NaiveLoader::new())),
            Mode::EguiExtras => Some(Box::new(EguiExtrasLoader::new(ctx))),
            Mode::EguiImage => self.started(EguiImageLoader::new(ctx, self.pipeline_config())),
            Mode::Pipeline => self.started(PipelineLoader::new(ctx, self.pipeline_config(), early)),
        };
        self.mode_started = Instant::now();
        self.frame = 0;
        self.flick_started = None;
        self.flick_ended = None;
        self.last_busy = None;
        self.plan = None;
        self.fling = (self.script == Some(ScriptKind::Fling)).then(FlingDriver::new);
        self.flings = FlingMeasures::default();
        self.script_ended_at = None;
        self.coast_watch = thumbpipe::egui::CoastWatch::new();
        self.list_seen = None;
        self.last_offset = None;
        self.last_moved = None;
        self.settled = None;
        self.first_list = None;
        self.first_screen = None;
        self.passes = 0;
        self.first_list_pass = None;
        self.first_screen_frames = None;
        self.requests_at_first_screen = None;
        self.local_at_first_screen = None;
        self.placeholders_back = 0;
        self.texture_bytes_peak = None;
    }

    fn started(
        &mut self,
        loader: anyhow::Result<impl Loader + 'static>,
    ) -> Option<Box<dyn Loader>> {
        match loader {
            Ok(loader) => Some(Box::new(loader)),
            Err(error) => {
                self.error = Some(format!("{error:#}"));
                None
            }
        }
    }

    /// The image item `row` of `items` (a list's row, a grid's cell) shows
    /// now. With a refresh period, every item gets a new image each period;
    /// a scripted run stops refreshing when the flick ends, so that the tail
    /// measures the flick's own requests.
    fn image_id(&self, row: usize, items: usize) -> u32 {
        let elapsed = match self.flick_ended {
            Some(end) => end - self.mode_started,
            None => self.mode_started.elapsed(),
        };
        let generation = self.refresh.map_or(0, |every| {
            (elapsed.as_millis() / every.as_millis().max(1)) as usize
        });
        ((generation * items + row) as u32) & fixture_server::MAX_ID
    }

    /// One frame.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let started = Instant::now();
        let ctx = ui.ctx().clone();
        if self.loader.is_none() && self.error.is_none() {
            self.reset(&ctx, self.mode);
        }
        if let Some(loader) = &mut self.loader {
            loader.begin_frame(&ctx);
        }
        let counts = self.loader.as_ref().map(|l| l.counts()).unwrap_or_default();
        self.measurements.waiting_for_connection = counts.waiting_for_connection as usize;
        if let Some(bytes) = counts.texture_bytes {
            self.texture_bytes_peak = Some(self.texture_bytes_peak.unwrap_or(0).max(bytes));
        }
        if let Some(mode) = self.top_bar(ui, counts) {
            self.reset(&ctx, mode);
        }
        let offset = self.scripted_offset(ui);
        let (states, scroll) = self.list(ui, offset);
        if let Some(loader) = &mut self.loader {
            loader.end_frame();
        }
        self.watch_fling(&states, scroll);
        // A fling's offset is egui's: the list moves when egui moves it.
        let offset = offset.or(self.fling.as_ref().map(|_| scroll));
        self.watch_rows(started, offset, &states);
        if self.first_screen.is_some() && self.local_at_first_screen.is_none() {
            self.local_at_first_screen = counts.local;
        }
        self.advance_script(counts);
        self.passes += 1;
        self.measurements
            .frame(started.elapsed().as_secs_f64() * 1000.0);
        if self.script.is_some() || counts.in_flight > 0 {
            ctx.request_repaint();
        }
    }
}
