//! The coast plan: which items of a coasting list to ask for, at what
//! priority, and which to leave alone, decided from the prediction, the
//! shortest time on screen worth a request, and how long each item's
//! request has already waited. The prediction is of rows; the plan names
//! the items in them (a list's rows themselves, a grid's cells), by index;
//! the toolkit's door maps them to its row keys, and `coasting.rs` asks.
//!
//! Plain data and a pure function of its inputs, made once per pass by
//! `coasting.rs` and dropped with the pass.
//!
//! ```text
//! resting rows + the one more a list draws there  -> Destination, first
//! visible rows (and one either side) gone before an image arrives
//!                                               -> passing: not asked for
//! a screen ahead, rows whose image can arrive   -> Prefetch
//! ```

use std::ops::Range;
use std::time::Duration;

use crate::coast::{CoastModel, CoastPrediction};

/// What a pass asks for while the list coasts: items, by index.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct CoastPlan {
    /// Where the list will rest, and the row more a list draws there (egui does): asked
    /// for at `Priority::Destination`, before every other item.
    pub(crate) destination: Range<usize>,
    /// Items drawn now that will have left before an image asked for now
    /// (or when their request was made) could arrive: not asked for.
    pub(crate) passing: Vec<usize>,
    /// The prefetch window's place: a screen of rows ahead whose images can
    /// arrive before they have passed, asked for at `Priority::Prefetch`.
    pub(crate) ahead: Vec<usize>,
}

impl CoastPlan {
    /// The plan for `coast`, where an image takes `min_time_on_screen` to
    /// arrive, and `waited(item)` is how long the item's current request has
    /// waited already (`None`: it has none). `waited` is asked only of items
    /// gone before an image asked for now would arrive. Empty when the list
    /// is not coasting.
    pub(crate) fn new<M: CoastModel>(
        coast: &CoastPrediction<M>,
        min_time_on_screen: Duration,
        mut waited: impl FnMut(usize) -> Option<Duration>,
    ) -> Self {
        if !coast.is_coasting() {
            return Self::default();
        }
        let list = coast.list();
        let rows = list.rows;
        let resting = coast.resting_rows();
        // The rows a list will draw there: one more below the view, or, at
        // the bottom of the list, one more above it. (The prediction
        // itself is within half a point.)
        let destination = if resting.end >= rows {
            resting.start.saturating_sub(1)..rows
        } else {
            resting.start..resting.end + 1
        };
        // Whether a row will have left before its image arrives, asked for
        // after `waited`: in durations from now, so that no setting or
        // model (up to `Duration::MAX`) can overflow an `Instant`.
        let gone_first = |row: usize, waited: Duration| {
            coast
                .leaves_after(row)
                .is_some_and(|leaves_in| leaves_in < min_time_on_screen.saturating_sub(waited))
        };
        // The visible rows and a row either side: egui draws a row more
        // than it shows, and that one must not be requested either. An
        // image asked for now that arrives in time also does if it was
        // asked for earlier: only items gone first need their wait.
        let visible = coast.visible_rows();
        let drawn = visible.start.saturating_sub(1)..(visible.end + 1).min(rows);
        let passing = drawn
            .filter(|&row| !destination.contains(&row) && gone_first(row, Duration::ZERO))
            .flat_map(|row| list.items_in_row(row).map(move |item| (row, item)))
            .filter(|&(row, item)| gone_first(row, waited(item).unwrap_or_default()))
            .map(|(_, item)| item)
            .collect();
        let ahead = coast
            .rows_ahead(visible.len())
            .filter(|&row| !gone_first(row, Duration::ZERO))
            .flat_map(|row| list.items_in_row(row))
            .collect();
        Self {
            destination: list.items_in_rows(destination),
            passing,
            ahead,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coast::{ExponentialDecay, ListGeometry};

    /// A list of 200 rows of 76 points in a 760-point view (ten on
    /// screen) flung from `offset` at `velocity`.
    fn fling(offset: f32, velocity: f32) -> CoastPrediction {
        let list = ListGeometry::new(76.0, 200, 760.0);
        CoastPrediction::new(ExponentialDecay::EGUI, offset, velocity, list)
    }

    #[test]
    fn a_list_at_rest_plans_nothing() {
        let plan = CoastPlan::new(&fling(760.0, 0.0), Duration::ZERO, |_| None);
        assert_eq!(plan, CoastPlan::default());
    }

    #[test]
    fn the_rows_where_a_fling_rests_come_first_with_one_more_below() {
        let coast = fling(0.0, 6000.0);
        let plan = CoastPlan::new(&coast, Duration::from_millis(250), |_| None);
        let resting = coast.resting_rows();
        assert!(resting.start > 20, "a fast fling goes far: {resting:?}");
        assert_eq!(plan.destination, resting.start..resting.end + 1);
    }

    #[test]
    fn at_the_bottom_the_extra_row_is_above() {
        // From near the end, fast: it rests against the last row.
        let coast = fling(76.0 * 180.0, 9000.0);
        let plan = CoastPlan::new(&coast, Duration::from_millis(250), |_| None);
        assert_eq!(plan.destination.end, 200);
        assert_eq!(plan.destination.start, coast.resting_rows().start - 1);
    }

    #[test]
    fn rows_flown_past_faster_than_an_image_arrives_are_not_asked_for() {
        let coast = fling(0.0, 6000.0);
        // Images take a second: every row on screen now is gone first.
        let plan = CoastPlan::new(&coast, Duration::from_secs(1), |_| None);
        let visible = coast.visible_rows();
        let expected: Vec<usize> = (0..(visible.end + 1)).collect();
        assert_eq!(plan.passing, expected);
        // Nor the rows just ahead, which fly by as fast.
        assert!(plan.ahead.is_empty(), "{:?}", plan.ahead);
        // Images at once: every row drawn can show its image.
        let instant = CoastPlan::new(&coast, Duration::ZERO, |_| None);
        assert!(instant.passing.is_empty());
        assert_eq!(
            instant.ahead,
            (visible.end..visible.end + visible.len()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_request_that_has_waited_long_enough_is_kept() {
        let coast = fling(0.0, 6000.0);
        let wait = Duration::from_secs(1);
        let mut asked = Vec::new();
        let plan = CoastPlan::new(&coast, wait, |index| {
            asked.push(index);
            // Row 0's image is due now; the others were never asked for.
            (index == 0).then_some(wait)
        });
        assert!(!plan.passing.contains(&0), "{:?}", plan.passing);
        assert!(plan.passing.contains(&1));
        // Only rows gone first are asked how long they waited, in order.
        let mut expected = plan.passing.clone();
        expected.insert(0, 0);
        assert_eq!(asked, expected);
    }

    #[test]
    fn a_destination_row_on_screen_is_never_passing() {
        // A slow fling: it rests a few rows on, overlapping the view.
        let coast = fling(0.0, 300.0);
        let plan = CoastPlan::new(&coast, Duration::from_secs(60), |_| None);
        assert!(
            plan.passing
                .iter()
                .all(|index| !plan.destination.contains(index)),
            "{plan:?}"
        );
        assert!(!plan.destination.is_empty());
    }

    #[test]
    fn a_grid_plans_the_cells_of_its_rows() {
        // 1000 cells, 5 to a row of 136 points, 5 rows in view.
        let grid = ListGeometry::grid(136.0, 1000, 5, 680.0);
        let coast = CoastPrediction::new(ExponentialDecay::EGUI, 0.0, 6000.0, grid);
        let rows = CoastPlan::new(&coast, Duration::from_secs(1), |_| None);
        let resting = coast.resting_rows();
        assert_eq!(rows.destination, resting.start * 5..(resting.end + 1) * 5);
        // Every cell of the rows flown past, row by row.
        let visible = coast.visible_rows();
        assert_eq!(rows.passing, (0..(visible.end + 1) * 5).collect::<Vec<_>>());
        // A cell whose request has waited long enough is kept; its
        // neighbours in the row are not.
        let kept = CoastPlan::new(&coast, Duration::from_secs(1), |item| {
            (item == 7).then_some(Duration::from_secs(1))
        });
        assert!(!kept.passing.contains(&7) && kept.passing.contains(&6));
        let instant = CoastPlan::new(&coast, Duration::ZERO, |_| None);
        assert_eq!(
            instant.ahead,
            (visible.end * 5..(visible.end + visible.len()) * 5).collect::<Vec<_>>()
        );
    }

    #[test]
    fn no_setting_or_wait_overflows() {
        let coast = fling(0.0, 6000.0);
        for threshold in [Duration::ZERO, Duration::MAX] {
            for wait in [None, Some(Duration::MAX)] {
                let plan = CoastPlan::new(&coast, threshold, |_| wait);
                assert!(!plan.destination.is_empty());
            }
        }
    }
}
