//! The decode pool: a fixed set of named threads (`thumbpipe-decode-N`)
//! serving one queue, visible rows first and newest first, with large
//! images kept off the last free thread.
//!
//! Owns the threads and their queue. Jobs arrive from the load actor; a job
//! cancelled while queued is skipped, a decoder panic is caught here and
//! becomes [`Error::Decode`], and every job reports its [`DecodeOutcome`]
//! once. A job cancelled while queued leaves the queue at once, with its
//! body. The threads end when the pool is shut down: queued jobs report
//! [`DecodeOutcome::PoolClosed`], running decodes finish, and `shutdown`
//! joins the threads, waiting at most a bound for a decode still running.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{Decode, catch_panic};
use crate::body::Body;
use crate::error::Error;
use crate::queue::TaskQueue;
use crate::request::{Priority, TargetSize, TaskId};
use crate::thumbnail::Thumbnail;

/// One decode for the pool.
pub(crate) struct DecodeJob {
    /// The load task it belongs to: the key to change its priority by.
    pub(crate) task: TaskId,
    pub(crate) priority: Priority,
    pub(crate) url: Arc<str>,
    pub(crate) body: Body,
    pub(crate) target: TargetSize,
    pub(crate) cancel: CancellationToken,
    /// Called once with the outcome, on a decode thread (or on the caller's
    /// thread when the pool has shut down).
    pub(crate) done: DecodeDone,
}

/// How a decode job ended.
#[derive(Debug)]
pub(crate) enum DecodeOutcome {
    /// Decoded, or refused by the decoder (a panic included).
    Done(Result<Thumbnail, Error>),
    /// Its token was cancelled before a thread took it: not decoded.
    Cancelled,
    /// The pool shut down before a thread took it: not decoded.
    PoolClosed,
}

/// Reports a decode job's outcome.
pub(crate) type DecodeDone = Box<dyn FnOnce(DecodeOutcome) + Send>;

/// A fixed set of decode threads serving one queue, visible rows first and
/// newest first, in which large images may hold all threads but one.
///
/// A decode cannot be interrupted, so a thumbnail that arrives while every
/// thread is busy with a 12-megapixel photo would wait for the photo. Images
/// over
/// [`DecodeConfig::large_image_pixels`](crate::DecodeConfig::large_image_pixels)
/// (read from the header, before any thread commits to them) therefore run on
/// at most `threads - 1` threads at once: with two or more threads, one is
/// always left for small images.
pub(crate) struct DecodePool {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

struct Shared {
    // A std mutex, held only to queue or take a job, never across a decode
    // or a `done` call.
    state: Mutex<PoolState>,
    work: Condvar,
    /// Signalled when a thread exits.
    exited: Condvar,
    codec: Arc<dyn Decode>,
    large_pixels: u64,
    /// The most frames an animation played has, if animations are played.
    animated_frames: Option<u32>,
    /// Most large decodes running at once.
    large_limit: usize,
}

#[derive(Default)]
struct PoolState {
    order: TaskQueue,
    waiting: HashMap<TaskId, Waiting>,
    large_running: usize,
    closed: bool,
    /// Threads not yet exited.
    alive: usize,
    /// Threads waiting for work, and how many of them have been signalled
    /// and not yet woken: a job queued while every thread is busy, or
    /// while enough are already waking, signals nobody (a signal is a
    /// system call, and the actor queues many jobs in one go).
    sleeping: usize,
    signalled: usize,
}

impl PoolState {
    /// Whether a job just queued should signal a sleeping thread; counts
    /// the signal if so.
    fn take_sleeper(&mut self) -> bool {
        let wake = self.sleeping > self.signalled;
        self.signalled += usize::from(wake);
        wake
    }
}

struct Waiting {
    job: DecodeJob,
    large: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // Nothing panics while the lock is held (decodes and callbacks run
        // outside it), and the state is consistent between statements.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl DecodePool {
    /// `threads` decode threads; an image of more than `large_pixels`
    /// (an animation's frames counted, when animations of at most
    /// `animated_frames` frames are played) decodes as a large one.
    pub(crate) fn start(
        threads: usize,
        large_pixels: u64,
        animated_frames: Option<u32>,
        codec: Arc<dyn Decode>,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(PoolState {
                alive: threads,
                ..PoolState::default()
            }),
            work: Condvar::new(),
            exited: Condvar::new(),
            codec,
            large_pixels,
            animated_frames,
            large_limit: threads.saturating_sub(1).max(1),
        });
        let threads = (0..threads)
            .map(|n| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("thumbpipe-decode-{n}"))
                    .spawn(move || {
                        let _exit = ExitGuard(&shared);
                        decode_worker(&shared);
                    })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Self {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// The decoder its threads run.
    pub(crate) fn decoder(&self) -> Arc<dyn Decode> {
        Arc::clone(&self.shared.codec)
    }

    /// Queues a job; if the pool has shut down, the job reports
    /// [`DecodeOutcome::PoolClosed`] at once.
    #[cfg(test)]
    pub(crate) fn submit(&self, job: DecodeJob) {
        self.submit_all(vec![job]);
    }

    /// Queues jobs in one go, waking at most one sleeping thread per job:
    /// the threads woken find them all queued. If the pool has shut down,
    /// each job reports [`DecodeOutcome::PoolClosed`] at once.
    pub(crate) fn submit_all(&self, jobs: impl IntoIterator<Item = DecodeJob>) {
        let shared = &*self.shared;
        // Headers read before the lock is taken.
        let sized: Vec<Waiting> = jobs
            .into_iter()
            .map(|mut job| Waiting {
                large: is_large(&mut job.body, shared.large_pixels, shared.animated_frames),
                job,
            })
            .collect();
        if sized.is_empty() {
            return;
        }
        let mut state = shared.lock();
        if state.closed {
            drop(state);
            for waiting in sized {
                (waiting.job.done)(DecodeOutcome::PoolClosed);
            }
            return;
        }
        let mut wakes = 0;
        for waiting in sized {
            state.order.push(waiting.job.task, waiting.job.priority);
            state.waiting.insert(waiting.job.task, waiting);
            wakes += usize::from(state.take_sleeper());
        }
        drop(state);
        for _ in 0..wakes {
            shared.work.notify_one();
        }
    }

    /// Moves a queued job to `priority`; a job already decoding is left be.
    pub(crate) fn reprioritize(&self, task: TaskId, priority: Priority) {
        self.shared.lock().order.reprioritize(task, priority);
    }

    /// Takes a queued job out of the queue at once, dropping its body, and
    /// reports [`DecodeOutcome::Cancelled`]; a job already decoding, or
    /// unknown, is left be. Returns whether the job was queued.
    pub(crate) fn cancel(&self, task: TaskId) -> bool {
        let mut state = self.shared.lock();
        let Some(waiting) = state.waiting.remove(&task) else {
            return false;
        };
        state.order.remove(task);
        drop(state);
        (waiting.job.done)(DecodeOutcome::Cancelled);
        true
    }

    /// Closes the queue and joins the threads: the jobs still queued report
    /// [`DecodeOutcome::PoolClosed`], and each thread finishes the decode it
    /// is running. Waits at most `patience` for them: a thread still
    /// decoding then is left to finish that one decode on its own and exit
    /// (a decode cannot be interrupted); its result goes nowhere. Returns
    /// whether every thread has exited.
    pub(crate) fn shutdown(&self, patience: Duration) -> bool {
        let deadline = Instant::now() + patience;
        let mut state = self.shared.lock();
        state.closed = true;
        self.shared.work.notify_all();
        while state.alive > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .shared
                .exited
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let all_exited = state.alive == 0;
        drop(state);
        let threads = match self.threads.lock() {
            Ok(mut threads) => std::mem::take(&mut *threads),
            Err(_) => return all_exited,
        };
        if all_exited {
            for thread in threads {
                let _ = thread.join();
            }
        }
        all_exited
    }
}

/// Counts a decode thread out when it exits, however it exits.
struct ExitGuard<'a>(&'a Shared);

impl Drop for ExitGuard<'_> {
    fn drop(&mut self) {
        self.0.lock().alive -= 1;
        self.0.exited.notify_all();
    }
}

/// How long dropping the pool waits for a decode still running.
pub(crate) const SHUTDOWN_PATIENCE: Duration = Duration::from_millis(500);

/// Whether `body`'s header declares more than `limit` pixels, every frame
/// of an animation counted when animations of at most `animated_frames`
/// frames are played. Unreadable headers count as small: the decoder
/// refuses them quickly. A JPEG's is read by the walk over its markers,
/// which the body keeps for its decode.
fn is_large(body: &mut Body, limit: u64, animated_frames: Option<u32>) -> bool {
    let frames = animated_frames.map_or(1, |max| super::animation::frames_decoded(body, max));
    let size = match super::jpeg::walk_to_frame(body) {
        Some((width, height)) => Some((u64::from(width), u64::from(height))),
        None => std::panic::catch_unwind(|| imagesize::blob_size(body))
            .ok()
            .and_then(Result::ok)
            .map(|size| (size.width as u64, size.height as u64)),
    };
    size.is_some_and(|(width, height)| width.saturating_mul(height).saturating_mul(frames) > limit)
}

/// What a worker takes from the queue.
enum Next {
    Decode(Waiting),
    Skip(DecodeJob, DecodeOutcome),
    Exit,
}

/// Waits for the next job this worker may run: the first in serving order
/// that is small, cancelled (to report it at once), or large while a large
/// slot is free. After shutdown, every queued job is skipped.
fn next_job(shared: &Shared) -> Next {
    let mut state = shared.lock();
    loop {
        let PoolState {
            order,
            waiting,
            large_running,
            closed,
            ..
        } = &mut *state;
        let free = *large_running < shared.large_limit;
        let picked = order.pop_next(|task| {
            *closed
                || waiting
                    .get(&task)
                    .is_some_and(|w| !w.large || free || w.job.cancel.is_cancelled())
        });
        match picked.and_then(|task| waiting.remove(&task)) {
            Some(waiting) if *closed => return Next::Skip(waiting.job, DecodeOutcome::PoolClosed),
            Some(waiting) if waiting.job.cancel.is_cancelled() => {
                return Next::Skip(waiting.job, DecodeOutcome::Cancelled);
            }
            Some(waiting) => {
                if waiting.large {
                    *large_running += 1;
                }
                return Next::Decode(waiting);
            }
            None if *closed => return Next::Exit,
            None => {
                state.sleeping += 1;
                state = shared
                    .work
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                state.sleeping -= 1;
                // Woken by a signal or spuriously: either way one fewer
                // signal is on its way (at worst, a later job signals a
                // thread more than it needed to).
                state.signalled = state.signalled.saturating_sub(1);
            }
        }
    }
}

fn decode_worker(shared: &Shared) {
    loop {
        let Waiting { job, large } = match next_job(shared) {
            Next::Decode(waiting) => waiting,
            Next::Skip(job, outcome) => {
                (job.done)(outcome);
                continue;
            }
            Next::Exit => return,
        };
        let result = catch_panic(&job.url, || {
            shared.codec.decode(&job.url, &job.body, job.target)
        });
        if large {
            let mut state = shared.lock();
            state.large_running -= 1;
            // A large job may have been waiting for this slot while the
            // other threads sleep.
            let wake = state.take_sleeper();
            drop(state);
            if wake {
                shared.work.notify_one();
            }
        }
        (job.done)(DecodeOutcome::Done(result));
    }
}

impl Drop for DecodePool {
    /// Shuts the pool down unless that was done already: a thread left
    /// decoding then is not waited for a second time.
    fn drop(&mut self) {
        if !self.shared.lock().closed {
            self.shutdown(SHUTDOWN_PATIENCE);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbaImage::from_pixel(width, height, image::Rgba([10, 20, 30, 255]));
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    /// A decoder that records the order it is called in and holds every
    /// job whose URL starts with "hold" until the gate opens.
    #[derive(Default)]
    struct Gated {
        started: Mutex<Vec<String>>,
        open: Mutex<bool>,
        opened: Condvar,
    }

    impl Gated {
        fn open(&self) {
            *self.open.lock().unwrap() = true;
            self.opened.notify_all();
        }

        fn started(&self) -> Vec<String> {
            self.started.lock().unwrap().clone()
        }

        /// Waits until `count` decodes have started.
        fn wait_started(&self, count: usize) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while self.started().len() < count {
                assert!(std::time::Instant::now() < deadline, "{:?}", self.started());
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }

    impl Decode for Gated {
        fn decode(&self, url: &Arc<str>, _: &Body, _: TargetSize) -> Result<Thumbnail, Error> {
            self.started.lock().unwrap().push(url.to_string());
            if url.starts_with("hold") {
                let mut open = self.open.lock().unwrap();
                while !*open {
                    open = self.opened.wait(open).unwrap();
                }
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

    type Outcomes = Arc<Mutex<Vec<(String, &'static str)>>>;

    fn job(
        task: TaskId,
        url: &str,
        priority: Priority,
        bytes: &[u8],
        outcomes: &Outcomes,
    ) -> DecodeJob {
        let (outcomes, name) = (Arc::clone(outcomes), url.to_string());
        DecodeJob {
            task,
            priority,
            url: url.into(),
            body: Body::whole(bytes::Bytes::copy_from_slice(bytes)),
            target: TargetSize::square(8),
            cancel: CancellationToken::new(),
            done: Box::new(move |outcome| {
                let outcome = match outcome {
                    DecodeOutcome::Done(Ok(_)) => "decoded",
                    DecodeOutcome::Done(Err(_)) => "failed",
                    DecodeOutcome::Cancelled => "cancelled",
                    DecodeOutcome::PoolClosed => "pool closed",
                };
                outcomes.lock().unwrap().push((name, outcome));
            }),
        }
    }

    fn wait_outcomes(outcomes: &Outcomes, count: usize) -> Vec<(String, &'static str)> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let seen = outcomes.lock().unwrap().clone();
            if seen.len() >= count {
                return seen;
            }
            assert!(std::time::Instant::now() < deadline, "{seen:?}");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn an_avif_is_sized_from_its_header_like_every_format() {
        // 1024x770, a grid of five tiles (libavif's test file).
        let avif = include_bytes!("../../tests/it/corpus/avif/sofa_grid1x5_420.avif");
        let mut body = Body::whole(&avif[..]);
        assert!(is_large(&mut body, 1024 * 770 - 1, None));
        assert!(!is_large(&mut body, 1024 * 770, None));
    }

    /// A JPEG is sized by the walk over its markers, which its body keeps
    /// for the decode: the frame header's size, however the walk began.
    #[test]
    fn a_jpeg_is_sized_by_its_walk_which_its_body_keeps() {
        let jpeg = fixture_server::picture::render(1, 640, 480)
            .encode_jpeg(80)
            .unwrap();
        let mut body = Body::whole(jpeg);
        assert!(is_large(&mut body, 640 * 480 - 1, None));
        assert!(!is_large(&mut body, 640 * 480, None));
        let walk = body.found::<crate::decode::jpeg::JpegWalk>().unwrap();
        assert_eq!((walk.layout().width, walk.layout().height), (640, 480));
        assert_eq!(walk.layout().scans, 0, "walked to the frame, not past it");
    }

    /// With every thread but one holding a large image, large images wait
    /// and small ones still decode; once the large ones finish, the waiting
    /// large ones run too. Each job reports once.
    #[test]
    fn large_images_never_take_the_last_free_thread() {
        let gate = Arc::new(Gated::default());
        // 400 pixels is large here, 25 is not.
        let (large, small) = (png(20, 20), png(5, 5));
        let pool = DecodePool::start(3, 100, None, Arc::clone(&gate) as Arc<dyn Decode>).unwrap();
        let outcomes = Outcomes::default();
        for n in 0..4 {
            pool.submit(job(
                n,
                &format!("hold-large-{n}"),
                Priority::Visible,
                &large,
                &outcomes,
            ));
        }
        gate.wait_started(2);
        for n in 4..7 {
            pool.submit(job(
                n,
                &format!("small-{n}"),
                Priority::Visible,
                &small,
                &outcomes,
            ));
        }
        let done = wait_outcomes(&outcomes, 3);
        let mut names: Vec<_> = done.iter().map(|(name, _)| name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["small-4", "small-5", "small-6"]);
        // Still only two large decodes have started: the third thread was
        // kept for the small ones.
        let started_large = gate
            .started()
            .iter()
            .filter(|u| u.contains("large"))
            .count();
        assert_eq!(started_large, 2, "{:?}", gate.started());
        gate.open();
        let done = wait_outcomes(&outcomes, 7);
        assert_eq!(done.len(), 7);
        assert!(
            done.iter().all(|(_, outcome)| *outcome == "decoded"),
            "{done:?}"
        );
        pool.shutdown(SHUTDOWN_PATIENCE);
        assert_eq!(outcomes.lock().unwrap().len(), 7);
    }

    /// Jobs handed over together, in batches larger and smaller than the
    /// threads that sleep, all run: a thread is signalled only while it
    /// sleeps, and no signal is lost between a batch and the next.
    #[test]
    fn jobs_handed_over_together_all_run() {
        let gate = Arc::new(Gated::default());
        gate.open();
        let small = png(2, 2);
        let pool =
            DecodePool::start(3, u64::MAX, None, Arc::clone(&gate) as Arc<dyn Decode>).unwrap();
        let outcomes = Outcomes::default();
        let mut submitted = 0;
        for round in 0..300 {
            let jobs: Vec<DecodeJob> = (0..round % 7 + 1)
                .map(|_| {
                    submitted += 1;
                    let url = format!("job-{submitted}");
                    job(submitted, &url, Priority::Visible, &small, &outcomes)
                })
                .collect();
            pool.submit_all(jobs);
            // Now and then the threads run dry and sleep again.
            if round % 4 == 0 {
                wait_outcomes(&outcomes, submitted as usize);
            }
        }
        let done = wait_outcomes(&outcomes, submitted as usize);
        assert_eq!(done.len(), submitted as usize);
        assert!(done.iter().all(|(_, outcome)| *outcome == "decoded"));
        pool.submit_all(Vec::new());
        assert_eq!(gate.started().len(), submitted as usize);
    }

    /// Queued jobs run visible first, newest first within a priority, and a
    /// reprioritized job moves with its new priority.
    #[test]
    fn queued_jobs_run_visible_first_then_newest_first() {
        let gate = Arc::new(Gated::default());
        let small = png(5, 5);
        let pool =
            DecodePool::start(1, u64::MAX, None, Arc::clone(&gate) as Arc<dyn Decode>).unwrap();
        let outcomes = Outcomes::default();
        pool.submit(job(0, "hold", Priority::Visible, &small, &outcomes));
        gate.wait_started(1);
        for (task, priority) in [
            (1, Priority::Prefetch),
            (2, Priority::Visible),
            (3, Priority::Visible),
            (4, Priority::Prefetch),
            (5, Priority::Prefetch),
        ] {
            pool.submit(job(
                task,
                &format!("job-{task}"),
                priority,
                &small,
                &outcomes,
            ));
        }
        pool.reprioritize(1, Priority::Visible);
        gate.open();
        wait_outcomes(&outcomes, 6);
        assert_eq!(
            gate.started(),
            ["hold", "job-3", "job-2", "job-1", "job-5", "job-4"]
        );
    }

    /// A job cancelled while queued reports `Cancelled` without being
    /// decoded, even a large one with no large slot free; after shutdown,
    /// queued jobs and new ones report `PoolClosed`, and the threads are
    /// joined.
    #[test]
    fn cancelled_and_shut_down_jobs_report_once_without_decoding() {
        let gate = Arc::new(Gated::default());
        let large = png(20, 20);
        let pool = DecodePool::start(2, 100, None, Arc::clone(&gate) as Arc<dyn Decode>).unwrap();
        let outcomes = Outcomes::default();
        pool.submit(job(0, "hold-running", Priority::Visible, &large, &outcomes));
        gate.wait_started(1);
        let cancelled = job(1, "cancelled", Priority::Visible, &large, &outcomes);
        let token = cancelled.cancel.clone();
        pool.submit(cancelled);
        pool.submit(job(2, "queued", Priority::Visible, &large, &outcomes));
        token.cancel();
        // Wake a worker to notice the cancellation.
        pool.submit(job(3, "small", Priority::Visible, &png(5, 5), &outcomes));
        let done = wait_outcomes(&outcomes, 2);
        assert!(
            done.contains(&("cancelled".into(), "cancelled")),
            "{done:?}"
        );
        assert!(done.contains(&("small".into(), "decoded")), "{done:?}");
        let opener = Arc::clone(&gate);
        let shutting = std::thread::Builder::new()
            .name("test-gate-opener".into())
            .spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                opener.open();
            })
            .unwrap();
        pool.shutdown(SHUTDOWN_PATIENCE);
        shutting.join().unwrap();
        pool.submit(job(4, "late", Priority::Visible, &large, &outcomes));
        let mut done = outcomes.lock().unwrap().clone();
        done.sort();
        assert_eq!(
            done,
            [
                ("cancelled".into(), "cancelled"),
                ("hold-running".into(), "decoded"),
                ("late".into(), "pool closed"),
                ("queued".into(), "pool closed"),
                ("small".into(), "decoded"),
            ]
        );
        assert!(!gate.started().contains(&"queued".to_string()));
        assert!(!gate.started().contains(&"cancelled".to_string()));
    }
    /// A body that records when it is dropped.
    struct Watched(Arc<std::sync::atomic::AtomicBool>);

    impl AsRef<[u8]> for Watched {
        fn as_ref(&self) -> &[u8] {
            &[]
        }
    }

    impl Drop for Watched {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// A pool of `threads` threads, one of them decoding a held job ("hold",
    /// task 0).
    fn holding_one_decode(threads: usize) -> (Arc<Gated>, DecodePool, Outcomes) {
        let gate = Arc::new(Gated::default());
        let pool = DecodePool::start(
            threads,
            u64::MAX,
            None,
            Arc::clone(&gate) as Arc<dyn Decode>,
        )
        .unwrap();
        let outcomes = Outcomes::default();
        pool.submit(job(0, "hold", Priority::Visible, &[], &outcomes));
        gate.wait_started(1);
        (gate, pool, outcomes)
    }

    /// Regression: a cancelled job stayed queued, body and all, until a
    /// thread reached it; with every thread busy, bodies piled up.
    #[test]
    fn a_cancelled_queued_job_leaves_with_its_body_at_once() {
        let (gate, pool, outcomes) = holding_one_decode(1);
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut queued = job(1, "queued", Priority::Visible, &[], &outcomes);
        queued.body = Body::whole(bytes::Bytes::from_owner(Watched(Arc::clone(&dropped))));
        pool.submit(queued);
        assert!(!dropped.load(std::sync::atomic::Ordering::SeqCst));

        assert!(pool.cancel(1));
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(
            *outcomes.lock().unwrap(),
            [("queued".to_string(), "cancelled")]
        );
        // A running job, or one already gone, is not cancelled again.
        assert!(!pool.cancel(0) && !pool.cancel(1));
        gate.open();
        assert_eq!(
            wait_outcomes(&outcomes, 2)[1],
            ("hold".to_string(), "decoded")
        );
        assert!(pool.shutdown(SHUTDOWN_PATIENCE));
    }

    /// Regression: shutdown joined every thread, so a decode that ran for
    /// minutes held up the caller (closing the app) for minutes.
    #[test]
    fn shutdown_waits_a_bounded_time_for_a_running_decode() {
        let (gate, pool, outcomes) = holding_one_decode(2);
        let started = Instant::now();
        assert!(!pool.shutdown(Duration::from_millis(50)));
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "{took:?}");
        // The idle thread exited; the busy one finishes its decode and exits.
        gate.open();
        assert_eq!(
            wait_outcomes(&outcomes, 1),
            [("hold".to_string(), "decoded")]
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while pool.shared.lock().alive > 0 {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
