//! The list: a virtualised `ScrollArea` of rows, each a thumbnail with its
//! image id and load state (`--layout list`), or a grid of thumbnail cells
//! filling the window's width (`--layout grid`, and a `--folder`'s images,
//! one a cell); both watched for coasts and drawn through the mode's
//! loader.
//!
//! Drawn on the UI thread every frame, after the top bar.

use std::time::Instant;

use super::{Demo, EarlyAsk, Layout, Mode, ROW_HEIGHT};
use crate::fling::ListSeen;
use crate::loaders::{RowState, THUMB_SIDE};
use crate::measure::Measurements;

impl Demo {
    /// Images side by side in a row of `width` points: 1 in a list, as
    /// many cells as fit in a grid.
    fn columns(&self, width: f32, spacing: &egui::style::Spacing) -> usize {
        match self.layout {
            Layout::List => 1,
            Layout::Grid => {
                // The panel's margins and the scroll bar.
                let width = width - 16.0 - spacing.scroll.allocated_width();
                ((width + spacing.item_spacing.x) / (THUMB_SIDE + spacing.item_spacing.x))
                    .floor()
                    .max(1.0) as usize
            }
        }
    }

    /// Asks for the first screen's images before the first frame, before
    /// there is a window even, as an app that knows what it will show can:
    /// in `pipeline` mode, a pipeline is built and asked for the cells of
    /// a `screen` of that many points (at one pixel a point), as the grid
    /// will lay them out, and a row more; the mode's list is put over it
    /// (`ThumbnailList::with_pipeline`) and draws in its first frame what
    /// loaded meanwhile. What it reads is measured from here; its threads
    /// and memory from the first frame (the window's are not the run's),
    /// less what building the pipeline here brought.
    pub fn ask_first_screen(&mut self, screen: egui::Vec2) {
        if self.mode != Mode::Pipeline || self.loader.is_some() {
            return;
        }
        self.server.reset_stats();
        self.measurements = Measurements::start();
        let mut pipeline = match thumbpipe::Pipeline::new(self.pipeline_config().pipeline) {
            Ok(pipeline) => pipeline,
            Err(error) => {
                self.error = Some(format!("{error:#}"));
                return;
            }
        };
        let spacing = egui::style::Spacing::default();
        let columns = self.columns(screen.x, &spacing);
        let rows = (screen.y / (ROW_HEIGHT + spacing.item_spacing.y)).ceil() as usize + 1;
        let items = self.items(columns);
        let (base, urls) = (self.server.base_url(), self.urls.as_deref());
        let target = thumbpipe::egui::target_size(egui::vec2(THUMB_SIDE, THUMB_SIDE), 1.0);
        for item in 0..(rows * columns).min(items) {
            let url = url_of(base, urls, self.image_id(item, items), self.animated);
            pipeline.request(item, &url, target, thumbpipe::Priority::Visible);
        }
        let built = Measurements::start();
        self.early = Some(EarlyAsk {
            pipeline,
            threads: built
                .baseline_threads
                .saturating_sub(self.measurements.baseline_threads),
            rss_mb: (built.rss_start_mb - self.measurements.rss_start_mb).max(0.0),
        });
        self.asked_first = Some(Instant::now());
    }

    /// The images a grid of `columns` shows: a folder's, one a cell, in as
    /// many rows as they need; otherwise every cell of the rows.
    fn items(&mut self, columns: usize) -> usize {
        match (&self.urls, self.folder) {
            (Some(urls), true) => {
                self.rows = urls.len().div_ceil(columns).max(1);
                urls.len()
            }
            _ => self.rows * columns,
        }
    }

    /// Draws the list; returns what each visible image showed, and the
    /// list's offset.
    pub(super) fn list(&mut self, ui: &mut egui::Ui, offset: Option<f32>) -> (Vec<RowState>, f32) {
        let columns = self.columns(ui.available_width(), ui.spacing());
        if self.columns_seen.replace(columns) != Some(columns) {
            // A coast predicted for other columns would name cells past
            // this pass's: no prediction until the grid is seen again.
            self.coast_watch = thumbpipe::egui::CoastWatch::new();
        }
        let items = self.items(columns);
        let ids: Vec<u32> = (0..items).map(|item| self.image_id(item, items)).collect();
        let base = self.server.base_url().to_owned();
        let urls = self.urls.clone();
        let animated = self.animated;
        let (layout, rows) = (self.layout, self.rows);
        let Some(loader) = self.loader.as_mut() else {
            return (Vec::new(), 0.0);
        };
        let measurements = &mut self.measurements;
        let watch = &mut self.coast_watch;
        let followed = &mut self.coast;
        let mut seen = None;
        let mut states = Vec::new();
        egui::CentralPanel::default().show(ui, |ui| {
            // Dragged with the mouse too, not only on a touch screen: a
            // flick of the mouse flings the list.
            let mut area = egui::ScrollArea::vertical()
                .auto_shrink(false)
                .scroll_source(egui::scroll_area::ScrollSource::ALL);
            if let Some(offset) = offset {
                area = area.vertical_scroll_offset(offset);
            }
            let coast = watch.predict(ui.ctx());
            *followed = coast;
            // Items: a list's rows, a grid's cells row by row.
            loader.follow_coast(coast.as_ref(), &|item| {
                url_of(&base, urls.as_deref(), ids[item], animated)
            });
            let mut visible = 0..0;
            let output = area.show_rows(ui, ROW_HEIGHT, rows, |ui, range| {
                visible = range.start * columns..(range.end * columns).min(items);
                for row in range {
                    let mut show = |ui: &mut egui::Ui, item: usize| {
                        let id = ids[item];
                        let url = url_of(&base, urls.as_deref(), id, animated);
                        let checked_id = urls.is_none().then_some(id);
                        let state = loader.show_row(ui, item, checked_id, &url, measurements);
                        (id, url, state)
                    };
                    ui.horizontal(|ui| {
                        ui.set_height(ROW_HEIGHT);
                        match layout {
                            Layout::List => {
                                let (id, url, state) = show(ui, row);
                                ui.add_space(8.0);
                                row_label(ui, row, id, &url, urls.is_some(), &state);
                                states.push(state);
                            }
                            Layout::Grid => {
                                for item in row * columns..((row + 1) * columns).min(items) {
                                    states.push(show(ui, item).2);
                                }
                            }
                        }
                    });
                }
            });
            watch.observe_grid(ui, &output, ROW_HEIGHT, items, columns);
            seen = Some((
                ListSeen {
                    rect: output.inner_rect,
                    velocity: output.state.velocity().y,
                },
                output.state.unclamped_offset().y,
            ));
            loader.prefetch(visible, items, &|item| {
                url_of(&base, urls.as_deref(), ids[item], animated)
            });
        });
        let (seen, scroll) = seen.map_or((None, 0.0), |(seen, scroll)| (Some(seen), scroll));
        self.list_seen = seen;
        (states, scroll)
    }
}

/// A list row's text beside its thumbnail: the image's name and its state.
fn row_label(
    ui: &mut egui::Ui,
    row: usize,
    id: u32,
    url: &str,
    users_images: bool,
    state: &RowState,
) {
    ui.vertical(|ui| {
        ui.add_space(12.0);
        let title = if users_images {
            url.rsplit('/').next().unwrap_or(url).to_owned()
        } else {
            format!("Image #{id}")
        };
        ui.label(egui::RichText::new(title).strong());
        let (text, color) = match state {
            RowState::Passing => (
                "flying past · not loaded".to_owned(),
                ui.visuals().weak_text_color(),
            ),
            RowState::Loading => ("loading…".to_owned(), ui.visuals().weak_text_color()),
            RowState::Shown => (format!("row {row}"), ui.visuals().weak_text_color()),
            RowState::Failed(error) => (error.clone(), egui::Color32::from_rgb(220, 70, 70)),
        };
        ui.label(egui::RichText::new(text).small().color(color));
    });
}

/// The URL of image `id`: the fixture server's numbered image (`animated`:
/// its GIF of 8 frames, at 128x128), or one of the user's, cycled through.
pub(super) fn url_of(base: &str, urls: Option<&Vec<String>>, id: u32, animated: bool) -> String {
    match urls {
        Some(urls) if !urls.is_empty() => urls[id as usize % urls.len()].clone(),
        _ if animated => format!("{base}/img/{id}.gif?w=128&h=128"),
        _ => format!("{base}/img/{id}.jpg"),
    }
}
