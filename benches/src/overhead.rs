//! The per-request overhead measurement, shared by the criterion bench
//! (`benches/criterion/benches/overhead.rs`) and `overhead-report`: a
//! pipeline with an in-memory fetcher and a decoder that does nothing, so
//! that only its own hops remain (UI side -> load actor -> fetch task ->
//! actor -> decode thread -> actor -> UI side), and the smallest round trip
//! through a runtime as the baseline: `tokio::spawn` of a task that answers
//! on a oneshot, from a thread outside the runtime. Both sides wait by
//! spinning on a non-blocking check, as a UI frame loop polls.
//!
//! Also this process's threads' context switches and CPU time, from
//! `/proc/self/task`, for what a round costs besides its wall time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use thumbpipe::{BuildError, Config, Decode, Error, Pipeline, Priority, TargetSize, Thumbnail};
use tokio::sync::oneshot;

/// When a request last reached each stage, in nanoseconds from `base`:
/// for one request at a time, where its time goes.
#[derive(Debug)]
pub struct HopClock {
    base: Instant,
    /// The load actor asked the fetcher for the request's future.
    pub fetch_asked: AtomicU64,
    /// The fetch task first polled that future.
    pub fetch_polled: AtomicU64,
    /// A decode thread called the decoder.
    pub decode_started: AtomicU64,
}

impl HopClock {
    /// A clock whose readings count from now.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            base: Instant::now(),
            fetch_asked: AtomicU64::new(0),
            fetch_polled: AtomicU64::new(0),
            decode_started: AtomicU64::new(0),
        })
    }

    /// Nanoseconds from the clock's start to now.
    pub fn now(&self) -> u64 {
        self.at(Instant::now())
    }

    /// Nanoseconds from the clock's start to `instant`.
    pub fn at(&self, instant: Instant) -> u64 {
        let since = instant.saturating_duration_since(self.base);
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }

    /// Marks `stage` now; with requests in flight together, each stage
    /// keeps the latest of their marks.
    fn mark(&self, stage: &AtomicU64) {
        stage.fetch_max(self.now(), Ordering::AcqRel);
    }
}

/// Makes a 1x1 thumbnail of anything, marking the clock if it has one.
pub struct NoDecode(pub Option<Arc<HopClock>>);

impl Decode for NoDecode {
    fn decode(
        &self,
        url: &Arc<str>,
        _: &thumbpipe::Body,
        _: TargetSize,
    ) -> Result<Thumbnail, Error> {
        if let Some(clock) = &self.0 {
            clock.mark(&clock.decode_started);
        }
        Ok(Thumbnail {
            url: Arc::clone(url),
            width: 1,
            height: 1,
            pixels: Arc::from([0u8; 4]),
            source_size: (1, 1),
            animation: None,
        })
    }
}

/// A pipeline with `config` whose every URL answers at once with one byte,
/// decoded by [`NoDecode`]; `clock`, if given, is marked at each stage.
pub fn memory_pipeline(
    config: Config,
    clock: Option<Arc<HopClock>>,
) -> Result<Pipeline<u64>, BuildError> {
    let marks = clock.clone();
    Pipeline::<u64>::builder()
        .config(config)
        .fetcher(thumbpipe::fetch_fn(move |_, _| {
            let marks = marks.clone();
            if let Some(clock) = &marks {
                clock.mark(&clock.fetch_asked);
            }
            async move {
                if let Some(clock) = &marks {
                    clock.mark(&clock.fetch_polled);
                }
                Ok(Bytes::from_static(b"x"))
            }
        }))
        .decoder(NoDecode(clock))
        .build()
}

/// How long [`round_trip`] waits for its requests before it panics.
pub const ROUND_TRIP_PATIENCE: Duration = Duration::from_secs(60);

/// Requests `count` new URLs (rows `*next + 1 ..`), spins on `drain` until
/// all have completed, then cancels the rows; returns when the last was
/// drained. Panics on a failed load (the fetcher and decoder cannot fail)
/// and on a load not back after [`ROUND_TRIP_PATIENCE`].
pub fn round_trip(pipeline: &mut Pipeline<u64>, next: &mut u64, count: u64) -> Instant {
    let first = *next;
    for _ in 0..count {
        *next += 1;
        let url = format!("http://memory/{next}");
        pipeline.request(*next, &url, TargetSize::square(1), Priority::Visible);
    }
    let (mut done, mut spins, started) = (0, 0u32, Instant::now());
    while done < count {
        for completion in pipeline.drain() {
            assert!(completion.result.is_ok(), "{:?}", completion.result);
            done += 1;
        }
        spins = spins.wrapping_add(1);
        assert!(
            spins % 4096 != 0 || started.elapsed() < ROUND_TRIP_PATIENCE,
            "{done} of {count} requests back after {ROUND_TRIP_PATIENCE:?}"
        );
        std::hint::spin_loop();
    }
    let drained = Instant::now();
    for row in first + 1..=*next {
        pipeline.cancel_row(&row);
    }
    drained
}

/// Spawns `count` tasks on `runtime` that each answer on a oneshot; spins
/// until all have.
pub fn bare_round_trip(runtime: &tokio::runtime::Runtime, count: usize) {
    let mut answers: Vec<oneshot::Receiver<()>> = (0..count)
        .map(|_| {
            let (tx, rx) = oneshot::channel();
            runtime.spawn(async move {
                let _ = tx.send(());
            });
            rx
        })
        .collect();
    while !answers.is_empty() {
        answers.retain_mut(|rx| rx.try_recv().is_err());
        std::hint::spin_loop();
    }
}

/// What each of this process's threads has done so far, from
/// `/proc/self/task`: a reading to subtract from a later one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadReading {
    /// Per thread id: context switches (voluntary and not), and nanoseconds
    /// on a CPU.
    threads: BTreeMap<u32, (u64, u64)>,
}

/// What the threads did between two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadTotals {
    /// Context switches of every thread, voluntary and not.
    pub switches: u64,
    /// Nanoseconds on a CPU of every thread but the calling one.
    pub others_cpu_ns: u64,
}

impl ThreadReading {
    /// Reads every thread now; `None` where there is no `/proc`.
    pub fn now() -> Option<Self> {
        let mut threads = BTreeMap::new();
        for entry in std::fs::read_dir("/proc/self/task").ok()? {
            let dir = entry.ok()?.path();
            let Some(tid) = dir
                .file_name()
                .and_then(|name| name.to_str()?.parse::<u32>().ok())
            else {
                continue;
            };
            // A thread that exits between the listing and the reads is
            // left out.
            let (Ok(status), Ok(schedstat)) = (
                std::fs::read_to_string(dir.join("status")),
                std::fs::read_to_string(dir.join("schedstat")),
            ) else {
                continue;
            };
            let switches = status
                .lines()
                .filter(|line| line.contains("ctxt_switches:"))
                .filter_map(|line| line.split(':').nth(1)?.trim().parse::<u64>().ok())
                .sum::<u64>();
            let cpu_ns = schedstat
                .split_whitespace()
                .next()
                .and_then(|ns| ns.parse::<u64>().ok())
                .unwrap_or(0);
            threads.insert(tid, (switches, cpu_ns));
        }
        Some(Self { threads })
    }

    /// What the threads alive now did since `earlier`, a thread started
    /// since counted from zero; `calling_thread`'s CPU time is left out. A
    /// thread that has ended since is not counted at all: compare readings
    /// between which the threads measured stay alive.
    pub fn since(&self, earlier: &Self, calling_thread: u32) -> ThreadTotals {
        let mut totals = ThreadTotals::default();
        for (tid, &(switches, cpu_ns)) in &self.threads {
            let (switches_before, cpu_before) = earlier.threads.get(tid).copied().unwrap_or((0, 0));
            totals.switches += switches.saturating_sub(switches_before);
            if *tid != calling_thread {
                totals.others_cpu_ns += cpu_ns.saturating_sub(cpu_before);
            }
        }
        totals
    }
}

/// The calling thread's id, for [`ThreadReading::since`] (Linux: from
/// `/proc/thread-self`).
pub fn current_thread_id() -> Option<u32> {
    std::fs::read_link("/proc/thread-self")
        .ok()?
        .file_name()?
        .to_str()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_works_shows_in_the_others_cpu_time() {
        let me = current_thread_id().unwrap();
        let before = ThreadReading::now().unwrap();
        let (busy, was_busy) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let own_cpu_ns = || {
            let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
            stat.split_whitespace()
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        };
        let worker = std::thread::Builder::new()
            .name("busy".into())
            .spawn(move || {
                let start = own_cpu_ns();
                let mut x = 0u64;
                while own_cpu_ns() - start < 30_000_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                busy.send(()).unwrap();
                // Alive until read: the time of a thread gone is not counted.
                let _ = released.recv();
            })
            .unwrap();
        was_busy.recv().unwrap();
        let after = ThreadReading::now().unwrap();
        release.send(()).unwrap();
        worker.join().unwrap();
        // Other tests' threads come and go meanwhile: those that end only
        // drop out, they take nothing away.
        let spent = after.since(&before, me);
        assert!(spent.others_cpu_ns >= 30_000_000, "{spent:?}");
        assert!(spent.switches >= 1, "{spent:?}");
    }

    #[test]
    fn a_round_trip_completes_every_request() {
        let clock = HopClock::new();
        let mut pipeline = memory_pipeline(Config::default(), Some(Arc::clone(&clock))).unwrap();
        let mut next = 0;
        let asked = clock.now();
        round_trip(&mut pipeline, &mut next, 10);
        let fetch_asked = clock.fetch_asked.load(Ordering::Acquire);
        let fetch_polled = clock.fetch_polled.load(Ordering::Acquire);
        let decode_started = clock.decode_started.load(Ordering::Acquire);
        assert!(
            asked < fetch_asked && fetch_asked <= fetch_polled,
            "{clock:?}"
        );
        assert!(
            fetch_polled <= decode_started && decode_started <= clock.now(),
            "{clock:?}"
        );
        assert_eq!(next, 10);
        assert_eq!(pipeline.stats().delivered, 10);
    }
}
