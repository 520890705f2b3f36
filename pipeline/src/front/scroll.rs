//! Where a list is, for a toolkit that tells only its scroll offset and
//! has no kinetic state to read (iced's `scrollable`, to which a
//! trackpad's momentum comes as more scroll messages from the system): the
//! rows in view ([`rows_in_view`]), and [`ScrollWatch`], which takes the
//! scroll's speed from the offsets it is told and when, and makes the
//! [`CoastPrediction`] that `follow_scroll` acts on.
//!
//! Plain data and arithmetic on the UI thread: a watch is kept by the app,
//! one per list, told each offset as the list scrolls and asked before
//! each pass.

use std::ops::Range;
use std::time::{Duration, Instant};

use crate::coast::{CoastPrediction, ExponentialDecay, ListGeometry};

/// Watches one list's scrolls: how fast it moves, and so where it will
/// rest and which rows it only flies past.
///
/// Tell it each offset the list scrolls to ([`ScrollWatch::observe`]),
/// and hand [`ScrollWatch::predict`] to `follow_coast` first in each pass.
/// A scroll keeps the speed it had and slows down as `model` says; the
/// list is at rest once no scroll has come for
/// [`ScrollWatch::STILL_AFTER`].
///
/// ```
/// use thumbpipe::ListGeometry;
/// use thumbpipe::iced::ScrollWatch;
///
/// let mut watch = ScrollWatch::default();
/// // In `update`, on each `on_scroll` viewport of a list of 1,000 rows of
/// // 72 points:
/// watch.observe(0.0, ListGeometry::new(72.0, 1000, 720.0));
/// // Before the pass over the rows in view: `None` at rest.
/// assert!(watch.predict().is_none());
/// ```
#[derive(Clone, Debug)]
pub struct ScrollWatch {
    model: ExponentialDecay,
    list: Option<ListGeometry>,
    /// The last offset told, and when.
    last: Option<(Instant, f32)>,
    /// Points per second, over the last scrolls.
    velocity: f32,
    /// Where the last scroll would have come to rest, and whether the one
    /// before it said the same (within half a screen).
    rest: Option<f32>,
    steady: bool,
}

impl Default for ScrollWatch {
    fn default() -> Self {
        Self::new(Self::MOMENTUM)
    }
}

impl ScrollWatch {
    /// How a scroll left to itself slows down by default: a system's
    /// momentum scrolling (macOS's decelerates by 0.998 a millisecond, a
    /// decay time of 0.5 s), stopping with half a point left.
    pub const MOMENTUM: ExponentialDecay = ExponentialDecay {
        decay_time: 0.5,
        stop_distance: 0.5,
    };

    /// Scrolls further apart than this are not one motion: the list was at
    /// rest between them.
    pub const STILL_AFTER: Duration = Duration::from_millis(100);

    /// Scrolls closer than this (two messages of one frame) are taken
    /// together.
    const SAME_MOMENT: Duration = Duration::from_millis(4);

    /// A watch whose scrolls slow down as `model` says.
    pub fn new(model: ExponentialDecay) -> Self {
        Self {
            model,
            list: None,
            last: None,
            velocity: 0.0,
            rest: None,
            steady: false,
        }
    }

    /// The list is scrolled to `offset` (a `scrollable` viewport's
    /// `absolute_offset().y`), and laid out as `list` says.
    pub fn observe(&mut self, offset: f32, list: ListGeometry) {
        self.observe_at(offset, list, Instant::now());
    }

    fn observe_at(&mut self, offset: f32, list: ListGeometry, now: Instant) {
        let same_list = self.list.replace(list) == Some(list);
        let Some((then, before)) = self.last.filter(|_| same_list) else {
            // The first offset, or of a list laid out anew: no speed yet.
            self.last = Some((now, offset));
            self.velocity = 0.0;
            return;
        };
        let elapsed = now.saturating_duration_since(then);
        if elapsed < Self::SAME_MOMENT {
            return;
        }
        let speed = (offset - before) / elapsed.as_secs_f32();
        // A jump of more than a screen (a scroll bar's, an app's) is no
        // scroll that goes on.
        let jumped = (offset - before).abs() > list.viewport;
        self.velocity = if elapsed >= Self::STILL_AFTER || jumped || !speed.is_finite() {
            // From rest: one scroll says no speed yet.
            0.0
        } else if self.velocity == 0.0 || self.velocity.signum() != speed.signum() {
            speed
        } else {
            (self.velocity + speed) / 2.0
        };
        self.last = Some((now, offset));
        let coast = CoastPrediction::new(self.model, offset, self.velocity, list);
        let rest = coast.is_coasting().then(|| coast.rest_offset());
        self.steady = rest
            .zip(self.rest)
            .is_some_and(|(now, before)| (now - before).abs() <= list.viewport / 2.0);
        self.rest = rest;
    }

    /// Whether the scroll slows down as the model says: the last two
    /// scrolls would have come to rest within half a screen of each other
    /// (a system's momentum). A scroll still driven by a hand speeds up
    /// and slows down as it likes, and where it will rest is not known.
    pub fn rests_steadily(&self) -> bool {
        self.steady
    }

    /// The coast under way: where the list will rest if it keeps its
    /// speed and slows down as the model says. `None` before the list has
    /// moved, and once it has been still for [`ScrollWatch::STILL_AFTER`].
    pub fn predict(&self) -> Option<CoastPrediction> {
        self.predict_at(Instant::now())
    }

    fn predict_at(&self, now: Instant) -> Option<CoastPrediction> {
        let (then, offset) = self.last?;
        if now.saturating_duration_since(then) >= Self::STILL_AFTER {
            return None;
        }
        let coast = CoastPrediction::new(self.model, offset, self.velocity, self.list?);
        coast.is_coasting().then_some(coast)
    }
}

/// The rows of a list of `count` rows of `row_height` in view when its
/// scrollable is scrolled `top` down and `height` tall (a `scrollable`'s
/// `Viewport`: `absolute_offset().y` and `bounds().height`), with one row
/// more at each end so a row coming into view is already asked for.
///
/// ```
/// use thumbpipe::iced::rows_in_view;
///
/// assert_eq!(rows_in_view(0.0, 200.0, 50.0, 1000), 0..5);
/// assert_eq!(rows_in_view(1000.0, 200.0, 50.0, 1000), 19..25);
/// assert_eq!(rows_in_view(49_900.0, 200.0, 50.0, 1000), 997..1000);
/// ```
pub fn rows_in_view(top: f32, height: f32, row_height: f32, count: usize) -> Range<usize> {
    if row_height.is_nan() || row_height <= 0.0 || count == 0 {
        return 0..0;
    }
    let first = (top.max(0.0) / row_height).floor() as usize;
    let end = ((top.max(0.0) + height.max(0.0)) / row_height).ceil() as usize;
    first.saturating_sub(1).min(count)..end.saturating_add(1).min(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: ListGeometry = ListGeometry {
        row_pitch: 72.0,
        rows: 1000,
        viewport: 720.0,
        max_offset: 72.0 * 990.0,
        columns: 1,
        items: 1000,
    };

    #[test]
    fn a_steady_scroll_rests_where_its_speed_and_the_model_take_it() {
        let mut watch = ScrollWatch::default();
        let start = Instant::now();
        let frame = Duration::from_millis(16);
        // 2,000 points a second: 32 a frame.
        for n in 0..10u32 {
            watch.observe_at(32.0 * n as f32, LIST, start + frame * n);
        }
        let now = start + frame * 9;
        let coast = watch.predict_at(now).unwrap();
        // A steady speed: where it rests moves 32 points a frame.
        assert!(watch.rests_steadily());
        // 288 + 2,000 * 0.5.
        assert!(
            (coast.rest_offset() - 1288.0).abs() < 1.0,
            "{}",
            coast.rest_offset()
        );
        // Still for longer than STILL_AFTER: at rest, nothing to follow.
        assert!(watch.predict_at(now + ScrollWatch::STILL_AFTER).is_none());
    }

    #[test]
    fn a_momentum_coast_rests_steadily_and_a_hand_driven_scroll_does_not() {
        let start = Instant::now();
        let frame = Duration::from_millis(16);
        // Momentum: 3,000 points a second decaying as the model says.
        let mut watch = ScrollWatch::default();
        let decay = |t: f32| 3000.0 * 0.5 * (1.0 - (-t / 0.5).exp());
        for n in 0..12u32 {
            let t = (frame * n).as_secs_f32();
            watch.observe_at(decay(t), LIST, start + frame * n);
        }
        assert!(watch.rests_steadily());
        // A hand speeding up: 10, 40, 90... points a frame.
        let mut hand = ScrollWatch::default();
        for n in 0..12u32 {
            hand.observe_at(10.0 * (n * n) as f32, LIST, start + frame * n);
        }
        assert!(!hand.rests_steadily());
    }

    #[test]
    fn a_jump_or_a_new_layout_says_no_speed() {
        let mut watch = ScrollWatch::default();
        let start = Instant::now();
        let frame = Duration::from_millis(16);
        watch.observe_at(0.0, LIST, start);
        watch.observe_at(32.0, LIST, start + frame);
        assert!(watch.predict_at(start + frame).is_some());
        // More than a screen in a frame: a jump.
        watch.observe_at(5000.0, LIST, start + frame * 2);
        assert!(watch.predict_at(start + frame * 2).is_none());
        watch.observe_at(5032.0, LIST, start + frame * 3);
        assert!(watch.predict_at(start + frame * 3).is_some());
        // The list laid out anew (a resize): its old offsets say nothing.
        let resized = ListGeometry::new(72.0, 1000, 360.0);
        watch.observe_at(5064.0, resized, start + frame * 4);
        assert!(watch.predict_at(start + frame * 4).is_none());
    }

    #[test]
    fn one_scroll_after_rest_and_scrolls_of_one_moment_say_no_speed() {
        let mut watch = ScrollWatch::default();
        let start = Instant::now();
        watch.observe_at(0.0, LIST, start);
        assert!(watch.predict_at(start).is_none());
        // A wheel's notch a second later: the list was at rest between.
        let later = start + Duration::from_secs(1);
        watch.observe_at(120.0, LIST, later);
        assert!(watch.predict_at(later).is_none());
        // Two messages of one frame do not make a speed of their own.
        watch.observe_at(240.0, LIST, later + Duration::from_millis(1));
        assert!(watch.predict_at(later + Duration::from_millis(1)).is_none());
        // The next frame's does, from where the frame began.
        let next = later + Duration::from_millis(16);
        watch.observe_at(280.0, LIST, next);
        let coast = watch.predict_at(next).unwrap();
        assert!(coast.rest_offset() > 280.0);
    }
}
