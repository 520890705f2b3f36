//! Coasts of egui's `ScrollArea`: [`CoastWatch`] reads a list's scroll
//! state (offset, kinetic velocity, whether a finger holds it) and its
//! geometry, and makes the [`CoastPrediction`] that `follow_coast` on a
//! [`super::ThumbnailList`] or a [`super::Loader`] acts on.
//!
//! Plain data kept by the app, one per list, used on the UI thread: told
//! where the list is after each pass, asked for the coast before the next.

use ::egui::scroll_area::{ScrollAreaOutput, State};
use ::egui::{Context, Id, Rect, Ui};

use crate::coast::{CoastPrediction, ExponentialDecay, ListGeometry};

/// Watches one `ScrollArea` list for kinetic coasts.
///
/// Each pass: [`CoastWatch::predict`] before the list is drawn, handed to
/// `follow_coast`; [`CoastWatch::observe`] with the `ScrollArea`'s output
/// after it.
///
/// ```no_run
/// use thumbpipe::egui::{CoastWatch, ThumbnailList};
///
/// fn list(ui: &mut egui::Ui, list: &mut ThumbnailList<usize>, watch: &mut CoastWatch, urls: &[String]) {
///     let size = egui::vec2(64.0, 64.0);
///     let row_height = 72.0;
///     // Before drawing: the rows where a coast will rest are requested
///     // first, rows it flies past are not requested.
///     let coast = watch.predict(ui.ctx());
///     list.follow_coast(coast.as_ref(), size, |row| (row, urls[row].as_str()));
///     let output = egui::ScrollArea::vertical().show_rows(ui, row_height, urls.len(), |ui, rows| {
///         for row in rows {
///             list.show(ui, row, &urls[row], size);
///         }
///     });
///     watch.observe(ui, &output, row_height, urls.len());
///     list.end_pass();
/// }
/// ```
#[derive(Clone, Debug, Default)]
pub struct CoastWatch {
    seen: Option<Seen>,
}

#[derive(Clone, Copy, Debug)]
struct Seen {
    id: Id,
    inner_rect: Rect,
    list: ListGeometry,
    model: ExponentialDecay,
}

impl CoastWatch {
    /// A watch that has seen no list yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Remembers the list drawn this pass: `output` is what
    /// `ScrollArea::show_rows(ui, row_height, rows, ..)` returned, `ui` the
    /// one it was shown in (for the spacing between rows and the kinetic
    /// scrolling style).
    pub fn observe<R>(
        &mut self,
        ui: &Ui,
        output: &ScrollAreaOutput<R>,
        row_height: f32,
        rows: usize,
    ) {
        self.observe_grid(ui, output, row_height, rows, 1);
    }

    /// [`CoastWatch::observe`] for a grid of uniform cells: `items` of
    /// them, `columns` to a row of `row_height`, drawn with
    /// `ScrollArea::show_rows(ui, row_height, items.div_ceil(columns), ..)`.
    /// `follow_coast` then names items, numbered row by row. A prediction
    /// names items of the geometry last observed: when the number of
    /// items or columns changes, start a new watch (or check indices).
    pub fn observe_grid<R>(
        &mut self,
        ui: &Ui,
        output: &ScrollAreaOutput<R>,
        row_height: f32,
        items: usize,
        columns: usize,
    ) {
        let spacing = ui.spacing();
        let viewport = output.inner_rect.height();
        let kinetic = spacing.scroll.kinetic;
        let mut list = ListGeometry::grid(
            row_height + spacing.item_spacing.y,
            items,
            columns,
            viewport,
        );
        list.max_offset = (output.content_size.y - viewport).max(0.0);
        self.seen = Some(Seen {
            id: output.id,
            inner_rect: output.inner_rect,
            list,
            model: ExponentialDecay {
                decay_time: kinetic.decay_time,
                stop_distance: kinetic.stop_distance,
            },
        });
    }

    /// The coast under way, from egui's state for the list last observed:
    /// `None` before the first [`CoastWatch::observe`], while a pointer
    /// holds the list, and when it is not coasting.
    pub fn predict(&self, ctx: &Context) -> Option<CoastPrediction> {
        let seen = self.seen?;
        // egui drags the content by a response with this id. While held,
        // and in the pass that lets go (egui sets the new velocity only in
        // that pass's `show`), the stored velocity is the one from before
        // the grab: no coast to predict from.
        let area = Some(seen.id.with("area"));
        let held = ctx.dragged_id() == area
            || ctx.drag_stopped_id() == area
            || ctx.input(|input| {
                input.pointer.any_down()
                    && input
                        .pointer
                        .interact_pos()
                        .is_some_and(|pos| seen.inner_rect.contains(pos))
            });
        if held {
            return None;
        }
        let state = State::load(ctx, seen.id)?;
        let coast = CoastPrediction::new(
            seen.model,
            state.unclamped_offset().y,
            state.velocity().y,
            seen.list,
        );
        coast.is_coasting().then_some(coast)
    }
}
