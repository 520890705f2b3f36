//! Lanes: the order of the disk's writes.
//!
//! Every operation the fetch and decode stages ask for on a URL's entries
//! (its response written, refreshed or removed, a thumbnail made from it
//! written) joins the lane of that URL, and a lane's operations run one at
//! a time, in the order they were asked for, on whichever disk thread is
//! free; lanes of different URLs run side by side. So a removal asked for
//! after a write is never undone by it, and a thumbnail is written after
//! the response it was decoded from. (Removals the disk decides itself, of
//! an entry a read found corrupt and of eviction victims, run where they
//! are found: they name the entry they remove, `store::Which`.) The bodies
//! that queued writes hold are counted and bounded
//! ([`super::MAX_QUEUED_WRITE_BYTES`]).
//!
//! Called from the fetch stage's tasks and the decode threads, which never
//! wait for a lane; run on the `thumbpipe-disk-N` threads. A lane ends when
//! its last operation has run, and all end with the disk threads.

use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::store::Store;
use crate::workers::Workers;

type Job = Box<dyn FnOnce(&Store) + Send>;

/// An operation waiting in its lane, and the bytes of body it holds (given
/// back when it is dropped, whether it ran or not).
struct Queued {
    job: Job,
    _held: Held,
}

struct Held {
    total: Arc<AtomicU64>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Relaxed);
    }
}

/// The lanes of the URLs that have operations queued or running.
#[derive(Default)]
pub(super) struct Lanes {
    /// By URL: the operations waiting behind the one running. A URL is here
    /// exactly while one of its operations is queued for or on a thread.
    waiting: Mutex<HashMap<String, VecDeque<Queued>>>,
    /// Bytes of bodies held by the queued operations.
    held: Arc<AtomicU64>,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes")
            .field("urls", &self.lock().len())
            .field("held", &self.held.load(Relaxed))
            .finish()
    }
}

impl Lanes {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, VecDeque<Queued>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes of bodies the queued operations hold.
    #[cfg(test)]
    fn held(&self) -> u64 {
        self.held.load(Relaxed)
    }

    /// Queues `job`, which holds `bytes` bytes of body, in `url`'s lane,
    /// unless the operations queued already hold `limit` bytes (one is
    /// always let through, however large, and one that holds nothing
    /// always is). Returns whether it was queued: `false` also once the
    /// threads have stopped.
    pub(super) fn push(
        self: &Arc<Self>,
        threads: &Workers,
        store: &Arc<Store>,
        url: String,
        bytes: usize,
        limit: u64,
        job: impl FnOnce(&Store) + Send + 'static,
    ) -> bool {
        let bytes = bytes as u64;
        let admitted = self.held.fetch_update(Relaxed, Relaxed, |before| {
            let past = bytes > 0 && before > 0 && before.saturating_add(bytes) > limit;
            (!past).then(|| before.saturating_add(bytes))
        });
        if admitted.is_err() {
            return false;
        }
        let queued = Queued {
            job: Box::new(job),
            _held: Held {
                total: Arc::clone(&self.held),
                bytes,
            },
        };
        {
            let mut lanes = self.lock();
            if let Some(lane) = lanes.get_mut(&url) {
                lane.push_back(queued);
                return true;
            }
            lanes.insert(url.clone(), VecDeque::new());
        }
        let (lanes, store) = (Arc::clone(self), Arc::clone(store));
        let lane = url.clone();
        if threads.spawn(move || lanes.run(&store, &lane, queued)) {
            return true;
        }
        // Stopped: nothing will run what joined the lane meanwhile either.
        self.lock().remove(&url);
        false
    }

    /// Runs `first`, then the operations that joined `url`'s lane behind
    /// it, until the lane is empty.
    fn run(&self, store: &Store, url: &str, first: Queued) {
        let mut next = Some(first);
        while let Some(Queued { job, _held }) = next {
            // One that panics ends alone: the lane goes on.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(store)));
            drop(_held);
            let mut lanes = self.lock();
            next = lanes.get_mut(url).and_then(VecDeque::pop_front);
            if next.is_none() {
                lanes.remove(url);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn store() -> Arc<Store> {
        Arc::new(Store::new(std::env::temp_dir().join("thumbpipe-lanes"), 1))
    }

    #[test]
    fn a_urls_operations_run_in_the_order_asked_on_any_number_of_threads() {
        let threads = Workers::start(4, |i| format!("lanes-test-{i}")).unwrap();
        let (lanes, store) = (Arc::new(Lanes::default()), store());
        let (done, order) = mpsc::channel();
        for step in 0..200 {
            let url = format!("http://x/{}", step % 3);
            let done = done.clone();
            assert!(
                lanes.push(&threads, &store, url.clone(), 0, u64::MAX, move |_| {
                    // The earlier ones are slowed down, so a later one would
                    // overtake them on another thread if it could.
                    if step % 2 == 0 {
                        std::thread::sleep(std::time::Duration::from_micros(300));
                    }
                    done.send((url, step)).unwrap();
                })
            );
        }
        drop(done);
        let ran: Vec<(String, usize)> = order.iter().collect();
        assert_eq!(ran.len(), 200);
        for lane in 0..3 {
            let steps: Vec<usize> = ran
                .iter()
                .filter(|(url, _)| *url == format!("http://x/{lane}"))
                .map(|(_, step)| *step)
                .collect();
            let asked: Vec<usize> = (0..200).filter(|step| step % 3 == lane).collect();
            assert_eq!(steps, asked, "lane {lane}");
        }
        drop(threads);
        assert_eq!(lanes.lock().len(), 0, "an empty lane is removed");
    }

    #[test]
    fn bodies_past_the_limit_are_refused_and_given_back_when_run() {
        let threads = Workers::start(1, |_| "lanes-test-limit".to_owned()).unwrap();
        let (lanes, store) = (Arc::new(Lanes::default()), store());
        let (release, blocked) = mpsc::channel::<()>();
        let url = "http://x/1".to_owned();
        assert!(
            lanes.push(&threads, &store, url.clone(), 60, 100, move |_| {
                let _ = blocked.recv();
            })
        );
        // The first held 60: 40 more fit, 41 do not; a removal always does.
        assert!(!lanes.push(&threads, &store, url.clone(), 41, 100, |_| {}));
        assert!(lanes.push(&threads, &store, url.clone(), 40, 100, |_| {}));
        assert!(lanes.push(&threads, &store, url.clone(), 0, 100, |_| {}));
        assert_eq!(lanes.held(), 100);
        // One that panics gives its bytes back and leaves the lane going.
        assert!(
            lanes.push(&threads, &store, "http://x/2".into(), 0, 100, |_| {
                panic!("a disk job that fails")
            })
        );
        release.send(()).unwrap();
        drop(threads);
        assert_eq!(lanes.held(), 0);
        assert_eq!(lanes.lock().len(), 0);
    }
}
