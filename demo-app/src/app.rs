//! The demo's UI: a top bar (mode switch and live measurements) over a
//! virtualized list of rows, each with a thumbnail, its image id and its
//! load state. The same code runs in a window and headless.
//!
//! Owned by `main`; runs on the UI thread, one call of [`Demo::ui`] per
//! frame. A scripted run ends by itself and leaves its [`RunReport`].

use std::path::PathBuf;
use std::time::{Duration, Instant};

use std::sync::Arc;

use crate::loaders::{
    Counts, EguiExtrasLoader, EguiImageLoader, Loader, NaiveLoader, PipelineLoader, RowState,
    THUMB_SIDE,
};
use fixture_server::{RunReport, percentile};

use crate::fling::{FlingDriver, FlingMeasures, ListSeen, PassSeen};
use crate::measure::{Measurements, disk_report};
use crate::script::{QUIET_AFTER_TAIL, STILL_FRAMES, STILL_FRAMES_MAX, Script, ScriptKind};
use crate::server::ServerLink;

/// How the rows' images are loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Naive,
    EguiExtras,
    /// `egui::Image::new(url)` through `thumbpipe::egui::install`.
    EguiImage,
    Pipeline,
}

impl Mode {
    pub const ALL: [Mode; 4] = [
        Mode::Naive,
        Mode::EguiExtras,
        Mode::EguiImage,
        Mode::Pipeline,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Naive => "naive",
            Mode::EguiExtras => "egui-extras",
            Mode::EguiImage => "egui-image",
            Mode::Pipeline => "pipeline",
        }
    }

    /// Whether the mode's loader can trust a certificate given to it: the
    /// embedded server's, with `--tls`.
    pub fn speaks_https(self) -> bool {
        matches!(self, Mode::EguiImage | Mode::Pipeline)
    }
}

const ROW_HEIGHT: f32 = THUMB_SIDE + 8.0;

pub struct Demo {
    mode: Mode,
    rows: usize,
    refresh: Option<Duration>,
    latency_ms: u64,
    server: ServerLink,
    /// Images of the user's (`--urls`), which rows cycle through; `None`
    /// for the fixture server's numbered images.
    urls: Option<Arc<Vec<String>>>,
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
    /// Image requests the server had received at `first_screen`.
    requests_at_first_screen: Option<u64>,
    texture_bytes_peak: Option<u64>,
    report: Option<RunReport>,
    error: Option<String>,
}

/// What the command line chose for a run.
pub struct Setup {
    pub mode: Mode,
    pub rows: usize,
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
    /// thumbpipe's fetch settings for its modes: the defaults, with the
    /// command line's limits and, over TLS, the embedded server's
    /// certificate trusted.
    pub fetch: thumbpipe::FetchConfig,
}

impl Demo {
    pub fn new(setup: Setup, server: ServerLink, urls: Option<Vec<String>>) -> Self {
        let Setup {
            mode,
            rows,
            refresh,
            latency_ms,
            script,
            coast_prediction,
            disk_cache,
            disk_thumbnails,
            fetch,
        } = setup;
        Self {
            mode,
            rows,
            refresh,
            latency_ms,
            server,
            urls: urls.map(Arc::new),
            script,
            plan: None,
            fling: None,
            flings: FlingMeasures::default(),
            script_ended_at: None,
            coast_prediction,
            disk_cache,
            disk_thumbnails,
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
            requests_at_first_screen: None,
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
        config.pipeline.fetch = self.fetch.clone();
        config
    }

    /// Starts `mode` afresh: a new loader, new counters, the list at the top.
    fn reset(&mut self, ctx: &egui::Context, mode: Mode) {
        self.loader = None; // drop the old loader before measuring anew
        self.mode = mode;
        self.server.reset_stats();
        self.measurements = Measurements::start();
        self.loader = match mode {
            Mode::Naive => Some(Box::new(NaiveLoader::new())),
            Mode::EguiExtras => Some(Box::new(EguiExtrasLoader::new(ctx))),
            Mode::EguiImage => self.started(EguiImageLoader::new(ctx, self.pipeline_config())),
            Mode::Pipeline => self.started(PipelineLoader::new(ctx, self.pipeline_config())),
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
        self.requests_at_first_screen = None;
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

    /// The image row `row` shows now. With a refresh period, every row gets
    /// a new image each period; a scripted run stops refreshing when the
    /// flick ends, so that the tail measures the flick's own requests.
    fn image_id(&self, row: usize) -> u32 {
        let elapsed = match self.flick_ended {
            Some(end) => end - self.mode_started,
            None => self.mode_started.elapsed(),
        };
        let generation = self.refresh.map_or(0, |every| {
            (elapsed.as_millis() / every.as_millis().max(1)) as usize
        });
        ((generation * self.rows + row) as u32) & fixture_server::MAX_ID
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
        self.advance_script(counts);
        self.measurements
            .frame(started.elapsed().as_secs_f64() * 1000.0);
        if self.script.is_some() || counts.in_flight > 0 {
            ctx.request_repaint();
        }
    }

    /// Measures the fling under way from this pass.
    fn watch_fling(&mut self, states: &[RowState], offset: f32) {
        let (Some(driver), Some(seen)) = (&self.fling, self.list_seen) else {
            return;
        };
        let server = &self.server;
        self.flings.pass(
            driver.phase(),
            PassSeen {
                now: Instant::now(),
                offset,
                velocity: seen.velocity,
                placeholders: states.iter().filter(|s| **s != RowState::Shown).count(),
            },
            || {
                let stats = server.stats();
                (stats.requests_started, stats.bytes_sent)
            },
        );
    }

    fn scripted_offset(&mut self, ui: &egui::Ui) -> Option<f32> {
        let kind = self.script?;
        let spacing = ui.spacing().item_spacing.y;
        let pitch = ROW_HEIGHT + spacing;
        let content = self.rows as f32 * pitch;
        let viewport = (ui.available_height() - 8.0).max(ROW_HEIGHT);
        let range = (content - viewport).max(0.0);
        let plan = match self.plan {
            Some(plan) => plan,
            None => *self
                .plan
                .insert(Script::new(kind, self.rows, pitch, viewport, range)?),
        };
        Some(plan.offset(self.frame).unwrap_or(0.0))
    }

    /// The top bar's line on the coast under way: where it will rest.
    fn coast_line(&self, ui: &egui::Ui) -> egui::RichText {
        let follows =
            matches!(self.mode, Mode::Pipeline | Mode::EguiImage) && self.coast_prediction;
        match &self.coast {
            Some(coast) => {
                let rest = coast.resting_rows();
                let text = format!(
                    "coasting: comes to rest on rows {}-{} in {:.1} s{}",
                    rest.start,
                    rest.end.saturating_sub(1),
                    coast.duration().as_secs_f32(),
                    if follows {
                        " · those load first; rows flown past are not loaded"
                    } else {
                        " · this mode loads every row that shows"
                    }
                );
                egui::RichText::new(text).color(egui::Color32::from_rgb(90, 170, 230))
            }
            None => egui::RichText::new("at rest · drag the list and let go to fling it")
                .color(ui.visuals().weak_text_color()),
        }
    }

    /// Settling and placeholders, from what the visible rows drew.
    fn watch_rows(&mut self, now: Instant, offset: Option<f32>, states: &[RowState]) {
        let all_shown = states.iter().all(|state| *state == RowState::Shown);
        if !states.is_empty() {
            let first = *self.first_list.get_or_insert(now);
            if all_shown && self.first_screen.is_none() {
                self.first_screen = Some(now.max(first));
                self.requests_at_first_screen = Some(self.server.stats().requests_started);
            }
        }
        let moved = offset.is_some() && offset != self.last_offset;
        self.last_offset = offset;
        if moved {
            self.last_moved = Some(now);
            self.settled = all_shown.then_some(now);
        } else if self.settled.is_none() && all_shown {
            self.settled = Some(now);
        }
        if self
            .plan
            .is_some_and(|plan| plan.on_the_way_back(self.frame))
        {
            let placeholders = states.iter().filter(|s| **s != RowState::Shown).count();
            self.placeholders_back += placeholders as u64;
        }
    }

    fn advance_script(&mut self, counts: Counts) {
        let scripted_frames = match (&self.plan, &self.fling) {
            (Some(plan), _) => Some(plan.frames()),
            (None, Some(driver)) => driver
                .finished()
                .then(|| *self.script_ended_at.get_or_insert(self.frame)),
            (None, None) => return,
        };
        if self.report.is_some() {
            return;
        }
        if self.frame == 0 {
            self.flick_started = Some(Instant::now());
        }
        self.frame += 1;
        if self.flick_ended.is_none() && scripted_frames.is_some_and(|frames| self.frame >= frames)
        {
            self.flick_ended = Some(Instant::now());
        }
        let Some(frames) = scripted_frames else {
            return;
        };
        // Busy while the loader has requests it has not finished (queued
        // ones included) or the server is still answering. With an external
        // server, in_flight() is a request to it: only after the script,
        // whose frames are the ones measured.
        if self.flick_ended.is_some() && (counts.in_flight > 0 || self.server.in_flight() > 0) {
            self.last_busy = Some(Instant::now());
        }
        let still = self.frame.saturating_sub(frames);
        let quiet = match (self.flick_ended, self.last_busy) {
            (Some(_), Some(busy)) => busy.elapsed() >= QUIET_AFTER_TAIL,
            (Some(_), None) => true,
            _ => false,
        };
        if (still >= STILL_FRAMES && quiet) || still >= STILL_FRAMES_MAX {
            self.report = Some(self.make_report());
        }
    }

    fn make_report(&mut self) -> RunReport {
        self.measurements.sample();
        let m = &self.measurements;
        let counts = self.loader.as_ref().map(|l| l.counts()).unwrap_or_default();
        let server = self.server.stats();
        let (completed, cancelled) = match self.mode {
            // egui's loaders count nothing: the server's counts stand in.
            Mode::EguiExtras => (server.responses_completed, server.responses_aborted),
            _ => (counts.completed, counts.cancelled),
        };
        let flick_s = match (self.flick_started, self.flick_ended) {
            (Some(start), Some(end)) => (end - start).as_secs_f64(),
            _ => 0.0,
        };
        let tail_after_stop_ms = match (self.flick_ended, self.last_busy) {
            (Some(end), Some(busy)) => (busy - end).as_secs_f64() * 1000.0,
            _ => 0.0,
        };
        let settle_ms = match (self.last_moved, self.settled) {
            (Some(moved), Some(settled)) => Some((settled - moved).as_secs_f64() * 1000.0),
            _ => None,
        };
        let kind = self.script.unwrap_or(ScriptKind::Flick);
        let flick_frames = self
            .plan
            .map(|p| p.frames())
            .or(self.script_ended_at)
            .unwrap_or(0)
            .min(m.frame_ms.len());
        let flick_ms = &m.frame_ms[..flick_frames];
        let stalls: Vec<f64> = flick_ms.iter().copied().filter(|ms| *ms > 50.0).collect();
        RunReport {
            mode: self.mode.name().to_owned(),
            script: kind.name().to_owned(),
            rows: self.rows,
            latency_ms: self.latency_ms,
            refresh_ms: self.refresh.map(|r| r.as_millis() as u64),
            flick_s,
            frames: flick_frames,
            frame_ms_p50: percentile(flick_ms, 50.0),
            frame_ms_p99: percentile(flick_ms, 99.0),
            frame_ms_max: flick_ms.iter().copied().fold(0.0, f64::max),
            stalls_over_50ms: stalls.len(),
            stall_total_ms: stalls.iter().fold(0.0, |sum, ms| sum + ms),
            baseline_threads: m.baseline_threads,
            peak_threads: m.peak_threads,
            peak_blocked_io_threads: m.peak_blocked_io_threads,
            rss_start_mb: m.rss_start_mb,
            rss_peak_mb: m.rss_peak_mb,
            requests_completed: completed,
            requests_cancelled: cancelled,
            requests_failed: counts.failed,
            requests_abandoned: counts.abandoned,
            server_completed: server.responses_completed,
            server_aborted: server.responses_aborted,
            images_shown: m.images_shown,
            // Images of the user's carry no id to check.
            wrong_row_images: self.urls.is_none().then_some(m.wrong_row_images),
            unreadable_images: self.urls.is_none().then_some(m.unreadable_images),
            tail_after_stop_ms,
            settle_ms,
            first_screen_ms: self
                .first_list
                .zip(self.first_screen)
                .map(|(first, shown)| (shown - first).as_secs_f64() * 1000.0),
            server_requests: server.requests_started,
            server_requests_at_first_screen: self.requests_at_first_screen,
            server_not_modified: server.not_modified,
            server_image_bodies: server.image_bodies,
            server_connections: server.connections,
            server_tls_full_handshakes: server.tls_full_handshakes,
            server_tls_resumed_handshakes: server.tls_resumed_handshakes,
            server_http2_connections: server.http2_connections,
            disk: counts
                .disk
                .filter(|_| self.disk_cache.is_some())
                .map(disk_report),
            placeholder_row_frames_back: (kind == ScriptKind::Browse)
                .then_some(self.placeholders_back),
            texture_bytes_peak: self.texture_bytes_peak,
            coast_prediction: matches!(self.mode, Mode::Pipeline | Mode::EguiImage)
                .then_some(self.coast_prediction),
            flings: (kind == ScriptKind::Fling).then(|| std::mem::take(&mut self.flings.done)),
            frame_ms: flick_ms.to_vec(),
        }
    }

    /// The mode switch and the live panel; returns a newly chosen mode.
    fn top_bar(&mut self, ui: &mut egui::Ui, counts: Counts) -> Option<Mode> {
        let mut chosen = None;
        let m = &self.measurements;
        egui::Panel::top("top_bar").show(ui, |ui| {
            ui.add_space(4.0);
            ui.horizontal(|ui| {
                ui.heading("thumbpipe demo");
                ui.add_space(12.0);
                let https = self.server.base_url().starts_with("https:");
                for mode in Mode::ALL {
                    // The naive and egui-extras loaders cannot trust the
                    // embedded server's certificate.
                    let usable = !https || mode.speaks_https();
                    let label = ui
                        .add_enabled(usable, egui::Button::selectable(self.mode == mode, mode.name()))
                        .on_disabled_hover_text("this loader cannot trust the server's certificate");
                    if label.clicked() && self.mode != mode {
                        chosen = Some(mode);
                    }
                }
                ui.add_space(12.0);
                ui.label(format!(
                    "{} rows · {} ms latency{}{}",
                    self.rows,
                    self.latency_ms,
                    if https { " · HTTPS" } else { "" },
                    self.refresh
                        .map_or(String::new(), |r| format!(" · refresh {} ms", r.as_millis()))
                ));
            });
            ui.add_space(2.0);
            ui.horizontal(|ui| {
                frame_graph(ui, m);
                ui.vertical(|ui| {
                    ui.label(format!(
                        "{:.0} fps (UI work: the graph) · threads {} (peak {}, baseline {}) · parked in blocking fetch {} (peak {})",
                        m.fps(),
                        m.threads_now,
                        m.peak_threads,
                        m.baseline_threads,
                        m.blocked_now,
                        m.peak_blocked_io_threads
                    ));
                    ui.label(format!(
                        "RSS {:.0} MB (start {:.0}, peak {:.0}) · cache {:.1} MB · textures {}",
                        m.rss_now_mb,
                        m.rss_start_mb,
                        m.rss_peak_mb,
                        counts.cache_bytes as f64 / 1e6,
                        counts
                            .texture_bytes
                            .map_or("?".to_owned(), |b| format!("{:.1} MB", b as f64 / 1e6))
                    ));
                    let connections = self.server.embedded_stats().map_or_else(String::new, |s| {
                        format!(
                            " · server connections {} ({} in HTTP/2)",
                            s.connections, s.http2_connections
                        )
                    });
                    ui.label(format!(
                        "requests: {} in flight · {} completed · {} cancelled · {} failed{connections}",
                        counts.in_flight, counts.completed, counts.cancelled, counts.failed
                    ));
                    if let Some(disk) = counts.disk.filter(|_| self.disk_cache.is_some()) {
                        ui.label(format!(
                            "disk cache: {} thumbnails · {} images · {} revalidated (304) · \
                             {} from the network · {} written · {:.1} MB in {} entries",
                            disk.thumbnail_hits,
                            disk.hits,
                            disk.revalidated,
                            disk.misses,
                            disk.written,
                            disk.bytes as f64 / 1e6,
                            disk.entries
                        ));
                    }
                    ui.label(self.coast_line(ui));
                    let wrong = egui::RichText::new(match self.urls {
                        None if m.unreadable_images > 0 => format!(
                            "wrong-row images: {} of {} shown · {} without a readable id",
                            m.wrong_row_images, m.images_shown, m.unreadable_images
                        ),
                        None => format!(
                            "wrong-row images: {} of {} shown",
                            m.wrong_row_images, m.images_shown
                        ),
                        Some(_) => format!(
                            "wrong-row images: unknown (your images carry no id) · {} shown",
                            m.images_shown
                        ),
                    });
                    ui.label(if m.wrong_row_images > 0 {
                        wrong.color(egui::Color32::from_rgb(230, 90, 80)).strong()
                    } else {
                        wrong
                    });
                });
            });
            if let Some(error) = &self.error {
                ui.colored_label(egui::Color32::from_rgb(230, 90, 80), error);
            }
            ui.add_space(4.0);
        });
        chosen
    }

    /// Draws the list; returns what each visible row showed, and the
    /// list's offset.
    fn list(&mut self, ui: &mut egui::Ui, offset: Option<f32>) -> (Vec<RowState>, f32) {
        let ids: Vec<u32> = (0..self.rows).map(|row| self.image_id(row)).collect();
        let base = self.server.base_url().to_owned();
        let urls = self.urls.clone();
        let Some(loader) = self.loader.as_mut() else {
            return (Vec::new(), 0.0);
        };
        let measurements = &mut self.measurements;
        let watch = &mut self.coast_watch;
        let followed = &mut self.coast;
        let mut seen = None;
        let mut states = Vec::new();
        egui::CentralPanel::default().show(ui, |ui| {
            // Dragged with the mouse too, not only on a touch screen: a
            // flick of the mouse flings the list.
            let mut area = egui::ScrollArea::vertical()
                .auto_shrink(false)
                .scroll_source(egui::scroll_area::ScrollSource::ALL);
            if let Some(offset) = offset {
                area = area.vertical_scroll_offset(offset);
            }
            let coast = watch.predict(ui.ctx());
            *followed = coast;
            loader.follow_coast(coast.as_ref(), &|row| {
                url_of(&base, urls.as_deref(), ids[row])
            });
            let mut visible = 0..0;
            let output = area.show_rows(ui, ROW_HEIGHT, ids.len(), |ui, range| {
                visible = range.clone();
                for row in range {
                    let id = ids[row];
                    let url = url_of(&base, urls.as_deref(), id);
                    let checked_id = urls.is_none().then_some(id);
                    ui.horizontal(|ui| {
                        ui.set_height(ROW_HEIGHT);
                        let state = loader.show_row(ui, row, checked_id, &url, measurements);
                        ui.add_space(8.0);
                        ui.vertical(|ui| {
                            ui.add_space(12.0);
                            let title = match &urls {
                                None => format!("Image #{id}"),
                                Some(_) => url.rsplit('/').next().unwrap_or(&url).to_owned(),
                            };
                            ui.label(egui::RichText::new(title).strong());
                            let (text, color) = match &state {
                                RowState::Passing => (
                                    "flying past · not loaded".to_owned(),
                                    ui.visuals().weak_text_color(),
                                ),
                                RowState::Loading => {
                                    ("loading…".to_owned(), ui.visuals().weak_text_color())
                                }
                                RowState::Shown => {
                                    (format!("row {row}"), ui.visuals().weak_text_color())
                                }
                                RowState::Failed(error) => {
                                    (error.clone(), egui::Color32::from_rgb(220, 70, 70))
                                }
                            };
                            ui.label(egui::RichText::new(text).small().color(color));
                        });
                        states.push(state);
                    });
                }
            });
            watch.observe(ui, &output, ROW_HEIGHT, ids.len());
            seen = Some((
                ListSeen {
                    rect: output.inner_rect,
                    velocity: output.state.velocity().y,
                },
                output.state.unclamped_offset().y,
            ));
            loader.prefetch(visible, ids.len(), &|row| {
                url_of(&base, urls.as_deref(), ids[row])
            });
        });
        let (seen, scroll) = seen.map_or((None, 0.0), |(seen, scroll)| (Some(seen), scroll));
        self.list_seen = seen;
        (states, scroll)
    }
}

/// The URL of image `id`: the fixture server's numbered image, or one of
/// the user's, cycled through.
fn url_of(base: &str, urls: Option<&Vec<String>>, id: u32) -> String {
    match urls {
        Some(urls) if !urls.is_empty() => urls[id as usize % urls.len()].clone(),
        _ => format!("{base}/img/{id}.jpg"),
    }
}

/// Frame times of the last 180 frames, with the 16.7 ms line.
fn frame_graph(ui: &mut egui::Ui, m: &Measurements) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(180.0, 56.0), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 4.0, ui.visuals().extreme_bg_color);
    let scale = |ms: f32| rect.bottom() - (ms / 50.0).min(1.0) * rect.height();
    let budget = scale(1000.0 / 60.0);
    painter.hline(
        rect.x_range(),
        budget,
        egui::Stroke::new(1.0, egui::Color32::from_rgb(90, 160, 90)),
    );
    let points: Vec<egui::Pos2> = m
        .recent_ms
        .iter()
        .enumerate()
        .map(|(i, ms)| egui::pos2(rect.left() + i as f32, scale(*ms)))
        .collect();
    painter.add(egui::Shape::line(
        points,
        egui::Stroke::new(1.0, ui.visuals().strong_text_color()),
    ));
    painter.text(
        rect.left_top() + egui::vec2(4.0, 2.0),
        egui::Align2::LEFT_TOP,
        "frame ms (0-50)",
        egui::FontId::proportional(10.0),
        ui.visuals().weak_text_color(),
    );
}
