//! Disk: the HTTP cache on disk, between the fetch stage and the network.
//!
//! Owns the cache directory, a [cacache] store: every body is a file named
//! by its SHA-256 and written by an atomic rename, and each index line
//! carries its own hash, so an entry is whole or absent even after a
//! crash, and two processes can share the directory. Every body read back
//! is checked against its hash and key; one that fails (flipped bits, a
//! truncated or missing file) is removed, counted, and fetched again. The
//! ledger keeps the directory within its byte budget by evicting the least
//! recently used entries (`ledger.rs`); the entries themselves are
//! `store.rs`. Beside the responses it may keep the thumbnails decoded
//! from them, served only while their response is on disk, unchanged and
//! fresh.
//!
//! Whether a response may be stored, and whether a stored one may be used
//! without asking the server, is decided by `http-cache-semantics` (as a
//! private cache: `private` responses are kept, `s-maxage` is not used);
//! the fetch stage sends its revalidation request and stores what comes
//! back.
//!
//! Run by the [`crate::HttpFetcher`]: every read, write and eviction
//! happens on its `thumbpipe-disk-N` threads (the opening scan on
//! `thumbpipe-disk-scan`, `scan.rs`), never on the I/O runtime or the UI
//! thread, and a read whose load was cancelled before a thread reached it
//! is skipped. A disk that fails (read-only, full, corrupt) costs only the
//! network: the failure is counted in [`DiskStats`] and the load fetches
//! the image. A disk that is slow or hangs costs a load at most
//! [`crate::Config::disk_read_timeout`], and then none until it answers
//! again; writes waiting for it hold copies of their bodies, at most
//! [`MAX_QUEUED_WRITE_BYTES`], never the fetch stage's body budget. The
//! threads end with the fetcher.
//!
//! Nothing in the directory is trusted (`layout.rs`): it may hold what a
//! crash, a bad disk, another release or another program left.
//!
//! [cacache]: https://docs.rs/cacache

mod layout;
mod ledger;
mod scan;
mod store;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_cache_semantics::{BeforeRequest, CacheOptions, CachePolicy};
use url::Url;

use crate::workers::Workers;
use crate::{BuildError, TargetSize, Thumbnail};
use store::{Store, WaitingThumbnail};

/// The disk cache's counters, a part of [`crate::Stats`] (all zero without
/// a disk cache).
///
/// A load with the disk cache on ends in exactly one of `thumbnail_hits`,
/// `hits`, `revalidated` and `misses`, or fails before (a network error).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiskStats {
    /// Images served from disk without the network: fresh by their HTTP
    /// headers.
    pub hits: u64,
    /// Thumbnails served from disk already decoded
    /// ([`crate::Config::disk_cache_thumbnails`]): made from a response
    /// still on disk and fresh, with no network and no decode.
    pub thumbnail_hits: u64,
    /// Images served from disk after the server answered `304 Not
    /// Modified` to a revalidation: a round trip, no image bytes.
    pub revalidated: u64,
    /// Images whose bytes came from the network: none on disk, a stale copy
    /// the server replaced, or a copy that could not be read.
    pub misses: u64,
    /// Responses and thumbnails written to disk.
    pub written: u64,
    /// Entries evicted to keep the directory within its budget.
    pub evicted: u64,
    /// Entries that failed their check when read (a changed, truncated or
    /// missing file, an unreadable index line): removed and fetched again.
    pub corrupt: u64,
    /// Disk operations that failed (a read-only or full disk, a permission
    /// error): the load went to the network instead.
    pub errors: u64,
    /// Disk reads that took longer than
    /// [`crate::Config::disk_read_timeout`]: the load went to the network.
    pub read_timeouts: u64,
    /// Loads that did not ask the disk because a read had timed out and
    /// no disk operation had finished since: they went to the network.
    pub reads_skipped: u64,
    /// Responses and thumbnails not written because the writes already
    /// waiting for the disk held 16 MiB of bodies (counted apart while the
    /// directory is being scanned).
    pub writes_skipped: u64,
    /// Gauge: bytes the cache's entries take, as its ledger counts them
    /// (content files and index lines).
    pub bytes: u64,
    /// Gauge: entries on disk, responses and thumbnails.
    pub entries: u64,
}

#[derive(Debug, Default)]
pub(crate) struct DiskCounters {
    hits: AtomicU64,
    thumbnail_hits: AtomicU64,
    revalidated: AtomicU64,
    misses: AtomicU64,
    written: AtomicU64,
    evicted: AtomicU64,
    corrupt: AtomicU64,
    errors: AtomicU64,
    read_timeouts: AtomicU64,
    reads_skipped: AtomicU64,
    writes_skipped: AtomicU64,
    bytes: AtomicU64,
    entries: AtomicU64,
}

impl DiskCounters {
    pub(crate) fn snapshot(&self) -> DiskStats {
        DiskStats {
            hits: self.hits.load(Relaxed),
            thumbnail_hits: self.thumbnail_hits.load(Relaxed),
            revalidated: self.revalidated.load(Relaxed),
            misses: self.misses.load(Relaxed),
            written: self.written.load(Relaxed),
            evicted: self.evicted.load(Relaxed),
            corrupt: self.corrupt.load(Relaxed),
            errors: self.errors.load(Relaxed),
            read_timeouts: self.read_timeouts.load(Relaxed),
            reads_skipped: self.reads_skipped.load(Relaxed),
            writes_skipped: self.writes_skipped.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            entries: self.entries.load(Relaxed),
        }
    }

    fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }

    fn set_usage(&self, bytes: u64, entries: u64) {
        self.bytes.store(bytes, Relaxed);
        self.entries.store(entries, Relaxed);
    }
}

/// A stored response's index entry: what the caching rules need, before
/// its body is read.
#[derive(Clone, Debug)]
pub(crate) struct Head {
    key: String,
    pub(crate) policy: CachePolicy,
    /// Bytes of the body.
    pub(crate) size: u64,
    integrity: cacache::Integrity,
    /// What the entry costs in the ledger.
    cost: u64,
}

/// Bytes of bodies that writes waiting for a disk thread may hold: past
/// it, a response or thumbnail is not written (a disk that cannot keep up
/// costs its entries, not memory).
pub(crate) const MAX_QUEUED_WRITE_BYTES: u64 = 16 * 1024 * 1024;

/// An HTTP cache in a directory, with a byte budget. Cloned fetchers share
/// it.
#[derive(Debug)]
pub(crate) struct DiskCache {
    store: Arc<Store>,
    threads: Workers,
    /// The opening scan's thread: idle once the scan is done, it ends with
    /// the cache.
    _scan: Workers,
    read_timeout: Duration,
    /// Bytes of bodies held by writes queued for the disk threads.
    queued_write_bytes: Arc<AtomicU64>,
}

/// How the policies are computed: a private cache of one user's client.
pub(crate) fn cache_options() -> CacheOptions {
    CacheOptions {
        shared: false,
        ..CacheOptions::default()
    }
}

/// The request the policies are computed for: a plain GET of `url`, as the
/// fetcher sends it. `None` for a URL `http` cannot represent, which is
/// then not cached.
pub(crate) fn request_parts(url: &Url) -> Option<http::request::Parts> {
    let request = http::Request::get(url.as_str()).body(()).ok()?;
    Some(request.into_parts().0)
}

/// The most seconds an `Age` header is read as: RFC 9111 (1.2.2) has a
/// cache read any larger delta-seconds as 2^31. http-cache-semantics adds
/// the header's value to the time a response has been kept, and a value
/// near `u64::MAX` overflows that sum (a panic in every later use of the
/// policy).
pub(crate) const MAX_AGE_SECONDS: u64 = 1 << 31;

/// A response's status and headers, for the policies: every policy is
/// made from these, so an `Age` past [`MAX_AGE_SECONDS`] is read as that
/// here, before the caching rules see it.
pub(crate) fn response_parts(
    status: http::StatusCode,
    headers: &http::HeaderMap,
) -> http::response::Parts {
    let mut response = http::Response::new(());
    *response.status_mut() = status;
    let mut headers = headers.clone();
    if headers
        .get_all(http::header::AGE)
        .iter()
        .any(|age| !sane_age(age.to_str().ok()))
    {
        headers.insert(http::header::AGE, http::HeaderValue::from(MAX_AGE_SECONDS));
    }
    *response.headers_mut() = headers;
    response.into_parts().0
}

/// Whether an `Age` value is one the caching rules can add to: not a
/// number (read as 0), or a number up to [`MAX_AGE_SECONDS`].
pub(crate) fn sane_age(value: Option<&str>) -> bool {
    value
        .and_then(|age| age.trim().parse::<u64>().ok())
        .is_none_or(|seconds| seconds <= MAX_AGE_SECONDS)
}

/// Whether a stored copy could ever save a download: it is fresh now, or
/// it can be revalidated (the server gave an `ETag` or `Last-Modified`).
fn reusable(policy: &CachePolicy, request: &http::request::Parts) -> bool {
    match policy.before_request(request, SystemTime::now()) {
        BeforeRequest::Fresh(_) => true,
        BeforeRequest::Stale { request, .. } => {
            request.headers.contains_key(http::header::IF_NONE_MATCH)
                || request
                    .headers
                    .contains_key(http::header::IF_MODIFIED_SINCE)
        }
    }
}

/// Removes a response's entry from the thumbnails' waiting list when its
/// write ends, however it ends.
struct WaitingGuard<'a> {
    store: &'a Store,
    key: &'a str,
}

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        self.store.waiting().remove(self.key);
    }
}

impl DiskCache {
    /// Opens (creating it if needed) the cache in `dir`, kept within
    /// `budget` bytes, with `threads` disk threads, whose reads a load
    /// waits for at most `read_timeout`. The directory is created and
    /// scanned on a thread of its own; a directory that cannot be used is
    /// counted in [`DiskStats::errors`], and loads go to the network. Fails
    /// if a thread cannot start, or if `dir` exists and belongs to another
    /// user.
    pub(crate) fn open(
        dir: std::path::PathBuf,
        budget: u64,
        threads: usize,
        read_timeout: Duration,
    ) -> Result<Self, BuildError> {
        check_owner(&dir)?;
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
            queued_write_bytes: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Runs `job` on a disk thread; `None` if it found nothing, panicked,
    /// the threads have stopped, or it did not answer within the read
    /// timeout. Dropping the future before a thread takes the job skips it.
    /// After a timeout, reads are skipped until a disk job finishes.
    fn read<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> Option<T> + Send + 'static,
    ) -> impl Future<Output = Option<T>> + Send + 'static {
        let store = Arc::clone(&self.store);
        let read = (!store.stalled.load(Relaxed)).then(|| {
            let answered = Arc::clone(&store);
            self.threads.run(move || {
                let found = job();
                answered.stalled.store(false, Relaxed);
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
                    store.stalled.store(true, Relaxed);
                    None
                }
            }
        }
    }

    /// Runs a write of `bytes` bytes of bodies on a disk thread, nobody
    /// waiting for it, unless the writes queued already hold
    /// [`MAX_QUEUED_WRITE_BYTES`]; returns whether it was queued.
    fn spawn_write(&self, bytes: usize, job: impl FnOnce(&Store) + Send + 'static) -> bool {
        let bytes = bytes as u64;
        let queued = self.queued_write_bytes.fetch_add(bytes, Relaxed);
        if bytes > 0 && queued > 0 && queued.saturating_add(bytes) > MAX_QUEUED_WRITE_BYTES {
            self.queued_write_bytes.fetch_sub(bytes, Relaxed);
            DiskCounters::add(&self.store.counters.writes_skipped);
            return false;
        }
        let (store, queue) = (
            Arc::clone(&self.store),
            Arc::clone(&self.queued_write_bytes),
        );
        let spawned = self.threads.spawn(move || {
            /// Gives the bytes back however the job ends.
            struct Done(Arc<AtomicU64>, u64);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.fetch_sub(self.1, Relaxed);
                }
            }
            let _done = Done(queue, bytes);
            job(&store);
            store.stalled.store(false, Relaxed);
        });
        if !spawned {
            self.queued_write_bytes.fetch_sub(bytes, Relaxed);
        }
        spawned
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
        self.read(move || {
            let thumbnail = store.read_thumbnail(&url, target);
            if thumbnail.is_some() {
                DiskCounters::add(&store.counters.thumbnail_hits);
            }
            thumbnail
        })
    }

    /// Stores `thumbnail`, decoded from `body`, for `url` and `target`, on
    /// a disk thread, if `body` is the response stored for `url`; one
    /// decoded before its response is written waits for that write. Nobody
    /// waits for it. The disk keeps a copy of `body`, so the fetch stage's
    /// body budget is given back when `body` is dropped, whatever the disk
    /// does; called on a decode thread, which makes the copy.
    pub(crate) fn store_thumbnail(
        &self,
        url: &Url,
        target: TargetSize,
        body: Bytes,
        thumbnail: Thumbnail,
    ) {
        let key = url.to_string();
        let body = Bytes::copy_from_slice(&body);
        if let Some(waiting) = self.store.waiting().get_mut(&key) {
            waiting.push(WaitingThumbnail {
                target,
                body,
                made: thumbnail,
            });
            return;
        }
        let bytes = body.len() + thumbnail.pixels.len();
        self.spawn_write(bytes, move |store| {
            store.write_thumbnail(&key, target, &body, &thumbnail);
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
        let key = url.to_string();
        let worth_keeping = policy.is_storable() && reusable(&policy, request);
        if !worth_keeping {
            return self.remove(url);
        }
        let body = Bytes::copy_from_slice(body);
        // Thumbnails decoded from this body before it is written wait for
        // it: they are kept only beside their response.
        self.store.waiting().entry(key.clone()).or_default();
        let waiting_key = key.clone();
        let queued = self.spawn_write(body.len(), move |store| {
            let guard = WaitingGuard { store, key: &key };
            store.write(key.clone(), policy, body);
            let thumbnails = store.waiting().remove(&key).unwrap_or_default();
            drop(guard);
            for thumbnail in thumbnails {
                store.write_thumbnail(&key, thumbnail.target, &thumbnail.body, &thumbnail.made);
            }
        });
        if !queued {
            // Not written: any older copy would now be wrong.
            self.store.waiting().remove(&waiting_key);
            self.remove(url);
        }
    }

    /// Stores the policy of a `304 Not Modified` for `head`'s entry, on a
    /// disk thread. Nobody waits for it.
    pub(crate) fn refresh(&self, policy: CachePolicy, head: &Head) {
        let head = head.clone();
        self.spawn_write(0, move |store| store.refresh(&head, policy));
    }

    /// Removes the entry for `url`, on a disk thread. Thumbnails decoded
    /// from the body meanwhile are not kept. A removal is always queued:
    /// it holds no body, and a copy that may not be used must go.
    pub(crate) fn remove(&self, url: &Url) {
        let key = url.to_string();
        self.store.waiting().entry(key.clone()).or_default();
        self.spawn_write(0, move |store| {
            let _guard = WaitingGuard { store, key: &key };
            store.forget(&key);
        });
    }
}

/// Refuses a cache directory that exists and belongs to another user: it
/// could have been made first by someone else (in a shared temporary
/// directory, say), to read what this user's app loads or to plant images
/// for its URLs. One of this user's that others may write to is made
/// theirs no more (0700). On Unix, this user is the owner of
/// `/proc/self` (Linux), or else of a file this process creates in the
/// directory; elsewhere, nothing is checked. A stat or two on the
/// builder's thread, when the pipeline is built.
fn check_owner(dir: &std::path::Path) -> Result<(), BuildError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let Ok(metadata) = std::fs::metadata(dir) else {
            // Created, for this user alone, by the scan.
            return Ok(());
        };
        let me = std::fs::metadata("/proc/self")
            .map(|proc| proc.uid())
            .or_else(|_| {
                let probe = dir.join(format!(".thumbpipe-owner-{}", std::process::id()));
                let created = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&probe)
                    .and_then(|file| file.metadata());
                let _ = std::fs::remove_file(&probe);
                created.map(|file| file.uid())
            });
        // Without a way to tell, a directory that cannot be written to is
        // counted as such when used.
        let Ok(me) = me else { return Ok(()) };
        if me != metadata.uid() {
            return Err(BuildError::Config(format!(
                "disk_cache_dir '{}' belongs to another user (uid {}): use a directory of \
                 your own, such as the platform's cache directory for your app",
                dir.display(),
                metadata.uid()
            )));
        }
        if metadata.is_dir() && metadata.permissions().mode() & 0o077 != 0 {
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(headers: &[(&'static str, &'static str)]) -> (CachePolicy, http::request::Parts) {
        let url = Url::parse("http://images.example/1.jpg").unwrap();
        let request = request_parts(&url).unwrap();
        let mut map = http::HeaderMap::new();
        for (name, value) in headers {
            map.insert(
                http::header::HeaderName::from_static(name),
                http::HeaderValue::from_static(value),
            );
        }
        let response = response_parts(http::StatusCode::OK, &map);
        let policy =
            CachePolicy::new_options(&request, &response, SystemTime::now(), cache_options());
        (policy, request)
    }

    fn kept(headers: &[(&'static str, &'static str)]) -> bool {
        let (policy, request) = policy(headers);
        policy.is_storable() && reusable(&policy, &request)
    }

    const ETAG: (&str, &str) = ("etag", "\"v1\"");

    #[test]
    fn what_is_written_follows_the_caching_headers() {
        assert!(kept(&[("cache-control", "max-age=60")]));
        // A private cache keeps what a shared one may not.
        assert!(kept(&[("cache-control", "private, max-age=60")]));
        assert!(!kept(&[("cache-control", "no-store"), ETAG]));
        // Kept, to be revalidated every time.
        assert!(kept(&[("cache-control", "no-cache"), ETAG]));
        assert!(kept(&[("cache-control", "max-age=0"), ETAG]));
        // Stale at once and nothing to revalidate with: no use on disk.
        assert!(!kept(&[("cache-control", "no-cache")]));
        assert!(!kept(&[]));
    }

    #[test]
    fn no_cache_is_always_revalidated_with_its_etag() {
        let (policy, request) = policy(&[("cache-control", "no-cache"), ETAG]);
        match policy.before_request(&request, SystemTime::now()) {
            BeforeRequest::Stale { request, .. } => {
                assert_eq!(request.headers[http::header::IF_NONE_MATCH], "\"v1\"");
            }
            BeforeRequest::Fresh(_) => panic!("no-cache was used without asking"),
        }
    }

    /// Regression: disk reads had no deadline, and each held a fetch slot:
    /// a cache directory on a mount that stopped answering stopped every
    /// load. Now a load waits at most `disk_read_timeout` for the disk,
    /// and once a read has timed out the others do not ask it: 100 rows
    /// all load from the server.
    #[test]
    fn a_disk_that_hangs_costs_one_wait_not_the_loads() {
        let server = fixture_server::FixtureServer::start_dedicated(fixture_server::Config {
            latency: std::time::Duration::from_millis(20),
            ..fixture_server::Config::default()
        })
        .unwrap();
        let dir = std::env::temp_dir().join(format!("thumbpipe-hung-disk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let config = crate::Config {
            disk_cache_dir: Some(dir.clone()),
            disk_read_timeout: Duration::from_millis(100),
            ..crate::Config::default()
        };
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let fetcher = {
            let _entered = runtime.enter();
            crate::HttpFetcher::new(&config).unwrap()
        };
        let disk = fetcher.disk_cache().unwrap();
        disk.hang(true);
        let mut pipeline = crate::Pipeline::<usize>::builder()
            .config(config.clone())
            .fetcher(fetcher.clone())
            .build()
            .unwrap();
        let started = std::time::Instant::now();
        for row in 0..100 {
            let url = format!("{}?w=64&h=64", server.image_url(row as u32));
            pipeline.request(row, &url, TargetSize::square(32), crate::Priority::Visible);
        }
        let mut done = Vec::new();
        while done.len() < 100 && started.elapsed() < Duration::from_secs(60) {
            done.extend(pipeline.drain());
            std::thread::sleep(Duration::from_millis(5));
        }
        let took = started.elapsed();
        let stats = fetcher.disk_stats().unwrap();
        eprintln!("100 rows over a hung disk: {took:?}, {stats:?}");
        assert_eq!(done.len(), 100, "{stats:?}");
        assert!(done.iter().all(|c| c.result.is_ok()));
        // Every load asked the disk once or skipped it; only those that
        // asked before the first answer was due waited.
        assert_eq!(stats.read_timeouts + stats.reads_skipped, 100, "{stats:?}");
        assert!(
            stats.read_timeouts <= config.max_fetches_in_flight as u64,
            "{stats:?}"
        );
        assert_eq!(stats.misses, 100);
        disk.hang(false);
        drop(pipeline);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_policy_survives_the_index_round_trip() {
        let (policy, request) = policy(&[("cache-control", "max-age=600"), ETAG]);
        let stored = serde_json::to_value(&policy).unwrap();
        let back: CachePolicy = serde_json::from_value(stored).unwrap();
        assert!(matches!(
            back.before_request(&request, SystemTime::now()),
            BeforeRequest::Fresh(_)
        ));
    }
}
