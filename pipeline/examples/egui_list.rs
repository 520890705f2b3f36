//! 1,000 thumbnails in an egui list through plain `egui::Image::new(url)`, from `{URL}/img/{row}.jpg`
//! (URL: the first argument, or a local fixture server). Run with `--features egui`.
//!
//! Fling it (drag with the mouse and let go while moving): the rows where it
//! will come to rest load first, and rows it flies past are not loaded.

use thumbpipe::egui::{CoastWatch, Loader};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _local_server;
    let base = match std::env::args().nth(1) {
        Some(url) => url,
        None => {
            _local_server = fixture_server::FixtureServer::start_dedicated(Default::default())?;
            _local_server.base_url()
        }
    };
    eframe::run_native(
        "thumbpipe: egui list",
        eframe::NativeOptions::default(),
        Box::new(|cc| {
            let loader = thumbpipe::egui::install(&cc.egui_ctx, thumbpipe::Config::default())?;
            Ok(Box::new(List {
                base,
                loader,
                coast: CoastWatch::new(),
            }))
        }),
    )?;
    Ok(())
}

struct List {
    base: String,
    loader: Loader,
    coast: CoastWatch,
}

const ROWS: usize = 1000;
const ROW_HEIGHT: f32 = 64.0;

impl eframe::App for List {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let size = egui::vec2(64.0, 64.0);
        let url = |row: usize| format!("{}/img/{row}.jpg", self.base);
        egui::CentralPanel::default().show(ui, |ui| {
            // Before the rows: where a coast under way will rest.
            let coast = self.coast.predict(ui.ctx());
            self.loader.follow_coast(coast.as_ref(), size, &url);
            let output = egui::ScrollArea::vertical()
                .scroll_source(egui::scroll_area::ScrollSource::ALL)
                .show_rows(ui, ROW_HEIGHT, ROWS, |ui, rows| {
                    for row in rows {
                        ui.horizontal(|ui| {
                            let image = egui::Image::new(url(row));
                            ui.add(image.fit_to_exact_size(size));
                            ui.label(format!("row {row}"));
                        });
                    }
                });
            self.coast.observe(ui, &output, ROW_HEIGHT, ROWS);
        });
    }
}
