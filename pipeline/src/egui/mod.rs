//! thumbpipe for egui (cargo feature `egui`): `egui::Image::new(url)`
//! loads through the pipeline, and a row-keyed list helper for lists that
//! need more.
//!
//! Two front doors, one mechanism:
//!
//! - [`install`] registers thumbpipe as egui's loader for `http(s)://` URIs:
//!   after it, plain egui code (`egui::Image::new(url)`, `ui.image(url)`)
//!   loads thumbnails at the size they are drawn, cancels what is no longer
//!   drawn, and draws what is already decoded without a placeholder frame.
//! - [`ThumbnailList`] is keyed by the app's rows, for lists that refresh or
//!   that show each row's load state.
//!
//! Either follows a flung list's coast when given [`CoastWatch`]'s
//! prediction each pass (`follow_coast`): the rows where it will rest load
//! first, and rows it flies past faster than an image arrives do not load.
//! A photo grid is followed cell by cell ([`CoastWatch::observe_grid`]),
//! its cells cropped to fill ([`ThumbnailList::set_crop_to_fill`],
//! [`Cell::filled`]) or not.
//!
//! Both run on the UI thread and keep the levels in front of the pipeline's
//! cache, each answering within the pass:
//!
//! ```text
//! egui pass (UI thread)
//!   L1 textures        byte budget, least recently drawn evicted, GPU texture freed
//!   delivered pixels   waiting for the pass's upload budget
//!   L2 cache view      the load actor's decoded thumbnails, read under a lock
//!   request            the pipeline: fetch, decode, cache; a repaint when done
//! ```
//!
//! # Example
//!
//! ```no_run
//! struct App {
//!     urls: Vec<String>,
//! }
//!
//! impl eframe::App for App {
//!     fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
//!         egui::CentralPanel::default().show(ui, |ui| {
//!             for url in &self.urls {
//!                 ui.add(egui::Image::new(url).fit_to_exact_size(egui::vec2(64.0, 64.0)));
//!             }
//!         });
//!     }
//! }
//!
//! eframe::run_native("thumbnails", Default::default(), Box::new(|cc| {
//!     thumbpipe::egui::install(&cc.egui_ctx, thumbpipe::Config::default())?;
//!     Ok(Box::new(App { urls: vec!["https://example.com/a.jpg".into()] }))
//! }))
//! .ok();
//! ```
//!
//! # Layout
//!
//! - `config`: [`EguiConfig`], the pipeline's settings and the UI side's.
//! - `uri`: the loaders [`install`] registers, and their handle [`Loader`].
//! - `list`: [`ThumbnailList`], the row-keyed helper.
//! - `front`: what both share — what a row draws, level by level, on the
//!   crate's toolkit-free rows and coasts (`crate::front`).
//! - `textures`: L1, textures under a byte budget and a per-pass upload budget.
//! - `size`: egui's size hints to [`crate::TargetSize`] steps.
//! - `coast`: [`CoastWatch`], a `ScrollArea`'s kinetic coast as a
//!   [`crate::CoastPrediction`]: the rows where it will rest are loaded
//!   first, the rows it flies past not at all.

mod coast;
mod config;
mod front;
mod list;
mod size;
mod textures;
mod uri;

pub use crate::front::prefetch::PrefetchWindow;
pub use coast::CoastWatch;
pub use config::EguiConfig;
pub use list::{RowThumbnail, ThumbnailList};
pub use size::{Cell, cover_size, target_size};
pub use textures::TextureStats;
pub use uri::{Loader, install, install_with};
