//! The run's report: what a scripted run measured, gathered from the
//! demo's counters, the loader's and the server's when the run ends.
//!
//! Called once, on the UI thread, by the frame that ends a script.

use fixture_server::{FolderReport, RunReport, percentile};

use super::{Demo, Layout, Mode};
use crate::measure::disk_report;
use crate::script::ScriptKind;

impl Demo {
    pub(super) fn make_report(&mut self) -> RunReport {
        self.measurements.sample();
        let m = &self.measurements;
        let counts = self.loader.as_ref().map(|l| l.counts()).unwrap_or_default();
        let server = self.server.stats();
        let (completed, cancelled) = match self.mode {
            // egui's loaders count nothing: the server's counts stand in.
            Mode::EguiExtras => (server.responses_completed, server.responses_aborted),
            _ => (counts.completed, counts.cancelled),
        };
        let flick_s = match (self.flick_started, self.flick_ended) {
            (Some(start), Some(end)) => (end - start).as_secs_f64(),
            _ => 0.0,
        };
        let tail_after_stop_ms = match (self.flick_ended, self.last_busy) {
            (Some(end), Some(busy)) => (busy - end).as_secs_f64() * 1000.0,
            _ => 0.0,
        };
        let settle_ms = match (self.last_moved, self.settled) {
            (Some(moved), Some(settled)) => Some((settled - moved).as_secs_f64() * 1000.0),
            _ => None,
        };
        let kind = self.script.unwrap_or(ScriptKind::Flick);
        let flick_frames = self
            .plan
            .map(|p| p.frames())
            .or(self.script_ended_at)
            .unwrap_or(0)
            .min(m.frame_ms.len());
        let flick_ms = &m.frame_ms[..flick_frames];
        let stalls: Vec<f64> = flick_ms.iter().copied().filter(|ms| *ms > 50.0).collect();
        RunReport {
            mode: self.mode.name().to_owned(),
            script: kind.name().to_owned(),
            rows: self.rows,
            columns: (self.layout == Layout::Grid)
                .then_some(self.columns_seen)
                .flatten(),
            latency_ms: self.latency_ms,
            refresh_ms: self.refresh.map(|r| r.as_millis() as u64),
            flick_s,
            frames: flick_frames,
            frame_ms_p50: percentile(flick_ms, 50.0),
            frame_ms_p99: percentile(flick_ms, 99.0),
            frame_ms_max: flick_ms.iter().copied().fold(0.0, f64::max),
            stalls_over_50ms: stalls.len(),
            stall_total_ms: stalls.iter().fold(0.0, |sum, ms| sum + ms),
            baseline_threads: m.baseline_threads,
            peak_threads: m.peak_threads,
            peak_blocked_io_threads: m.peak_blocked_io_threads,
            rss_start_mb: m.rss_start_mb,
            rss_peak_mb: m.rss_peak_mb,
            requests_completed: completed,
            requests_cancelled: cancelled,
            requests_failed: counts.failed,
            requests_abandoned: counts.abandoned,
            server_completed: server.responses_completed,
            server_aborted: server.responses_aborted,
            images_shown: m.images_shown,
            // Images of the user's carry no id to check.
            wrong_row_images: self.urls.is_none().then_some(m.wrong_row_images),
            unreadable_images: self.urls.is_none().then_some(m.unreadable_images),
            tail_after_stop_ms,
            settle_ms,
            first_screen_ms: self
                .first_list
                .zip(self.first_screen)
                .map(|(first, shown)| (shown - first).as_secs_f64() * 1000.0),
            first_screen_frames: self.first_screen_frames,
            first_screen_since_ask_ms: self
                .asked_first
                .zip(self.first_screen)
                .map(|(asked, shown)| (shown - asked).as_secs_f64() * 1000.0),
            server_requests: server.requests_started,
            server_requests_at_first_screen: self.requests_at_first_screen,
            server_not_modified: server.not_modified,
            server_image_bodies: server.image_bodies,
            server_connections: server.connections,
            server_tls_full_handshakes: server.tls_full_handshakes,
            server_tls_resumed_handshakes: server.tls_resumed_handshakes,
            server_http2_connections: server.http2_connections,
            disk: counts
                .disk
                .filter(|_| self.disk_cache.is_some())
                .map(disk_report),
            placeholder_row_frames_back: (kind == ScriptKind::Browse)
                .then_some(self.placeholders_back),
            texture_bytes_peak: self.texture_bytes_peak,
            coast_prediction: matches!(self.mode, Mode::Pipeline | Mode::EguiImage)
                .then_some(self.coast_prediction),
            flings: (kind == ScriptKind::Fling).then(|| std::mem::take(&mut self.flings.done)),
            folder: self.folder.then(|| FolderReport {
                images: self.urls.as_ref().map_or(0, |urls| urls.len() as u64),
                process_bytes_read: m.bytes_read,
                storage_bytes_read: m.storage_bytes_read,
                decodes: counts.local.map(|local| local.decodes),
                decodes_at_first_screen: self.local_at_first_screen.map(|local| local.decodes),
                shared_thumbnails_used: counts.local.map(|local| local.shared_used),
                shared_thumbnails_written: counts.local.map(|local| local.shared_written),
                file_bytes_read: counts.local.map(|local| local.file_bytes),
            }),
            frame_ms: flick_ms.to_vec(),
        }
    }
}
