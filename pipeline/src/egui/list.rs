//! The row-keyed list: a [`Front`] keyed by the app's own row keys, for
//! lists that need more than the URI — a feed whose rows change URL, rows
//! that want their state (loading, failed) beside the image.
//!
//! Owned by the app and used on the UI thread: `show` for each visible row,
//! `prefetch` for rows near the view, `end_pass` once the list is drawn.
//! Dropping it cancels every load and joins its pipeline's threads.

use std::hash::Hash;

use ::egui::load::SizedTexture;
use ::egui::{Align2, Color32, Context, FontId, Response, Sense, Stroke, TextureOptions, Ui, Vec2};

use super::EguiConfig;
use super::front::{Front, Look};
use super::size::Cell;
use super::textures::TextureStats;
use crate::coast::{CoastModel, CoastPrediction};
use crate::error::{BuildError, Error};
use crate::metrics::Stats;
use crate::pipeline::{Pipeline, PipelineBuilder};
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// Thumbnails for the rows of a list, keyed by row: one live request per
/// row (a new URL cancels the old one), rows not shown during a pass
/// cancelled at its end, and a thumbnail already decoded drawn in the pass
/// that asks for it.
///
/// ```no_run
/// use thumbpipe::egui::ThumbnailList;
///
/// struct App {
///     thumbnails: ThumbnailList<usize>,
///     urls: Vec<String>,
/// }
///
/// impl App {
///     fn list(&mut self, ui: &mut egui::Ui) {
///         let size = egui::vec2(64.0, 64.0);
///         egui::ScrollArea::vertical().show_rows(ui, 72.0, self.urls.len(), |ui, rows| {
///             for row in rows {
///                 ui.horizontal(|ui| {
///                     self.thumbnails.show(ui, row, &self.urls[row], size);
///                     ui.label(&self.urls[row]);
///                 });
///             }
///         });
///         self.thumbnails.end_pass();
///     }
/// }
/// ```
pub struct ThumbnailList<K> {
    front: Front<K>,
    ctx: Context,
    /// Whether thumbnails are cropped to fill their cells.
    crop_to_fill: bool,
}

/// What a row drew.
#[derive(Clone, Debug)]
pub enum RowThumbnail {
    /// Its image: the texture, and the pixels it was made from.
    Shown(SizedTexture, Thumbnail),
    /// A spinner: the image is loading.
    Loading,
    /// A plain placeholder: the list is coasting past this row faster than
    /// its image could arrive, so it is not loading
    /// ([`ThumbnailList::follow_coast`]).
    Passing,
    /// An error mark: why the image could not be loaded (also the mark's
    /// hover text).
    Failed(Error),
}

impl<K: Hash + Eq + Clone> ThumbnailList<K> {
    /// A list whose pipeline runs with `config` and wakes `ctx` when
    /// thumbnails arrive.
    pub fn new(ctx: &Context, config: impl Into<EguiConfig>) -> Result<Self, BuildError> {
        Self::with_builder(ctx, config, Pipeline::builder())
    }

    /// [`ThumbnailList::new`], with the pipeline built by `builder`: a
    /// fetcher, decoder or tokio runtime of the app's own. The settings are
    /// `config`'s, whose `pipeline` replaces a config given to
    /// [`PipelineBuilder::config`].
    ///
    /// ```no_run
    /// # fn setup(ctx: &egui::Context, runtime: &tokio::runtime::Runtime) -> Result<(), thumbpipe::BuildError> {
    /// use thumbpipe::Pipeline;
    /// use thumbpipe::egui::ThumbnailList;
    ///
    /// // The I/O side on the app's runtime rather than a runtime of its own.
    /// let builder = Pipeline::builder().runtime(runtime.handle().clone());
    /// let list = ThumbnailList::<u64>::with_builder(ctx, thumbpipe::Config::default(), builder)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_builder(
        ctx: &Context,
        config: impl Into<EguiConfig>,
        builder: PipelineBuilder<K>,
    ) -> Result<Self, BuildError> {
        Ok(Self {
            front: Front::new(ctx, config.into(), builder)?,
            ctx: ctx.clone(),
            crop_to_fill: false,
        })
    }

    /// [`ThumbnailList::new`] over a pipeline built already: one the app
    /// asked for its first screen before it had a window, so that what
    /// loaded while the window opened is drawn in the first frame. Ask
    /// with the rows, URLs and boxes the list will show:
    /// [`target_size`](super::target_size) of the cell at the pixels per
    /// point the app expects (a guess that differs costs those early loads,
    /// nothing else; [`cover_size`](super::cover_size) for a list cropped to
    /// fill), and hand the pipeline over without calling
    /// [`Pipeline::end_frame`] in between. A row whose completion the app
    /// drained itself is asked for afresh (from the memory cache, if the
    /// thumbnail is still there). Rows the first pass does not show
    /// are cancelled at its end. `config`'s UI-side settings are used; its
    /// `pipeline` is not (the pipeline keeps the settings it was built
    /// with). The pipeline's waker becomes the list's.
    ///
    /// ```no_run
    /// use thumbpipe::egui::{EguiConfig, ThumbnailList, target_size};
    /// use thumbpipe::{Pipeline, Priority};
    ///
    /// # fn main() -> Result<(), thumbpipe::BuildError> {
    /// let mut config = thumbpipe::Config::default();
    /// config.fetch.file_roots = vec!["/home/me/Pictures".into()];
    /// let photos: Vec<String> = (0..500)
    ///     .map(|n| format!("file:///home/me/Pictures/{n:04}.jpg"))
    ///     .collect();
    /// // At start-up, before the window: the first screen's 60 cells of
    /// // 64 points, at one pixel a point.
    /// let mut pipeline = Pipeline::<usize>::new(config)?;
    /// let cell = egui::vec2(64.0, 64.0);
    /// for (row, url) in photos.iter().enumerate().take(60) {
    ///     pipeline.request(row, url, target_size(cell, 1.0), Priority::Visible);
    /// }
    /// // Once the window is there (eframe's `CreationContext::egui_ctx`):
    /// # let ctx = egui::Context::default();
    /// let list = ThumbnailList::with_pipeline(&ctx, pipeline, EguiConfig::default())?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_pipeline(
        ctx: &Context,
        pipeline: Pipeline<K>,
        config: impl Into<EguiConfig>,
    ) -> Result<Self, BuildError> {
        let config = config.into();
        config.validate()?;
        Ok(Self {
            front: Front::over(ctx, &config, pipeline),
            ctx: ctx.clone(),
            crop_to_fill: false,
        })
    }

    /// Whether each thumbnail is cropped to fill its cell (`true`: the
    /// image's centre in the cell's shape, [`crate::Fit::Cover`], as a
    /// photo grid shows it) or fitted whole inside it (`false`, the
    /// default). `show`, `prefetch` and `follow_coast` all ask for the
    /// same thumbnails either way.
    pub fn set_crop_to_fill(&mut self, crop_to_fill: bool) {
        self.crop_to_fill = crop_to_fill;
    }

    /// The thumbnail's box for a cell of `size` points on a screen of
    /// `pixels_per_point`.
    fn target(&self, size: Vec2, pixels_per_point: f32) -> TargetSize {
        let cell = if self.crop_to_fill {
            Cell::filled(size)
        } else {
            Cell::fitted(size)
        };
        cell.target(pixels_per_point)
    }

    /// Draws `row`'s thumbnail of `url`, fitted in `size` points (or
    /// filling them: [`ThumbnailList::set_crop_to_fill`]): the image,
    /// a spinner while it loads, or an error mark. Call it every pass for
    /// every visible row. Never blocks.
    pub fn show(&mut self, ui: &mut Ui, row: K, url: &str, size: Vec2) -> (Response, RowThumbnail) {
        let target = self.target(size, ui.pixels_per_point());
        let look = self
            .front
            .show(ui.ctx(), row, url, target, TextureOptions::LINEAR);
        match look {
            Look::Texture(texture, thumbnail) => {
                let shown = RowThumbnail::Shown(texture, thumbnail.clone());
                (
                    ui.add(::egui::Image::new(texture).fit_to_exact_size(size)),
                    shown,
                )
            }
            Look::Pending => {
                let (rect, response) = ui.allocate_exact_size(size, Sense::hover());
                let side = size.min_elem().min(24.0);
                // Painted, not placed: `ui.put` would move the layout's
                // cursor back to the spinner's end, under the row's text.
                ::egui::Spinner::new().size(side).paint_at(
                    ui,
                    ::egui::Rect::from_center_size(rect.center(), Vec2::splat(side)),
                );
                (response, RowThumbnail::Loading)
            }
            Look::Passing => {
                let (rect, response) = ui.allocate_exact_size(size, Sense::hover());
                ui.painter()
                    .rect_filled(rect, 4.0, ui.visuals().faint_bg_color);
                (response, RowThumbnail::Passing)
            }
            Look::Failed(error) => {
                let error = error.clone();
                let (rect, response) = ui.allocate_exact_size(size, Sense::hover());
                let red = Color32::from_rgb(220, 70, 70);
                let painter = ui.painter();
                painter.rect_filled(rect, 4.0, ui.visuals().faint_bg_color);
                painter.rect_stroke(rect, 4.0, Stroke::new(1.5, red), ::egui::StrokeKind::Inside);
                painter.text(
                    rect.center(),
                    Align2::CENTER_CENTER,
                    "!",
                    FontId::proportional(size.min_elem() * 0.4),
                    red,
                );
                (
                    response.on_hover_text(error.to_string()),
                    RowThumbnail::Failed(error),
                )
            }
        }
    }

    /// Asks for `row`'s thumbnail of `url` ahead of need, for a cell of
    /// `size` points, at [`crate::Priority::Prefetch`]. Call it every pass
    /// for the rows of a [`super::PrefetchWindow`]: a row neither shown nor
    /// prefetched during a pass is cancelled at its end.
    pub fn prefetch(&mut self, row: K, url: &str, size: Vec2) {
        let target = self.target(size, self.ctx.pixels_per_point());
        let pass = self.ctx.cumulative_pass_nr();
        self.front.prefetch(pass, row, url, target);
    }

    /// Follows a kinetic coast for this pass; call it before the rows are
    /// drawn, with [`super::CoastWatch::predict`]'s prediction (`None` at rest
    /// does nothing). The rows where the list will rest (and the one more egui
    /// draws) are requested at [`crate::Priority::Destination`], ahead of every
    /// other row; a visible row that will leave sooner than an image takes to
    /// arrive ([`EguiConfig::coast_min_time_on_screen`]) is drawn if its image
    /// is decoded already, and otherwise shows a plain placeholder
    /// ([`RowThumbnail::Passing`]) without being requested (a request it had is
    /// cancelled at the pass's end, freeing its slot for the resting rows).
    /// [`ThumbnailList::prefetch`] asks for nothing during the coast. When the
    /// prediction changes (a new drag, the end of the list), the old
    /// destination's rows are no longer asked for and are cancelled at the
    /// pass's end. `row_at` gives the key and URL of the row at an index in the
    /// list; in a grid (watched with [`super::CoastWatch::observe_grid`]),
    /// of the cell at an index, numbered row by row. Nothing changes with
    /// [`EguiConfig::coast_prediction`] off.
    ///
    /// See [`super::CoastWatch`] for a whole pass.
    pub fn follow_coast<M: CoastModel, S: AsRef<str>>(
        &mut self,
        coast: Option<&CoastPrediction<M>>,
        size: Vec2,
        row_at: impl FnMut(usize) -> (K, S),
    ) {
        let Some(coast) = coast else { return };
        let target = self.target(size, self.ctx.pixels_per_point());
        let pass = self.ctx.cumulative_pass_nr();
        self.front.follow_coast(pass, coast, target, row_at);
    }

    /// Ends the pass: rows neither shown nor prefetched since the last call
    /// are cancelled.
    pub fn end_pass(&mut self) {
        self.front.end_pass();
    }

    /// Forgets `url` at every level: its textures, its cache entries, its
    /// loads.
    pub fn forget(&mut self, url: &str) {
        self.front.forget(url);
    }

    /// Forgets every image at every level.
    pub fn forget_all(&mut self) {
        self.front.forget_all();
    }

    /// The pipeline's counters and gauges now.
    pub fn stats(&self) -> Stats {
        self.front.stats()
    }

    /// The textures' counters now.
    pub fn texture_stats(&self) -> TextureStats {
        self.front.texture_stats()
    }

    /// The pipeline underneath, for what this type does not wrap.
    pub fn pipeline(&self) -> &Pipeline<K> {
        self.front.pipeline()
    }
}
