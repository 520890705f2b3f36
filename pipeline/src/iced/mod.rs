//! thumbpipe for iced (cargo feature `iced`): a list's thumbnails as
//! `image::Handle`s, in iced's own architecture — state, messages,
//! `update`, `view`, a subscription.
//!
//! - [`Thumbnails`] is the state an app keeps, keyed by its rows: the app
//!   tells it which rows are in view ([`Thumbnails::show_rows`], with
//!   [`rows_in_view`]) when it starts, and in `update` when the list
//!   scrolls (a `scrollable`'s `on_scroll` viewport) or the window is
//!   resized; rows that left are cancelled, and a thumbnail already
//!   decoded becomes the row's handle at once, so the next `view` draws it
//!   without a placeholder. iced sends `on_scroll` when the list scrolls
//!   and, for a list taller than its window, while it makes the first
//!   frame; never for a list that fits its window. The first screen is
//!   the app's to ask for, with the window's height as it opens.
//! - A [`ScrollWatch`] told the list's offsets reads how fast it scrolls;
//!   [`Thumbnails::follow_scroll`] with it, first in each pass, does not
//!   ask for the rows a fast scroll flies past (they are asked for once
//!   the list is still), and, for a momentum coast, asks first for the
//!   rows where it will rest.
//! - [`Thumbnails::prefetch`], for the rows a [`PrefetchWindow`] gives (a
//!   screen beyond the view, in the direction it moves), asks for them
//!   ahead of need: a row scrolled into view has been loading for a while,
//!   instead of being asked for as it comes and dropped in flight as it
//!   leaves.
//! - [`Thumbnails::subscription`] produces [`Ready`] when thumbnails
//!   arrive, woken by the pipeline (no polling); `update` passes it to
//!   [`Thumbnails::update`], which makes the rows' handles.
//! - In `view`, [`Thumbnails::get`] says what a row shows: its handle (the
//!   same one every view, so iced uploads it once), loading, or the error;
//!   the app draws each as it likes. A thumbnail already in the pipeline's
//!   cache is shown before any `update` takes it: the first screen asked
//!   for at start-up and found in the shared thumbnails while the window
//!   opened is in the first view.
//!
//! Handles are kept under a byte budget ([`IcedConfig::max_handle_bytes`]),
//! the least recently shown freed first; the rows in view are never freed.
//! A freed handle's pixels go when iced's renderer stops drawing it.
//!
//! Everything else is the pipeline's: crop-to-fill ([`crate::Fit::Cover`]
//! in the [`TargetSize`]), the disk cache, headers, `file://` URLs and the
//! shared thumbnails, set in [`IcedConfig::pipeline`]. An animation shows
//! its first frame.
//!
//! Built on iced's light crates (`iced_core` and `iced_futures` 0.14, no
//! renderer, no window).
//!
//! # Example
//!
//! ```no_run
//! use iced_futures::Subscription;
//! use thumbpipe::iced::{Ready, RowThumbnail, ScrollWatch, Thumbnails, rows_in_view};
//! use thumbpipe::{ListGeometry, TargetSize};
//!
//! #[derive(Clone, Debug)]
//! enum Message {
//!     Thumbnails(Ready),
//!     /// From the list's `scrollable(..).on_scroll(..)`: its viewport.
//!     Scrolled { top: f32, height: f32 },
//!     /// From `iced::window::resize_events()`: the window's new height.
//!     Resized { height: f32 },
//! }
//!
//! struct App {
//!     thumbnails: Thumbnails<usize>,
//!     scrolls: ScrollWatch,
//!     urls: Vec<String>,
//!     top: f32,
//!     height: f32,
//! }
//!
//! const ROW_HEIGHT: f32 = 72.0;
//! /// The window's height as it opens (iced's default window is 1024x768).
//! const WINDOW_HEIGHT: f32 = 768.0;
//!
//! impl App {
//!     fn new(urls: Vec<String>) -> Result<Self, thumbpipe::BuildError> {
//!         let mut app = App {
//!             thumbnails: Thumbnails::new(thumbpipe::Config::default())?,
//!             scrolls: ScrollWatch::default(),
//!             urls,
//!             top: 0.0,
//!             height: WINDOW_HEIGHT,
//!         };
//!         // The first screen: no scroll message comes for it.
//!         app.show_rows();
//!         Ok(app)
//!     }
//!
//!     fn update(&mut self, message: Message) {
//!         match message {
//!             Message::Thumbnails(ready) => return self.thumbnails.update(ready),
//!             Message::Scrolled { top, height } => {
//!                 (self.top, self.height) = (top, height);
//!                 let list = ListGeometry::new(ROW_HEIGHT, self.urls.len(), height);
//!                 self.scrolls.observe(top, list);
//!             }
//!             Message::Resized { height } => self.height = height,
//!         }
//!         self.show_rows();
//!     }
//!
//!     /// Tells thumbpipe where a fast scroll will rest, and which rows are
//!     /// in view.
//!     fn show_rows(&mut self) {
//!         let (urls, target) = (&self.urls, TargetSize::square(64));
//!         self.thumbnails
//!             .follow_scroll(&self.scrolls, target, |row| (row, &urls[row]));
//!         let rows = rows_in_view(self.top, self.height, ROW_HEIGHT, urls.len());
//!         self.thumbnails.show_rows(rows.map(|row| (row, &urls[row])), target);
//!     }
//!
//!     fn subscription(&self) -> Subscription<Message> {
//!         // With the full `iced` crate, batch the window's resizes in too,
//!         // and its size as it opens (a window manager may choose another
//!         // height than WINDOW_HEIGHT, and a list that fits gets no scroll):
//!         // Subscription::batch([
//!         //     self.thumbnails.subscription().map(Message::Thumbnails),
//!         //     iced::window::resize_events()
//!         //         .map(|(_, size)| Message::Resized { height: size.height }),
//!         //     iced::event::listen_with(|event, _, _| match event {
//!         //         iced::Event::Window(iced::window::Event::Opened { size, .. }) => {
//!         //             Some(Message::Resized { height: size.height })
//!         //         }
//!         //         _ => None,
//!         //     }),
//!         // ])
//!         self.thumbnails.subscription().map(Message::Thumbnails)
//!     }
//!
//!     // In `view`, for each row:
//!     fn row_image(&self, row: usize) -> Option<iced_core::image::Handle> {
//!         match self.thumbnails.get(&row) {
//!             RowThumbnail::Shown(handle) => Some(handle), // `image(handle)`
//!             RowThumbnail::Loading | RowThumbnail::Failed(_) | RowThumbnail::NotShown => None,
//!         }
//!     }
//! }
//!
//! let app = App::new((0..1000).map(|n| format!("https://example.com/{n}.jpg")).collect())?;
//! # Ok::<(), thumbpipe::BuildError>(())
//! ```
//!
//! # Layout
//!
//! An adapter of the crate's UI-side layer (`crate::front`: the rows,
//! their outcomes, the kept images and the wakes, shared with egui; the
//! rows' images of `front/row_images.rs`) to iced's handle and
//! subscription:
//!
//! - `mod.rs`: [`Thumbnails`] and what a row shows.
//! - `config`: [`IcedConfig`].
//! - `handles`: a thumbnail's handle, and the handles' counters.
//! - `scrolling`: what a scroll asks for (a coast followed, rows ahead
//!   prefetched).

mod config;
mod handles;
mod scrolling;

use std::hash::Hash;

use futures::StreamExt as _;
use futures::stream::BoxStream;
use iced_core::image::Handle;
use iced_futures::Subscription;

use crate::error::{BuildError, Error};
use crate::front::row_images::{RowImage, RowImages};
use crate::front::wake::Wakeups;
use crate::front::{CoastPolicy, ListFront};
use crate::metrics::Stats;
use crate::pipeline::{Pipeline, PipelineBuilder};
use crate::request::{Priority, TargetSize};

pub use self::config::IcedConfig;
pub use crate::front::prefetch::PrefetchWindow;
pub use crate::front::scroll::{ScrollWatch, rows_in_view};
pub use handles::HandleStats;

/// The message [`Thumbnails::subscription`] produces: thumbnails arrived;
/// pass it to [`Thumbnails::update`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ready;

/// What a row shows.
#[derive(Clone, Debug)]
pub enum RowThumbnail {
    /// Its image: draw it with iced's `image` widget. The same handle every
    /// `view` until the row's URL or size changes.
    Shown(Handle),
    /// Its image is loading.
    Loading,
    /// Why its image could not be loaded.
    Failed(Error),
    /// The row was not shown in the last pass ([`Thumbnails::show_rows`]).
    NotShown,
}

/// Thumbnails for the rows of an iced list or grid, keyed by row: one live
/// request per row (a new URL cancels the old one), rows not shown during
/// a pass cancelled at its end, and a thumbnail already decoded shown by
/// the first `view` that draws its row. See the
/// [module](self) for an example.
///
/// Dropping it cancels every load, ends its subscription and joins its
/// pipeline's threads.
pub struct Thumbnails<K> {
    rows: RowImages<K, Handle>,
    wakeups: Wakeups,
}

impl<K: Hash + Eq + Clone> Thumbnails<K> {
    /// Thumbnails loaded by a pipeline that runs with `config`.
    pub fn new(config: impl Into<IcedConfig>) -> Result<Self, BuildError> {
        Self::with_builder(config, Pipeline::builder())
    }

    /// [`Thumbnails::new`], with the pipeline built by `builder`: a
    /// fetcher, decoder or tokio runtime of the app's own. The settings are
    /// `config`'s, whose `pipeline` replaces a config given to
    /// [`PipelineBuilder::config`].
    pub fn with_builder(
        config: impl Into<IcedConfig>,
        builder: PipelineBuilder<K>,
    ) -> Result<Self, BuildError> {
        let config = config.into();
        crate::error::at_least_one(&[("max_handle_bytes", config.max_handle_bytes as u64)])?;
        let wakeups = Wakeups::new();
        let waker = wakeups.clone();
        let pipeline = builder.config(config.pipeline).build()?;
        let list = ListFront::over(pipeline, CoastPolicy::FOLLOWED, move || waker.wake());
        let rows = RowImages::new(list, config.max_handle_bytes);
        Ok(Self { rows, wakeups })
    }

    /// The subscription that says when thumbnails arrived: map it to a
    /// message of the app's and pass it to [`Thumbnails::update`]. One per
    /// `Thumbnails`; a burst of arrivals is one message.
    pub fn subscription(&self) -> Subscription<Ready> {
        Subscription::run_with(self.wakeups.clone(), ready_stream)
    }

    /// Makes the handles of the thumbnails that arrived. Never blocks.
    /// Once a list that flew past rows ([`Thumbnails::follow_coast`]) has
    /// been still for a moment, also makes a pass of the rows in view, as
    /// [`Thumbnails::show_rows`] would: no scroll message comes for the
    /// rows where it stopped, and what the coast asked for elsewhere is
    /// cancelled.
    pub fn update(&mut self, _ready: Ready) {
        self.rows.update();
    }

    /// Asks for `row`'s thumbnail of `url`, fitted in (or, with
    /// [`crate::Fit::Cover`], filling) `target`, at `priority`. A
    /// thumbnail already decoded is the row's at once. Call it in `update`
    /// for every row in view, and [`Thumbnails::end_pass`] after them; or
    /// use [`Thumbnails::show_rows`], which does both. Never blocks.
    pub fn request(&mut self, row: K, url: &str, target: TargetSize, priority: Priority) {
        self.rows.request(row, url, target, priority);
    }

    /// Ends a pass: rows not asked for since the last one are cancelled
    /// and forgotten, and their handles are kept only as far as the budget
    /// allows; a row whose request failed at once (a URL that does not
    /// parse) shows its error from this pass on.
    pub fn end_pass(&mut self) {
        self.rows.end_pass();
    }

    /// A pass over the rows in view: each asked for at
    /// [`Priority::Visible`] with `target`, then [`Thumbnails::end_pass`].
    /// Call it from `update` whenever the rows in view change (a scroll, a
    /// resize, new data): rows that left are cancelled, and the rows where
    /// the list is now load first.
    pub fn show_rows<S: AsRef<str>>(
        &mut self,
        rows: impl IntoIterator<Item = (K, S)>,
        target: TargetSize,
    ) {
        for (row, url) in rows {
            self.rows
                .request(row, url.as_ref(), target, Priority::Visible);
        }
        self.rows.end_pass();
    }

    /// What `row` shows. Never blocks; for `view`. A thumbnail in the
    /// pipeline's cache that no `update` has taken yet (one that arrived
    /// since, or read while the window opened) is shown already, with the
    /// handle every later view draws.
    pub fn get(&self, row: &K) -> RowThumbnail {
        match self.rows.get(row) {
            RowImage::Shown(handle) => RowThumbnail::Shown(handle),
            RowImage::Loading => RowThumbnail::Loading,
            RowImage::Failed(error) => RowThumbnail::Failed(error.clone()),
            RowImage::NotShown => RowThumbnail::NotShown,
        }
    }

    /// Forgets `url` at every level: its handles, its cache entries, its
    /// loads; rows showing it load it afresh when next asked for.
    pub fn forget(&mut self, url: &str) {
        self.rows.forget(url);
    }

    /// Forgets every image at every level.
    pub fn forget_all(&mut self) {
        self.rows.forget_all();
    }

    /// The pipeline's counters and gauges now.
    pub fn stats(&self) -> Stats {
        self.rows.pipeline().stats()
    }

    /// The handles' counters now.
    pub fn handle_stats(&self) -> HandleStats {
        let (handles, kept) = self.rows.kept_stats();
        HandleStats::of(handles, kept)
    }

    /// The pipeline underneath, for what this type does not wrap.
    pub fn pipeline(&self) -> &Pipeline<K> {
        self.rows.pipeline()
    }
}

/// The subscription's stream, made when iced starts it.
fn ready_stream(wakeups: &Wakeups) -> BoxStream<'static, Ready> {
    wakeups.stream().map(|()| Ready).boxed()
}

impl<K> Drop for Thumbnails<K> {
    fn drop(&mut self) {
        self.wakeups.close();
    }
}
