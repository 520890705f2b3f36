//! Prefetch: which rows to load ahead of need — those just beyond the
//! visible range, in the direction the list last moved (Glide's
//! `ListPreloader`).
//!
//! Plain data, kept by the app (or egui's `ThumbnailList`) and updated once
//! per pass with the visible range; it holds no request itself. Both doors
//! export it: `thumbpipe::egui::PrefetchWindow`, `thumbpipe::iced::PrefetchWindow`.

use std::ops::Range;

/// The rows to prefetch, one screen (by default) beyond the visible rows in
/// the direction of scrolling. A list at rest keeps the last direction.
///
/// ```
/// # #[cfg(feature = "egui")]
/// use thumbpipe::egui::PrefetchWindow;
/// # #[cfg(all(feature = "iced", not(feature = "egui")))]
/// # use thumbpipe::iced::PrefetchWindow;
/// let mut window = PrefetchWindow::default();
/// assert_eq!(window.rows(0..10, 200), 10..20);
/// assert_eq!(window.rows(5..15, 200), 15..25); // scrolling down
/// assert_eq!(window.rows(3..13, 200), 0..3); // scrolling up, clamped at the top
/// ```
#[derive(Clone, Debug)]
pub struct PrefetchWindow {
    screens: f32,
    last: Option<Range<usize>>,
    upward: bool,
}

impl Default for PrefetchWindow {
    /// One screen ahead.
    fn default() -> Self {
        Self::screens_ahead(1.0)
    }
}

impl PrefetchWindow {
    /// A window `screens` screens long (a screen being the number of rows
    /// visible); a negative or NaN length prefetches nothing.
    pub fn screens_ahead(screens: f32) -> Self {
        Self {
            screens: if screens.is_nan() {
                0.0
            } else {
                screens.max(0.0)
            },
            last: None,
            upward: false,
        }
    }

    /// The rows to prefetch this pass, given the `visible` rows of a list
    /// of `total` rows. Call it once per pass: the direction is learnt from
    /// the previous call.
    pub fn rows(&mut self, visible: Range<usize>, total: usize) -> Range<usize> {
        if let Some(last) = &self.last {
            if visible.start < last.start {
                self.upward = true;
            } else if visible.start > last.start {
                self.upward = false;
            }
        }
        let length = (visible.len() as f32 * self.screens).ceil() as usize;
        self.last = Some(visible.clone());
        let visible = visible.start.min(total)..visible.end.min(total);
        if self.upward {
            visible.start.saturating_sub(length)..visible.start
        } else {
            visible.end..visible.end.saturating_add(length).min(total)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_follows_the_scroll_direction_and_keeps_it_at_rest() {
        let mut window = PrefetchWindow::default();
        assert_eq!(window.rows(20..30, 100), 30..40);
        assert_eq!(window.rows(15..25, 100), 5..15, "up");
        assert_eq!(window.rows(15..25, 100), 5..15, "at rest: still up");
        assert_eq!(window.rows(16..26, 100), 26..36, "down again");
    }

    #[test]
    fn the_window_is_clamped_to_the_list_and_scales_with_its_length() {
        let mut window = PrefetchWindow::screens_ahead(2.0);
        assert_eq!(window.rows(85..95, 100), 95..100);
        assert_eq!(window.rows(0..0, 100), 0..0);
        let mut none = PrefetchWindow::screens_ahead(f32::NAN);
        assert_eq!(none.rows(0..10, 100), 10..10);
        let mut half = PrefetchWindow::screens_ahead(0.5);
        assert_eq!(half.rows(0..10, 100), 10..15);
        assert_eq!(window.rows(200..210, 100), 100..100);
    }
}
