//! `--first-screen`: when every cell of the first screen first showed its
//! image (or its error), in views and in milliseconds from start-up, and
//! whether iced's first frame drew them. Owned by the list, told of each
//! view and of the first frame; each is said once, on stderr, by the list.
//!
//! iced calls `view` after each message as well as for a frame, and builds
//! its first view before the window opens: a view is not a frame. A frame
//! draws the last view built before it, so a first screen whole by the
//! time a frame starts is in that frame.

use std::cell::Cell;
use std::time::{Duration, Instant};

pub struct FirstScreen {
    started: Instant,
    /// Views built while a cell in view waited; `None` once every one
    /// has shown.
    views: Cell<Option<u32>>,
    /// When every cell in view first showed.
    whole_at: Cell<Option<Instant>>,
    /// Whether iced's first frame has been seen.
    framed: bool,
}

/// The first frame, against the first screen.
#[derive(Debug, PartialEq)]
pub enum FirstFrame {
    /// The frame started `at` after start-up, the first screen whole
    /// `before` it started.
    Whole { at: Duration, before: Duration },
    /// The frame started `at` after start-up, before the first screen was
    /// whole.
    Waiting { at: Duration },
}

impl FirstScreen {
    pub fn new(started: Instant) -> Self {
        Self {
            started,
            views: Cell::new(Some(0)),
            whole_at: Cell::new(None),
            framed: false,
        }
    }

    /// A view at `now`: if every cell in it shows (`whole`) for the first
    /// time, how long after start-up and in which view (0: the first).
    pub fn viewed(&self, whole: bool, now: Instant) -> Option<(Duration, u32)> {
        let view = self.views.get()?;
        if !whole {
            self.views.set(Some(view + 1));
            return None;
        }
        self.views.set(None);
        self.whole_at.set(Some(now));
        Some((now - self.started, view))
    }

    /// Whether the first frame is still to come: the list listens for
    /// frames until then.
    pub fn awaits_frame(&self) -> bool {
        !self.framed
    }

    /// A frame started `at`: the first one, against the first screen;
    /// `None` for every later frame.
    pub fn frame(&mut self, at: Instant) -> Option<FirstFrame> {
        if self.framed {
            return None;
        }
        self.framed = true;
        let since_start = at.saturating_duration_since(self.started);
        Some(match self.whole_at.get() {
            Some(whole) if whole <= at => FirstFrame::Whole {
                at: since_start,
                before: at - whole,
            },
            _ => FirstFrame::Waiting { at: since_start },
        })
    }
}

impl std::fmt::Display for FirstFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
        match self {
            FirstFrame::Whole { at, before } => write!(
                f,
                "first frame drawn {:.1} ms after start-up, with the first screen whole ({:.1} ms before)",
                ms(at),
                ms(before)
            ),
            FirstFrame::Waiting { at } => write!(
                f,
                "first frame drawn {:.1} ms after start-up, before the first screen was whole",
                ms(at)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn views_are_counted_until_the_screen_is_whole_and_the_first_frame_is_judged_once() {
        let started = Instant::now();
        let mut watch = FirstScreen::new(started);
        assert_eq!(watch.viewed(false, started + MS), None);
        assert_eq!(watch.viewed(false, started + 2 * MS), None);
        assert_eq!(watch.viewed(true, started + 5 * MS), Some((5 * MS, 2)));
        // Said once: a later view, whole or not, says nothing.
        assert_eq!(watch.viewed(true, started + 6 * MS), None);
        assert!(watch.awaits_frame());
        assert_eq!(
            watch.frame(started + 9 * MS),
            Some(FirstFrame::Whole {
                at: 9 * MS,
                before: 4 * MS
            })
        );
        assert!(!watch.awaits_frame());
        assert_eq!(watch.frame(started + 20 * MS), None);
    }

    #[test]
    fn a_frame_before_the_screen_is_whole_is_said_to_wait() {
        let started = Instant::now();
        let mut watch = FirstScreen::new(started);
        assert_eq!(watch.viewed(false, started + MS), None);
        assert_eq!(
            watch.frame(started + 3 * MS),
            Some(FirstFrame::Waiting { at: 3 * MS })
        );
        // Whole after the first frame: said, but the frame was judged.
        assert_eq!(watch.viewed(true, started + 4 * MS), Some((4 * MS, 1)));
        assert_eq!(watch.frame(started + 5 * MS), None);
    }
}
