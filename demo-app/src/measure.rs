//! Measurements of the running demo: frame times, threads, memory, and the
//! report printed at the end of a scripted run.
//!
//! Owned by the app and updated on the UI thread once per frame; reading
//! `/proc` is done every few frames so that measuring does not become the
//! stall it looks for.

use std::collections::VecDeque;

use fixture_server::{DiskReport, ThreadCensus};

/// Frames between two samples of `/proc`.
const SAMPLE_EVERY: u64 = 5;

/// Everything the demo measures during one run of a mode.
#[derive(Debug, Default)]
pub struct Measurements {
    pub frame_ms: Vec<f64>,
    /// The last frame times, for the graph.
    pub recent_ms: VecDeque<f32>,
    pub baseline_threads: usize,
    pub threads_now: usize,
    pub peak_threads: usize,
    /// Threads parked in a blocking fetch now: in a blocking socket call
    /// (from the census), or waiting inside the fetch for a connection
    /// (from the loader, [`Measurements::waiting_for_connection`]).
    pub blocked_now: usize,
    pub peak_blocked_io_threads: usize,
    /// The loader's threads waiting for a connection inside a blocking
    /// fetch, as of this frame.
    pub waiting_for_connection: usize,
    pub rss_start_mb: f64,
    pub rss_now_mb: f64,
    pub rss_peak_mb: f64,
    /// Bytes the process has read from files since the run started
    /// (`/proc/self/io`'s `rchar`, page cache included; socket reads count
    /// too, and a folder's run has none).
    pub bytes_read: u64,
    bytes_read_at_start: u64,
    /// Of them, bytes the storage device was asked for (`read_bytes`: what
    /// the page cache did not hold).
    pub storage_bytes_read: u64,
    storage_bytes_read_at_start: u64,
    pub images_shown: u64,
    /// Images that carry another row's id.
    pub wrong_row_images: u64,
    /// Images expected to carry an id in which none could be read (a
    /// server whose images are not the fixture's): neither right nor wrong.
    pub unreadable_images: u64,
    frames: u64,
    /// When the last frame started, and the intervals between frames: the
    /// rate a person sees, renderer included.
    last_frame_at: Option<std::time::Instant>,
    intervals_ms: VecDeque<f32>,
    /// Time spent reading ids from pixels during the current frame: the
    /// detector's cost, taken out of the frame's time.
    detecting_ms: f64,
}

impl Measurements {
    /// Starts a run: the current threads (outside the fixture server) and
    /// memory are its baseline.
    pub fn start() -> Self {
        let threads = census().map_or(0, |c| threads_outside_server(&c));
        let rss = fixture_server::resident_mb().unwrap_or(0.0);
        Self {
            bytes_read_at_start: process_io("rchar").unwrap_or(0),
            storage_bytes_read_at_start: process_io("read_bytes").unwrap_or(0),
            baseline_threads: threads,
            threads_now: threads,
            peak_threads: threads,
            rss_start_mb: rss,
            rss_now_mb: rss,
            rss_peak_mb: rss,
            ..Self::default()
        }
    }

    /// Takes the thread and memory baselines again now, less the `threads`
    /// and `rss_mb` that a part of the run started earlier brought (a
    /// pipeline built before the window opened, whose threads are the
    /// run's, unlike the window's); what the process read counts on from
    /// [`Measurements::start`].
    pub fn rebase(&mut self, threads: usize, rss_mb: f64) {
        let now = Self::start();
        self.baseline_threads = now.baseline_threads.saturating_sub(threads);
        self.threads_now = now.threads_now;
        self.peak_threads = now.peak_threads;
        self.rss_start_mb = (now.rss_start_mb - rss_mb).max(0.0);
        self.rss_now_mb = now.rss_now_mb;
        self.rss_peak_mb = now.rss_peak_mb;
    }

    /// Records one frame's UI-thread time and, every few frames, samples
    /// threads and memory.
    pub fn frame(&mut self, ms: f64) {
        let ms = (ms - std::mem::take(&mut self.detecting_ms)).max(0.0);
        let now = std::time::Instant::now();
        if let Some(last) = self.last_frame_at.replace(now) {
            self.intervals_ms
                .push_back((now - last).as_secs_f32() * 1000.0);
            if self.intervals_ms.len() > 60 {
                self.intervals_ms.pop_front();
            }
        }
        self.frame_ms.push(ms);
        self.recent_ms.push_back(ms as f32);
        if self.recent_ms.len() > 180 {
            self.recent_ms.pop_front();
        }
        self.frames += 1;
        if self.frames % SAMPLE_EVERY == 1 {
            self.sample();
        }
    }

    /// Reads threads and memory now.
    pub fn sample(&mut self) {
        if let Some(census) = census() {
            self.threads_now = threads_outside_server(&census);
            self.peak_threads = self.peak_threads.max(self.threads_now);
            self.blocked_now = census
                .blocked_names
                .iter()
                .filter(|name| !name.starts_with(fixture_server::THREAD_PREFIX))
                .count()
                + self.waiting_for_connection;
            self.peak_blocked_io_threads = self.peak_blocked_io_threads.max(self.blocked_now);
        }
        self.rss_now_mb = fixture_server::resident_mb().unwrap_or(0.0);
        self.rss_peak_mb = self.rss_peak_mb.max(self.rss_now_mb);
        if let Some(read) = process_io("rchar") {
            self.bytes_read = read.saturating_sub(self.bytes_read_at_start);
        }
        if let Some(read) = process_io("read_bytes") {
            self.storage_bytes_read = read.saturating_sub(self.storage_bytes_read_at_start);
        }
    }

    /// Leaves `ms` of the current frame out of its time: work done for the
    /// measurement, not for the UI.
    pub fn exclude(&mut self, ms: f64) {
        self.detecting_ms += ms;
    }

    /// Counts a row's first showing of an image, and whether it was the
    /// wrong one: `read` reads the id from the image's pixels ([`read_id`]),
    /// `expected_id` is the one the row displays (`None` for images that
    /// carry no id: they are counted, never judged). An image with another
    /// id is wrong; one in which no id can be read is unreadable, not
    /// wrong (a `--server` whose images are not the fixture's). The
    /// reading's time is not the UI's work and is left out of the frame
    /// time.
    pub fn image_shown(&mut self, expected_id: Option<u32>, read: impl FnOnce() -> Option<u32>) {
        self.images_shown += 1;
        let Some(expected_id) = expected_id else {
            return;
        };
        let started = std::time::Instant::now();
        let read_id = read();
        self.detecting_ms += started.elapsed().as_secs_f64() * 1000.0;
        match read_id {
            Some(id) if id == expected_id => {}
            Some(_) => self.wrong_row_images += 1,
            None => self.unreadable_images += 1,
        }
    }

    /// Frames per second over the last 60 frames, from the wall-clock time
    /// between them.
    pub fn fps(&self) -> f32 {
        let total: f32 = self.intervals_ms.iter().sum();
        if total <= 0.0 {
            return 0.0;
        }
        1000.0 * self.intervals_ms.len() as f32 / total
    }
}

/// A counter of `/proc/self/io`: `rchar` (bytes read through `read` and
/// its kin, page cache included) or `read_bytes` (bytes asked of the
/// storage device); `None` off Linux.
fn process_io(counter: &str) -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix(counter)?.strip_prefix(": "))?
        .trim()
        .parse()
        .ok()
}

/// The fixture id an RGBA bitmap carries in its pixels.
pub fn read_id(rgba: &[u8], width: u32, height: u32) -> Option<u32> {
    fixture_server::decode_id(rgba, width, height)
}

fn census() -> Option<ThreadCensus> {
    ThreadCensus::take().ok()
}

fn threads_outside_server(census: &ThreadCensus) -> usize {
    census.total - census.with_prefix(fixture_server::THREAD_PREFIX)
}

/// The disk cache's counters as the report keeps them.
pub fn disk_report(disk: thumbpipe::DiskStats) -> DiskReport {
    DiskReport {
        thumbnail_hits: disk.thumbnail_hits,
        hits: disk.hits,
        revalidated: disk.revalidated,
        misses: disk.misses,
        written: disk.written,
        corrupt: disk.corrupt,
        errors: disk.errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: against a `--server` whose images carry no id, every
    /// image counted as a wrong-row image (53 of 53).
    #[test]
    fn an_image_without_an_id_is_unreadable_not_wrong() {
        let mut m = Measurements::start();
        m.image_shown(Some(7), || Some(7));
        m.image_shown(Some(7), || Some(8));
        m.image_shown(Some(7), || None);
        m.image_shown(None, || unreachable!("images without an id are not read"));
        assert_eq!(
            (m.images_shown, m.wrong_row_images, m.unreadable_images),
            (4, 1, 1)
        );
    }
}
