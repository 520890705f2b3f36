//! The UI side's level for iced: thumbnails made into `image::Handle`s
//! once, kept across views (a handle's id is what iced's renderer caches
//! its upload by, so a new handle per view would upload again and hold
//! both), under a byte budget with the least recently shown freed first
//! and never one of the rows in view: the crate's rows' images
//! (`front/row_images.rs`), with iced's handle as the image. A pass there
//! is a pass over the rows ([`super::Thumbnails::end_pass`] ends it).
//!
//! Used by [`super::Thumbnails`] on the UI thread only. A freed handle's
//! pixels are freed when iced's renderer stops drawing it (it trims what
//! a frame did not use); the thumbnail stays in the pipeline's cache and
//! comes back as a new handle when a row asks for it.

use std::sync::Arc;

use bytes::Bytes;
use iced_core::image::Handle;

use crate::front::kept::KeptStats;
use crate::front::row_images::ToolkitImage;
use crate::thumbnail::Thumbnail;

/// Counters of the handles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandleStats {
    /// Handles kept now.
    pub handles: usize,
    /// Their RGBA bytes.
    pub bytes: usize,
    /// The most bytes kept once the budget was applied (when a pass ends,
    /// or a thumbnail arrives between passes): more than the budget only
    /// when the rows of one pass need more.
    pub peak_bytes: usize,
    /// Handles made.
    pub made: u64,
    /// Handles freed to stay under the budget.
    pub evicted: u64,
}

impl HandleStats {
    /// The counters of `handles` handles kept, counted as `kept`.
    pub(super) fn of(handles: usize, kept: KeptStats) -> Self {
        HandleStats {
            handles,
            bytes: kept.bytes,
            peak_bytes: kept.peak_bytes,
            made: kept.inserted,
            evicted: kept.evicted,
        }
    }
}

/// A thumbnail's handle (its first frame, for an animation), sharing its
/// pixels, which are its size's RGBA.
impl ToolkitImage for Handle {
    fn from_thumbnail(thumbnail: &Thumbnail) -> Self {
        let pixels = Bytes::from_owner(Arc::clone(&thumbnail.pixels));
        Handle::from_rgba(thumbnail.width, thumbnail.height, pixels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::front::kept::KeptImages;
    use crate::front::row_images::{ImageKey, make};
    use crate::request::TargetSize;

    type Handles = KeptImages<ImageKey, Handle>;

    fn counted(handles: &Handles) -> HandleStats {
        HandleStats::of(handles.len(), handles.stats())
    }

    fn thumbnail(url: &str, side: u32) -> Thumbnail {
        Thumbnail {
            url: Arc::from(url),
            width: side,
            height: side,
            pixels: vec![0; (side * side * 4) as usize].into(),
            source_size: (side, side),
            animation: None,
        }
    }

    /// `key`'s handle, shown by a row: the pass opens with it.
    fn shown(handles: &mut Handles, key: &ImageKey) -> Option<Handle> {
        handles.open_pass();
        handles.show(key).cloned()
    }

    fn key(url: &str) -> ImageKey {
        (Arc::from(url), TargetSize::square(64))
    }

    #[test]
    fn the_least_recently_shown_handles_of_no_row_in_view_are_freed_first() {
        // Three 16 KiB thumbnails fit.
        let mut handles = Handles::new(3 * 16 * 1024);
        let a = make(&mut handles, key("a"), &thumbnail("a", 64)).unwrap();
        make(&mut handles, key("b"), &thumbnail("b", 64)).unwrap();
        make(&mut handles, key("c"), &thumbnail("c", 64)).unwrap();
        handles.close_pass();
        // The next pass shows a and c: b is the one to go.
        assert_eq!(shown(&mut handles, &key("a")).map(|h| h.id()), Some(a.id()));
        shown(&mut handles, &key("c"));
        make(&mut handles, key("d"), &thumbnail("d", 64)).unwrap();
        handles.close_pass();
        assert!(shown(&mut handles, &key("b")).is_none());
        let stats = counted(&handles);
        assert_eq!(
            (stats.handles, stats.bytes, stats.evicted, stats.made),
            (3, 3 * 16 * 1024, 1, 4)
        );
    }

    #[test]
    fn handles_of_rows_in_view_are_kept_over_the_budget_until_they_leave() {
        let mut handles = Handles::new(16 * 1024);
        // A pass shows two rows, which do not fit together.
        for url in ["a", "b"] {
            assert!(shown(&mut handles, &key(url)).is_none());
            make(&mut handles, key(url), &thumbnail(url, 64)).unwrap();
        }
        handles.close_pass();
        assert_eq!(counted(&handles).handles, 2);
        assert_eq!(counted(&handles).peak_bytes, 2 * 16 * 1024);
        // Between passes, arrivals are for the last pass's rows: kept.
        make(&mut handles, key("c"), &thumbnail("c", 64)).unwrap();
        assert_eq!(counted(&handles).handles, 3);
        // A pass that shows only c: a and b go.
        shown(&mut handles, &key("c"));
        handles.close_pass();
        assert_eq!(counted(&handles).handles, 1);
        assert!(shown(&mut handles, &key("c")).is_some());
        assert_eq!(counted(&handles).evicted, 2);
    }

    /// Regression: a pass whose first row was new freed, on its insert,
    /// the handles of the last pass's rows not yet asked for in this one,
    /// though they were: they stayed drawn, outside the budget's count.
    #[test]
    fn a_new_row_first_in_a_pass_frees_no_handle_of_a_row_later_in_it() {
        let mut handles = Handles::new(16 * 1024);
        // A pass shows a and b, over the budget together.
        let [a, b] = ["a", "b"].map(|url| {
            assert!(shown(&mut handles, &key(url)).is_none());
            make(&mut handles, key(url), &thumbnail(url, 64))
                .unwrap()
                .id()
        });
        handles.close_pass();
        // The next pass asks for z (its thumbnail decoded), then a and b.
        assert!(shown(&mut handles, &key("z")).is_none());
        make(&mut handles, key("z"), &thumbnail("z", 64)).unwrap();
        assert_eq!(shown(&mut handles, &key("a")).map(|h| h.id()), Some(a));
        assert_eq!(shown(&mut handles, &key("b")).map(|h| h.id()), Some(b));
        handles.close_pass();
        let stats = counted(&handles);
        assert_eq!((stats.handles, stats.evicted), (3, 0));
        assert_eq!(
            (stats.bytes, stats.peak_bytes),
            (3 * 16 * 1024, 3 * 16 * 1024)
        );
        // A pass of z alone frees a and b.
        shown(&mut handles, &key("z"));
        handles.close_pass();
        assert_eq!(
            (counted(&handles).handles, counted(&handles).evicted),
            (1, 2)
        );
    }

    #[test]
    fn a_handle_is_made_once_and_shares_the_thumbnails_pixels() {
        let mut handles = Handles::new(1 << 20);
        let thumbnail = thumbnail("a", 8);
        let first = make(&mut handles, key("a"), &thumbnail).unwrap();
        let again = make(&mut handles, key("a"), &thumbnail).unwrap();
        assert_eq!(first.id(), again.id());
        assert_eq!(counted(&handles).made, 1);
        let Handle::Rgba { pixels, .. } = first else {
            panic!("an RGBA handle");
        };
        assert_eq!(pixels.as_ptr(), thumbnail.pixels.as_ptr());
        handles.retain(|(url, _)| &**url != "a");
        assert_eq!((counted(&handles).handles, counted(&handles).bytes), (0, 0));
    }

    #[test]
    fn pixels_that_are_not_the_thumbnails_size_are_an_error() {
        let mut handles = Handles::new(1 << 20);
        let mut short = thumbnail("a", 8);
        short.pixels = vec![0; 10].into();
        let error = make(&mut handles, key("a"), &short).unwrap_err();
        assert!(matches!(error, Error::Decode { .. }), "{error}");
        let mut empty = thumbnail("b", 8);
        empty.width = 0;
        assert!(make(&mut handles, key("b"), &empty).is_err());
        assert_eq!(counted(&handles).handles, 0);
    }
}
