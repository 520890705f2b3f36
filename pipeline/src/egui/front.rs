//! The egui side's front of the pipeline: the toolkit-free
//! [`ListFront`] (rows, outcomes, coasts) with egui's level in front of it
//! (L1 textures, uploaded within a pass's budget), and the one rule for
//! what a row may draw.
//!
//! Both ways into `thumbpipe::egui` are built on it: the URI loader, whose
//! row key is the URI and size, and [`super::ThumbnailList`], whose row key
//! is the app's. Used on the UI thread only; it owns its pipeline, so
//! dropping it cancels every load and frees its textures.
//!
//! What a row draws, each answered within the pass:
//!
//! ```text
//! L1 texture for (url, size)?                 -> draw it
//! failed for this row's url and size?         -> the error
//! delivered for this row, or in the cache?    -> upload (pass budget) -> draw it
//! otherwise                                   -> pending; the request is under way
//! ```
//!
//! Everything is looked up by the URL the row shows now, so an image meant
//! for a row's previous URL can never be drawn.

use std::sync::Arc;
use std::time::Duration;

use ::egui::load::SizedTexture;
use ::egui::{Context, TextureOptions};

use super::EguiConfig;
use super::size::max_texture_side;
use super::textures::{TextureCache, TextureKey, TextureStats, UploadRefused};
use crate::coast::{CoastModel, CoastPrediction};
use crate::error::{BuildError, Error};
use crate::front::{CoastPolicy, Held, ListFront};
use crate::metrics::Stats;
use crate::pipeline::{Pipeline, PipelineBuilder};
use crate::request::{Priority, TargetSize};
use crate::thumbnail::Thumbnail;

/// What a row shows this pass.
pub(crate) enum Look<'a> {
    Texture(SizedTexture, &'a Thumbnail),
    Pending,
    /// Not loading: a coast flies past the row faster than its image could
    /// arrive.
    Passing,
    Failed(&'a Error),
}

pub(crate) struct Front<K> {
    list: ListFront<K>,
    textures: TextureCache,
    /// The egui pass whose completions have been drained.
    pass: Option<u64>,
}

impl<K: std::hash::Hash + Eq + Clone> Front<K> {
    /// A front whose pipeline is built by `builder` with `config.pipeline`,
    /// and wakes `ctx` when loads finish.
    pub(crate) fn new(
        ctx: &Context,
        config: EguiConfig,
        builder: PipelineBuilder<K>,
    ) -> Result<Self, BuildError> {
        config.validate()?;
        let pipeline = builder.config(config.pipeline.clone()).build()?;
        Ok(Self::over(ctx, &config, pipeline))
    }

    /// A front over `pipeline`, built already, with `config`'s UI-side
    /// settings (checked by the caller); wakes `ctx` when loads finish.
    pub(crate) fn over(ctx: &Context, config: &EguiConfig, pipeline: Pipeline<K>) -> Self {
        let textures = TextureCache::new(config.max_texture_bytes, config.upload_bytes_per_pass);
        // egui draws frames while a list scrolls, and one at rest.
        let coast_policy = CoastPolicy {
            enabled: config.coast_prediction,
            min_time_on_screen: config.coast_min_time_on_screen,
            ask_again_after: None,
        };
        let repaint = ctx.clone();
        Self {
            list: ListFront::over(pipeline, coast_policy, move || repaint.request_repaint()),
            textures,
            pass: None,
        }
    }

    /// The pipeline underneath.
    pub(crate) fn pipeline(&self) -> &Pipeline<K> {
        &self.list.pipeline
    }

    /// The largest side an image drawn at its own size is loaded at on
    /// `ctx`: the GPU's largest texture side, and the side of the largest
    /// square texture the budget holds.
    pub(crate) fn largest_side(&self, ctx: &Context) -> usize {
        max_texture_side(ctx).min(self.textures.largest_side())
    }

    /// What `row`, showing `url` in a `target` box, draws now; asks for
    /// it if needed.
    pub(crate) fn show(
        &mut self,
        ctx: &Context,
        row: K,
        url: &str,
        target: TargetSize,
        options: TextureOptions,
    ) -> Look<'_> {
        self.begin_pass_if_new(ctx.cumulative_pass_nr());
        self.list.ask(&row, url, target);
        let key = TextureKey {
            url: Arc::from(url),
            target,
            options,
        };
        if self.textures.contains(&key) {
            return self.texture(ctx, &key);
        }
        // Keeps the row's request alive, or starts it; a request already
        // finished (the outcome below) is not repeated. A row the coast
        // only passes by is not asked for: its request, if it had one, is
        // cancelled at the pass's end, freeing the slot for the rows where
        // the list will rest.
        self.list.request_shown(&row, url, target);
        let thumbnail = match self.list.held(&row, url, target) {
            Held::Pixels(thumbnail) => thumbnail,
            Held::Failed(_) => return self.failed(&row, url, target),
            Held::Nothing if self.list.is_passing(&row) => return Look::Passing,
            Held::Nothing => return Look::Pending,
        };
        // The outcome stays while the row is shown: should its texture be
        // freed, it is made again from it without asking the pipeline.
        match self.textures.upload(ctx, key.clone(), &thumbnail) {
            Ok(()) => self.texture(ctx, &key),
            Err(UploadRefused::BudgetSpent) => {
                ctx.request_repaint();
                Look::Pending
            }
            Err(UploadRefused::Unusable(error)) => {
                self.list.fail(&row, error);
                self.failed(&row, url, target)
            }
        }
    }

    /// `row`'s thumbnail as pixels, for an app that reads them rather than
    /// drawing: the same levels as [`Front::show`], without a texture.
    pub(crate) fn pixels(
        &mut self,
        ctx: &Context,
        row: K,
        url: &str,
        target: TargetSize,
    ) -> Result<Option<Thumbnail>, &Error> {
        self.begin_pass_if_new(ctx.cumulative_pass_nr());
        self.list.ask(&row, url, target);
        if let Some(thumbnail) = self.textures.thumbnail(url, target) {
            return Ok(Some(thumbnail.clone()));
        }
        self.list.request_shown(&row, url, target);
        match self.list.held(&row, url, target) {
            Held::Pixels(thumbnail) => Ok(Some(thumbnail)),
            Held::Failed(error) => Err(error),
            Held::Nothing => Ok(None),
        }
    }

    /// The texture of `key`, marked most recently drawn: an animation's
    /// frame of the moment, with a repaint asked for when the next is due
    /// (only an animation drawn in this pass asks: one scrolled out of
    /// view costs nothing).
    fn texture(&mut self, ctx: &Context, key: &TextureKey) -> Look<'_> {
        let now = Duration::try_from_secs_f64(ctx.input(|input| input.time)).unwrap_or_default();
        match self.textures.get(key, now) {
            Some((texture, thumbnail, next_frame)) => {
                if let Some(next_frame) = next_frame {
                    ctx.request_repaint_after(next_frame);
                }
                Look::Texture(texture, thumbnail)
            }
            None => Look::Pending,
        }
    }

    /// The thumbnail whose texture was drawn for `url` at `target`.
    pub(crate) fn drawn(&self, url: &str, target: TargetSize) -> Option<&Thumbnail> {
        self.textures.thumbnail(url, target)
    }

    fn failed(&self, row: &K, url: &str, target: TargetSize) -> Look<'_> {
        match self.list.outcome(row, url, target) {
            Some(Err(error)) => Look::Failed(error),
            _ => Look::Pending,
        }
    }

    /// Asks for `row`'s thumbnail ahead of need, at [`Priority::Prefetch`]:
    /// it is loaded (not uploaded) and kept through this pass's end, and is
    /// drawn in the pass that first shows it. A row shown this pass keeps
    /// its visible priority.
    /// `pass` is egui's `cumulative_pass_nr`, read before the caller took
    /// any lock of its own: this touches no egui lock.
    ///
    /// While the list coasts, the rows where it will rest take the
    /// prefetch's place and this asks for nothing: the rows just beyond the
    /// view are the ones the coast flies past.
    pub(crate) fn prefetch(&mut self, pass: u64, row: K, url: &str, target: TargetSize) {
        self.begin_pass_if_new(pass);
        if !self.list.is_coasting() {
            let textures = &self.textures;
            self.list
                .want(row, url, target, Priority::Prefetch, |url, target| {
                    textures.thumbnail(url, target).is_some()
                });
        }
    }

    /// Follows a coast for this pass (call it before the rows are drawn):
    /// see [`ListFront::follow_coast`]. Does nothing with
    /// [`EguiConfig::coast_prediction`] off.
    pub(crate) fn follow_coast<M: CoastModel, S: AsRef<str>>(
        &mut self,
        pass: u64,
        coast: &CoastPrediction<M>,
        target: TargetSize,
        row_at: impl FnMut(usize) -> (K, S),
    ) {
        self.begin_pass_if_new(pass);
        let textures = &self.textures;
        self.list
            .follow_coast(coast, true, target, row_at, |url, target| {
                textures.thumbnail(url, target).is_some()
            });
    }

    /// Ends a pass: rows not asked for in it are cancelled, and what was
    /// kept for them is dropped (in the cache, it stays there).
    pub(crate) fn end_pass(&mut self) {
        self.list.end_pass();
    }

    /// Drains finished loads once per egui pass, and renews the pass's
    /// upload budget.
    fn begin_pass_if_new(&mut self, pass: u64) {
        if self.pass == Some(pass) {
            return;
        }
        self.pass = Some(pass);
        self.textures.begin_pass();
        self.list.clear_coast();
        self.list.receive();
    }

    /// Forgets `url` at every level: textures, outcomes, requests, cache.
    pub(crate) fn forget(&mut self, url: &str) {
        self.textures.forget_url(url);
        self.list.forget(url);
    }

    /// Forgets everything at every level.
    pub(crate) fn forget_all(&mut self) {
        self.textures.clear();
        self.list.forget_all();
    }

    /// Bytes of decoded pixels in the pipeline's cache (the rows' outcomes
    /// share those pixels; textures are in [`Front::texture_stats`]).
    pub(crate) fn pixel_bytes(&self) -> usize {
        self.list.pipeline.stats().cache.cost
    }

    /// Whether a load is under way.
    pub(crate) fn has_pending(&self) -> bool {
        self.list.pipeline.pending_rows() > 0
    }

    pub(crate) fn texture_stats(&self) -> TextureStats {
        self.textures.stats()
    }

    pub(crate) fn stats(&self) -> Stats {
        self.list.pipeline.stats()
    }
}
