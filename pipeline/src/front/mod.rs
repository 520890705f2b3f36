//! The UI side's layer, for every toolkit: a [`Pipeline`] with what a
//! list's rows have been given in front of it, and the rules every
//! toolkit's door follows for them. A door (`egui`, `iced`) adds only what
//! is its toolkit's: how an image is made and drawn, and how the UI is
//! woken.
//!
//! - [`ListFront`] (here): each row's URL and size as last asked for, and
//!   its outcome (delivered and not yet made into an image, or failed);
//!   the rows asked for in a pass, the rest cancelled and forgotten at its
//!   end; what a row can be drawn from before the pipeline is asked.
//! - `coasting`: while a list coasts, the rows where it will rest asked for
//!   first and the rows it flies past not at all (`plan`: which ones).
//! - `kept`: the toolkit's images, kept under a byte budget.
//! - `row_images`: a list's rows with their images and what each shows,
//!   for a toolkit that makes an image at once and draws from `&self`
//!   (iced).
//! - `prefetch`: the rows just beyond the view, in the direction it moves.
//! - `scroll`: a scroll's speed read from where the list is, for a toolkit
//!   with no kinetic state to read (iced).
//! - `wake`: the pipeline's waker as a stream of wakes, one per burst.
//!
//! Used on the UI thread only, by one door; it owns its pipeline, so
//! dropping it cancels every load.
//!
//! Everything is looked up by the URL the row shows now, so an outcome
//! meant for a row's previous URL can never be drawn:
//!
//! ```text
//! the toolkit's image for (url, size)?           -> draw it (the door's)
//! failed for this row's url and size?            -> the error
//! delivered for this row, or in the cache?       -> make its image, draw it
//! otherwise                                      -> pending; under way
//! ```

mod coasting;
pub(crate) mod kept;
mod plan;
pub(crate) mod prefetch;
#[cfg(feature = "iced")]
pub(crate) mod row_images;
#[cfg(feature = "iced")]
pub(crate) mod scroll;
#[cfg(feature = "iced")]
pub(crate) mod wake;

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

pub(crate) use self::coasting::CoastPolicy;
use self::coasting::Coasting;
use crate::error::Error;
use crate::pipeline::Pipeline;
use crate::request::{Priority, TargetSize};
use crate::thumbnail::Thumbnail;

/// A row as last asked for, and what it was given.
struct Row {
    url: Arc<str>,
    target: TargetSize,
    /// Asked for in the pass under way.
    asked: bool,
    /// Asked for as a row in view ([`ListFront::request_shown`]) in its
    /// last pass, not only as where a coast rests or ahead of it.
    in_view: bool,
    /// Delivered for this URL and size (and not yet made into the
    /// toolkit's image), or failed.
    outcome: Option<Result<Thumbnail, Error>>,
}

/// What [`ListFront::ask`] found.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Asked {
    /// The row's first ask in this pass.
    pub(crate) first_in_pass: bool,
    /// The row showed another URL or size until now.
    pub(crate) changed: bool,
}

/// A thumbnail delivered for a row that still shows its URL at its size.
#[cfg_attr(not(feature = "iced"), allow(dead_code))]
pub(crate) struct Arrived<K> {
    pub(crate) row: K,
    pub(crate) url: Arc<str>,
    pub(crate) target: TargetSize,
    pub(crate) thumbnail: Thumbnail,
}

/// What the levels in front of the pipeline hold for a row.
pub(crate) enum Held<'a> {
    Pixels(Thumbnail),
    Failed(&'a Error),
    Nothing,
}

/// A pipeline keyed by a list's rows, and what its rows were given.
pub(crate) struct ListFront<K> {
    pub(crate) pipeline: Pipeline<K>,
    /// The rows asked for in this pass or the last.
    rows: HashMap<K, Row>,
    /// Until the first pass ends: completions for rows asked of the
    /// pipeline before this front was put over it are taken as theirs.
    adopting: bool,
    coasting: Coasting<K>,
    /// The door's wake, which the pipeline calls when loads finish.
    wake: Arc<dyn Fn() + Send + Sync>,
}

impl<K: Hash + Eq + Clone> ListFront<K> {
    /// The front of `pipeline`, built already, which calls `wake` (from
    /// its own threads) when loads finish. Rows asked of it before are
    /// given what it loads for them: see [`ListFront::receive`].
    pub(crate) fn over(
        mut pipeline: Pipeline<K>,
        coast_policy: CoastPolicy,
        wake: impl Fn() + Send + Sync + 'static,
    ) -> Self {
        let wake: Arc<dyn Fn() + Send + Sync> = Arc::new(wake);
        let waker = Arc::clone(&wake);
        pipeline.set_waker(move || waker());
        pipeline.hand_over();
        // What finished before this waker was set woke no one; a pipeline
        // asked for nothing yet has nothing to wake for.
        if pipeline.pending_rows() > 0 {
            wake();
        }
        Self {
            pipeline,
            rows: HashMap::new(),
            adopting: true,
            coasting: Coasting::new(coast_policy),
            wake,
        }
    }

    /// Marks `row` as asked for in this pass, showing `url` in a `target`
    /// box; an outcome it had for another URL or size is dropped.
    pub(crate) fn ask(&mut self, row: &K, url: &str, target: TargetSize) -> Asked {
        match self.rows.get_mut(row) {
            Some(known) => {
                let changed = *known.url != *url || known.target != target;
                if changed {
                    known.url = Arc::from(url);
                    known.target = target;
                    known.outcome = None;
                }
                let first_in_pass = !std::mem::replace(&mut known.asked, true);
                if first_in_pass {
                    known.in_view = false;
                }
                Asked {
                    first_in_pass,
                    changed,
                }
            }
            None => {
                let known = Row {
                    url: Arc::from(url),
                    target,
                    asked: true,
                    in_view: false,
                    outcome: None,
                };
                self.rows.insert(row.clone(), known);
                Asked {
                    first_in_pass: true,
                    changed: false,
                }
            }
        }
    }

    /// The URL and size `row` was last asked for with, in this pass or
    /// the last; `None` for a row in neither.
    #[cfg_attr(not(feature = "iced"), allow(dead_code))]
    pub(crate) fn shown(&self, row: &K) -> Option<(&Arc<str>, TargetSize)> {
        self.rows.get(row).map(|known| (&known.url, known.target))
    }

    /// `row`'s outcome, if it is for `url` at `target`.
    pub(crate) fn outcome(
        &self,
        row: &K,
        url: &str,
        target: TargetSize,
    ) -> Option<&Result<Thumbnail, Error>> {
        self.rows
            .get(row)
            .filter(|known| *known.url == *url && known.target == target)
            .and_then(|known| known.outcome.as_ref())
    }

    /// What the levels in front of the pipeline hold for `row` showing
    /// `url` at `target`, walked in order: the row's outcome, then the
    /// pipeline's memory cache. The toolkit's own images come before both
    /// and are the door's to look up.
    pub(crate) fn held(&self, row: &K, url: &str, target: TargetSize) -> Held<'_> {
        match self.outcome(row, url, target) {
            Some(Ok(thumbnail)) => Held::Pixels(thumbnail.clone()),
            Some(Err(error)) => Held::Failed(error),
            None => self
                .pipeline
                .cached(url, target)
                .map_or(Held::Nothing, Held::Pixels),
        }
    }

    /// Makes `error` `row`'s outcome for the URL and size it shows: the
    /// toolkit could not use what was delivered.
    pub(crate) fn fail(&mut self, row: &K, error: Error) {
        if let Some(known) = self.rows.get_mut(row) {
            known.outcome = Some(Err(error));
        }
    }

    /// Takes what the pipeline delivered: each completion becomes its row's
    /// outcome, if the row still shows that URL at that size. Returns the
    /// thumbnails given, with their rows, for a toolkit that makes its
    /// images as they arrive.
    ///
    /// Until the first pass ends, a completion for a row this front has not
    /// seen is for a row asked of the pipeline before the front was put
    /// over it ([`ListFront::over`]): it becomes that row's outcome, as if
    /// the row had been asked for, and the row is dropped at the end of the
    /// first pass unless asked for in it (its request with it). After that,
    /// such a completion is dropped.
    pub(crate) fn receive(&mut self) -> Vec<Arrived<K>> {
        let mut given = Vec::new();
        for done in self.pipeline.drain() {
            if self.adopting && !self.rows.contains_key(&done.row) {
                let adopted = Row {
                    url: Arc::clone(&done.url),
                    target: done.target,
                    asked: false,
                    in_view: false,
                    outcome: None,
                };
                self.rows.insert(done.row.clone(), adopted);
            }
            let Some(known) = self.rows.get_mut(&done.row) else {
                continue;
            };
            if *known.url != *done.url || known.target != done.target {
                continue;
            }
            if let Ok(thumbnail) = &done.result {
                given.push(Arrived {
                    row: done.row,
                    url: Arc::clone(&known.url),
                    target: done.target,
                    thumbnail: thumbnail.clone(),
                });
            }
            known.outcome = Some(done.result);
        }
        given
    }

    /// Asks the pipeline for a row shown in this pass: at
    /// [`Priority::Destination`] if a coast rests on it, not at all if it
    /// flies past it, otherwise at [`Priority::Visible`]. A request already
    /// made is kept alive, never repeated.
    pub(crate) fn request_shown(&mut self, row: &K, url: &str, target: TargetSize) {
        if let Some(known) = self.rows.get_mut(row) {
            known.in_view = true;
        }
        if let Some(priority) = self.coasting.priority_of_shown(row) {
            self.pipeline.request(row.clone(), url, target, priority);
        }
    }

    /// Asks for `row` at `priority`, once per pass, unless it has an
    /// outcome or is in the cache already, or `kept` says the toolkit has
    /// its image. A row that showed another URL or size until now asks
    /// anew, so that its new request replaces the old.
    pub(crate) fn want(
        &mut self,
        row: K,
        url: &str,
        target: TargetSize,
        priority: Priority,
        kept: impl Fn(&str, TargetSize) -> bool,
    ) {
        let asked = self.ask(&row, url, target);
        if !asked.first_in_pass {
            return;
        }
        let held = !matches!(self.held(&row, url, target), Held::Nothing) || kept(url, target);
        if asked.changed || !held {
            self.pipeline.request(row, url, target, priority);
        }
    }

    /// Ends a pass: the pipeline cancels the rows not asked for in it, and
    /// what was kept for them is dropped (in the cache, it stays there).
    pub(crate) fn end_pass(&mut self) {
        self.adopting = false;
        self.pipeline.end_frame();
        self.rows
            .retain(|_, known| std::mem::take(&mut known.asked));
    }

    /// The rows in view in the last pass, each with the URL and size it
    /// showed.
    #[cfg_attr(not(feature = "iced"), allow(dead_code))]
    pub(crate) fn rows_in_view(&self) -> Vec<(K, Arc<str>, TargetSize)> {
        self.rows
            .iter()
            .filter(|(_, known)| known.in_view)
            .map(|(row, known)| (row.clone(), Arc::clone(&known.url), known.target))
            .collect()
    }

    /// Forgets `url` at every level behind the toolkit's: the rows showing
    /// it (they load it afresh when next asked for), its cache entries and
    /// its loads.
    pub(crate) fn forget(&mut self, url: &str) {
        self.rows.retain(|_, known| *known.url != *url);
        self.pipeline.forget(url);
    }

    /// Forgets every row and image behind the toolkit's level.
    pub(crate) fn forget_all(&mut self) {
        self.rows.clear();
        self.pipeline.forget_all();
    }
}
