//! The loaders `iced-report` compares, each asked each frame for the rows
//! in view as its toolkit's app asks it: the gallery pattern iced's
//! example teaches, `thumbpipe::iced` with and without a scroll watch, and
//! `thumbpipe::egui`'s list helper drawn in a windowless egui context.
//!
//! Made by `run` for one mode in its own process; dropped when the run
//! ends, which cancels what `thumbpipe`'s loaders still had under way.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use iced_core::image::Handle;
use thumbpipe::iced::{Ready, RowThumbnail, ScrollWatch, Thumbnails};
use thumbpipe::{ListGeometry, TargetSize};

use super::{ROW_HEIGHT, VISIBLE};

/// What each loader is asked each frame, and tells.
pub(super) trait Loader {
    /// The rows in view, the list scrolled to `top`; `url_of` names any
    /// row's image.
    fn show(&mut self, top: f32, rows: &[(usize, String)], url_of: &dyn Fn(usize) -> String);
    /// The picture id of the image `row` (showing `url`) shows, if it
    /// shows one.
    fn shown(&self, row: usize, url: &str) -> Option<u32>;
    fn busy(&self) -> bool;
    fn handles(&self) -> usize;
    fn loads(&self) -> usize;
}

/// The gallery pattern: each row's image fetched when it first shows,
/// decoded whole on the blocking pool, kept by URL; nothing cancelled.
pub(super) struct Gallery {
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) client: reqwest::Client,
    pub(super) asked: HashSet<String>,
    pub(super) images: HashMap<String, Handle>,
    pub(super) sender: std::sync::mpsc::Sender<(String, Handle)>,
    pub(super) receiver: std::sync::mpsc::Receiver<(String, Handle)>,
    pub(super) unfinished: Arc<AtomicUsize>,
}

impl Loader for Gallery {
    fn show(&mut self, _top: f32, rows: &[(usize, String)], _url_of: &dyn Fn(usize) -> String) {
        while let Ok((url, handle)) = self.receiver.try_recv() {
            self.images.insert(url, handle);
        }
        for (_, url) in rows {
            if !self.asked.insert(url.clone()) {
                continue;
            }
            let (client, url, sender) = (self.client.clone(), url.clone(), self.sender.clone());
            let unfinished = Arc::clone(&self.unfinished);
            unfinished.fetch_add(1, Ordering::SeqCst);
            self.runtime.spawn(async move {
                if let Ok(response) = client.get(&url).send().await
                    && let Ok(bytes) = response.bytes().await
                {
                    let decoded = tokio::task::spawn_blocking(move || {
                        image::load_from_memory(&bytes).map(|image| image.to_rgba8())
                    })
                    .await;
                    if let Ok(Ok(rgba)) = decoded {
                        let (width, height) = rgba.dimensions();
                        let _ =
                            sender.send((url, Handle::from_rgba(width, height, rgba.into_raw())));
                    }
                }
                unfinished.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }

    fn shown(&self, _row: usize, url: &str) -> Option<u32> {
        id_of(self.images.get(url)?)
    }

    fn busy(&self) -> bool {
        self.unfinished.load(Ordering::SeqCst) > 0
    }

    fn handles(&self) -> usize {
        self.images.len()
    }

    fn loads(&self) -> usize {
        self.images.len()
    }
}

/// `thumbpipe::iced` as an app keeps it: its thumbnails, and a watch on
/// the list's scrolls (or none).
pub(super) struct Piped {
    pub(super) thumbnails: Thumbnails<usize>,
    pub(super) scrolls: Option<ScrollWatch>,
    pub(super) rows: usize,
    pub(super) last_top: Option<f32>,
}

impl Loader for Piped {
    fn show(&mut self, top: f32, rows: &[(usize, String)], url_of: &dyn Fn(usize) -> String) {
        let target = TargetSize::square(64);
        // As the app's `update` does on each `Ready`, and on each scroll:
        // `on_scroll` comes only when the list moves.
        self.thumbnails.update(Ready);
        if let Some(scrolls) = &mut self.scrolls {
            if self.last_top != Some(top) {
                let list = ListGeometry::new(ROW_HEIGHT, self.rows, VISIBLE as f32 * ROW_HEIGHT);
                scrolls.observe(top, list);
            }
            self.thumbnails
                .follow_scroll(scrolls, target, |row| (row, url_of(row)));
        }
        self.last_top = Some(top);
        self.thumbnails
            .show_rows(rows.iter().map(|(row, url)| (*row, url)), target);
    }

    fn shown(&self, row: usize, _url: &str) -> Option<u32> {
        match self.thumbnails.get(&row) {
            RowThumbnail::Shown(handle) => id_of(&handle),
            _ => None,
        }
    }

    fn busy(&self) -> bool {
        loading(&self.thumbnails.stats())
    }

    fn handles(&self) -> usize {
        self.thumbnails.handle_stats().handles
    }

    fn loads(&self) -> usize {
        self.thumbnails.stats().decodes_completed as usize
    }
}

/// `thumbpipe::egui`'s list helper as an egui app draws it, in a context
/// without a window: each frame, every row in view shown, then the pass
/// ended. The script sets the list's offset frame by frame rather than
/// flinging it, so egui has no kinetic coast for a `CoastWatch` to read,
/// as with a scroll bar dragged or a wheel turned: every row in view is
/// asked for.
pub(super) struct EguiList {
    ctx: egui::Context,
    list: thumbpipe::egui::ThumbnailList<usize>,
    /// The picture id each row in view drew in the last frame.
    drawn: HashMap<usize, u32>,
    frames: u32,
}

impl EguiList {
    pub(super) fn new() -> anyhow::Result<Self> {
        let ctx = egui::Context::default();
        let list = thumbpipe::egui::ThumbnailList::new(&ctx, thumbpipe::Config::default())?;
        Ok(Self {
            ctx,
            list,
            drawn: HashMap::new(),
            frames: 0,
        })
    }
}

impl Loader for EguiList {
    fn show(&mut self, _top: f32, rows: &[(usize, String)], _url_of: &dyn Fn(usize) -> String) {
        let input = egui::RawInput {
            time: Some(f64::from(self.frames) / 60.0),
            ..egui::RawInput::default()
        };
        self.frames += 1;
        let (list, drawn) = (&mut self.list, &mut self.drawn);
        drawn.clear();
        let _ = self.ctx.run_ui(input, |ui| {
            for (row, url) in rows {
                let cell = egui::vec2(64.0, 64.0);
                if let thumbpipe::egui::RowThumbnail::Shown(_, thumbnail) =
                    list.show(ui, *row, url, cell).1
                {
                    let (width, height) = (thumbnail.width, thumbnail.height);
                    if let Some(id) = fixture_server::decode_id(&thumbnail.pixels, width, height) {
                        drawn.insert(*row, id);
                    }
                }
            }
            list.end_pass();
        });
    }

    fn shown(&self, row: usize, _url: &str) -> Option<u32> {
        self.drawn.get(&row).copied()
    }

    fn busy(&self) -> bool {
        loading(&self.list.stats())
    }

    fn handles(&self) -> usize {
        self.list.texture_stats().textures
    }

    fn loads(&self) -> usize {
        self.list.stats().decodes_completed as usize
    }
}

/// Whether a thumbpipe loader with these counts has loads under way.
fn loading(stats: &thumbpipe::Stats) -> bool {
    stats.in_flight + stats.queued + stats.decoding > 0
}

/// The picture id a handle's pixels carry.
fn id_of(handle: &Handle) -> Option<u32> {
    match handle {
        Handle::Rgba {
            width,
            height,
            pixels,
            ..
        } => fixture_server::decode_id(pixels, *width, *height),
        _ => None,
    }
}
