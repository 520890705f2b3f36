//! The `fling` script: four flicks of the list through egui's own input, a
//! pointer pressed on the list, dragged at a speed for a tenth of a second
//! and released while moving, then egui's kinetic scrolling coasting to a
//! stop, then [`REST`] at rest. Two flings down, one long one down, one
//! back up; the same in every mode, headless and in a window.
//!
//! Owned by the app; [`FlingDriver::events`] is called before each pass
//! (from the headless loop or eframe's input hook) with what the last pass
//! saw of the list and the pass's input time, and returns the pointer
//! events of this one. The pointer's position follows egui's input clock,
//! not the frame count, so that egui sees the drag's speed as the release
//! velocity at any frame rate; headless, that clock advances exactly 1/60 s
//! a pass, so every run flings alike.

use std::time::{Duration, Instant};

use fixture_server::FlingReport;

use egui::{Event, PointerButton, Pos2, Rect, pos2};

/// The drag speeds, in points per second; positive drags up (the list
/// coasts down). egui coasts `speed * 0.5 s` after the drag.
pub const FLINGS: [f32; 4] = [2500.0, 5000.0, 12_000.0, -9000.0];
/// How long the pointer drags before it lets go.
const DRAG: Duration = Duration::from_millis(100);
/// Time on the first screen before the first fling, for its images.
const START: Duration = Duration::from_secs(1);
/// Time at rest after each coast.
pub const REST: Duration = Duration::from_secs(2);
/// Distance from the list's edge where a drag starts.
const GRAB_INSET: f32 = 40.0;

/// What the last pass saw of the list.
#[derive(Clone, Copy, Debug)]
pub struct ListSeen {
    /// Where the list is on screen.
    pub rect: Rect,
    /// egui's kinetic velocity of the list, points per second.
    pub velocity: f32,
}

/// Where the script is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Phase {
    /// Before the first fling.
    Start {
        since: f64,
    },
    /// The pointer moved over the list, to press at `at` next pass.
    Hover {
        index: usize,
        at: Pos2,
    },
    /// Fling `index` pressed at `at`, dragging from `from`.
    Drag {
        index: usize,
        at: f64,
        from: Pos2,
    },
    /// Fling `index` released; the list coasts.
    Coast {
        index: usize,
    },
    /// Fling `index`'s coast stopped.
    Rest {
        index: usize,
        since: f64,
    },
    Done,
}

#[derive(Debug)]
pub struct FlingDriver {
    phase: Phase,
    /// Move events sent during the drag.
    moves: usize,
}

impl FlingDriver {
    pub fn new() -> Self {
        Self {
            phase: Phase::Start {
                since: f64::NEG_INFINITY,
            },
            moves: 0,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn finished(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The pointer events of the next pass, whose input time is `now`
    /// seconds; `seen` is the list as the last pass left it (`None` before
    /// it was drawn).
    pub fn events(&mut self, seen: Option<ListSeen>, now: f64) -> Vec<Event> {
        let Some(seen) = seen else {
            return Vec::new();
        };
        let elapsed =
            |since: f64| Duration::try_from_secs_f64(now - since).unwrap_or(Duration::ZERO);
        match self.phase {
            Phase::Start { since } if since == f64::NEG_INFINITY => {
                self.phase = Phase::Start { since: now };
                Vec::new()
            }
            Phase::Start { since } if elapsed(since) >= START => self.hover(0, seen),
            Phase::Start { .. } | Phase::Done => Vec::new(),
            Phase::Hover { index, at } => {
                self.phase = Phase::Drag {
                    index,
                    at: now,
                    from: at,
                };
                self.moves = 0;
                vec![button(at, true)]
            }
            Phase::Drag { index, at, from } => {
                let elapsed = elapsed(at).min(DRAG);
                let speed = FLINGS[index];
                let to = pos2(from.x, from.y - speed * elapsed.as_secs_f32());
                self.moves += 1;
                let mut events = vec![Event::PointerMoved(to)];
                // egui needs three positions to measure a velocity.
                if elapsed >= DRAG && self.moves >= 3 {
                    events.push(button(to, false));
                    self.phase = Phase::Coast { index };
                }
                events
            }
            Phase::Coast { index } => {
                if seen.velocity == 0.0 {
                    self.phase = Phase::Rest { index, since: now };
                }
                Vec::new()
            }
            Phase::Rest { index, since } => {
                if elapsed(since) < REST {
                    Vec::new()
                } else if index + 1 < FLINGS.len() {
                    self.hover(index + 1, seen)
                } else {
                    self.phase = Phase::Done;
                    Vec::new()
                }
            }
        }
    }

    /// Moves the pointer to where fling `index` presses, a pass before
    /// the press: near the bottom of the list to drag up, near the top to
    /// drag down. (A move and a press in one pass would drag the list by
    /// the jump from wherever the pointer was, in a window the real one.)
    fn hover(&mut self, index: usize, seen: ListSeen) -> Vec<Event> {
        let y = if FLINGS[index] > 0.0 {
            seen.rect.bottom() - GRAB_INSET
        } else {
            seen.rect.top() + GRAB_INSET
        };
        let at = pos2(seen.rect.center().x, y);
        self.phase = Phase::Hover { index, at };
        vec![Event::PointerMoved(at)]
    }
}

fn button(pos: Pos2, pressed: bool) -> Event {
    Event::PointerButton {
        pos,
        button: PointerButton::Primary,
        pressed,
        modifiers: Default::default(),
    }
}

/// Below this speed, in points per second (a point a frame at 60 Hz), the
/// list looks still to a person though egui still coasts it.
pub const SLOW: f32 = 60.0;

/// A fling being measured.
#[derive(Debug)]
struct Measuring {
    index: usize,
    server_at_press: (u64, u64),
    released: Option<(Instant, f32, f32)>,
    slow: Option<Instant>,
    stopped: Option<(Instant, f32)>,
    settled_after_slow: Option<Instant>,
    settled_after_stop: Option<Instant>,
    placeholders: u64,
    last_placeholder: Option<Instant>,
}

/// Measures each fling from what every pass saw; owned by the app.
#[derive(Debug, Default)]
pub struct FlingMeasures {
    current: Option<Measuring>,
    pub done: Vec<FlingReport>,
}

/// What one pass saw, for [`FlingMeasures::pass`].
pub struct PassSeen {
    pub now: Instant,
    pub offset: f32,
    pub velocity: f32,
    /// Rows drawn without their image.
    pub placeholders: usize,
}

impl FlingMeasures {
    /// How long fling `index` has coasted, while it is the one measured.
    pub fn coasting_for(&self, index: usize) -> Option<Duration> {
        let m = self.current.as_ref().filter(|m| m.index == index)?;
        m.released.map(|(at, ..)| at.elapsed())
    }

    /// Counts a pass in `phase` (the phase its events were made in).
    /// `server` reads the server's (requests received, bytes sent) so far;
    /// it is called only as a fling starts or ends (over HTTP for a
    /// `--server`, it is no read for every frame).
    pub fn pass(&mut self, phase: Phase, seen: PassSeen, server: impl FnOnce() -> (u64, u64)) {
        let index = match phase {
            Phase::Hover { index, .. }
            | Phase::Drag { index, .. }
            | Phase::Coast { index }
            | Phase::Rest { index, .. } => Some(index),
            Phase::Start { .. } | Phase::Done => None,
        };
        if self.current.as_ref().map(|m| m.index) != index {
            let server = if self.current.is_some() || index.is_some() {
                server()
            } else {
                return;
            };
            self.finish(server);
            if let Some(index) = index {
                self.current = Some(Measuring {
                    index,
                    server_at_press: server,
                    released: None,
                    slow: None,
                    stopped: None,
                    settled_after_slow: None,
                    settled_after_stop: None,
                    placeholders: 0,
                    last_placeholder: None,
                });
            }
        }
        let Some(m) = &mut self.current else { return };
        if matches!(phase, Phase::Hover { .. } | Phase::Drag { .. }) {
            return;
        }
        let released = *m
            .released
            .get_or_insert((seen.now, seen.offset, seen.velocity));
        m.placeholders += seen.placeholders as u64;
        let all_shown = seen.placeholders == 0;
        if !all_shown {
            m.last_placeholder = Some(seen.now);
        }
        if m.slow.is_none() && seen.velocity.abs() < SLOW && seen.now > released.0 {
            m.slow = Some(seen.now);
        }
        if m.stopped.is_none() && seen.velocity == 0.0 {
            m.stopped = Some((seen.now, seen.offset));
        }
        if all_shown && m.slow.is_some() && m.settled_after_slow.is_none() {
            m.settled_after_slow = Some(seen.now);
        }
        if all_shown && m.stopped.is_some() && m.settled_after_stop.is_none() {
            m.settled_after_stop = Some(seen.now);
        }
    }

    /// Ends the fling being measured; `server` is the server's counts now.
    fn finish(&mut self, server: (u64, u64)) {
        let Some(m) = self.current.take() else { return };
        let Some((released, from, velocity)) = m.released else {
            return;
        };
        let ms = |from: Instant, to: Instant| (to - from).as_secs_f64() * 1000.0;
        let (stopped, to) = m.stopped.unwrap_or((released, from));
        let slow = m.slow.unwrap_or(stopped);
        self.done.push(FlingReport {
            drag_speed: FLINGS[m.index],
            release_velocity: velocity,
            distance: to - from,
            coast_ms: ms(released, stopped),
            slow_after_ms: ms(released, slow),
            settle_ms: m.settled_after_stop.map(|at| ms(stopped, at)),
            settle_from_slow_ms: m.settled_after_slow.map(|at| ms(slow, at)),
            placeholder_row_frames: m.placeholders,
            last_placeholder_ms: m.last_placeholder.map_or(0.0, |at| ms(released, at)),
            requests: server.0.saturating_sub(m.server_at_press.0),
            bytes: server.1.saturating_sub(m.server_at_press.1),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fling_presses_drags_releases_coasts_and_rests() {
        let rect = Rect::from_min_max(pos2(0.0, 100.0), pos2(800.0, 900.0));
        let moving = ListSeen {
            rect,
            velocity: 100.0,
        };
        let still = ListSeen {
            rect,
            velocity: 0.0,
        };
        let mut driver = FlingDriver::new();
        let t0 = 100.0;
        assert!(driver.events(Some(still), t0).is_empty(), "first screen");
        let frame = 1.0 / 60.0;
        let mut t = t0 + START.as_secs_f64();
        for (index, speed) in FLINGS.iter().enumerate() {
            let hover = driver.events(Some(still), t);
            let [Event::PointerMoved(from)] = hover[..] else {
                panic!("{hover:?}")
            };
            t += frame;
            let press = driver.events(Some(still), t);
            assert!(
                matches!(press[..], [Event::PointerButton { pressed: true, pos, .. }] if pos == from)
            );
            let mut released = None;
            for _ in 0..20 {
                t += frame;
                let events = driver.events(Some(still), t);
                if let [
                    Event::PointerMoved(to),
                    Event::PointerButton { pressed: false, .. },
                ] = events[..]
                {
                    released = Some(to);
                    break;
                }
            }
            let to = released.expect("released within 20 frames");
            // A tenth of a second at the speed.
            assert!(
                (from.y - to.y - speed * 0.1).abs() < 1e-3,
                "{from:?} {to:?}"
            );
            assert_eq!(driver.phase(), Phase::Coast { index });
            t += frame;
            assert!(driver.events(Some(moving), t).is_empty());
            assert_eq!(driver.phase(), Phase::Coast { index });
            t += frame;
            driver.events(Some(still), t);
            assert!(matches!(driver.phase(), Phase::Rest { .. }));
            t += REST.as_secs_f64();
        }
        assert!(driver.events(Some(still), t).is_empty());
        assert!(driver.finished());
    }
}
