//! The top bar: the mode switch, and the live measurements (frame graph,
//! threads, memory, requests, the coast under way, wrong-row images).
//!
//! Drawn on the UI thread every frame, before the list.

use super::{Demo, Layout, Mode};
use crate::loaders::Counts;
use crate::measure::Measurements;

impl Demo {
    /// The mode switch and the live panel; returns a newly chosen mode.
    pub(super) fn top_bar(&mut self, ui: &mut egui::Ui, counts: Counts) -> Option<Mode> {
        let mut chosen = None;
        let m = &self.measurements;
        egui::Panel::top("top_bar").show(ui, |ui| {
            ui.add_space(4.0);
            ui.horizontal(|ui| {
                ui.heading("thumbpipe demo");
                ui.add_space(12.0);
                let https = self.server.base_url().starts_with("https:");
                for mode in Mode::ALL {
                    // The naive and egui-extras loaders cannot trust the
                    // embedded server's certificate.
                    let usable = !https || mode.speaks_https();
                    let label = ui
                        .add_enabled(usable, egui::Button::selectable(self.mode == mode, mode.name()))
                        .on_disabled_hover_text("this loader cannot trust the server's certificate");
                    if label.clicked() && self.mode != mode {
                        chosen = Some(mode);
                    }
                }
                ui.add_space(12.0);
                let images = self.urls.as_ref().map_or(0, |urls| urls.len());
                let shape = match (self.layout, self.columns_seen) {
                    (_, Some(columns)) if self.folder => {
                        format!("{images} images in {} rows of {columns}", self.rows)
                    }
                    (Layout::Grid, Some(columns)) => {
                        format!("{} rows of {columns} ({} images)", self.rows, self.rows * columns)
                    }
                    _ => format!("{} rows", self.rows),
                };
                let latency = match self.folder {
                    true => " · local files".to_owned(),
                    false => format!(" · {} ms latency", self.latency_ms),
                };
                ui.label(format!(
                    "{shape}{latency}{}{}",
                    if https { " · HTTPS" } else { "" },
                    self.refresh
                        .map_or(String::new(), |r| format!(" · refresh {} ms", r.as_millis()))
                ));
            });
            ui.add_space(2.0);
            ui.horizontal(|ui| {
                frame_graph(ui, m);
                ui.vertical(|ui| {
                    ui.label(format!(
                        "{:.0} fps (UI work: the graph) · threads {} (peak {}, baseline {}) · parked in blocking fetch {} (peak {})",
                        m.fps(),
                        m.threads_now,
                        m.peak_threads,
                        m.baseline_threads,
                        m.blocked_now,
                        m.peak_blocked_io_threads
                    ));
                    ui.label(format!(
                        "RSS {:.0} MB (start {:.0}, peak {:.0}) · cache {:.1} MB · textures {}",
                        m.rss_now_mb,
                        m.rss_start_mb,
                        m.rss_peak_mb,
                        counts.cache_bytes as f64 / 1e6,
                        counts
                            .texture_bytes
                            .map_or("?".to_owned(), |b| format!("{:.1} MB", b as f64 / 1e6))
                    ));
                    let connections = self.server.embedded_stats().map_or_else(String::new, |s| {
                        format!(
                            " · server connections {} ({} in HTTP/2)",
                            s.connections, s.http2_connections
                        )
                    });
                    ui.label(format!(
                        "requests: {} in flight · {} completed · {} cancelled · {} failed{connections}",
                        counts.in_flight, counts.completed, counts.cancelled, counts.failed
                    ));
                    if let Some(disk) = counts.disk.filter(|_| self.disk_cache.is_some()) {
                        ui.label(format!(
                            "disk cache: {} thumbnails · {} images · {} revalidated (304) · \
                             {} from the network · {} written · {:.1} MB in {} entries",
                            disk.thumbnail_hits,
                            disk.hits,
                            disk.revalidated,
                            disk.misses,
                            disk.written,
                            disk.bytes as f64 / 1e6,
                            disk.entries
                        ));
                    }
                    if self.folder {
                        let images = self.urls.as_ref().map_or(0, |urls| urls.len());
                        ui.label(folder_line(counts.local, images, m.bytes_read));
                    }
                    ui.label(self.coast_line(ui));
                    let wrong = egui::RichText::new(match self.urls {
                        None if m.unreadable_images > 0 => format!(
                            "wrong-row images: {} of {} shown · {} without a readable id",
                            m.wrong_row_images, m.images_shown, m.unreadable_images
                        ),
                        None => format!(
                            "wrong-row images: {} of {} shown",
                            m.wrong_row_images, m.images_shown
                        ),
                        Some(_) => format!(
                            "wrong-row images: unknown (your images carry no id) · {} shown",
                            m.images_shown
                        ),
                    });
                    ui.label(if m.wrong_row_images > 0 {
                        wrong.color(egui::Color32::from_rgb(230, 90, 80)).strong()
                    } else {
                        wrong
                    });
                });
            });
            if let Some(error) = &self.error {
                ui.colored_label(egui::Color32::from_rgb(230, 90, 80), error);
            }
            ui.add_space(4.0);
        });
        chosen
    }

    /// The top bar's line on the coast under way: where it will rest.
    fn coast_line(&self, ui: &egui::Ui) -> egui::RichText {
        let follows =
            matches!(self.mode, Mode::Pipeline | Mode::EguiImage) && self.coast_prediction;
        match &self.coast {
            Some(coast) => {
                let rest = coast.resting_rows();
                let text = format!(
                    "coasting: comes to rest on rows {}-{} in {:.1} s{}",
                    rest.start,
                    rest.end.saturating_sub(1),
                    coast.duration().as_secs_f32(),
                    if follows {
                        " · those load first; rows flown past are not loaded"
                    } else {
                        " · this mode loads every row that shows"
                    }
                );
                egui::RichText::new(text).color(egui::Color32::from_rgb(90, 170, 230))
            }
            None => egui::RichText::new("at rest · drag the list and let go to fling it")
                .color(ui.visuals().weak_text_color()),
        }
    }
}

/// Frame times of the last 180 frames, with the 16.7 ms line.
fn frame_graph(ui: &mut egui::Ui, m: &Measurements) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(180.0, 56.0), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 4.0, ui.visuals().extreme_bg_color);
    let scale = |ms: f32| rect.bottom() - (ms / 50.0).min(1.0) * rect.height();
    let budget = scale(1000.0 / 60.0);
    painter.hline(
        rect.x_range(),
        budget,
        egui::Stroke::new(1.0, egui::Color32::from_rgb(90, 160, 90)),
    );
    let points: Vec<egui::Pos2> = m
        .recent_ms
        .iter()
        .enumerate()
        .map(|(i, ms)| egui::pos2(rect.left() + i as f32, scale(*ms)))
        .collect();
    painter.add(egui::Shape::line(
        points,
        egui::Stroke::new(1.0, ui.visuals().strong_text_color()),
    ));
    painter.text(
        rect.left_top() + egui::vec2(4.0, 2.0),
        egui::Align2::LEFT_TOP,
        "frame ms (0-50)",
        egui::FontId::proportional(10.0),
        ui.visuals().weak_text_color(),
    );
}

/// The folder's line: what thumbpipe did with its files, and what the
/// process read (`/proc/self/io`, page cache included).
fn folder_line(local: Option<crate::loaders::LocalCounts>, images: usize, read: u64) -> String {
    let read = format!("{:.1} MB", read as f64 / 1e6);
    match local {
        Some(local) => format!(
            "folder: {images} images · {} decoded · {} shared thumbnails used, {} written · \
             {:.1} MB read from the files · {read} read by the process",
            local.decodes,
            local.shared_used,
            local.shared_written,
            local.file_bytes as f64 / 1e6
        ),
        None => format!("folder: {images} images · {read} read by the process"),
    }
}
