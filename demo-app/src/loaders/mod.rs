//! The four ways the demo loads its row images, behind one trait.
//!
//! Each loader is owned by the app, runs its `show_row` on the UI thread
//! for every visible row, and ends (with its threads or pipeline) when the
//! app switches mode or exits.

mod egui_image;
mod extras;
mod naive;
mod pipelined;

pub use egui_image::EguiImageLoader;
pub use extras::EguiExtrasLoader;
pub use naive::NaiveLoader;
pub use pipelined::PipelineLoader;

use crate::measure::Measurements;

/// Side of the thumbnail cell, in points.
pub const THUMB_SIDE: f32 = 64.0;

/// What a row shows.
#[derive(Clone, Debug, PartialEq)]
pub enum RowState {
    Loading,
    /// Not loading: the list coasts past faster than the image could come.
    Passing,
    Shown,
    Failed(String),
}

/// Request counts of a loader.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Requests not finished: queued, fetching, or (thumbpipe's) waiting
    /// for or in a decode.
    pub in_flight: u64,
    pub completed: u64,
    pub cancelled: u64,
    pub failed: u64,
    /// Bytes its cache holds, where it has one.
    pub cache_bytes: u64,
    /// Bytes of its live textures, where it can tell.
    pub texture_bytes: Option<u64>,
    /// Threads blocked inside a blocking fetch waiting for a connection
    /// (they hold no socket yet, so the thread census cannot see them).
    pub waiting_for_connection: u64,
    /// Loads abandoned because every row that wanted them left: cancelled
    /// (`cancelled`) or, too late for that, after their download had
    /// finished. `None` for a loader that never cancels or does not count.
    pub abandoned: Option<u64>,
    /// thumbpipe's disk cache counters (all zero when it is off).
    pub disk: Option<thumbpipe::DiskStats>,
    /// thumbpipe's counts of local files: decodes, shared thumbnails used
    /// and written, bytes read from the files.
    pub local: Option<LocalCounts>,
}

/// What a thumbpipe mode did with a folder's files.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalCounts {
    pub decodes: u64,
    pub shared_used: u64,
    pub shared_written: u64,
    pub file_bytes: u64,
}

impl Counts {
    /// A thumbpipe mode's counts, from its pipeline's stats.
    pub fn from_stats(stats: &thumbpipe::Stats, texture_bytes: usize) -> Self {
        let cancelled = stats.fetches_cancelled_queued + stats.fetches_cancelled_in_flight;
        Counts {
            in_flight: stats.in_flight + stats.queued + stats.decoding,
            completed: stats.fetches_completed,
            cancelled,
            failed: stats.fetches_failed,
            cache_bytes: stats.cache.cost as u64,
            texture_bytes: Some(texture_bytes as u64),
            // Fetches are futures: nothing waits on a thread.
            waiting_for_connection: 0,
            abandoned: Some(cancelled + stats.loads_abandoned_after_fetch),
            disk: Some(stats.disk),
            local: Some(LocalCounts {
                decodes: stats.decodes_completed,
                shared_used: stats.shared_thumbnails_used,
                shared_written: stats.shared_thumbnails_written,
                file_bytes: stats.file_bytes_read,
            }),
        }
    }
}

/// A way to load and draw row thumbnails.
pub trait Loader {
    /// Called at the start of every frame, before any row.
    fn begin_frame(&mut self, ctx: &egui::Context);
    /// Draws the thumbnail cell of `row`, which shows `url`: the fixture
    /// image `id`, or an image of the user's (`None`).
    fn show_row(
        &mut self,
        ui: &mut egui::Ui,
        row: usize,
        id: Option<u32>,
        url: &str,
        measurements: &mut Measurements,
    ) -> RowState;
    /// Asks for rows near the `visible` ones ahead of need, where the loader
    /// can; `url_of` gives a row's URL.
    fn prefetch(
        &mut self,
        visible: std::ops::Range<usize>,
        total: usize,
        url_of: &dyn Fn(usize) -> String,
    ) {
        let _ = (visible, total, url_of);
    }
    /// Follows a coast of the list, before its rows are drawn, where the
    /// loader can (thumbpipe's `follow_coast`); `url_of` gives a row's URL.
    fn follow_coast(
        &mut self,
        coast: Option<&thumbpipe::CoastPrediction>,
        url_of: &dyn Fn(usize) -> String,
    ) {
        let _ = (coast, url_of);
    }
    /// Called after the list is drawn.
    fn end_frame(&mut self);
    /// The loader's own request counts.
    fn counts(&self) -> Counts;
}

/// Draws a texture in the thumbnail cell.
pub fn draw_texture(ui: &mut egui::Ui, texture: &egui::TextureHandle) {
    ui.add(egui::Image::new(texture).fit_to_exact_size(egui::vec2(THUMB_SIDE, THUMB_SIDE)));
}

/// Draws the cell of a row without an image: a grey square, red-edged on
/// failure.
pub fn draw_placeholder(ui: &mut egui::Ui, failed: bool) {
    let (rect, _) =
        ui.allocate_exact_size(egui::vec2(THUMB_SIDE, THUMB_SIDE), egui::Sense::hover());
    let painter = ui.painter();
    painter.rect_filled(rect, 6.0, ui.visuals().faint_bg_color);
    if failed {
        painter.rect_stroke(
            rect,
            6.0,
            egui::Stroke::new(2.0, egui::Color32::from_rgb(220, 70, 70)),
            egui::StrokeKind::Inside,
        );
        painter.text(
            rect.center(),
            egui::Align2::CENTER_CENTER,
            "!",
            egui::FontId::proportional(28.0),
            egui::Color32::from_rgb(220, 70, 70),
        );
    }
}
