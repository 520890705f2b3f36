//! `--script flick`: the demo's flick (demo-app's `script.rs`: the list
//! from top to bottom and back, eased in and out, 438 frames for every 200
//! rows), played in the window at 60 Hz, then a still period until the
//! loads are over; what it measured is then printed and the app exits.
//!
//! Plain state, stepped by the app's `update` on each of the window's
//! frames (iced's `window::frames()`). The flick's frame is the 60 Hz
//! frame the clock is at, whatever the window's own rate: under Xvfb,
//! frames come as fast as they are drawn, and a flick counted in them
//! would run two or three times as fast as on a 60 Hz display (the demo's
//! headless run is paced at 60 Hz the same way).

use std::time::{Duration, Instant};

/// Frames of the flick for 200 rows: 7.3 s at 60 Hz (the demo's).
const FRAMES_PER_200_ROWS: usize = 438;
/// The still period after the flick lasts at least this long...
const STILL: Duration = Duration::from_secs(3);
/// ...and ends this long after the last load finished...
const QUIET_AFTER_TAIL: Duration = Duration::from_millis(500);
/// ...or after this long, however many are left.
const STILL_MAX: Duration = Duration::from_secs(30);
/// A frame this long after the last one is a stall.
const STALL: Duration = Duration::from_millis(50);
/// A frame of the flick.
const FRAME: Duration = Duration::from_micros(16_667);

/// What the app does at a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Scroll to this fraction of the list's range (0 top, 1 bottom).
    ScrollTo(f32),
    /// Stay still: the flick is over, loads may still be finishing.
    Still,
    /// The still period is over: report and exit.
    Done,
}

/// The flick under way, and what the frames showed.
#[derive(Debug)]
pub struct Flick {
    frames: usize,
    /// When its first frame was played.
    started: Option<Instant>,
    /// When its last frame was played.
    ended: Option<Instant>,
    /// The last frame at which loads were still under way, after the flick.
    last_busy: Option<Instant>,
    last_frame: Option<Instant>,
    longest_gap: Duration,
    stalls: usize,
}

impl Flick {
    /// The flick for a list of `rows` rows.
    pub fn new(rows: usize) -> Self {
        Self {
            frames: (FRAMES_PER_200_ROWS * rows).div_ceil(200).max(2),
            started: None,
            ended: None,
            last_busy: None,
            last_frame: None,
            longest_gap: Duration::ZERO,
            stalls: 0,
        }
    }

    /// The step for the frame drawn at `now`, with whether loads are under
    /// way (`busy`).
    pub fn step(&mut self, now: Instant, busy: bool) -> Step {
        if let Some(last) = self.last_frame.replace(now) {
            let gap = now.saturating_duration_since(last);
            self.longest_gap = self.longest_gap.max(gap);
            self.stalls += usize::from(gap > STALL);
        }
        let started = *self.started.get_or_insert(now);
        let elapsed = now.saturating_duration_since(started);
        let frame = (elapsed.as_micros() / FRAME.as_micros()) as usize;
        if frame < self.frames && self.ended.is_none() {
            let half = self.frames as f32 / 2.0;
            let t = frame as f32 / half;
            let t = if t <= 1.0 { t } else { 2.0 - t };
            return Step::ScrollTo(t * t * (3.0 - 2.0 * t));
        }
        let ended = *self.ended.get_or_insert(now);
        if busy {
            self.last_busy = Some(now);
        }
        let still = now.saturating_duration_since(ended);
        let quiet = self
            .last_busy
            .is_none_or(|busy| now.saturating_duration_since(busy) >= QUIET_AFTER_TAIL);
        if (still >= STILL && quiet) || still >= STILL_MAX {
            Step::Done
        } else {
            Step::Still
        }
    }

    /// One line of what the flick measured, given the requests the server
    /// received and how many it dropped before their body was sent.
    pub fn report(&self, requests: u64, dropped: u64) -> String {
        let tail = match (self.ended, self.last_busy) {
            (Some(ended), Some(busy)) => busy.saturating_duration_since(ended),
            _ => Duration::ZERO,
        };
        format!(
            "iced-list: flick of {} frames: {requests} requests ({dropped} dropped in flight), \
             tail {:.0} ms, {} frames over {} ms, longest {:.1} ms",
            self.frames,
            tail.as_secs_f64() * 1000.0,
            self.stalls,
            STALL.as_millis(),
            self.longest_gap.as_secs_f64() * 1000.0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flick_goes_down_and_back_then_waits_for_the_loads() {
        let mut flick = Flick::new(200);
        let start = Instant::now();
        let at = |frame: u64| start + FRAME * frame as u32;
        let positions: Vec<f32> = (0..438)
            .map(|frame| match flick.step(at(frame), true) {
                Step::ScrollTo(position) => position,
                step => panic!("frame {frame}: {step:?}"),
            })
            .collect();
        assert_eq!(positions[0], 0.0);
        assert_eq!(positions[219], 1.0);
        assert!(positions[..219].windows(2).all(|w| w[0] < w[1]));
        assert!(positions[219..].windows(2).all(|w| w[0] > w[1]));
        // Frames drawn faster than 60 Hz stay at its frame.
        let mut fast = Flick::new(200);
        assert_eq!(fast.step(start, true), Step::ScrollTo(0.0));
        let early = fast.step(start + FRAME / 2, true);
        assert_eq!(early, Step::ScrollTo(0.0));
        // Loads go on for 1 s after the flick: the still period lasts 3 s,
        // then ends once they have been over for half a second.
        let end = at(438);
        let still =
            |flick: &mut Flick, ms: u64, busy| flick.step(end + Duration::from_millis(ms), busy);
        assert_eq!(still(&mut flick, 0, true), Step::Still);
        assert_eq!(still(&mut flick, 1000, true), Step::Still);
        assert_eq!(still(&mut flick, 2999, false), Step::Still);
        assert_eq!(still(&mut flick, 3000, false), Step::Done);
        let report = flick.report(120, 7);
        assert!(report.contains("120 requests (7 dropped in flight), tail 1000 ms"));
        // The gap from 1 s to 2.999 s was a stall (as the test steps it).
        assert!(report.contains("2 frames over 50 ms"), "{report}");
    }
}
