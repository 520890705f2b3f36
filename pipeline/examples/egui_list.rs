//! 1,000 thumbnails in an egui list through plain `egui::Image::new(url)`, from `{URL}/img/{row}.jpg`
//! (URL: the first argument, or a local fixture server). Run with `--features egui`.

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
            thumbpipe::egui::install(&cc.egui_ctx, thumbpipe::Config::default())?;
            Ok(Box::new(List(base)))
        }),
    )?;
    Ok(())
}

struct List(String);

impl eframe::App for List {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        egui::CentralPanel::default().show(ui, |ui| {
            egui::ScrollArea::vertical().show_rows(ui, 64.0, 1000, |ui, rows| {
                for row in rows {
                    ui.horizontal(|ui| {
                        let image = egui::Image::new(format!("{}/img/{row}.jpg", self.0));
                        ui.add(image.fit_to_exact_size(egui::vec2(64.0, 64.0)));
                        ui.label(format!("row {row}"));
                    });
                }
            });
        });
    }
}
