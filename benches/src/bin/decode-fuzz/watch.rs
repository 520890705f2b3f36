//! The watchdog: what each worker runs now, checked every 50 ms for an
//! input slower than `--slow-ms`, and the peak allocation of each window
//! of inputs.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use thumbpipe_benches::ResidentTrace;

use crate::ALLOCATOR;
use crate::findings::save;

/// What a worker is running now, for the watchdog.
#[derive(Default)]
pub(crate) struct Running {
    pub(crate) now: std::sync::Mutex<Option<Current>>,
}

pub(crate) struct Current {
    pub(crate) index: u64,
    pub(crate) started: Instant,
    pub(crate) input: Arc<Vec<u8>>,
    /// Already reported as slow.
    pub(crate) reported: bool,
}

/// The watchdog's view of the workers.
pub(crate) struct Watch {
    pub(crate) running: Arc<Vec<Running>>,
    /// Inputs started since the last window.
    pub(crate) window: Arc<std::sync::Mutex<Vec<u64>>>,
    pub(crate) finished: Arc<std::sync::atomic::AtomicBool>,
    pub(crate) bar: ProgressBar,
    pub(crate) out: PathBuf,
    pub(crate) slow: Duration,
    /// The decode limit, in bytes.
    pub(crate) limit: usize,
    /// Every input's peak is measured by its worker (one thread).
    pub(crate) exact: bool,
}

impl Watch {
    /// Every 50 ms, reports and saves each input running longer than
    /// `slow` (once), and reads the process's peak allocation over the
    /// window. Returns the inputs of windows whose peak grew by more than
    /// `limit` (none when `exact`: every input is measured then), the
    /// largest growth of a window, and the process's resident memory
    /// sampled at each look.
    pub(crate) fn run(self) -> (Vec<u64>, usize, ResidentTrace) {
        let Watch {
            running,
            window,
            finished,
            bar,
            out,
            slow,
            limit,
            exact,
        } = self;
        let mut heavy = Vec::new();
        let mut largest = 0;
        let mut resident = ResidentTrace::default();
        let mut base = ALLOCATOR.current_usage();
        if !exact {
            ALLOCATOR.reset_peak_usage();
        }
        while !finished.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            resident.sample();
            for slot in running.iter() {
                let Ok(mut now) = slot.now.lock() else {
                    continue;
                };
                let Some(current) = now.as_mut() else {
                    continue;
                };
                let took = current.started.elapsed();
                if took >= slow && !current.reported {
                    current.reported = true;
                    let saved = save(&out, current.index, &current.input)
                        .map_or_else(|e| format!("not written: {e:#}"), |()| "written".into());
                    bar.println(format!(
                        "input {} still running after {took:.1?} ({saved})",
                        current.index
                    ));
                }
            }
            if exact {
                continue;
            }
            let peak = ALLOCATOR.peak_usage().saturating_sub(base);
            let started: Vec<u64> = window
                .lock()
                .map(|mut w| std::mem::take(&mut *w))
                .unwrap_or_default();
            largest = largest.max(peak);
            if peak > limit {
                heavy.extend(started);
            }
            base = ALLOCATOR.current_usage();
            ALLOCATOR.reset_peak_usage();
        }
        (heavy, largest, resident)
    }
}
