//! `pipeline` mode: thumbpipe's row-keyed list helper, with the row index
//! as the row key, over a pipeline asked for the first screen before the
//! first frame if there is one, one screen of rows prefetched ahead of the
//! scroll, and a
//! coast's resting rows loaded first (`ThumbnailList::follow_coast`).
//! Everything it draws comes from `thumbpipe::egui::ThumbnailList`; this
//! file only reads back what was drawn, for the measurements.

use std::collections::HashMap;
use std::sync::Arc;

use thumbpipe::egui::{PrefetchWindow, RowThumbnail, ThumbnailList};

use super::{Counts, Loader, RowState, THUMB_SIDE};
use crate::measure::{Measurements, read_id};

pub struct PipelineLoader {
    list: ThumbnailList<usize>,
    prefetch: PrefetchWindow,
    /// The URL whose image each row showed last.
    shown: HashMap<usize, Arc<str>>,
}

impl PipelineLoader {
    /// A list loading with `config` (with `coast_prediction` off, a
    /// coasting list loads every row that shows, as at rest), over the
    /// `early` pipeline if the first screen was asked of one before the
    /// first frame.
    pub fn new(
        ctx: &egui::Context,
        config: thumbpipe::egui::EguiConfig,
        early: Option<thumbpipe::Pipeline<usize>>,
    ) -> anyhow::Result<Self> {
        let list = match early {
            Some(pipeline) => ThumbnailList::with_pipeline(ctx, pipeline, config)?,
            None => ThumbnailList::new(ctx, config)?,
        };
        Ok(Self {
            list,
            prefetch: PrefetchWindow::default(),
            shown: HashMap::new(),
        })
    }
}

impl Loader for PipelineLoader {
    fn begin_frame(&mut self, _ctx: &egui::Context) {}

    fn show_row(
        &mut self,
        ui: &mut egui::Ui,
        row: usize,
        id: Option<u32>,
        url: &str,
        measurements: &mut Measurements,
    ) -> RowState {
        let size = egui::vec2(THUMB_SIDE, THUMB_SIDE);
        match self.list.show(ui, row, url, size).1 {
            RowThumbnail::Shown(_, thumbnail) => {
                if self.shown.get(&row) != Some(&thumbnail.url) {
                    measurements.image_shown(id, || {
                        read_id(&thumbnail.pixels, thumbnail.width, thumbnail.height)
                    });
                    self.shown.insert(row, thumbnail.url);
                }
                RowState::Shown
            }
            RowThumbnail::Loading => RowState::Loading,
            RowThumbnail::Passing => RowState::Passing,
            RowThumbnail::Failed(error) => RowState::Failed(error.to_string()),
        }
    }

    fn prefetch(
        &mut self,
        visible: std::ops::Range<usize>,
        total: usize,
        url_of: &dyn Fn(usize) -> String,
    ) {
        let size = egui::vec2(THUMB_SIDE, THUMB_SIDE);
        for row in self.prefetch.rows(visible, total) {
            self.list.prefetch(row, &url_of(row), size);
        }
    }

    fn follow_coast(
        &mut self,
        coast: Option<&thumbpipe::CoastPrediction>,
        url_of: &dyn Fn(usize) -> String,
    ) {
        let size = egui::vec2(THUMB_SIDE, THUMB_SIDE);
        self.list
            .follow_coast(coast, size, |row| (row, url_of(row)));
    }

    fn end_frame(&mut self) {
        self.list.end_pass();
    }

    fn counts(&self) -> Counts {
        Counts::from_stats(&self.list.stats(), self.list.texture_stats().bytes)
    }
}
