//! `pipeline` mode: thumbpipe. The row index is the row key, completions
//! become textures under a per-frame upload budget, and textures of recently
//! shown images are kept so that scrolling back shows them at once.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use thumbpipe::{Pipeline, Priority, TargetSize, Thumbnail};

use super::{Counts, Loader, RowState, draw_placeholder, draw_texture};
use crate::measure::{Measurements, read_id};

/// Textures made per frame at most; the rest wait for the next frame.
const UPLOADS_PER_FRAME: usize = 8;
/// Textures kept: about three screens of rows.
const TEXTURES_KEPT: usize = 96;
/// Thumbnails are made at twice the cell size, for high-DPI screens.
const TARGET: TargetSize = TargetSize::square(128);

pub struct PipelineLoader {
    pipeline: Pipeline<usize>,
    ctx: Option<egui::Context>,
    /// Delivered, not yet uploaded.
    to_upload: VecDeque<Thumbnail>,
    /// Textures by URL, with the pixels they were made from.
    textures: HashMap<Arc<str>, (egui::TextureHandle, Thumbnail)>,
    /// Least recently shown first.
    recency: VecDeque<Arc<str>>,
    failed: HashMap<usize, (String, String)>,
    /// The URL whose image each row showed last.
    shown: HashMap<usize, Arc<str>>,
}

impl PipelineLoader {
    pub fn new(ctx: &egui::Context) -> anyhow::Result<Self> {
        let config = thumbpipe::Config {
            // A screenful of rows (13 here) in one round trip: with the
            // default 6 per host, the rows in view when a flick stops would
            // take three.
            max_concurrent_fetches: 16,
            ..thumbpipe::Config::default()
        };
        let pipeline = Pipeline::new(config)?;
        let repaint = ctx.clone();
        pipeline.set_waker(move || repaint.request_repaint());
        Ok(Self {
            pipeline,
            ctx: Some(ctx.clone()),
            to_upload: VecDeque::new(),
            textures: HashMap::new(),
            recency: VecDeque::new(),
            failed: HashMap::new(),
            shown: HashMap::new(),
        })
    }

    fn touch(&mut self, url: &Arc<str>) {
        if let Some(position) = self.recency.iter().position(|u| u == url) {
            self.recency.remove(position);
        }
        self.recency.push_back(Arc::clone(url));
        while self.recency.len() > TEXTURES_KEPT {
            if let Some(old) = self.recency.pop_front() {
                self.textures.remove(&old);
            }
        }
    }
}

impl Loader for PipelineLoader {
    fn begin_frame(&mut self, ctx: &egui::Context) {
        self.ctx = Some(ctx.clone());
        for done in self.pipeline.drain() {
            match done.result {
                Ok(thumbnail) => {
                    self.failed.remove(&done.row);
                    self.to_upload.push_back(thumbnail);
                }
                Err(error) => {
                    self.failed
                        .insert(done.row, (done.url.to_string(), error.to_string()));
                }
            }
        }
        let batch: Vec<Thumbnail> = self
            .to_upload
            .drain(..self.to_upload.len().min(UPLOADS_PER_FRAME))
            .collect();
        for thumbnail in batch {
            let image = egui::ColorImage::from_rgba_unmultiplied(
                [thumbnail.width as usize, thumbnail.height as usize],
                &thumbnail.pixels,
            );
            let texture = ctx.load_texture(
                thumbnail.url.to_string(),
                image,
                egui::TextureOptions::LINEAR,
            );
            let url = Arc::clone(&thumbnail.url);
            self.textures.insert(Arc::clone(&url), (texture, thumbnail));
            self.touch(&url);
        }
    }

    fn show_row(
        &mut self,
        ui: &mut egui::Ui,
        row: usize,
        id: u32,
        url: &str,
        measurements: &mut Measurements,
    ) -> RowState {
        self.pipeline.request(row, url, TARGET, Priority::Visible);
        if let Some((texture, thumbnail)) = self.textures.get(url) {
            draw_texture(ui, texture);
            let key = Arc::clone(&thumbnail.url);
            if self.shown.get(&row) != Some(&key) {
                measurements.image_shown(id, || {
                    read_id(&thumbnail.pixels, thumbnail.width, thumbnail.height)
                });
                self.shown.insert(row, Arc::clone(&key));
            }
            self.touch(&key);
            return RowState::Shown;
        }
        match self.failed.get(&row) {
            Some((failed_url, error)) if failed_url == url => {
                draw_placeholder(ui, true);
                RowState::Failed(error.clone())
            }
            _ => {
                draw_placeholder(ui, false);
                RowState::Loading
            }
        }
    }

    fn end_frame(&mut self) {
        self.pipeline.end_frame();
        if !self.to_upload.is_empty()
            && let Some(ctx) = &self.ctx
        {
            ctx.request_repaint();
        }
    }

    fn counts(&self) -> Counts {
        let stats = self.pipeline.stats();
        Counts {
            in_flight: stats.in_flight + stats.queued,
            completed: stats.fetches_completed,
            cancelled: stats.fetches_cancelled_queued + stats.fetches_cancelled_in_flight,
            failed: stats.fetches_failed,
            cache_bytes: stats.cache.cost as u64,
            // Fetches are futures: nothing waits on a thread.
            waiting_for_connection: 0,
            abandoned: Some(
                stats.fetches_cancelled_queued
                    + stats.fetches_cancelled_in_flight
                    + stats.loads_abandoned_after_fetch,
            ),
        }
    }
}
