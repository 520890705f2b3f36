//! `egui-extras` mode: the ecosystem default, unchanged:
//! `egui_extras::install_image_loaders` and `egui::Image::new(url)`.
//!
//! The loaders are egui's; this mode only reads back what they loaded, to
//! check which image a row shows. Switching away forgets every image.

use std::collections::HashMap;

use super::{Counts, Loader, RowState, THUMB_SIDE};
use crate::measure::{Measurements, read_id};

pub struct EguiExtrasLoader {
    ctx: egui::Context,
    shown: HashMap<usize, String>,
}

impl EguiExtrasLoader {
    pub fn new(ctx: &egui::Context) -> Self {
        egui_extras::install_image_loaders(ctx);
        Self {
            ctx: ctx.clone(),
            shown: HashMap::new(),
        }
    }
}

impl Drop for EguiExtrasLoader {
    fn drop(&mut self) {
        self.ctx.forget_all_images();
    }
}

impl Loader for EguiExtrasLoader {
    fn begin_frame(&mut self, _ctx: &egui::Context) {}

    fn show_row(
        &mut self,
        ui: &mut egui::Ui,
        row: usize,
        id: Option<u32>,
        url: &str,
        measurements: &mut Measurements,
    ) -> RowState {
        ui.add(
            egui::Image::new(url)
                .fit_to_exact_size(egui::vec2(THUMB_SIDE, THUMB_SIDE))
                .corner_radius(6.0),
        );
        match ui
            .ctx()
            .try_load_image(url, egui::load::SizeHint::default())
        {
            Ok(egui::load::ImagePoll::Ready { image }) => {
                if self.shown.get(&row).map(String::as_str) != Some(url) {
                    measurements.image_shown(id, || {
                        let rgba: Vec<u8> =
                            image.pixels.iter().flat_map(|c| c.to_array()).collect();
                        let [w, h] = image.size;
                        read_id(&rgba, w as u32, h as u32)
                    });
                    self.shown.insert(row, url.to_owned());
                }
                RowState::Shown
            }
            Ok(egui::load::ImagePoll::Pending { .. }) => RowState::Loading,
            Err(error) => RowState::Failed(error.to_string()),
        }
    }

    fn end_frame(&mut self) {}

    fn counts(&self) -> Counts {
        // egui's loaders keep no counts; the server's are in the report.
        let textures = self
            .ctx
            .loaders()
            .texture
            .lock()
            .iter()
            .map(|l| l.byte_size())
            .sum::<usize>();
        Counts {
            texture_bytes: Some(textures as u64),
            ..Counts::default()
        }
    }
}
