//! The UI side's front of the pipeline: a [`Pipeline`] with the levels an
//! egui app needs in front of it (L1 textures, thumbnails delivered but not
//! yet uploaded, errors), and the one rule for what a row may draw.
//!
//! Both ways into `thumbpipe::egui` are built on it: the URI loader, whose
//! row key is the URI and size, and [`super::ThumbnailList`], whose row key
//! is the app's. Used on the UI thread only; it owns its pipeline, so
//! dropping it cancels every load and frees its textures.
//!
//! What a row draws, each answered within the pass; the levels behind the
//! row's texture are walked in one place (`Front::held`), for drawing, for
//! pixels and for deciding whether to ask:
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
//!
//! While the list coasts ([`Front::follow_coast`], called before the rows
//! are drawn), the rows where it will rest are asked for first, at
//! [`Priority::Destination`], and a row that will be on screen for less
//! than an image takes to arrive is drawn from the levels above but not
//! requested.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::egui::load::SizedTexture;
use ::egui::{Context, TextureOptions};

use super::EguiConfig;
use super::plan::CoastPlan;
use super::size::max_texture_side;
use super::textures::{TextureCache, TextureKey, TextureStats, UploadRefused};
use crate::coast::{CoastModel, CoastPrediction};
use crate::error::{BuildError, Error};
use crate::metrics::Stats;
use crate::pipeline::{Pipeline, PipelineBuilder};
use crate::request::{Priority, TargetSize};
use crate::thumbnail::Thumbnail;

/// The shortest time on screen worth a request while coasting, before any
/// load has been timed.
const FIRST_MIN_TIME_ON_SCREEN: Duration = Duration::from_millis(100);

/// What a row shows this pass.
pub(crate) enum Look<'a> {
    Texture(SizedTexture, &'a Thumbnail),
    Pending,
    /// Not loading: a coast flies past the row faster than its image could
    /// arrive.
    Passing,
    Failed(&'a Error),
}

/// Which levels [`Front::held`] walks.
#[derive(Clone, Copy)]
enum Levels {
    /// Every level.
    All,
    /// The levels behind the row's texture, which the caller has looked
    /// up itself.
    BehindTexture,
}

/// What the levels in front of the pipeline hold for a row.
enum Held<'a> {
    Pixels(Thumbnail),
    Failed(&'a Error),
    Nothing,
}

/// A row's outcome that is not a texture yet.
struct Outcome {
    url: Arc<str>,
    target: TargetSize,
    result: Result<Thumbnail, Error>,
}

pub(crate) struct Front<K> {
    pub(crate) pipeline: Pipeline<K>,
    textures: TextureCache,
    /// Outcomes by row: thumbnails not uploaded yet, and errors.
    outcomes: HashMap<K, Outcome>,
    /// Rows shown or prefetched this pass.
    asked: HashSet<K>,
    /// The egui pass whose completions have been drained.
    pass: Option<u64>,
    /// What coasting changes ([`EguiConfig::coast_prediction`]).
    coast_policy: CoastPolicy,
    /// This pass's coast: rows where it will rest, and rows it only passes
    /// by (not requested). Empty at rest.
    destination: HashSet<K>,
    passing: HashSet<K>,
}

/// [`EguiConfig::coast_prediction`] and
/// [`EguiConfig::coast_min_time_on_screen`].
#[derive(Clone, Copy, Debug)]
struct CoastPolicy {
    enabled: bool,
    min_time_on_screen: Option<Duration>,
}

impl<K: Hash + Eq + Clone> Front<K> {
    /// A front whose pipeline is built by `builder` with `config.pipeline`,
    /// and wakes `ctx` when loads finish.
    pub(crate) fn new(
        ctx: &Context,
        config: EguiConfig,
        builder: PipelineBuilder<K>,
    ) -> Result<Self, BuildError> {
        config.validate()?;
        let textures = TextureCache::new(config.max_texture_bytes, config.upload_bytes_per_pass);
        let coast_policy = CoastPolicy {
            enabled: config.coast_prediction,
            min_time_on_screen: config.coast_min_time_on_screen,
        };
        let pipeline = builder.config(config.pipeline).build()?;
        let repaint = ctx.clone();
        pipeline.set_waker(move || repaint.request_repaint());
        Ok(Self {
            pipeline,
            textures,
            outcomes: HashMap::new(),
            asked: HashSet::new(),
            pass: None,
            coast_policy,
            destination: HashSet::new(),
            passing: HashSet::new(),
        })
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
        self.asked.insert(row.clone());
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
        self.ask_shown(&row, url, target);
        let thumbnail = match self.held(&row, url, target, Levels::BehindTexture) {
            Held::Pixels(thumbnail) => thumbnail,
            Held::Failed(_) => return self.failed(&row),
            Held::Nothing if self.passing.contains(&row) => return Look::Passing,
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
                self.outcomes.insert(
                    row.clone(),
                    Outcome {
                        url: Arc::from(url),
                        target,
                        result: Err(error),
                    },
                );
                self.failed(&row)
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
        self.asked.insert(row.clone());
        if let Some(thumbnail) = self.textures.thumbnail(url, target) {
            return Ok(Some(thumbnail.clone()));
        }
        self.ask_shown(&row, url, target);
        match self.held(&row, url, target, Levels::BehindTexture) {
            Held::Pixels(thumbnail) => Ok(Some(thumbnail)),
            Held::Failed(error) => Err(error),
            Held::Nothing => Ok(None),
        }
    }

    /// What the levels in front of the pipeline hold for `row` showing
    /// `url` at `target`, walked in order: the row's outcome (delivered,
    /// not uploaded yet, or failed), the pipeline's cache (L2), and with
    /// [`Levels::All`] the pixels of a texture (L1, a scan of them).
    fn held(&self, row: &K, url: &str, target: TargetSize, levels: Levels) -> Held<'_> {
        if let Some(outcome) = self.outcomes.get(row)
            && *outcome.url == *url
            && outcome.target == target
        {
            return match &outcome.result {
                Ok(thumbnail) => Held::Pixels(thumbnail.clone()),
                Err(error) => Held::Failed(error),
            };
        }
        if let Some(thumbnail) = self.pipeline.cached(url, target) {
            return Held::Pixels(thumbnail);
        }
        match levels {
            Levels::All => self
                .textures
                .thumbnail(url, target)
                .map_or(Held::Nothing, |thumbnail| Held::Pixels(thumbnail.clone())),
            Levels::BehindTexture => Held::Nothing,
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

    fn failed(&self, row: &K) -> Look<'_> {
        match self.outcomes.get(row).map(|outcome| &outcome.result) {
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
        // Coasting this pass: the destination is asked for.
        if self.destination.is_empty() {
            self.want(row, url, target, Priority::Prefetch);
        }
    }

    /// Follows a coast for this pass (call it before the rows are drawn):
    /// the rows where the list will rest, and the one more egui draws there,
    /// are asked for at [`Priority::Destination`], before every other row;
    /// a row on screen now that will leave sooner than an image takes to
    /// arrive is drawn from the levels above but not requested this pass.
    /// `row_at` gives an item's key and URL by its index (a list's row, a
    /// grid's cell, numbered row by row). Does nothing with
    /// [`EguiConfig::coast_prediction`] off.
    pub(crate) fn follow_coast<M: CoastModel, S: AsRef<str>>(
        &mut self,
        pass: u64,
        coast: &CoastPrediction<M>,
        target: TargetSize,
        mut row_at: impl FnMut(usize) -> (K, S),
    ) {
        self.begin_pass_if_new(pass);
        if !self.coast_policy.enabled || !coast.is_coasting() {
            return;
        }
        let min_time_on_screen = self.min_time_on_screen();
        let now = Instant::now();
        let pipeline = &self.pipeline;
        let plan = CoastPlan::new(coast, min_time_on_screen, |index| {
            let (row, _) = row_at(index);
            let asked = pipeline.requested_at(&row)?;
            Some(now.saturating_duration_since(asked))
        });
        for index in plan.destination {
            let (row, url) = row_at(index);
            self.destination.insert(row.clone());
            self.want(row, url.as_ref(), target, Priority::Destination);
        }
        // A row showing the same image as a destination row (the same key)
        // is not passing.
        for index in plan.passing {
            let (row, _) = row_at(index);
            if !self.destination.contains(&row) {
                self.passing.insert(row);
            }
        }
        for index in plan.ahead {
            let (row, url) = row_at(index);
            self.want(row, url.as_ref(), target, Priority::Prefetch);
        }
    }

    /// Asks for a row drawn this pass: at [`Priority::Destination`] if the
    /// coast rests on it, not at all if the coast flies past it, otherwise
    /// at [`Priority::Visible`].
    fn ask_shown(&mut self, row: &K, url: &str, target: TargetSize) {
        if self.passing.contains(row) {
            return;
        }
        let priority = if self.destination.contains(row) {
            Priority::Destination
        } else {
            Priority::Visible
        };
        self.pipeline.request(row.clone(), url, target, priority);
    }

    /// [`EguiConfig::coast_min_time_on_screen`], or the time loads take now.
    fn min_time_on_screen(&self) -> Duration {
        self.coast_policy.min_time_on_screen.unwrap_or_else(|| {
            self.pipeline
                .recent_load_time()
                .unwrap_or(FIRST_MIN_TIME_ON_SCREEN)
        })
    }

    /// Asks for `row` at `priority` unless it is drawable or failed
    /// already; once per pass.
    fn want(&mut self, row: K, url: &str, target: TargetSize, priority: Priority) {
        if !self.asked.insert(row.clone()) {
            return;
        }
        // Already drawable, or already failed: nothing to load. A row
        // whose outcome is for another URL or size asks anew, so that the
        // new one replaces it.
        let stale = self
            .outcomes
            .get(&row)
            .is_some_and(|outcome| *outcome.url != *url || outcome.target != target);
        if stale || matches!(self.held(&row, url, target, Levels::All), Held::Nothing) {
            self.pipeline.request(row, url, target, priority);
        }
    }

    /// Ends a pass: rows not asked for in it are cancelled, and what was
    /// kept for them is dropped (in the cache, it stays there).
    pub(crate) fn end_pass(&mut self) {
        self.pipeline.end_frame();
        let asked = std::mem::take(&mut self.asked);
        self.outcomes.retain(|row, _| asked.contains(row));
    }

    /// Drains finished loads once per egui pass, and renews the pass's
    /// upload budget.
    fn begin_pass_if_new(&mut self, pass: u64) {
        if self.pass == Some(pass) {
            return;
        }
        self.pass = Some(pass);
        self.textures.begin_pass();
        self.destination.clear();
        self.passing.clear();
        for done in self.pipeline.drain() {
            let outcome = Outcome {
                url: done.url,
                target: done.target,
                result: done.result,
            };
            self.outcomes.insert(done.row, outcome);
        }
    }

    /// Forgets `url` at every level: textures, outcomes, requests, cache.
    pub(crate) fn forget(&mut self, url: &str) {
        self.textures.forget_url(url);
        self.outcomes.retain(|_, outcome| *outcome.url != *url);
        self.pipeline.forget(url);
    }

    /// Forgets everything at every level.
    pub(crate) fn forget_all(&mut self) {
        self.textures.clear();
        self.outcomes.clear();
        self.pipeline.forget_all();
    }

    /// Bytes of decoded pixels in the pipeline's cache (the rows' outcomes
    /// share those pixels; textures are in [`Front::texture_stats`]).
    pub(crate) fn pixel_bytes(&self) -> usize {
        self.pipeline.stats().cache.cost
    }

    /// Whether a load is under way.
    pub(crate) fn has_pending(&self) -> bool {
        self.pipeline.pending_rows() > 0
    }

    pub(crate) fn texture_stats(&self) -> TextureStats {
        self.textures.stats()
    }

    pub(crate) fn stats(&self) -> Stats {
        self.pipeline.stats()
    }
}
