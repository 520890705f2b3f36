//! Report: what one scripted run of a thumbnail list measured, as JSON.
//!
//! The demo writes a [`RunReport`] at the end of a scripted run; the report
//! binaries (scroll-report, warm-start) run the demo as a child process and
//! read it back. One type on both sides, so a field the demo adds is a field
//! the reports can read, and a renamed one fails to compile rather than
//! reading as zero. Plain data: nothing here runs.
//!
//! Times are milliseconds unless a name says seconds (`_s`); sizes are
//! megabytes (10^6 bytes, `_mb`) or bytes. Optional fields are `None` where
//! the loader or the script cannot tell, and fields added after the first
//! reports default when absent, so older JSON still reads.

use serde::{Deserialize, Serialize};

/// The JSON report of one scripted run of the demo's list.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunReport {
    /// The loader: `naive`, `egui-extras`, `egui-image`, `pipeline`, ...
    pub mode: String,
    /// The script: `flick`, `browse` or `fling`.
    pub script: String,
    /// Rows in the list.
    pub rows: usize,
    /// Images to a row in a grid (`--layout grid`); `None` for a list.
    #[serde(default)]
    pub columns: Option<usize>,
    /// The server's latency per image.
    pub latency_ms: u64,
    /// How often every row's image changed during the run, if it did.
    pub refresh_ms: Option<u64>,
    /// Wall time of the scripted scroll, in seconds.
    pub flick_s: f64,
    /// Frames drawn during the scroll.
    pub frames: usize,
    /// Median UI-thread time of a frame.
    pub frame_ms_p50: f64,
    /// 99th percentile of the UI-thread time of a frame.
    pub frame_ms_p99: f64,
    /// The slowest frame.
    pub frame_ms_max: f64,
    /// Frames whose UI-thread time passed 50 ms.
    pub stalls_over_50ms: usize,
    /// UI-thread time of those frames, summed.
    pub stall_total_ms: f64,
    /// Threads of the process (outside the fixture server) before the run.
    pub baseline_threads: usize,
    /// The most threads seen during the run (outside the fixture server).
    pub peak_threads: usize,
    /// The most threads seen parked in blocking network I/O at once.
    pub peak_blocked_io_threads: usize,
    /// Resident memory when the run started.
    pub rss_start_mb: f64,
    /// The most resident memory seen during the run.
    pub rss_peak_mb: f64,
    /// Loads the loader finished with an image.
    pub requests_completed: u64,
    /// Loads the loader cancelled.
    pub requests_cancelled: u64,
    /// Loads that ended in an error.
    pub requests_failed: u64,
    /// Loads abandoned because their rows left (cancelled in time, or after
    /// the download); absent where the loader does not count them.
    pub requests_abandoned: Option<u64>,
    /// Image responses the server sent in full.
    pub server_completed: u64,
    /// Image responses the server started and the client dropped.
    pub server_aborted: u64,
    /// Images drawn in rows, counted once per (frame, row).
    pub images_shown: u64,
    /// Images drawn in a row that asked for another image; `None`
    /// (unknown) for images of the user's, which carry no id.
    pub wrong_row_images: Option<u64>,
    /// Images in which no id could be read, though one was expected (a
    /// `--server` whose images are not the fixture's); not counted wrong.
    pub unreadable_images: Option<u64>,
    /// From the scroll's last frame to the last frame in which the loader
    /// still had requests unfinished or the server was still answering:
    /// work going on after the list stopped.
    pub tail_after_stop_ms: f64,
    /// From the last frame that moved the list to the first in which every
    /// visible row showed its image; `None` if that never happened.
    pub settle_ms: Option<f64>,
    /// From the first frame that drew the list to the first in which every
    /// visible row showed its image: a launch's wait for its first screen.
    #[serde(default)]
    pub first_screen_ms: Option<f64>,
    /// UI passes after the first that drew the list until every visible
    /// row showed its image: 0 when the first showed them all. A pass is a
    /// frame, or one egui discarded and ran again within a frame.
    #[serde(default)]
    pub first_screen_frames: Option<u64>,
    /// From asking for the first screen before the first frame (an app
    /// that knows what it will show) to the frame in which it was whole;
    /// `None` when the first frame asked.
    #[serde(default)]
    pub first_screen_since_ask_ms: Option<f64>,
    /// Image requests the server received.
    #[serde(default)]
    pub server_requests: u64,
    /// Image requests the server had received when the first screen was
    /// whole (`first_screen_ms`).
    #[serde(default)]
    pub server_requests_at_first_screen: Option<u64>,
    /// Image requests the server answered `304 Not Modified`.
    #[serde(default)]
    pub server_not_modified: u64,
    /// Image requests the server answered with the whole image.
    #[serde(default)]
    pub server_image_bodies: u64,
    /// TCP connections the server accepted.
    #[serde(default)]
    pub server_connections: u64,
    /// TLS handshakes the server completed in full; 0 over plain HTTP.
    #[serde(default)]
    pub server_tls_full_handshakes: u64,
    /// TLS handshakes that resumed an earlier session.
    #[serde(default)]
    pub server_tls_resumed_handshakes: u64,
    /// TLS connections on which ALPN chose HTTP/2.
    #[serde(default)]
    pub server_http2_connections: u64,
    /// thumbpipe's disk cache, when the run had one (`--disk-cache`).
    #[serde(default)]
    pub disk: Option<DiskReport>,
    /// On the browse's way back: (frame, visible row) pairs that showed no
    /// image. `None` for other scripts.
    pub placeholder_row_frames_back: Option<u64>,
    /// Peak bytes of live textures, where the loader can tell.
    pub texture_bytes_peak: Option<u64>,
    /// Whether the mode followed a coast's predicted resting place;
    /// `None` for modes without the choice.
    #[serde(default)]
    pub coast_prediction: Option<bool>,
    /// Each fling of the `fling` script; `None` for other scripts.
    #[serde(default)]
    pub flings: Option<Vec<FlingReport>>,
    /// A folder's run (`--folder`): what was read and decoded.
    #[serde(default)]
    pub folder: Option<FolderReport>,
    /// The UI-thread time of every frame of the scroll, in order.
    pub frame_ms: Vec<f64>,
}

/// What a run over a folder of local files read and decoded.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq, Clone, Copy)]
pub struct FolderReport {
    /// Images in the folder.
    pub images: u64,
    /// Bytes the process read (`/proc/self/io`'s `rchar`: files, page
    /// cache included).
    pub process_bytes_read: u64,
    /// Of them, bytes asked of the storage device (`read_bytes`: what the
    /// page cache did not hold).
    pub storage_bytes_read: u64,
    /// thumbpipe's decodes started; `None` for other loaders.
    pub decodes: Option<u64>,
    /// Of them, those started before the first screen showed.
    pub decodes_at_first_screen: Option<u64>,
    /// Loads served by the desktop's shared thumbnails (thumbpipe).
    pub shared_thumbnails_used: Option<u64>,
    /// Thumbnails thumbpipe wrote to the shared cache.
    pub shared_thumbnails_written: Option<u64>,
    /// Bytes thumbpipe read from the files.
    pub file_bytes_read: Option<u64>,
}

/// What thumbpipe's disk cache did in a run: its counters at the end.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq, Clone, Copy)]
pub struct DiskReport {
    /// Loads served by a stored thumbnail, with no fetch and no decode.
    pub thumbnail_hits: u64,
    /// Fetches answered from a fresh stored response.
    pub hits: u64,
    /// Stored responses revalidated with the server (`304 Not Modified`).
    pub revalidated: u64,
    /// Fetches that found nothing usable on disk.
    pub misses: u64,
    /// Entries written.
    pub written: u64,
    /// Entries found damaged and removed.
    pub corrupt: u64,
    /// Reads or writes that failed.
    pub errors: u64,
}

/// One fling as measured: what egui did with it, what the rows showed and
/// what the server sent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FlingReport {
    /// The drag's speed, points per second; negative drags down (the list
    /// coasts up).
    pub drag_speed: f32,
    /// egui's velocity of the list as the release pass left it (after
    /// that pass's first step of coasting), points per second.
    pub release_velocity: f32,
    /// Points the list coasted from where the release pass left it to its
    /// stop.
    pub distance: f32,
    /// From the release pass to the pass in which egui's velocity is zero.
    pub coast_ms: f64,
    /// From the release to the first pass slower than a point a frame at
    /// 60 Hz, where the list looks still to a person.
    pub slow_after_ms: f64,
    /// From the pass the coast stopped to the first in which every row
    /// drawn showed its own image (0 if they did at the stop); `None` if
    /// that never happened during the rest.
    pub settle_ms: Option<f64>,
    /// The same from the first slow pass (`slow_after_ms`): what a person
    /// sees as the list stopping.
    pub settle_from_slow_ms: Option<f64>,
    /// (pass, drawn row) pairs without their image, from the release to
    /// the end of the rest.
    pub placeholder_row_frames: u64,
    /// From the release to the end of the last pass in which a drawn row
    /// lacked its image (0 if none did): when the last placeholder went.
    pub last_placeholder_ms: f64,
    /// Image requests the server received, from the press to the end of
    /// the rest.
    pub requests: u64,
    /// Image bytes the server sent in that time.
    pub bytes: u64,
}
