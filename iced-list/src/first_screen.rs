//! `--first-screen`: when every cell of the first screen first showed its
//! image (or its error), in views and in milliseconds from start-up, and
//! whether the first frame iced drew showed them all. Owned by the list,
//! told of each view; a probe widget in each view says when it is first
//! drawn, and whether that view was whole. Each is said once, on stderr,
//! by the list.
//!
//! iced calls `view` after each message as well as for a frame, builds its
//! first view before the window opens, and may build another while it
//! handles a frame, before drawing it: a view is not a frame, and the time
//! a frame started does not say which view it drew. The probe does: it is
//! drawn as part of the view that made it.

use std::cell::Cell;
use std::time::{Duration, Instant};

use iced::{Element, Length, Rectangle, Size};
use iced_core::layout::{self, Layout};
use iced_core::widget::{Tree, Widget};
use iced_core::{mouse, renderer};

pub struct FirstScreen {
    started: Instant,
    /// Views built while a cell in view waited; `None` once every one
    /// has shown.
    views: Cell<Option<u32>>,
    /// When a view was first drawn, and whether every cell in it showed.
    drawn: Cell<Option<(Instant, bool)>>,
    /// Whether the first frame has been said.
    said: bool,
}

/// The first frame drawn, against the first screen.
#[derive(Debug, PartialEq)]
pub struct FirstFrame {
    /// When, after start-up.
    pub at: Duration,
    /// Whether every cell in view showed its image in it.
    pub whole: bool,
}

impl FirstScreen {
    pub fn new(started: Instant) -> Self {
        Self {
            started,
            views: Cell::new(Some(0)),
            drawn: Cell::new(None),
            said: false,
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
        Some((now - self.started, view))
    }

    /// The probe to put in a view that is `whole` or not: drawn, it notes
    /// the first frame.
    pub fn probe<'a, Message: 'a>(&'a self, whole: bool) -> Element<'a, Message> {
        Element::new(Probe { watch: self, whole })
    }

    /// A view that was `whole` or not, drawn `at`: the first is kept.
    fn drawn(&self, whole: bool, at: Instant) {
        if self.drawn.get().is_none() {
            self.drawn.set(Some((at, whole)));
        }
    }

    /// Whether the first frame is still to be said: the list listens for
    /// frames until then.
    pub fn awaits_frame(&self) -> bool {
        !self.said
    }

    /// After a frame: the first frame drawn, once it has been, and only
    /// once.
    pub fn first_frame(&mut self) -> Option<FirstFrame> {
        if self.said {
            return None;
        }
        let (at, whole) = self.drawn.get()?;
        self.said = true;
        Some(FirstFrame {
            at: at.saturating_duration_since(self.started),
            whole,
        })
    }
}

impl std::fmt::Display for FirstFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.at.as_secs_f64() * 1000.0;
        let screen = if self.whole {
            "with the whole first screen"
        } else {
            "without the whole first screen"
        };
        write!(f, "first frame drawn {ms:.1} ms after start-up, {screen}")
    }
}

/// A pixel that draws nothing, but tells its [`FirstScreen`] when the view
/// it was built in is drawn.
struct Probe<'a> {
    watch: &'a FirstScreen,
    whole: bool,
}

impl<Message, Theme, Renderer: renderer::Renderer> Widget<Message, Theme, Renderer> for Probe<'_> {
    fn size(&self) -> Size<Length> {
        // A pixel rather than none: containers draw only the children
        // whose bounds meet the viewport.
        Size::new(Length::Fixed(1.0), Length::Fixed(1.0))
    }

    fn layout(
        &mut self,
        _tree: &mut Tree,
        _renderer: &Renderer,
        _limits: &layout::Limits,
    ) -> layout::Node {
        layout::Node::new(Size::new(1.0, 1.0))
    }

    fn draw(
        &self,
        _tree: &Tree,
        _renderer: &mut Renderer,
        _theme: &Theme,
        _style: &renderer::Style,
        _layout: Layout<'_>,
        _cursor: mouse::Cursor,
        _viewport: &Rectangle,
    ) {
        self.watch.drawn(self.whole, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn views_are_counted_until_the_screen_is_whole_and_said_once() {
        let started = Instant::now();
        let watch = FirstScreen::new(started);
        assert_eq!(watch.viewed(false, started + MS), None);
        assert_eq!(watch.viewed(false, started + 2 * MS), None);
        assert_eq!(watch.viewed(true, started + 5 * MS), Some((5 * MS, 2)));
        // A later view, whole or not, says nothing.
        assert_eq!(watch.viewed(true, started + 6 * MS), None);
        assert_eq!(watch.viewed(false, started + 7 * MS), None);
    }

    #[test]
    fn the_first_frame_is_the_first_view_drawn_and_is_said_once() {
        let started = Instant::now();
        let mut watch = FirstScreen::new(started);
        // A frame before any view was drawn says nothing yet.
        assert!(watch.awaits_frame());
        assert_eq!(watch.first_frame(), None);
        assert!(watch.awaits_frame());
        watch.drawn(false, started + 3 * MS);
        // A later draw of a whole view does not change the first.
        watch.drawn(true, started + 4 * MS);
        assert_eq!(
            watch.first_frame(),
            Some(FirstFrame {
                at: 3 * MS,
                whole: false
            })
        );
        assert!(!watch.awaits_frame());
        assert_eq!(watch.first_frame(), None);
    }
}
