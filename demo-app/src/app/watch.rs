//! What each frame saw, measured: the scripted scroll's offset, a fling's
//! measures, when the list settled and when its first screen was whole,
//! and the script's end, which leaves the run's report.
//!
//! Runs on the UI thread, in [`Demo::ui`], once a frame.

use std::time::Instant;

use super::{Demo, ROW_HEIGHT};
use crate::fling::PassSeen;
use crate::loaders::{Counts, RowState};
use crate::script::{QUIET_AFTER_TAIL, STILL_FRAMES, STILL_FRAMES_MAX, Script};

impl Demo {
    /// Measures the fling under way from this pass.
    pub(super) fn watch_fling(&mut self, states: &[RowState], offset: f32) {
        let (Some(driver), Some(seen)) = (&self.fling, self.list_seen) else {
            return;
        };
        let server = &self.server;
        self.flings.pass(
            driver.phase(),
            PassSeen {
                now: Instant::now(),
                offset,
                velocity: seen.velocity,
                placeholders: states.iter().filter(|s| **s != RowState::Shown).count(),
            },
            || {
                let stats = server.stats();
                (stats.requests_started, stats.bytes_sent)
            },
        );
    }

    pub(super) fn scripted_offset(&mut self, ui: &egui::Ui) -> Option<f32> {
        let kind = self.script?;
        let spacing = ui.spacing().item_spacing.y;
        let pitch = ROW_HEIGHT + spacing;
        let content = self.rows as f32 * pitch;
        let viewport = (ui.available_height() - 8.0).max(ROW_HEIGHT);
        let range = (content - viewport).max(0.0);
        if self.folder && self.columns_seen.is_none() {
            // A folder's rows are known once its grid has been laid out.
            return Some(0.0);
        }
        let plan = match self.plan {
            Some(plan) => plan,
            None => *self
                .plan
                .insert(Script::new(kind, self.rows, pitch, viewport, range)?),
        };
        Some(plan.offset(self.frame).unwrap_or(0.0))
    }

    /// Settling and placeholders, from what the visible rows drew.
    pub(super) fn watch_rows(&mut self, now: Instant, offset: Option<f32>, states: &[RowState]) {
        let all_shown = states.iter().all(|state| *state == RowState::Shown);
        if !states.is_empty() {
            let first = *self.first_list.get_or_insert(now);
            let first_pass = *self.first_list_pass.get_or_insert(self.passes);
            if all_shown && self.first_screen.is_none() {
                self.first_screen = Some(now.max(first));
                self.first_screen_frames = Some(self.passes - first_pass);
                self.requests_at_first_screen = Some(self.server.stats().requests_started);
            }
        }
        let moved = offset.is_some() && offset != self.last_offset;
        self.last_offset = offset;
        if moved {
            self.last_moved = Some(now);
            self.settled = all_shown.then_some(now);
        } else if self.settled.is_none() && all_shown {
            self.settled = Some(now);
        }
        if self
            .plan
            .is_some_and(|plan| plan.on_the_way_back(self.frame))
        {
            let placeholders = states.iter().filter(|s| **s != RowState::Shown).count();
            self.placeholders_back += placeholders as u64;
        }
    }

    pub(super) fn advance_script(&mut self, counts: Counts) {
        let scripted_frames = match (&self.plan, &self.fling) {
            (Some(plan), _) => Some(plan.frames()),
            (None, Some(driver)) => driver
                .finished()
                .then(|| *self.script_ended_at.get_or_insert(self.frame)),
            (None, None) => return,
        };
        if self.report.is_some() {
            return;
        }
        if self.frame == 0 {
            self.flick_started = Some(Instant::now());
        }
        self.frame += 1;
        if self.flick_ended.is_none() && scripted_frames.is_some_and(|frames| self.frame >= frames)
        {
            self.flick_ended = Some(Instant::now());
        }
        let Some(frames) = scripted_frames else {
            return;
        };
        // Busy while the loader has requests it has not finished (queued
        // ones included) or the server is still answering. With an external
        // server, in_flight() is a request to it: only after the script,
        // whose frames are the ones measured.
        if self.flick_ended.is_some() && (counts.in_flight > 0 || self.server.in_flight() > 0) {
            self.last_busy = Some(Instant::now());
        }
        let still = self.frame.saturating_sub(frames);
        let quiet = match (self.flick_ended, self.last_busy) {
            (Some(_), Some(busy)) => busy.elapsed() >= QUIET_AFTER_TAIL,
            (Some(_), None) => true,
            _ => false,
        };
        if (still >= STILL_FRAMES && quiet) || still >= STILL_FRAMES_MAX {
            self.report = Some(self.make_report());
        }
    }
}
