//! The scripted flick: top to bottom and back, the same position every
//! frame of every run, then a still period to watch the tail.
//!
//! Plain arithmetic, driven by the app's frame counter. The flick advances
//! per frame, not per second: a slow frame makes the flick take longer, as a
//! real one would.

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
}
