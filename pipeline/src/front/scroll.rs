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

use std::collections::VecDeque;
use std::ops::Range;
use std::time::{Duration, Instant};

use crate::coast::{CoastPrediction, ExponentialDecay, ListGeometry};

/// Watches one list's scrolls: how fast it moves, and so where it will
/// rest and which rows it only flies past.
///
/// Tell it each offset the list scrolls to ([`ScrollWatch::observe`]),
/// and hand [`ScrollWatch::predict`] to `follow_coast` first in each pass.
/// A scroll keeps the speed it had (over its last 100 ms) and slows down
/// as `model` says; where it will rest is followed only once it does slow
/// down so ([`ScrollWatch::rests_steadily`]); the list is at rest once no
/// scroll has come for [`ScrollWatch::STILL_AFTER`].
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
    /// The offsets told over the last [`ScrollWatch::SPEED_OVER`] (and the
    /// one before), oldest first, with when; the last is the list's now.
    recent: VecDeque<(Instant, f32)>,
    /// Points per second, over the recent offsets.
    velocity: f32,
    /// Where the scrolls of the same window would have come to rest, with
    /// when, oldest first; and whether those agree.
    rests: VecDeque<(Instant, f32)>,
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
    /// The speed is the distance over this long, not between two scroll
    /// messages: in a window, each comes a few milliseconds before or
    /// after its frame's time, as the event loop runs, and the speed
    /// between two of them was off by half either way (a coast's rest
    /// then jumped a screen from pass to pass, and what each pass asked
    /// for there was cancelled by the next).
    const SPEED_OVER: Duration = Duration::from_millis(100);

    /// A watch whose scrolls slow down as `model` says.
    pub fn new(model: ExponentialDecay) -> Self {
        Self {
            model,
            list: None,
            recent: VecDeque::new(),
            velocity: 0.0,
            rests: VecDeque::new(),
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
        let Some(&(then, before)) = self.recent.back().filter(|_| same_list) else {
            // The first offset, or of a list laid out anew: no speed yet.
            self.recent.clear();
            self.recent.push_back((now, offset));
            self.rests.clear();
            (self.velocity, self.steady) = (0.0, false);
            return;
        };
        let elapsed = now.saturating_duration_since(then);
        let step = offset - before;
        // A jump of more than a screen (a scroll bar's, an app's) is no
        // scroll that goes on, however soon it comes.
        let jumped = step.abs() > list.viewport || !step.is_finite();
        if elapsed < Self::SAME_MOMENT && !jumped {
            return;
        }
        let turned = self
            .recent
            .front()
            .is_some_and(|&(_, first)| (before - first) * step < 0.0);
        if elapsed >= Self::STILL_AFTER || jumped {
            // From rest: one scroll says no speed yet.
            self.recent.clear();
            self.rests.clear();
        } else if turned {
            // The offsets before a turn say nothing of the new direction.
            self.recent.drain(..self.recent.len() - 1);
            self.rests.clear();
        }
        for timed in [&mut self.recent, &mut self.rests] {
            while timed.len() > 1 && timed[1].0 + Self::SPEED_OVER <= now {
                timed.pop_front();
            }
        }
        self.recent.push_back((now, offset));
        // The line's speed is the one at the offsets' mean time, before
        // now: slowed down as the model says since then.
        let (speed, at) = slope(&self.recent, now);
        let slowed = (at / f64::from(self.model.decay_time)).min(0.0).exp();
        self.velocity = speed * slowed as f32;
        if !self.velocity.is_finite() {
            self.velocity = 0.0;
        }
        let coast = CoastPrediction::new(self.model, offset, self.velocity, list);
        if !coast.is_coasting() {
            self.rests.clear();
            self.steady = false;
            return;
        }
        let rest = coast.rest_offset();
        // A coast left to itself rests where it would have a moment ago
        // (offset + speed x decay time stays put as it slows down); a
        // scroll that keeps its speed, or speeds up, rests further on at
        // every look.
        // Against the latest rest of a window ago: the first of those kept.
        let a_window_ago = self
            .rests
            .front()
            .filter(|&&(at, _)| at + Self::SPEED_OVER <= now);
        self.steady = a_window_ago.is_some_and(|&(_, before)| {
            (rest - before).abs() <= (0.15 * (rest - offset).abs()).max(list.row_pitch)
        });
        self.rests.push_back((now, rest));
    }

    /// Whether the scroll slows down as the model says (a system's
    /// momentum): where it would rest now is where it would have 100 ms
    /// before, within 15% of the way there (or a row). A scroll still
    /// driven by a hand keeps its speed, speeds up and slows down as it
    /// likes, and where it will rest is not known: followed, its rest would
    /// be asked for at every look, and cancelled at the next.
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
        let &(then, offset) = self.recent.back()?;
        if now.saturating_duration_since(then) >= Self::STILL_AFTER {
            return None;
        }
        let coast = CoastPrediction::new(self.model, offset, self.velocity, self.list?);
        coast.is_coasting().then_some(coast)
    }
}

/// The speed, in points per second, of the least-squares line through
/// `offsets` (timed up to `now`), and the offsets' mean time, in seconds
/// from now (not after it): every offset counts, so one told a few
/// milliseconds off its frame moves it little. No speed from one offset.
fn slope(offsets: &VecDeque<(Instant, f32)>, now: Instant) -> (f32, f64) {
    let n = offsets.len() as f64;
    let points = || {
        offsets.iter().map(|&(at, offset)| {
            let before = now.saturating_duration_since(at).as_secs_f64();
            (-before, f64::from(offset))
        })
    };
    let (mean_t, mean_x) = points().fold((0.0, 0.0), |(t, x), (pt, px)| (t + pt / n, x + px / n));
    let (covariance, variance) = points().fold((0.0, 0.0), |(c, v), (t, x)| {
        (
            c + (t - mean_t) * (x - mean_x),
            v + (t - mean_t) * (t - mean_t),
        )
    });
    let speed = (covariance / variance) as f32;
    if variance > 0.0 && speed.is_finite() {
        (speed, mean_t)
    } else {
        (0.0, 0.0)
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
        // A speed kept is a hand's: where it rests moves 32 points a
        // frame, and is not where the list will stop.
        assert!(!watch.rests_steadily());
        // 288 + 2,000 * 0.5, less the slowing the model takes to have
        // begun at the offsets' mean time (56 ms before: 11%).
        let rest = coast.rest_offset();
        assert!(
            (rest - (288.0 + 1000.0 * (-0.056f32 / 0.5).exp())).abs() < 1.0,
            "{rest}"
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

    /// In a window, each scroll message comes a few milliseconds off its
    /// frame's time: a momentum coast still rests steadily, where its
    /// speed and the model take it.
    #[test]
    fn a_coast_told_at_uneven_times_rests_steadily_where_it_will_stop() {
        let mut watch = ScrollWatch::default();
        let start = Instant::now();
        let jitter = [3, 0, 5, 1, 6, 2, 4, 0];
        // 3,000 points a second, decaying as the model says: it stops
        // 1,500 points on.
        let decay = |t: f32| 3000.0 * 0.5 * (1.0 - (-t / 0.5).exp());
        for n in 0..30i32 {
            // Each offset told up to 6 ms after its frame.
            let at = 20 + n * 1000 / 60 + jitter[n as usize % jitter.len()];
            let now = start + Duration::from_millis(at as u64);
            watch.observe_at(decay(n as f32 / 60.0), LIST, now);
            if n >= 8 {
                let rest = watch.predict_at(now).unwrap().rest_offset();
                assert!((rest - 1500.0).abs() < 150.0, "{n}: {rest}");
                // Once a window's offsets agree: the first ones, two or
                // three, said less.
                assert!(watch.rests_steadily() || n < 10, "{n}");
            }
        }
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
        // A jump a millisecond after a scroll still counts: the speed
        // after it is from where it landed.
        let at = start + frame * 5;
        watch.observe_at(5096.0, resized, at);
        watch.observe_at(100.0, resized, at + Duration::from_millis(1));
        assert!(watch.predict_at(at + Duration::from_millis(1)).is_none());
        watch.observe_at(132.0, resized, at + frame);
        let rest = watch.predict_at(at + frame).unwrap().rest_offset();
        assert!((132.0..1200.0).contains(&rest), "{rest}");
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
