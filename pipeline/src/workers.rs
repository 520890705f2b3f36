//! Blocking workers: a few named threads for the stages whose work blocks
//! on the file system (`file://` reads, the disk cache), fed by one queue.
//!
//! Owned by the stage that starts them. A job sent with
//! [`Workers::run`] is skipped if its future was dropped before a thread
//! reached it, so a cancelled load costs no disk time; a panic in a job
//! costs that job, not the thread. The threads end when the owner drops
//! its `Workers`: the queue closes, the jobs still queued run (or are
//! skipped), and the drop waits a bounded time for them.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// How long dropping the workers waits for their threads to finish.
const PATIENCE: Duration = Duration::from_millis(500);

type Job = Box<dyn FnOnce() + Send>;

/// Why a job sent with [`Workers::run`] returned nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unfinished {
    /// The workers were stopped before the job ran.
    Stopped,
    /// The job panicked.
    Panicked,
}

/// A set of threads and their queue.
#[derive(Debug)]
pub(crate) struct Workers {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Workers {
    /// Starts `count` threads, the `i`th named `name(i)`.
    pub(crate) fn start(count: usize, name: impl Fn(usize) -> String) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let mut threads = Vec::with_capacity(count);
        for index in 0..count {
            let queue = Arc::clone(&queue);
            let thread = std::thread::Builder::new()
                .name(name(index))
                .spawn(move || {
                    loop {
                        // The lock is held while waiting, by one idle thread
                        // at a time; a job runs after it is released.
                        let job = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        match job {
                            Ok(job) => job(),
                            Err(mpsc::RecvError) => break,
                        }
                    }
                })?;
            threads.push(thread);
        }
        Ok(Self {
            jobs: Mutex::new(Some(jobs)),
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
        let queued = self.spawn(move || {
            if reply.is_closed() {
                return;
            }
            let out =
                std::panic::catch_unwind(AssertUnwindSafe(job)).map_err(|_| Unfinished::Panicked);
            let _ = reply.send(out);
        });
        async move {
            if !queued {
                return Err(Unfinished::Stopped);
            }
            answer.await.unwrap_or(Err(Unfinished::Stopped))
        }
    }

    /// Runs `job` on a worker thread, nobody waiting for it; returns
    /// whether it was queued. A panic of the job ends the job alone.
    pub(crate) fn spawn(&self, job: impl FnOnce() + Send + 'static) -> bool {
        self.send(Box::new(move || {
            let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
        }))
    }

    fn send(&self, job: Job) -> bool {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok())
    }
}

impl Drop for Workers {
    /// Closes the queue and waits at most [`PATIENCE`] in all for the
    /// threads to finish their jobs; a thread still busy then (a hung
    /// network share) is left to end on its own after its job.
    fn drop(&mut self) {
        drop(
            self.jobs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
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
}
