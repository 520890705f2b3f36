//! Coasting: where a kinetic scroll will come to rest, and how long each
//! row it passes will be on screen, so that a list can load the rows it
//! will stop on before it gets there and skip the rows it only flies past.
//!
//! Plain arithmetic on the caller's (UI) thread: a [`CoastPrediction`] is
//! made from the scroll's state once per frame and dropped with it; it
//! holds no request and no thread. `thumbpipe::egui` reads egui's
//! `ScrollArea` and feeds it; other toolkits describe how their scrolls
//! slow down with a [`CoastModel`].

use std::ops::Range;
use std::time::Duration;

/// How a toolkit's kinetic scroll slows down once the finger has left:
/// the distance and time of a coast released at a velocity.
///
/// Velocities and distances are in the list's units (points) and signed:
/// positive means the offset grows (the content scrolls down). A model
/// answers for the free coast; the list's ends are the prediction's
/// business.
pub trait CoastModel {
    /// The distance a coast released at `velocity` covers before it stops,
    /// with the velocity's sign; `0.0` if it does not coast at all.
    fn distance(&self, velocity: f32) -> f32;

    /// Seconds from the release until the coast has covered `distance`
    /// (with the velocity's sign); `None` if it stops short of it.
    fn time_to_cover(&self, velocity: f32, distance: f32) -> Option<f32>;

    /// Seconds from the release until the coast stops.
    fn duration(&self, velocity: f32) -> f32;
}

/// A velocity that decays exponentially, `v(t) = v0 * exp(-t / decay_time)`,
/// until less than `stop_distance` of the coast is left: egui's kinetic
/// scrolling (`egui::style::KineticScrollStyle`), and UIKit's
/// (`UIScrollView.DecelerationRate.normal` is a decay time of about 0.5 s).
/// The coast covers `v0 * decay_time`.
///
/// ```
/// use thumbpipe::{CoastModel, ExponentialDecay};
///
/// let egui = ExponentialDecay::EGUI;
/// assert_eq!(egui.distance(2000.0), 1000.0);
/// // Half the way is covered after decay_time * ln 2.
/// let half = egui.time_to_cover(2000.0, 500.0).unwrap();
/// assert!((half - 0.5 * 2f32.ln()).abs() < 1e-4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExponentialDecay {
    /// Time constant of the decay, in seconds; `0.0` turns coasting off.
    pub decay_time: f32,
    /// The coast stops when less than this distance of it is left.
    pub stop_distance: f32,
}

impl ExponentialDecay {
    /// egui 0.37's defaults: a decay time of 0.5 s, stopping with half a
    /// point left.
    pub const EGUI: Self = Self {
        decay_time: 0.5,
        stop_distance: 0.5,
    };

    /// The whole coast's length, unsigned, or `None` if it does not coast.
    fn total(&self, velocity: f32) -> Option<f32> {
        let total = velocity.abs() * self.decay_time;
        (total.is_finite() && total >= self.stop_distance && total > 0.0).then_some(total)
    }
}

impl CoastModel for ExponentialDecay {
    fn distance(&self, velocity: f32) -> f32 {
        self.total(velocity)
            .map_or(0.0, |total| total.copysign(velocity))
    }

    fn time_to_cover(&self, velocity: f32, distance: f32) -> Option<f32> {
        let total = self.total(velocity)?;
        if distance == 0.0 {
            return Some(0.0);
        }
        if distance.signum() != velocity.signum() {
            return None;
        }
        // What is left when `distance` is covered; the coast stops before
        // less than stop_distance is left.
        let left = total - distance.abs();
        (left >= self.stop_distance).then(|| self.decay_time * (total / left).ln())
    }

    fn duration(&self, velocity: f32) -> f32 {
        self.total(velocity).map_or(0.0, |total| {
            self.decay_time * (total / self.stop_distance).ln()
        })
    }
}

/// A list of rows of one height, scrolled vertically: the row at list
/// index `i` spans the offsets `i * row_pitch .. (i + 1) * row_pitch` of
/// the content. A row holds one item, or, in a grid of uniform cells,
/// `columns` items side by side, numbered row by row (the last row may
/// be short). Rows and items here are positions in the list, named by
/// index; the pipeline's row keys are the app's, and the app maps one to
/// the other.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ListGeometry {
    /// From one row's top to the next one's: the row's height plus the
    /// spacing between rows.
    pub row_pitch: f32,
    /// Rows in the list.
    pub rows: usize,
    /// Height of the visible part.
    pub viewport: f32,
    /// The largest scroll offset: the content's height minus the
    /// viewport's (at least zero).
    pub max_offset: f32,
    /// Items side by side in a row: 1 in a list, a grid's columns.
    pub columns: usize,
    /// Items in the list: its rows in a list; in a grid, at most `rows *
    /// columns`.
    pub items: usize,
}

impl ListGeometry {
    /// `rows` rows `row_pitch` apart in a `viewport` as high, the content
    /// being exactly the rows.
    ///
    /// ```
    /// let list = thumbpipe::ListGeometry::new(76.0, 200, 760.0);
    /// assert_eq!(list.max_offset, 76.0 * 190.0);
    /// ```
    pub fn new(row_pitch: f32, rows: usize, viewport: f32) -> Self {
        Self::grid(row_pitch, rows, 1, viewport)
    }

    /// A grid of `items` uniform cells, `columns` to a row (at least one),
    /// its rows `row_pitch` apart in a `viewport` as high, the content
    /// being exactly the rows.
    ///
    /// ```
    /// // 200 photos, 5 to a row: 40 rows.
    /// let grid = thumbpipe::ListGeometry::grid(136.0, 200, 5, 680.0);
    /// assert_eq!(grid.rows, 40);
    /// assert_eq!(grid.items_in_row(39), 195..200);
    /// ```
    pub fn grid(row_pitch: f32, items: usize, columns: usize, viewport: f32) -> Self {
        let columns = columns.max(1);
        let rows = items.div_ceil(columns);
        Self {
            row_pitch,
            rows,
            viewport,
            max_offset: (row_pitch * rows as f32 - viewport).max(0.0),
            columns,
            items,
        }
    }

    /// The items in the row at `row`: `row` itself in a list, the row's
    /// cells in a grid; none past the end.
    pub fn items_in_row(&self, row: usize) -> Range<usize> {
        self.items_in_rows(row..row.saturating_add(1))
    }

    /// The items in the rows `rows`, in order.
    pub fn items_in_rows(&self, rows: Range<usize>) -> Range<usize> {
        let columns = self.columns.max(1);
        let item = |row: usize| row.saturating_mul(columns).min(self.items);
        item(rows.start)..item(rows.end).max(item(rows.start))
    }

    /// The rows any part of which is visible at `offset`.
    pub fn visible_rows(&self, offset: f32) -> Range<usize> {
        let sane = self.row_pitch.is_finite() && self.row_pitch > 0.0 && self.viewport.is_finite();
        if !sane || !offset.is_finite() || self.rows == 0 {
            return 0..0;
        }
        let first = (offset / self.row_pitch).floor().max(0.0) as usize;
        let end = ((offset + self.viewport) / self.row_pitch).ceil().max(0.0) as usize;
        first.min(self.rows)..end.min(self.rows)
    }

    /// The offsets at which any part of the row at `index` is visible: from its top
    /// reaching the viewport's bottom to its bottom leaving the top.
    fn shown_between(&self, index: usize) -> (f32, f32) {
        let top = index as f32 * self.row_pitch;
        (top - self.viewport, top + self.row_pitch)
    }
}

/// What a coast does to one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowVisit {
    /// The row is never on screen during the coast or after it.
    Never,
    /// The row comes on screen `appears` from now and leaves `on_screen`
    /// later: it is only passed by.
    Passing {
        /// From now until the row first shows.
        appears: Duration,
        /// From then until it has left.
        on_screen: Duration,
    },
    /// The row is on screen where the coast comes to rest, from `appears`
    /// on.
    Resting {
        /// From now until the row first shows.
        appears: Duration,
    },
}

/// Where a coasting list will come to rest, and when each row it passes is
/// on screen: made from the scroll's offset and velocity now, a
/// [`CoastModel`] and the [`ListGeometry`].
///
/// ```
/// use std::time::Duration;
/// use thumbpipe::{CoastPrediction, ExponentialDecay, ListGeometry, RowVisit};
///
/// // 200 rows 76 points apart, 10 in view, released at 6000 points/s.
/// let list = ListGeometry::new(76.0, 200, 760.0);
/// let coast = CoastPrediction::new(ExponentialDecay::EGUI, 0.0, 6000.0, list);
/// assert!(coast.is_coasting());
/// assert_eq!(coast.rest_offset(), 3000.0);
/// assert_eq!(coast.resting_rows(), 39..50);
/// // Row 20 flies past: on screen for less than a quarter of a second,
/// // less than an image takes at 250 ms latency.
/// match coast.visit(20) {
///     RowVisit::Passing { on_screen, .. } => assert!(on_screen < Duration::from_millis(250)),
///     other => panic!("{other:?}"),
/// }
/// assert_eq!(coast.visit(60), RowVisit::Never);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoastPrediction<M = ExponentialDecay> {
    model: M,
    list: ListGeometry,
    offset: f32,
    velocity: f32,
    rest: f32,
}

impl<M: CoastModel> CoastPrediction<M> {
    /// The coast of a list at `offset` moving at `velocity` (points per
    /// second, positive downwards) with the finger off, under `model`.
    /// An offset past either end (a rubber band springing back) rests at
    /// that end; a non-finite offset or velocity does not coast.
    pub fn new(model: M, offset: f32, velocity: f32, list: ListGeometry) -> Self {
        let max = list.max_offset.max(0.0);
        // `f32::max` drops a NaN: check the inputs themselves.
        let finite = offset.is_finite()
            && velocity.is_finite()
            && list.max_offset.is_finite()
            && list.viewport.is_finite()
            && list.row_pitch.is_finite();
        let offset = if finite { offset } else { 0.0 };
        let velocity = if finite { velocity } else { 0.0 };
        let clamped = offset.clamp(0.0, max);
        let rest = if clamped != offset {
            clamped
        } else {
            (offset + model.distance(velocity)).clamp(0.0, max)
        };
        Self {
            model,
            list,
            offset,
            velocity,
            rest,
        }
    }

    /// The list it was made for.
    pub fn list(&self) -> ListGeometry {
        self.list
    }

    /// Whether the list is moving and will come to rest elsewhere.
    pub fn is_coasting(&self) -> bool {
        self.rest != self.offset
    }

    /// The offset the list comes to rest at.
    pub fn rest_offset(&self) -> f32 {
        self.rest
    }

    /// The rows visible now.
    pub fn visible_rows(&self) -> Range<usize> {
        self.list.visible_rows(self.offset)
    }

    /// The rows visible where the list comes to rest.
    pub fn resting_rows(&self) -> Range<usize> {
        self.list.visible_rows(self.rest)
    }

    /// From now until the coast stops: reaching an end of the list, or
    /// running out of speed. Zero when not coasting.
    pub fn duration(&self) -> Duration {
        if !self.is_coasting() {
            return Duration::ZERO;
        }
        let free_rest = self.offset + self.model.distance(self.velocity);
        let free = self.model.duration(self.velocity);
        let seconds = if free_rest != self.rest {
            // Stopped by the end of the list (if it gets there before the
            // coast runs out; past an end, a spring egui does not model
            // here).
            self.time_to(self.rest).unwrap_or(free)
        } else {
            free
        };
        seconds_to_duration(seconds)
    }

    /// Seconds from now until the list reaches `offset`, if it does.
    fn time_to(&self, offset: f32) -> Option<f32> {
        self.model
            .time_to_cover(self.velocity, offset - self.offset)
    }

    /// Whether the coast gets from the offset now to `offset`.
    fn reaches(&self, offset: f32) -> bool {
        let (low, high) = if self.rest >= self.offset {
            (self.offset, self.rest)
        } else {
            (self.rest, self.offset)
        };
        (low..=high).contains(&offset)
    }

    /// When the row at list index `index` shows, and for how long, during
    /// the coast.
    pub fn visit(&self, index: usize) -> RowVisit {
        if index >= self.list.rows {
            return RowVisit::Never;
        }
        let (from, to) = self.list.shown_between(index);
        let shown_at = |offset: f32| from < offset && offset < to;
        let down = self.rest >= self.offset;
        // Moving down a row shows when the offset passes `from` and leaves
        // when it passes `to`; moving up, the other way round.
        let (enter, leave) = if down { (from, to) } else { (to, from) };
        let appears = if shown_at(self.offset) {
            Some(0.0)
        } else if self.reaches(enter) {
            self.time_to(enter)
        } else {
            None
        };
        let Some(appears) = appears else {
            // Never reached: the coast stops short of it (or it is behind),
            // unless it shows in the last half point: then it appears as
            // the coast ends.
            return if shown_at(self.rest) {
                RowVisit::Resting {
                    appears: self.duration(),
                }
            } else {
                RowVisit::Never
            };
        };
        if shown_at(self.rest) {
            return RowVisit::Resting {
                appears: seconds_to_duration(appears),
            };
        }
        match self.time_to(leave).filter(|_| self.reaches(leave)) {
            Some(left) => RowVisit::Passing {
                appears: seconds_to_duration(appears),
                on_screen: seconds_to_duration(left - appears),
            },
            // Stops within stop_distance of leaving: it stays.
            None => RowVisit::Resting {
                appears: seconds_to_duration(appears),
            },
        }
    }

    /// How long the row at `index` is on screen from now on: `None` for a row that
    /// stays (it is on screen at rest), zero for one never shown.
    pub fn time_on_screen(&self, index: usize) -> Option<Duration> {
        match self.visit(index) {
            RowVisit::Never => Some(Duration::ZERO),
            RowVisit::Passing { on_screen, .. } => Some(on_screen),
            RowVisit::Resting { .. } => None,
        }
    }

    /// From now until the row at `index` has left the screen for good: `None` for a
    /// row that stays, zero for one never shown. An image requested now
    /// that takes longer than this to arrive is never seen in that row.
    ///
    /// ```
    /// use thumbpipe::{CoastPrediction, ExponentialDecay, ListGeometry};
    ///
    /// let list = ListGeometry::new(76.0, 200, 760.0);
    /// let coast = CoastPrediction::new(ExponentialDecay::EGUI, 0.0, 6000.0, list);
    /// // Row 15 is not on screen yet: it leaves later than it stays.
    /// assert!(coast.leaves_after(15).unwrap() > coast.time_on_screen(15).unwrap());
    /// assert_eq!(coast.leaves_after(45), None);
    /// ```
    pub fn leaves_after(&self, index: usize) -> Option<Duration> {
        match self.visit(index) {
            RowVisit::Never => Some(Duration::ZERO),
            RowVisit::Passing { appears, on_screen } => Some(appears.saturating_add(on_screen)),
            RowVisit::Resting { .. } => None,
        }
    }

    /// Up to `count` rows just beyond the visible ones, in the direction
    /// the list moves (the next to come into view).
    pub fn rows_ahead(&self, count: usize) -> Range<usize> {
        let visible = self.visible_rows();
        if self.rest >= self.offset {
            visible.end..visible.end.saturating_add(count).min(self.list.rows)
        } else {
            visible.start.saturating_sub(count)..visible.start
        }
    }
}

fn seconds_to_duration(seconds: f32) -> Duration {
    Duration::try_from_secs_f32(seconds.max(0.0)).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: ListGeometry = ListGeometry {
        row_pitch: 76.0,
        rows: 200,
        viewport: 760.0,
        max_offset: 76.0 * 190.0,
        columns: 1,
        items: 200,
    };

    #[test]
    fn a_grid_numbers_its_items_row_by_row_and_its_last_row_may_be_short() {
        let grid = ListGeometry::grid(100.0, 23, 5, 250.0);
        assert_eq!((grid.rows, grid.max_offset), (5, 250.0));
        assert_eq!(grid.items_in_row(0), 0..5);
        assert_eq!(grid.items_in_row(4), 20..23);
        assert_eq!(grid.items_in_row(5), 23..23);
        assert_eq!(grid.items_in_row(usize::MAX), 23..23);
        assert_eq!(grid.items_in_rows(1..3), 5..15);
        let (from, to) = (3, 1);
        assert_eq!(grid.items_in_rows(from..to), 15..15);
        // No columns is one.
        assert_eq!(ListGeometry::grid(100.0, 3, 0, 250.0).items_in_row(1), 1..2);
        assert_eq!(LIST.items_in_row(7), 7..8);
        assert_eq!(ListGeometry::new(76.0, 200, 760.0), LIST);
    }

    /// egui's step, frame by frame, as in `scroll_physics.rs`.
    fn simulate(model: ExponentialDecay, mut offset: f32, mut vel: f32, dt: f32) -> (f32, f32) {
        let mut t = 0.0;
        loop {
            let left = vel.abs() * model.decay_time;
            if left < model.stop_distance {
                return (offset, t);
            }
            let new_vel = vel * (-dt / model.decay_time).exp();
            offset += model.decay_time * (vel - new_vel);
            vel = new_vel;
            t += dt;
        }
    }

    #[test]
    fn the_rest_and_duration_match_the_frame_by_frame_decay() {
        let model = ExponentialDecay::EGUI;
        for velocity in [300.0, 2000.0, -4000.0, 12_000.0] {
            for dt in [1.0 / 30.0, 1.0 / 60.0, 1.0 / 144.0] {
                let (rest, t) = simulate(model, 5000.0, velocity, dt);
                let coast = CoastPrediction::new(model, 5000.0, velocity, LIST);
                let off = (coast.rest_offset() - rest).abs();
                // Stopped with up to stop_distance left; f32 sums err a little more.
                assert!(
                    off <= model.stop_distance + 0.05,
                    "{velocity} {dt}: {} vs {rest}",
                    coast.rest_offset()
                );
                let predicted = coast.duration().as_secs_f32();
                assert!(
                    (predicted - t).abs() <= dt,
                    "{velocity} {dt}: {predicted} vs {t}"
                );
            }
        }
    }

    #[test]
    fn an_end_of_the_list_stops_the_coast_there() {
        let coast = CoastPrediction::new(ExponentialDecay::EGUI, 14_000.0, 8000.0, LIST);
        assert_eq!(coast.rest_offset(), LIST.max_offset);
        assert_eq!(coast.resting_rows(), 190..200);
        // It reaches the end while still fast: long before a free coast would stop.
        assert!(coast.duration() < Duration::from_millis(100));
        let up = CoastPrediction::new(ExponentialDecay::EGUI, 300.0, -8000.0, LIST);
        assert_eq!((up.rest_offset(), up.resting_rows()), (0.0, 0..10));
    }

    #[test]
    fn rows_passed_fast_are_briefly_on_screen_and_rows_near_the_rest_longer() {
        let coast = CoastPrediction::new(ExponentialDecay::EGUI, 0.0, 6000.0, LIST);
        let on_screen = |row| coast.time_on_screen(row).unwrap();
        assert!(on_screen(15) < on_screen(30));
        assert!(on_screen(30) < on_screen(38));
        assert_eq!(coast.time_on_screen(40), None, "resting");
        assert_eq!(coast.visit(100), RowVisit::Never);
        // Rows on screen now leave at once, in order.
        assert!(matches!(coast.visit(0), RowVisit::Passing { appears, .. } if appears.is_zero()));
        assert!(on_screen(0) < on_screen(9));
        // Upwards: the same, mirrored.
        let up = CoastPrediction::new(ExponentialDecay::EGUI, 3000.0, -6000.0, LIST);
        assert_eq!(up.resting_rows(), 0..10);
        assert!(up.time_on_screen(30).unwrap() < up.time_on_screen(12).unwrap());
    }

    #[test]
    fn a_row_appears_when_the_offset_reaches_it() {
        let model = ExponentialDecay::EGUI;
        let coast = CoastPrediction::new(model, 0.0, 6000.0, LIST);
        let RowVisit::Passing { appears, on_screen } = coast.visit(25) else {
            panic!("{:?}", coast.visit(25));
        };
        // Row 25's top reaches the viewport's bottom at 25 * 76 - 760.
        let expected = model.time_to_cover(6000.0, 25.0 * 76.0 - 760.0).unwrap();
        assert!((appears.as_secs_f32() - expected).abs() < 1e-3);
        let gone = model.time_to_cover(6000.0, 26.0 * 76.0).unwrap();
        assert!((on_screen.as_secs_f32() - (gone - expected)).abs() < 1e-3);
    }

    #[test]
    fn a_list_at_rest_or_with_nonsense_input_does_not_coast() {
        for (offset, velocity) in [
            (100.0, 0.0),
            (100.0, 0.5),
            (f32::NAN, 1000.0),
            (100.0, f32::INFINITY),
        ] {
            let coast = CoastPrediction::new(ExponentialDecay::EGUI, offset, velocity, LIST);
            assert!(!coast.is_coasting(), "{offset} {velocity}");
            assert_eq!(coast.duration(), Duration::ZERO);
        }
        let off = ExponentialDecay {
            decay_time: 0.0,
            stop_distance: 0.5,
        };
        assert!(!CoastPrediction::new(off, 100.0, 5000.0, LIST).is_coasting());
        // Past the top (a rubber band): it rests at the top.
        let band = CoastPrediction::new(ExponentialDecay::EGUI, -40.0, -300.0, LIST);
        assert_eq!(band.rest_offset(), 0.0);
        let empty = ListGeometry::new(76.0, 0, 760.0);
        assert_eq!(empty.visible_rows(0.0), 0..0);
        // A NaN in the geometry: nothing coasts, nothing is visible.
        let nan_end = ListGeometry {
            max_offset: f32::NAN,
            ..LIST
        };
        assert!(!CoastPrediction::new(ExponentialDecay::EGUI, 500.0, 0.0, nan_end).is_coasting());
        let nan_viewport = ListGeometry {
            viewport: f32::NAN,
            ..LIST
        };
        assert_eq!(nan_viewport.visible_rows(500.0), 0..0);
    }
}
