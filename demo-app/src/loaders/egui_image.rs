//! `egui-image` mode: the `egui-extras` mode's UI code, unchanged, with
//! `thumbpipe::egui::install` in place of
//! `egui_extras::install_image_loaders`: plain `egui::Image::new(url)`
//! loading through thumbpipe with its default config. One call is added
//! per pass, `Loader::follow_coast` before the rows, so that a flung list
//! loads where it will rest first (`--coast-prediction off` leaves it out).
//!
//! Only the read-back differs: the pixels a row shows come from the
//! loader's handle (`Loader::drawn`), since asking egui for the image at
//! another size would start a second load.

use std::collections::HashMap;

use super::{Counts, Loader, RowState, THUMB_SIDE};
use crate::measure::{Measurements, read_id};

pub struct EguiImageLoader {
    loader: Option<thumbpipe::egui::Loader>,
    shown: HashMap<usize, String>,
}

impl EguiImageLoader {
    /// Loads with `config` (with `coast_prediction` off, a coasting list
    /// loads every image that shows, as at rest).
    pub fn new(ctx: &egui::Context, config: thumbpipe::egui::EguiConfig) -> anyhow::Result<Self> {
        let loader = thumbpipe::egui::install(ctx, config)?;
        Ok(Self {
            loader: Some(loader),
            shown: HashMap::new(),
        })
    }
}

impl Drop for EguiImageLoader {
    fn drop(&mut self) {
        if let Some(loader) = self.loader.take() {
            loader.uninstall();
        }
    }
}

impl Loader for EguiImageLoader {
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
        let image = egui::Image::new(url)
            .fit_to_exact_size(size)
            .corner_radius(6.0);
        // The same load the widget makes next: same URI, same size.
        let state = image.load_for_size(ui.ctx(), ui.available_size());
        ui.add(image);
        match state {
            Ok(egui::load::TexturePoll::Ready { .. }) => {
                let drawn = self.loader.as_ref().and_then(|l| l.drawn(url, size));
                if let Some(thumbnail) = drawn
                    && self.shown.get(&row).map(String::as_str) != Some(url)
                {
                    measurements.image_shown(id, || {
                        read_id(&thumbnail.pixels, thumbnail.width, thumbnail.height)
                    });
                    self.shown.insert(row, url.to_owned());
                }
                RowState::Shown
            }
            Ok(egui::load::TexturePoll::Pending { .. }) => RowState::Loading,
            Err(error) => RowState::Failed(error.to_string()),
        }
    }

    fn follow_coast(
        &mut self,
        coast: Option<&thumbpipe::CoastPrediction>,
        url_of: &dyn Fn(usize) -> String,
    ) {
        if let Some(loader) = &self.loader {
            let size = egui::vec2(THUMB_SIDE, THUMB_SIDE);
            loader.follow_coast(coast, size, url_of);
        }
    }

    fn end_frame(&mut self) {}

    fn counts(&self) -> Counts {
        self.loader.as_ref().map_or_else(Counts::default, |loader| {
            Counts::from_stats(&loader.stats(), loader.texture_stats().bytes)
        })
    }
}
