//! What a run of one input is judged to be, and the tally of findings
//! (crashes, slow inputs, peaks over the decode limit) written to `--out`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use thumbpipe::thumbnail_from_bytes;
use thumbpipe::{Config, Error};

use crate::TARGET;

#[derive(Clone, Debug)]
pub(crate) enum Verdict {
    Thumbnail,
    DecodeError,
    TooLarge,
    Crash(String),
}

impl Verdict {
    pub(crate) fn describe(&self) -> &str {
        match self {
            Verdict::Thumbnail => "thumbnail",
            Verdict::DecodeError => "decode error",
            Verdict::TooLarge => "refused as too large",
            Verdict::Crash(what) => what,
        }
    }
}

/// Runs one input and says whether the answer is acceptable.
pub(crate) fn judge(input: &[u8], config: &Config) -> Verdict {
    // The decode pool reads sizes with imagesize to tell large images from
    // small ones before any decode; it must survive the same bytes.
    if std::panic::catch_unwind(|| imagesize::blob_size(input)).is_err() {
        return Verdict::Crash("the header probe (imagesize) panicked".into());
    }
    match thumbnail_from_bytes("fuzz", input, TARGET, &config.decode) {
        Ok(thumbnail) => {
            let (w, h) = (thumbnail.width, thumbnail.height);
            let frames = thumbnail.animation.as_ref().map_or(&[][..], |a| a.frames());
            let wrong_frame = frames
                .iter()
                .position(|frame| frame.pixels.len() != (w as usize) * (h as usize) * 4);
            if thumbnail.pixels.len() != (w as usize) * (h as usize) * 4 {
                Verdict::Crash(format!(
                    "{w}x{h} thumbnail with {} bytes",
                    thumbnail.pixels.len()
                ))
            } else if let Some(index) = wrong_frame {
                Verdict::Crash(format!(
                    "{w}x{h} thumbnail whose frame {index} is another size"
                ))
            } else if w == 0 || h == 0 || w > TARGET.width || h > TARGET.height {
                Verdict::Crash(format!("{w}x{h} thumbnail for a 64x64 target"))
            } else {
                Verdict::Thumbnail
            }
        }
        Err(Error::Decode { reason, .. }) if reason.contains("panicked") => Verdict::Crash(reason),
        Err(Error::Decode { .. }) => Verdict::DecodeError,
        Err(Error::TooLarge { .. }) => Verdict::TooLarge,
        Err(other) => Verdict::Crash(format!("unexpected error: {other}")),
    }
}

pub(crate) type Finding = (u64, Vec<u8>, Verdict, Duration);

#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) thumbnails: AtomicU64,
    pub(crate) decode_errors: AtomicU64,
    pub(crate) too_large: AtomicU64,
    pub(crate) crashes: AtomicU64,
    pub(crate) slowest_us: AtomicU64,
    pub(crate) total_us: AtomicU64,
    /// Crashes and every input slower than `slow`.
    pub(crate) findings: std::sync::Mutex<Vec<Finding>>,
    pub(crate) slow: Duration,
    /// The largest peaks measured, largest first: (input, bytes).
    pub(crate) peaks: std::sync::Mutex<Vec<(u64, usize)>>,
}

/// How many of the largest peaks are kept.
const PEAKS_KEPT: usize = 20;

impl Tally {
    pub(crate) fn record(&self, index: u64, input: &[u8], verdict: &Verdict, took: Duration) {
        let counter = match verdict {
            Verdict::Thumbnail => &self.thumbnails,
            Verdict::DecodeError => &self.decode_errors,
            Verdict::TooLarge => &self.too_large,
            Verdict::Crash(_) => &self.crashes,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let us = took.as_micros() as u64;
        self.total_us.fetch_add(us, Ordering::Relaxed);
        self.slowest_us.fetch_max(us, Ordering::Relaxed);
        // Every crash and every slow input, to be written out.
        let keep = matches!(verdict, Verdict::Crash(_)) || took >= self.slow;
        if keep && let Ok(mut findings) = self.findings.lock() {
            findings.push((index, input.to_vec(), verdict.clone(), took));
        }
    }

    /// Keeps `peak` if it is among the largest.
    pub(crate) fn record_peak(&self, index: u64, peak: usize) {
        let Ok(mut peaks) = self.peaks.lock() else {
            return;
        };
        if peaks.len() == PEAKS_KEPT && peaks.last().is_some_and(|p| p.1 >= peak) {
            return;
        }
        peaks.push((index, peak));
        peaks.sort_by_key(|p| std::cmp::Reverse(p.1));
        peaks.truncate(PEAKS_KEPT);
    }

    pub(crate) fn summary_short(&self) -> String {
        format!("crashes {}", self.crashes.load(Ordering::Relaxed))
    }

    pub(crate) fn report(&self, inputs: u64, elapsed: Duration, slow: Duration) -> String {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let slow_count = self
            .findings
            .lock()
            .map(|f| f.iter().filter(|(_, _, _, took)| *took >= slow).count())
            .unwrap_or(0);
        format!(
            "{inputs} inputs in {:.1} s ({:.0} per second): {} thumbnails, {} decode errors, \
             {} refused as too large, {} crashes; mean {:.0} us, slowest {:.1} ms, {slow_count} over {slow:?}",
            elapsed.as_secs_f64(),
            inputs as f64 / elapsed.as_secs_f64(),
            load(&self.thumbnails),
            load(&self.decode_errors),
            load(&self.too_large),
            load(&self.crashes),
            load(&self.total_us) as f64 / inputs as f64,
            load(&self.slowest_us) as f64 / 1000.0,
        )
    }
}

pub(crate) fn save(dir: &Path, index: u64, input: &[u8]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("input-{index}.bin"));
    std::fs::write(&path, input).with_context(|| format!("cannot write {}", path.display()))
}
