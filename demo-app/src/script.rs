//! The scripts: the same scroll position every frame of every run, then a
//! still period to watch the tail.
//!
//! - `flick`: top to bottom and back, fast.
//! - `browse`: a second on the first screen, then down three screens at a
//!   reading pace (one row every 250 ms), a 2 s stop, and back to the top at
//!   the same pace: the way back shows whether images already seen come
//!   back without a placeholder. (Without the first second, the top row
//!   leaves the view 250 ms after the list opens, just before its image can
//!   arrive at 250 ms latency, and it is then new on the way back.)
//! - `open`: the list opens and stays on its first screen: how long the
//!   first screen takes, however long that is (a slow disk's).
//!
//! Plain arithmetic, driven by the app's frame counter. A script advances
//! per frame, not per second: a slow frame makes it take longer, as a real
//! scroll would.

/// Frames of the flick for 200 rows: 7.3 s at 60 Hz.
const FRAMES_PER_200_ROWS: usize = 438;
/// Frames the list stays still after the flick (3 s at 60 Hz) at least...
pub const STILL_FRAMES: usize = 180;
/// ...and at most (30 s), while requests are still finishing: the still
/// period ends half a second after the last one, so that a long tail is
/// measured, not cut off.
pub const STILL_FRAMES_MAX: usize = 1800;
/// Quiet time that ends the still period after [`STILL_FRAMES`].
pub const QUIET_AFTER_TAIL: std::time::Duration = std::time::Duration::from_millis(500);

/// Frames to scroll one row while browsing: 250 ms at 60 Hz.
const BROWSE_FRAMES_PER_ROW: f32 = 15.0;
/// Frames of the browse's stop at the bottom: 2 s.
const BROWSE_STOP_FRAMES: usize = 120;
/// Frames on the first screen before the browse scrolls: 1 s.
const BROWSE_START_FRAMES: usize = 60;
/// Screens the browse scrolls down.
const BROWSE_SCREENS: f32 = 3.0;

/// Which script, as chosen on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScriptKind {
    Flick,
    Browse,
    /// Four flings through egui's own input and kinetic scrolling (see
    /// `fling.rs`): not offsets set per frame like the others.
    Fling,
    Open,
}

impl ScriptKind {
    pub fn name(self) -> &'static str {
        match self {
            ScriptKind::Flick => "flick",
            ScriptKind::Browse => "browse",
            ScriptKind::Fling => "fling",
            ScriptKind::Open => "open",
        }
    }
}

/// A script laid out for a list: its length in frames and its offset, in
/// points, at every frame.
#[derive(Clone, Copy, Debug)]
pub enum Script {
    Flick {
        flick: Flick,
        range: f32,
    },
    Browse(Browse),
    /// The first screen, still: the still period that follows every
    /// script is all of it.
    Open,
}

impl Script {
    /// `kind` for a list of `rows` rows `pitch` points apart, whose viewport
    /// is `viewport` points high and which scrolls `range` points in all;
    /// `None` for a script that sets no offsets.
    pub fn new(
        kind: ScriptKind,
        rows: usize,
        pitch: f32,
        viewport: f32,
        range: f32,
    ) -> Option<Self> {
        match kind {
            ScriptKind::Flick => Some(Script::Flick {
                flick: Flick::new(rows),
                range,
            }),
            ScriptKind::Browse => Some(Script::Browse(Browse::new(pitch, viewport, range))),
            // Driven by input, not offsets: `fling.rs`.
            ScriptKind::Fling => None,
            ScriptKind::Open => Some(Script::Open),
        }
    }

    /// Frames of scrolling (the stop included).
    pub fn frames(&self) -> usize {
        match self {
            Script::Flick { flick, .. } => flick.frames(),
            Script::Browse(browse) => browse.frames(),
            Script::Open => 1,
        }
    }

    /// The scroll offset at `frame`; `None` after the script.
    pub fn offset(&self, frame: usize) -> Option<f32> {
        match self {
            Script::Flick { flick, range } => flick.position(frame).map(|p| p * range),
            Script::Browse(browse) => browse.offset(frame),
            Script::Open => (frame < 1).then_some(0.0),
        }
    }

    /// Whether `frame` is on the way back over rows already shown (the
    /// browse's return to the top).
    pub fn on_the_way_back(&self, frame: usize) -> bool {
        match self {
            Script::Flick { .. } | Script::Open => false,
            Script::Browse(browse) => frame >= browse.back_from(),
        }
    }
}

/// Down `distance` points at one row per 250 ms, a stop, and back.
#[derive(Clone, Copy, Debug)]
pub struct Browse {
    /// Points per frame.
    speed: f32,
    distance: f32,
    /// Frames of each way.
    leg: usize,
}

impl Browse {
    fn new(pitch: f32, viewport: f32, range: f32) -> Self {
        let distance = (BROWSE_SCREENS * viewport).min(range).max(0.0);
        let speed = (pitch / BROWSE_FRAMES_PER_ROW).max(0.01);
        Self {
            speed,
            distance,
            leg: (distance / speed).ceil() as usize,
        }
    }

    fn frames(&self) -> usize {
        BROWSE_START_FRAMES + 2 * self.leg + BROWSE_STOP_FRAMES
    }

    /// The first frame of the way back up.
    fn back_from(&self) -> usize {
        BROWSE_START_FRAMES + self.leg + BROWSE_STOP_FRAMES
    }

    fn offset(&self, frame: usize) -> Option<f32> {
        let back_from = self.back_from();
        if frame >= self.frames() {
            None
        } else if frame < BROWSE_START_FRAMES {
            Some(0.0)
        } else if frame < BROWSE_START_FRAMES + self.leg {
            Some((frame - BROWSE_START_FRAMES) as f32 * self.speed)
        } else if frame < back_from {
            Some(self.distance)
        } else {
            Some((self.distance - (frame - back_from) as f32 * self.speed).max(0.0))
        }
    }
}

/// A flick over `rows` rows at the same speed in rows per frame whatever the
/// list's length.
#[derive(Clone, Copy, Debug)]
pub struct Flick {
    frames: usize,
}

impl Flick {
    pub fn new(rows: usize) -> Self {
        Self {
            frames: (FRAMES_PER_200_ROWS * rows).div_ceil(200).max(2),
        }
    }

    /// Frames of scrolling.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The scroll position at `frame`, from 0 (top) to 1 (bottom): an
    /// ease-in-out down, then the same back up; `None` after the flick.
    pub fn position(&self, frame: usize) -> Option<f32> {
        if frame >= self.frames {
            return None;
        }
        let half = self.frames as f32 / 2.0;
        let t = frame as f32 / half;
        let t = if t <= 1.0 { t } else { 2.0 - t };
        Some(t * t * (3.0 - 2.0 * t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flick_goes_down_and_back_in_438_frames_for_200_rows() {
        let flick = Flick::new(200);
        assert_eq!(flick.frames(), 438);
        assert_eq!(flick.position(0), Some(0.0));
        assert!((flick.position(219).unwrap() - 1.0).abs() < 1e-6);
        assert!(flick.position(437).unwrap() < 0.01);
        assert_eq!(flick.position(438), None);
        assert_eq!(Flick::new(2000).frames(), 4380);
    }

    #[test]
    fn browsing_goes_down_three_screens_a_row_per_250_ms_stops_and_comes_back() {
        // Rows 72 points apart, a 720-point viewport (10 rows), a long list.
        let script = Script::new(ScriptKind::Browse, 200, 72.0, 720.0, 100_000.0).unwrap();
        // 60 frames on the first screen, 30 rows down at 15 frames a row,
        // 120 frames still, 30 rows up.
        assert_eq!(script.frames(), 60 + 450 + 120 + 450);
        assert_eq!(script.offset(59), Some(0.0));
        assert_eq!(script.offset(75), Some(72.0));
        assert_eq!(script.offset(560), Some(2160.0));
        assert!(!script.on_the_way_back(629));
        assert!(script.on_the_way_back(630));
        let last = script.offset(1079).unwrap();
        assert!((last - 4.8).abs() < 0.01, "{last}");
        assert_eq!(script.offset(1080), None);
        // A list shorter than three screens: down to its end and back.
        let short = Script::new(ScriptKind::Browse, 20, 72.0, 720.0, 720.0).unwrap();
        assert_eq!(short.frames(), 60 + 150 + 120 + 150);
    }
}
