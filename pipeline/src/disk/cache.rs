//! The cache itself: [`DiskCache`], the handle the layer and the thumbnail
//! tier share, which queues every read, write and eviction on the disk
//! threads in its URL's lane and counts what happened. Made by
//! [`DiskTier::open`](super::DiskTier); its threads end when the last handle
//! is dropped.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_cache_semantics::CachePolicy;
use url::Url;

use super::lanes::Lanes;
use super::policy::reusable;
use super::stats::DiskCounters;
use super::store::Store;
use crate::error::BuildError;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;
use crate::workers::Workers;

/// A stored response's index entry: what the caching rules need, before
/// its body is read.
#[derive(Clone, Debug)]
pub(crate) struct Head {
    pub(super) key: String,
    pub(crate) policy: CachePolicy,
    /// Bytes of the body.
    pub(crate) size: u64,
    pub(super) integrity: cacache::Integrity,
    /// When its index line was written.
    pub(super) time: u128,
    /// What the entry costs in the ledger.
    pub(super) cost: u64,
}

/// Bytes of bodies that writes waiting for a disk thread may hold: past
/// it, a response or thumbnail is not written (a disk that cannot keep up
/// costs its entries, not memory).
pub(crate) const MAX_QUEUED_WRITE_BYTES: u64 = 16 * 1024 * 1024;

/// An HTTP cache in a directory, with a byte budget, owned by its
/// [`DiskTier`](super::DiskTier).
#[derive(Debug)]
pub(crate) struct DiskCache {
    store: Arc<Store>,
    threads: Workers,
    /// The opening scan's thread: idle once the scan is done, it ends with
    /// the cache.
    _scan: Workers,
    read_timeout: Duration,
    /// The writes, refreshes and removals queued, in a lane per URL.
    lanes: Arc<Lanes>,
}

impl DiskCache {
    /// Opens (creating it if needed) the cache in `dir`, kept within
    /// `budget` bytes, with `threads` disk threads, whose reads a load
    /// waits for at most `read_timeout`. The directory is created and
    /// scanned on a thread of its own; a directory that cannot be used is
    /// counted in [`DiskStats::errors`], and loads go to the network. Fails
    /// if a thread cannot start, or if `dir` exists and belongs to another
    /// user (a stat or two, on the caller's thread).
    pub(crate) fn open(
        dir: std::path::PathBuf,
        budget: u64,
        threads: usize,
        read_timeout: Duration,
    ) -> Result<Self, BuildError> {
        super::scan::check_owner(&dir)?;
        let cannot_start =
            |e: std::io::Error| BuildError::Config(format!("cannot start the disk threads: {e}"));
        let threads =
            Workers::start(threads, |i| format!("thumbpipe-disk-{i}")).map_err(cannot_start)?;
        let scan = Workers::start(1, |_| "thumbpipe-disk-scan".to_owned()).map_err(cannot_start)?;
        let store = Arc::new(Store::new(dir, budget));
        let scanning = Arc::clone(&store);
        scan.spawn(move || scanning.scan());
        Ok(Self {
            store,
            threads,
            _scan: scan,
            read_timeout,
            lanes: Arc::new(Lanes::default()),
        })
    }

    /// Runs `job` on a disk thread; `None` if it found nothing, panicked,
    /// the threads have stopped, the disk is stalled, or it did not answer
    /// within the read timeout. Dropping the future before a thread takes
    /// the job skips it.
    fn read<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> Option<T> + Send + 'static,
    ) -> impl Future<Output = Option<T>> + Send + 'static {
        let store = Arc::clone(&self.store);
        let read = store.stall.may_read().then(|| {
            let answered = Arc::clone(&store);
            self.threads.run(move || {
                let found = job();
                answered.answered();
                found
            })
        });
        let timeout = self.read_timeout;
        async move {
            let Some(read) = read else {
                DiskCounters::add(&store.counters.reads_skipped);
                return None;
            };
            match tokio::time::timeout(timeout, read).await {
                Ok(found) => found.ok().flatten(),
                Err(_) => {
                    DiskCounters::add(&store.counters.read_timeouts);
                    store.stall.timed_out();
                    None
                }
            }
        }
    }

    /// Queues an operation on the entries of the URL `key` that holds
    /// `bytes` bytes of bodies, in that URL's lane, nobody waiting for it,
    /// unless the writes queued already hold [`MAX_QUEUED_WRITE_BYTES`]
    /// (counted as skipped); returns whether it was queued.
    fn queue(&self, key: String, bytes: usize, job: impl FnOnce(&Store) + Send + 'static) -> bool {
        let queued = self.lanes.push(
            &self.threads,
            &self.store,
            key,
            bytes,
            MAX_QUEUED_WRITE_BYTES,
            job,
        );
        if !queued && bytes > 0 {
            DiskCounters::add(&self.store.counters.writes_skipped);
        }
        queued
    }

    /// Tests: makes every disk read block until called with `false`.
    #[cfg(test)]
    pub(crate) fn hang(&self, hung: bool) {
        *self
            .store
            .hang
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = hung;
        self.store.hang.1.notify_all();
    }

    /// Tests: as if a read had just missed its deadline and its job would
    /// never report back.
    #[cfg(test)]
    pub(crate) fn stall(&self) {
        self.store.stall.timed_out();
    }

    pub(crate) fn counters(&self) -> Arc<DiskCounters> {
        Arc::clone(&self.store.counters)
    }

    /// The index entry of the response stored for `url`, if its body is
    /// within `max_bytes`. Read on a disk thread; dropping the future
    /// before the read starts skips it.
    pub(crate) fn head(
        &self,
        url: &Url,
        max_bytes: u64,
    ) -> impl Future<Output = Option<Head>> + Send + 'static {
        let store = Arc::clone(&self.store);
        let key = url.to_string();
        self.read(move || store.read_head(&key, max_bytes))
    }

    /// The body of `head`'s entry, checked; `None` if it could not be read
    /// (a corrupt one is removed and counted). Read on a disk thread;
    /// dropping the future before the read starts skips it.
    pub(crate) fn body(
        &self,
        head: &Head,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send + 'static {
        let (store, head) = (Arc::clone(&self.store), head.clone());
        self.read(move || store.read_body(&head))
    }

    /// The decoded thumbnail of `url` for `target`, if one was stored
    /// from the response on disk and that response is still fresh. Read on
    /// a disk thread; dropping the future before the read starts skips it.
    pub(crate) fn lookup_thumbnail(
        &self,
        url: &Url,
        target: TargetSize,
    ) -> impl Future<Output = Option<Thumbnail>> + Send + 'static {
        let store = Arc::clone(&self.store);
        let url = url.clone();
        let counters = self.counters();
        let read = self.read(move || store.read_thumbnail(&url, target));
        async move {
            // Counted once the load has it: one that came too late went
            // to the network.
            let thumbnail = read.await;
            if thumbnail.is_some() {
                DiskCounters::add(&counters.thumbnail_hits);
            }
            thumbnail
        }
    }

    /// Stores `thumbnail`, decoded from `body`, for `url` and `target`, on
    /// a disk thread, after any write of `url`'s response asked for
    /// before, if `body` is then the response stored for `url`. Nobody
    /// waits for it. The disk keeps a copy of `body`, so the fetch stage's
    /// body budget is given back when `body` is dropped, whatever the disk
    /// does; called on a decode thread, which makes the copy.
    pub(crate) fn store_thumbnail(
        &self,
        url: &Url,
        target: TargetSize,
        body: &[u8],
        thumbnail: Thumbnail,
    ) {
        let key = url.to_string();
        let body = Bytes::copy_from_slice(body);
        let bytes = body.len() + thumbnail.pixels.len();
        self.queue(key.clone(), bytes, move |store| {
            store.write_thumbnail(key, target, body, thumbnail);
        });
    }

    pub(crate) fn count_hit(&self) {
        DiskCounters::add(&self.store.counters.hits);
    }

    pub(crate) fn count_revalidated(&self) {
        DiskCounters::add(&self.store.counters.revalidated);
    }

    pub(crate) fn count_miss(&self) {
        DiskCounters::add(&self.store.counters.misses);
    }

    /// Writes `body` under `url` with `policy`, on a disk thread, if the
    /// policy lets it be stored and reused; otherwise removes any older
    /// copy. Nobody waits for it. The disk keeps a copy of `body`, so the
    /// fetch stage's body budget is given back when `body` is dropped.
    pub(crate) fn store(
        &self,
        url: &Url,
        request: &http::request::Parts,
        policy: CachePolicy,
        body: &Bytes,
    ) {
        let worth_keeping = policy.is_storable() && reusable(&policy, request);
        if !worth_keeping {
            return self.remove(url);
        }
        let key = url.to_string();
        let body = Bytes::copy_from_slice(body);
        let queued = self.queue(key.clone(), body.len(), move |store| {
            store.write(key, policy, body);
        });
        if !queued {
            // Not written: any older copy would now be wrong.
            self.remove(url);
        }
    }

    /// Stores the policy of a `304 Not Modified` for `head`'s entry, on a
    /// disk thread. Nobody waits for it.
    pub(crate) fn refresh(&self, policy: CachePolicy, head: &Head) {
        let head = head.clone();
        self.queue(head.key.clone(), 0, move |store| {
            store.refresh(&head, policy)
        });
    }

    /// Removes the entry for `url`, on a disk thread, after the operations
    /// on it asked for before; a thumbnail asked for after it finds no
    /// response to be kept beside. A removal holds no body: it is always
    /// queued, while the disk threads run.
    pub(crate) fn remove(&self, url: &Url) {
        let key = url.to_string();
        self.queue(key.clone(), 0, move |store| store.forget(&key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::{DiskStats, DiskTier, policy, stall};

    /// A pipeline over a disk cache in a new scratch directory, with the
    /// cache's layer at hand. It keeps no thumbnails: every load reads a
    /// response's head.
    struct Rig<K> {
        pipeline: crate::pipeline::Pipeline<K>,
        tier: Arc<DiskTier>,
        dir: std::path::PathBuf,
        _runtime: tokio::runtime::Runtime,
    }

    impl<K> Rig<K> {
        fn new(name: &str, config: crate::config::Config) -> Self {
            let dir = policy::scratch(name);
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let fetcher = {
                let _entered = runtime.enter();
                crate::fetch::HttpFetcher::new(&config.fetch).unwrap()
            };
            let tier =
                Arc::new(DiskTier::open(Arc::new(fetcher), dir.clone(), &config.disk).unwrap());
            let pipeline = crate::pipeline::Pipeline::builder()
                .config(config)
                .fetcher(Arc::clone(&tier))
                .build()
                .unwrap();
            Self {
                pipeline,
                tier,
                dir,
                _runtime: runtime,
            }
        }

        fn disk(&self) -> &DiskCache {
            self.tier.disk()
        }

        fn stats(&self) -> DiskStats {
            self.tier.stats()()
        }
    }

    /// Regression: disk reads had no deadline, and each held a fetch slot:
    /// a cache directory on a mount that stopped answering stopped every
    /// load. Now a load waits at most `disk.read_timeout` for the disk,
    /// and once a read has timed out the others do not ask it: 100 rows
    /// all load from the server.
    #[test]
    fn a_disk_that_hangs_costs_one_wait_not_the_loads() {
        let server = fixture_server::FixtureServer::start_dedicated(fixture_server::Config {
            latency: std::time::Duration::from_millis(20),
            ..fixture_server::Config::default()
        })
        .unwrap();
        let mut config = crate::config::Config::default();
        config.disk.read_timeout = Duration::from_millis(100);
        let mut rig = Rig::<usize>::new("hung-disk", config.clone());
        rig.disk().hang(true);
        let started = std::time::Instant::now();
        for row in 0..100 {
            let url = format!("{}?w=64&h=64", server.image_url(row as u32));
            rig.pipeline.request(
                row,
                &url,
                TargetSize::square(32),
                crate::request::Priority::Visible,
            );
        }
        let mut done = Vec::new();
        while done.len() < 100 && started.elapsed() < Duration::from_secs(60) {
            done.extend(rig.pipeline.drain());
            std::thread::sleep(Duration::from_millis(5));
        }
        let took = started.elapsed();
        let stats = rig.stats();
        eprintln!("100 rows over a hung disk: {took:?}, {stats:?}");
        assert_eq!(done.len(), 100, "{stats:?}");
        assert!(done.iter().all(|c| c.result.is_ok()));
        // Every load asked the disk once or skipped it; only those that
        // asked before the first answer was due waited.
        assert_eq!(stats.read_timeouts + stats.reads_skipped, 100, "{stats:?}");
        assert!(
            stats.read_timeouts <= config.fetch.max_in_flight as u64,
            "{stats:?}"
        );
        assert_eq!(stats.misses, 100);
        rig.disk().hang(false);
        let Rig { pipeline, dir, .. } = rig;
        drop(pipeline);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Regression: after a read had timed out, loads skipped the disk
    /// until some disk operation finished. Offline none does (no response
    /// comes to be written), so when the late read never reported back (a
    /// read that panicked), the disk was never asked again and every load
    /// failed, with the image on disk. Now one load a second asks it.
    #[test]
    fn a_stalled_disk_is_asked_again_while_offline() {
        let server = fixture_server::FixtureServer::start_dedicated(fixture_server::Config {
            latency: Duration::ZERO,
            max_age: Some(Duration::from_secs(600)),
            ..fixture_server::Config::default()
        })
        .unwrap();
        let url = format!("{}?w=64&h=64", server.image_url(1));
        let Rig {
            mut pipeline,
            tier,
            dir,
            _runtime,
        } = Rig::<u32>::new("stalled-disk", crate::config::Config::default());
        let stats = tier.stats();
        // Each load asks for another size, so that the memory cache does
        // not answer it.
        let mut load = |row: u32| {
            pipeline.request(
                row,
                &url,
                TargetSize::square(16 + row),
                crate::request::Priority::Visible,
            );
            let started = std::time::Instant::now();
            loop {
                if let Some(done) = pipeline.drain().pop() {
                    return done.result;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "row {row} never ended"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        assert!(load(0).is_ok());
        let started = std::time::Instant::now();
        while stats().written == 0 {
            assert!(started.elapsed() < Duration::from_secs(10), "never written");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(server);
        tier.disk().stall();
        assert!(load(1).is_err(), "offline, and the disk is skipped");
        std::thread::sleep(stall::PROBE_EVERY);
        let loaded = load(2);
        let stats = stats();
        assert!(loaded.is_ok(), "{loaded:?} {stats:?}");
        assert_eq!(stats.hits, 1, "{stats:?}");
        drop(pipeline);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
