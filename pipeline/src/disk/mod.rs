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
//! happens on its `thumbpipe-disk-N` threads, never on the I/O runtime or
//! the UI thread, and a read whose load was cancelled before a thread
//! reached it is skipped. A disk that fails (read-only, full, corrupt)
//! costs only the network: the failure is counted in [`DiskStats`] and
//! the load fetches the image. The threads end with the fetcher.
//!
//! [cacache]: https://docs.rs/cacache

mod ledger;
mod store;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::SystemTime;

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

/// An HTTP cache in a directory, with a byte budget. Cloned fetchers share
/// it.
#[derive(Debug)]
pub(crate) struct DiskCache {
    store: Arc<Store>,
    threads: Workers,
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

/// A response's status and headers, for the policies.
pub(crate) fn response_parts(
    status: http::StatusCode,
    headers: &http::HeaderMap,
) -> http::response::Parts {
    let mut response = http::Response::new(());
    *response.status_mut() = status;
    *response.headers_mut() = headers.clone();
    response.into_parts().0
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
    /// `budget` bytes, with `threads` disk threads. The directory is
    /// created and scanned on a disk thread; a directory that cannot be
    /// used is counted in [`DiskStats::errors`], and loads go to the
    /// network. Fails only if a thread cannot start.
    pub(crate) fn open(
        dir: std::path::PathBuf,
        budget: u64,
        threads: usize,
    ) -> Result<Self, BuildError> {
        let threads = Workers::start(threads, |i| format!("thumbpipe-disk-{i}"))
            .map_err(|e| BuildError::Config(format!("cannot start the disk threads: {e}")))?;
        let store = Arc::new(Store::new(dir, budget));
        let scanning = Arc::clone(&store);
        threads.spawn(move || scanning.scan());
        Ok(Self { store, threads })
    }

    /// Runs `job` on a disk thread; `None` if it found nothing, panicked
    /// or the threads have stopped. Dropping the future before a thread
    /// takes the job skips it.
    fn read<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> Option<T> + Send + 'static,
    ) -> impl Future<Output = Option<T>> + Send + 'static {
        let read = self.threads.run(job);
        async move { read.await.ok().flatten() }
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
    /// waits for it.
    pub(crate) fn store_thumbnail(
        &self,
        url: &Url,
        target: TargetSize,
        body: Bytes,
        thumbnail: Thumbnail,
    ) {
        let store = Arc::clone(&self.store);
        let key = url.to_string();
        if let Some(waiting) = store.waiting().get_mut(&key) {
            waiting.push(WaitingThumbnail {
                target,
                body,
                made: thumbnail,
            });
            return;
        }
        self.threads
            .spawn(move || store.write_thumbnail(&key, target, &body, &thumbnail));
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
    /// copy. Nobody waits for it.
    pub(crate) fn store(
        &self,
        url: &Url,
        request: &http::request::Parts,
        policy: CachePolicy,
        body: Bytes,
    ) {
        let store = Arc::clone(&self.store);
        let key = url.to_string();
        let worth_keeping = policy.is_storable() && reusable(&policy, request);
        // Thumbnails decoded from this body before it is written wait for
        // it: they are kept only beside their response.
        store.waiting().entry(key.clone()).or_default();
        self.threads.spawn(move || {
            let guard = WaitingGuard {
                store: &store,
                key: &key,
            };
            if worth_keeping {
                store.write(key.clone(), policy, body);
            } else {
                store.forget(&key);
            }
            let thumbnails = store.waiting().remove(&key).unwrap_or_default();
            drop(guard);
            if worth_keeping {
                for thumbnail in thumbnails {
                    store.write_thumbnail(&key, thumbnail.target, &thumbnail.body, &thumbnail.made);
                }
            }
        });
    }

    /// Stores the policy of a `304 Not Modified` for `head`'s entry, on a
    /// disk thread. Nobody waits for it.
    pub(crate) fn refresh(&self, policy: CachePolicy, head: &Head) {
        let (store, head) = (Arc::clone(&self.store), head.clone());
        self.threads.spawn(move || store.refresh(&head, policy));
    }

    /// Removes the entry for `url`, on a disk thread. Thumbnails decoded
    /// from the body meanwhile are not kept.
    pub(crate) fn remove(&self, url: &Url) {
        let store = Arc::clone(&self.store);
        let key = url.to_string();
        store.waiting().entry(key.clone()).or_default();
        self.threads.spawn(move || {
            let _guard = WaitingGuard {
                store: &store,
                key: &key,
            };
            store.forget(&key);
        });
    }
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
