//! Blocking workers: a few named threads for the stages whose work blocks
//! on the file system (`file://` reads, the disk cache), fed by two
//! queues: work a load waits for now, and work nobody waits for (a
//! shared thumbnail written back) that runs only when no waited-for job
//! is queued, and of which only a bounded number is kept.
//!
//! Owned by the stage that starts them. A job sent with
//! [`Workers::run`] is skipped if its future was dropped before a thread
//! reached it, so a cancelled load costs no disk time; a panic in a job
//! costs that job, not the thread. The threads end when the owner drops
//! its `Workers`: the queues close, the jobs still queued run (or are
//! skipped), and the drop waits a bounded time for them.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// How long dropping the workers waits for their threads to finish.
const PATIENCE: Duration = Duration::from_millis(500);

/// The most jobs nobody waits for ([`Workers::spawn_later`]) kept queued;
/// past it, a new one is refused. Shared-thumbnail writes of about 5-40
/// KB each: at most a couple of megabytes waiting.
pub(crate) const MAX_LATER_JOBS: usize = 64;

type Job = Box<dyn FnOnce() + Send>;

/// Why a job sent with [`Workers::run`] returned nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unfinished {
    /// The workers were stopped before the job ran.
    Stopped,
    /// The job panicked.
    Panicked,
}

/// The queues, and whether they still take jobs.
#[derive(Default)]
struct Queues {
    /// Jobs a load waits for, in order.
    now: VecDeque<Job>,
    /// Jobs nobody waits for, run when `now` is empty.
    later: VecDeque<Job>,
    closed: bool,
}

/// The queues and the signal that a job (or the close) came.
#[derive(Default)]
struct Shared {
    queues: Mutex<Queues>,
    arrived: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        // A panic while held leaves plain queues behind: go on with them.
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next job, waited-for ones first; `None` once closed and empty.
    fn next(&self) -> Option<Job> {
        let mut queues = self.lock();
        loop {
            if let Some(job) = queues.now.pop_front().or_else(|| queues.later.pop_front()) {
                return Some(job);
            }
            if queues.closed {
                return None;
            }
            queues = self
                .arrived
                .wait(queues)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// A set of threads and their queues.
pub(crate) struct Workers {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queues = self.shared.lock();
        f.debug_struct("Workers")
            .field("now", &queues.now.len())
            .field("later", &queues.later.len())
            .finish_non_exhaustive()
    }
}

impl Workers {
    /// Starts `count` threads, the `i`th named `name(i)`.
    pub(crate) fn start(count: usize, name: impl Fn(usize) -> String) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let mut threads = Vec::with_capacity(count);
        for index in 0..count {
            let shared = Arc::clone(&shared);
            let thread = std::thread::Builder::new()
                .name(name(index))
                .spawn(move || {
                    while let Some(job) = shared.next() {
                        job();
                    }
                })?;
            threads.push(thread);
        }
        Ok(Self {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// Runs `job` on a worker thread and returns its result. Dropping the
    /// future before a thread takes the job skips it.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = Result<T, Unfinished>> + Send + 'static {
        let (reply, answer) = oneshot::channel();
        let queued = self.send(
            Box::new(move || {
                if reply.is_closed() {
                    return;
                }
                let out = std::panic::catch_unwind(AssertUnwindSafe(job))
                    .map_err(|_| Unfinished::Panicked);
                let _ = reply.send(out);
            }),
            false,
        );
        async move {
            if !queued {
                return Err(Unfinished::Stopped);
            }
            answer.await.unwrap_or(Err(Unfinished::Stopped))
        }
    }

    /// Runs `job` on a worker thread, in order with the jobs loads wait
    /// for (its own reply is the caller's business); returns whether it
    /// was queued. A panic of the job ends the job alone.
    #[cfg(feature = "disk-cache")]
    pub(crate) fn spawn(&self, job: impl FnOnce() + Send + 'static) -> bool {
        self.send(Self::caught(job), false)
    }

    /// Runs `job` on a worker thread when no job a load waits for is
    /// queued, nobody waiting for it; returns whether it was queued: not
    /// when the workers are stopped, nor when [`MAX_LATER_JOBS`] such jobs
    /// wait already. A panic of the job ends the job alone.
    #[cfg(any(feature = "shared-thumbnails", test))]
    pub(crate) fn spawn_later(&self, job: impl FnOnce() + Send + 'static) -> bool {
        self.send(Self::caught(job), true)
    }

    /// `job`, its panic caught and dropped.
    #[cfg(any(feature = "disk-cache", feature = "shared-thumbnails", test))]
    fn caught(job: impl FnOnce() + Send + 'static) -> Job {
        Box::new(move || {
            let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
        })
    }

    fn send(&self, job: Job, later: bool) -> bool {
        let mut queues = self.shared.lock();
        if queues.closed {
            return false;
        }
        if later {
            if queues.later.len() >= MAX_LATER_JOBS {
                return false;
            }
            queues.later.push_back(job);
        } else {
            queues.now.push_back(job);
        }
        drop(queues);
        self.shared.arrived.notify_one();
        true
    }
}

impl Drop for Workers {
    /// Closes the queues and waits at most [`PATIENCE`] in all for the
    /// threads to finish their jobs; a thread still busy then (a hung
    /// network share) is left to end on its own after its job.
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.arrived.notify_all();
        let threads =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        let deadline = Instant::now() + PATIENCE;
        for thread in threads {
            while !thread.is_finished() {
                if Instant::now() >= deadline {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_on_named_threads_and_panics_are_reported() {
        let workers = Workers::start(2, |i| format!("test-worker-{i}")).unwrap();
        let name = workers
            .run(|| std::thread::current().name().map(str::to_owned))
            .await
            .unwrap()
            .unwrap();
        assert!(name.starts_with("test-worker-"), "{name}");
        let panicked = workers.run(|| -> u32 { panic!("boom") }).await;
        assert_eq!(panicked, Err(Unfinished::Panicked));
        // The thread survived the panic.
        assert_eq!(workers.run(|| 7).await, Ok(7));
    }

    #[tokio::test]
    async fn a_job_whose_future_was_dropped_is_skipped() {
        let workers = Workers::start(1, |_| "test-worker".into()).unwrap();
        let (started, gate) = std::sync::mpsc::channel::<()>();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        // Hold the one thread until the second job's future is dropped.
        let first = workers.run(move || {
            let _ = started.send(());
            let _ = wait.recv();
        });
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let second = {
            let ran = Arc::clone(&ran);
            workers.run(move || ran.store(true, std::sync::atomic::Ordering::SeqCst))
        };
        gate.recv().unwrap();
        drop(second);
        release.send(()).unwrap();
        first.await.unwrap();
        assert_eq!(workers.run(|| ()).await, Ok(()));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[tokio::test]
    async fn jobs_nobody_waits_for_run_after_the_waited_for_ones_and_are_bounded() {
        let workers = Workers::start(1, |_| "test-worker".into()).unwrap();
        let (started, gate) = std::sync::mpsc::channel::<()>();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        // Hold the one thread while both queues fill.
        let first = workers.run(move || {
            let _ = started.send(());
            let _ = wait.recv();
        });
        gate.recv().unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let log = |name: String| {
            let order = Arc::clone(&order);
            move || order.lock().unwrap().push(name)
        };
        for n in 0..MAX_LATER_JOBS {
            assert!(workers.spawn_later(log(format!("write {n}"))));
        }
        assert!(
            !workers.spawn_later(log("one too many".into())),
            "the queue of later jobs is bounded"
        );
        let reads: Vec<_> = (0..3)
            .map(|n| workers.run(log(format!("read {n}"))))
            .collect();
        release.send(()).unwrap();
        first.await.unwrap();
        for read in reads {
            read.await.unwrap();
        }
        // The writes run once the reads are done: wait for them.
        let deadline = Instant::now() + Duration::from_secs(10);
        while order.lock().unwrap().len() < 3 + MAX_LATER_JOBS && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(order.len(), 3 + MAX_LATER_JOBS, "{order:?}");
        assert_eq!(order[..3], ["read 0", "read 1", "read 2"]);
        assert_eq!(order[3], "write 0");
        assert!(!order.contains(&"one too many".to_owned()));
    }
}
