//! Helpers for the integration tests: a fixture server on loopback, and a
//! loop that drains a pipeline the way a UI's frames would.

#![allow(dead_code)] // each test file uses its own subset

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fixture_server::{Config as ServerConfig, FixtureServer};
use thumbpipe::{Completion, Error, Pipeline, Thumbnail};

/// A fixture server on its own runtime (threads `fixture-*`).
pub fn server(latency_ms: u64) -> FixtureServer {
    FixtureServer::start_dedicated(ServerConfig {
        latency: Duration::from_millis(latency_ms),
        shutdown_grace: Duration::from_millis(100),
        ..ServerConfig::default()
    })
    .expect("fixture server starts")
}

/// Drains `pipeline` every 2 ms until `done` says so or 20 s pass; returns
/// everything drained.
pub fn drain_until<K: std::hash::Hash + Eq + Clone>(
    pipeline: &mut Pipeline<K>,
    mut done: impl FnMut(&[Completion<K>]) -> bool,
) -> Vec<Completion<K>> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut all = Vec::new();
    loop {
        all.extend(pipeline.drain());
        if done(&all) || Instant::now() > deadline {
            return all;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Whether `pipeline` has no load left: nothing queued, fetching or
/// decoding. The gauges are published after the results are sent, so once
/// this holds, every result there will be is in the delivery channel.
pub fn idle<K>(pipeline: &Pipeline<K>) -> bool {
    let stats = pipeline.stats();
    (stats.in_flight, stats.queued, stats.decoding) == (0, 0, 0)
}

/// Fails the test unless this machine's threads can be counted. The tests
/// that count threads run where there is a census (Linux's
/// `/proc/self/task`, on x86_64 or aarch64) and are ignored elsewhere, by
/// name, with `#[cfg_attr(not(...), ignore = "...")]`: they never pass
/// without counting.
pub fn require_census() {
    if let Err(error) = fixture_server::ThreadCensus::take() {
        panic!("this test counts threads, and there is no census here: {error}");
    }
}

/// The census once the threads named `prefix*` have gone, or after a
/// second if some are still there. A thread whose join has returned can
/// stay listed in `/proc/self/task` for a moment while the kernel finishes
/// its exit (its join wakes before it is unlisted), so a census taken right
/// after a drop that joined every thread can still count one; a thread the
/// drop left running is still counted after the second.
pub fn census_once_gone(prefix: &str) -> fixture_server::ThreadCensus {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let census = fixture_server::ThreadCensus::take().expect("a census");
        if census.with_prefix(prefix) == 0 || Instant::now() >= deadline {
            return census;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until `check` holds or 10 s pass; returns whether it held.
pub fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    check()
}

/// The id the thumbnail's pixels carry.
pub fn id_of(thumbnail: &Thumbnail) -> Option<u32> {
    fixture_server::decode_id(&thumbnail.pixels, thumbnail.width, thumbnail.height)
}

/// Every fault the fixture server can inject, by its `?fault=` name.
pub const FAULTS: [&str; 12] = [
    "404",
    "500",
    "503",
    "reset",
    "truncate",
    "garbage",
    "wrong-type",
    "slow",
    "hang",
    "bomb",
    "huge",
    "redirect-loop",
];

/// Whether `error` is the typed error `fault` must produce, with timeouts
/// shorter than a `slow` body and a body cap under the `huge` one.
pub fn is_error_for_fault(fault: &str, error: &Error) -> bool {
    match (fault, error) {
        ("404", Error::Status { status: 404, .. })
        | ("500", Error::Status { status: 500, .. })
        | ("503", Error::Status { status: 503, .. })
        | ("reset" | "truncate", Error::Network { .. })
        | ("garbage" | "wrong-type", Error::Decode { .. }) => true,
        ("slow" | "hang", Error::Timeout { setting, .. }) => *setting == "fetch.total_timeout",
        ("bomb", Error::TooLarge { setting, .. }) => *setting == "decode.max_dimension",
        ("huge", Error::TooLarge { setting, .. }) => *setting == "fetch.max_body_bytes",
        ("redirect-loop", Error::Network { reason, .. }) => reason.contains("redirected"),
        _ => false,
    }
}

/// A small deterministic generator, so a failure can be replayed.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A directory of its own under the system's temporary directory, removed
/// when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("thumbpipe-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// Writes a 96x96 PNG of picture `id` as `name` in the directory.
    pub fn png(&self, name: &str, id: u32) -> PathBuf {
        let path = self.0.join(name);
        let png = fixture_server::picture::render(id, 96, 96)
            .encode_png()
            .unwrap();
        std::fs::write(&path, png).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Asserts that the thumbnail `name` is the size of its reference, within a
/// pixel a side, and agrees with it to `least_db` or more ([`psnr`]).
pub fn assert_agrees(
    name: &str,
    ours: &thumbpipe::Thumbnail,
    theirs: &image::RgbaImage,
    least_db: f64,
) {
    assert!(
        ours.width.abs_diff(theirs.width()) <= 1 && ours.height.abs_diff(theirs.height()) <= 1,
        "{name}: {}x{} against {}x{}",
        ours.width,
        ours.height,
        theirs.width(),
        theirs.height()
    );
    let db = psnr(ours, theirs);
    assert!(db >= least_db, "{name}: {db:.1} dB");
}

/// PSNR of the RGB channels of a thumbnail against a reference, each image
/// composited on mid grey by its alpha, over the pixels both cover.
pub fn psnr(ours: &thumbpipe::Thumbnail, theirs: &image::RgbaImage) -> f64 {
    let on_grey = |pixel: &[u8]| -> [f64; 3] {
        let alpha = f64::from(pixel[3]) / 255.0;
        [0, 1, 2].map(|c| f64::from(pixel[c]) * alpha + 128.0 * (1.0 - alpha))
    };
    let (width, height) = (
        ours.width.min(theirs.width()),
        ours.height.min(theirs.height()),
    );
    let (mut sum, mut count) = (0.0, 0.0);
    for y in 0..height {
        for x in 0..width {
            let at = ((y * ours.width + x) * 4) as usize;
            let a = on_grey(&ours.pixels[at..at + 4]);
            let b = on_grey(&theirs.get_pixel(x, y).0);
            for c in 0..3 {
                sum += (a[c] - b[c]).powi(2);
                count += 1.0;
            }
        }
    }
    let mse = sum / count;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0 * 255.0 / mse).log10()
    }
}
