//! Disk: the HTTP cache on disk, between the fetch stage and the network.
//!
//! Owns the cache directory, a [cacache] store: every body is a file named
//! by its SHA-256 and written by an atomic rename, and the index is
//! append-only, each line carrying its own hash, so an entry is whole or
//! absent even after a crash, and two processes can share the directory.
//! Every body read back is checked against its hash; one that fails
//! (flipped bits, a truncated or missing file) is removed, counted, and
//! fetched again. The ledger keeps the directory within its byte budget by
//! evicting the least recently used entries.
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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_cache_semantics::{BeforeRequest, CacheOptions, CachePolicy};
use url::Url;

use crate::workers::Workers;
use crate::{BuildError, TargetSize, Thumbnail};
use ledger::Ledger;

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
    /// (bodies and index lines).
    pub bytes: u64,
    /// Gauge: entries on disk.
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
}

/// A response read back from disk: its caching policy and its body.
#[derive(Debug)]
pub(crate) struct Stored {
    pub(crate) policy: CachePolicy,
    pub(crate) body: Vec<u8>,
}

/// What the index stores beside a body.
#[derive(serde::Serialize, serde::Deserialize)]
struct Envelope {
    /// The layout of this record; another is read as a miss.
    version: u32,
    policy: CachePolicy,
}

const ENVELOPE_VERSION: u32 = 1;

/// What the index stores beside a thumbnail's pixels.
#[derive(serde::Serialize, serde::Deserialize)]
struct ThumbnailEnvelope {
    /// How the thumbnail was made: another value is read as a miss, so a
    /// release that decodes differently does not serve old thumbnails.
    version: u32,
    width: u32,
    height: u32,
    /// The integrity (SHA-256) of the response it was made from.
    original: String,
}

const THUMBNAIL_VERSION: u32 = 1;

/// The index key of `url`'s thumbnail for `target`; a response's key is
/// its URL.
fn thumbnail_key(url: &Url, target: TargetSize) -> String {
    format!(
        "thumbnail/v{THUMBNAIL_VERSION} {}x{} {url}",
        target.width, target.height
    )
}

/// Bytes an index line costs beyond its key and policy: the line's hash
/// and the entry's other fields (207 to 210 bytes in cacache 13's lines),
/// rounded up so that the ledger never counts less than the directory
/// holds.
const INDEX_LINE_OVERHEAD: u64 = 256;

/// The shared state of the disk threads.
#[derive(Debug)]
struct Store {
    dir: PathBuf,
    budget: u64,
    ledger: Mutex<Ledger>,
    /// Writes asked for while the entries already on disk are not yet in
    /// the ledger (which could not keep the budget without them): done
    /// when the scan ends. `None` once it has.
    deferred: Mutex<Option<Vec<Deferred>>>,
    /// Thumbnails waiting for the write of the response they were decoded
    /// from, by its key: written after it.
    waiting: Mutex<HashMap<String, Vec<WaitingThumbnail>>>,
    counters: Arc<DiskCounters>,
}

#[derive(Debug)]
struct WaitingThumbnail {
    target: TargetSize,
    body: Bytes,
    made: Thumbnail,
}

/// A write waiting for the scan.
#[derive(Debug)]
struct Deferred {
    key: String,
    policy: CachePolicy,
    body: Bytes,
}

/// How old a file in cacache's `tmp` directory must be to be removed when
/// the cache opens: a write that old was cut off (its process killed), not
/// one under way in another process.
const ABANDONED_AFTER: Duration = Duration::from_secs(60);

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

impl DiskCache {
    /// Opens (creating it if needed) the cache in `dir`, kept within
    /// `budget` bytes, with `threads` disk threads. The directory is
    /// created and scanned on a disk thread; a directory that cannot be
    /// used is counted in [`DiskStats::errors`], and loads go to the
    /// network. Fails only if a thread cannot start.
    pub(crate) fn open(dir: PathBuf, budget: u64, threads: usize) -> Result<Self, BuildError> {
        let threads = Workers::start(threads, |i| format!("thumbpipe-disk-{i}"))
            .map_err(|e| BuildError::Config(format!("cannot start the disk threads: {e}")))?;
        let store = Arc::new(Store {
            dir,
            budget,
            ledger: Mutex::new(Ledger::default()),
            deferred: Mutex::new(Some(Vec::new())),
            waiting: Mutex::new(HashMap::new()),
            counters: Arc::new(DiskCounters::default()),
        });
        let scanning = Arc::clone(&store);
        threads.spawn(move || scanning.scan());
        Ok(Self { store, threads })
    }

    pub(crate) fn counters(&self) -> Arc<DiskCounters> {
        Arc::clone(&self.store.counters)
    }

    /// The stored response for `url`, checked, if there is one within
    /// `max_bytes`. Read on a disk thread; dropping the future before the
    /// read starts skips it.
    pub(crate) fn lookup(
        &self,
        url: &Url,
        max_bytes: u64,
    ) -> impl Future<Output = Option<Stored>> + Send + 'static {
        let store = Arc::clone(&self.store);
        let key = url.to_string();
        let read = self.threads.run(move || store.read(&key, max_bytes));
        async move { read.await.ok().flatten() }
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
        let read = self.threads.run(move || {
            let thumbnail = store.read_thumbnail(&url, target);
            if thumbnail.is_some() {
                DiskCounters::add(&store.counters.thumbnail_hits);
            }
            thumbnail
        });
        async move { read.await.ok().flatten() }
    }

    /// Stores `thumbnail`, decoded from `body`, for `url` and `target`, on
    /// a disk thread, if `body` is the response stored for `url`. Nobody
    /// waits for it.
    pub(crate) fn store_thumbnail(
        &self,
        url: Arc<str>,
        target: TargetSize,
        body: Bytes,
        thumbnail: Thumbnail,
    ) {
        let store = Arc::clone(&self.store);
        if let Some(waiting) = store.waiting().get_mut(&*url) {
            waiting.push(WaitingThumbnail {
                target,
                body,
                made: thumbnail,
            });
            return;
        }
        self.threads
            .spawn(move || store.write_thumbnail(&url, target, &body, &thumbnail));
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
        // it (they are kept only beside their response).
        store.waiting().entry(key.clone()).or_default();
        self.threads.spawn(move || {
            if worth_keeping {
                store.write(key.clone(), policy, body);
            } else {
                store.forget(&key);
            }
            let thumbnails = store.waiting().remove(&key).unwrap_or_default();
            if worth_keeping {
                for thumbnail in thumbnails {
                    store.write_thumbnail(&key, thumbnail.target, &thumbnail.body, &thumbnail.made);
                }
            }
        });
    }

    /// Replaces the policy stored for `url` after a `304 Not Modified`, on
    /// a disk thread. Nobody waits for it.
    pub(crate) fn refresh(&self, url: &Url, policy: CachePolicy, body_size: usize) {
        let store = Arc::clone(&self.store);
        let key = url.to_string();
        self.threads
            .spawn(move || store.refresh(&key, &policy, body_size));
    }

    /// Removes the entry for `url`, on a disk thread.
    pub(crate) fn remove(&self, url: &Url) {
        let store = Arc::clone(&self.store);
        let key = url.to_string();
        self.threads.spawn(move || store.forget(&key));
    }
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

impl Store {
    /// Counts a disk operation that failed; the load goes to the network.
    fn failed(&self) {
        DiskCounters::add(&self.counters.errors);
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<WaitingThumbnail>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates the directory and adds what it holds to the ledger, then
    /// evicts down to the budget (it may have shrunk since the last run)
    /// and removes the temporary files of writes cut off by a crash.
    fn scan(&self) {
        if std::fs::create_dir_all(&self.dir).is_ok() {
            self.remove_abandoned_writes();
            self.add_found_entries();
        } else {
            self.failed();
        }
        let deferred = self
            .deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        for write in deferred.unwrap_or_default() {
            self.write(write.key, write.policy, write.body);
        }
    }

    fn add_found_entries(&self) {
        let mut found = Vec::new();
        for entry in cacache::list_sync(&self.dir) {
            match entry {
                Ok(entry) => {
                    let line = serde_json::to_string(&entry.metadata).map_or(0, |m| m.len());
                    let cost = entry.size as u64 + line_cost(&entry.key, line);
                    found.push((entry.time, entry.key, cost));
                }
                // A new cache has no index directory yet.
                Err(cacache::Error::IoError(error, _))
                    if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => self.failed(),
            }
        }
        found.sort_unstable();
        let found = found
            .into_iter()
            .map(|(_, key, cost)| (key, cost))
            .collect();
        self.ledger().merge_found(found);
        self.evict(None);
    }

    fn remove_abandoned_writes(&self) {
        let Ok(files) = std::fs::read_dir(self.dir.join("tmp")) else {
            return;
        };
        let now = SystemTime::now();
        for file in files.flatten() {
            let abandoned = file
                .metadata()
                .and_then(|metadata| metadata.modified())
                .is_ok_and(|modified| {
                    now.duration_since(modified)
                        .is_ok_and(|age| age > ABANDONED_AFTER)
                });
            if abandoned {
                let _ = std::fs::remove_file(file.path());
            }
        }
    }

    /// Reads and checks `key`'s entry. A corrupt one is removed.
    fn read(&self, key: &str, max_bytes: u64) -> Option<Stored> {
        let entry = match cacache::metadata_sync(&self.dir, key) {
            Ok(Some(entry)) => entry,
            Ok(None) => return None,
            Err(_) => {
                self.failed();
                return None;
            }
        };
        if entry.size as u64 > max_bytes {
            return None;
        }
        let envelope = serde_json::from_value::<Envelope>(entry.metadata)
            .ok()
            .filter(|envelope| envelope.version == ENVELOPE_VERSION);
        let Some(envelope) = envelope else {
            self.discard_corrupt(key);
            return None;
        };
        match cacache::read_hash_sync(&self.dir, &entry.integrity) {
            Ok(body) if body.len() == entry.size => {
                let line = serde_json::to_string(&envelope).map_or(0, |m| m.len());
                let cost = body.len() as u64 + line_cost(key, line);
                self.ledger().touch(key, cost);
                Some(Stored {
                    policy: envelope.policy,
                    body,
                })
            }
            Err(cacache::Error::IoError(error, _))
                if error.kind() != std::io::ErrorKind::NotFound =>
            {
                self.failed();
                None
            }
            // A hash or size that does not match, or a body file gone.
            Ok(_) | Err(_) => {
                self.discard_corrupt(key);
                None
            }
        }
    }

    fn discard_corrupt(&self, key: &str) {
        DiskCounters::add(&self.counters.corrupt);
        self.forget(key);
    }

    /// Makes room for `body` and its policy (evicting the least recently
    /// used entries), then writes them under `key`, so that the entries on
    /// disk never add up to more than the budget, and the files being
    /// written are within it. A write asked for during the scan waits for
    /// its end; a body larger than the whole budget is not written.
    fn write(&self, key: String, policy: CachePolicy, body: Bytes) {
        if let Some(deferred) = self
            .deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            deferred.push(Deferred { key, policy, body });
            return;
        }
        let envelope = Envelope {
            version: ENVELOPE_VERSION,
            policy,
        };
        match serde_json::to_value(&envelope) {
            Ok(metadata) => self.put(&key, metadata, &body),
            Err(_) => self.failed(),
        }
    }

    /// Writes `bytes` with `metadata` under `key`, having made room for
    /// them first; too large for the whole budget, they are not written
    /// (and an older entry under `key` is removed).
    fn put(&self, key: &str, metadata: serde_json::Value, bytes: &[u8]) {
        let line = metadata.to_string().len();
        let cost = bytes.len() as u64 + line_cost(key, line);
        if cost > self.budget {
            return self.forget(key);
        }
        self.ledger().remove(key);
        self.evict_for(cost, Some(key));
        self.ledger().used(key, cost);
        let written = cacache::WriteOpts::new()
            .metadata(metadata)
            .size(bytes.len())
            .open_sync(&self.dir, key)
            .and_then(|mut writer| {
                std::io::Write::write_all(&mut writer, bytes)
                    .map_err(|e| cacache::Error::IoError(e, "writing".into()))?;
                writer.commit()
            });
        match written {
            Ok(_) => DiskCounters::add(&self.counters.written),
            Err(_) => {
                self.failed();
                self.ledger().remove(key);
            }
        }
        self.publish();
    }

    /// The thumbnail of `url` for `target` made from the response stored
    /// for `url`, if that response is still fresh and unchanged. A
    /// thumbnail whose response has changed or gone is removed.
    fn read_thumbnail(&self, url: &Url, target: TargetSize) -> Option<Thumbnail> {
        let key = thumbnail_key(url, target);
        let entry = match cacache::metadata_sync(&self.dir, &key) {
            Ok(Some(entry)) => entry,
            Ok(None) => return None,
            Err(_) => {
                self.failed();
                return None;
            }
        };
        let made = serde_json::from_value::<ThumbnailEnvelope>(entry.metadata)
            .ok()
            .filter(|made| made.version == THUMBNAIL_VERSION);
        let Some(made) = made else {
            self.discard_corrupt(&key);
            return None;
        };
        let original = match cacache::metadata_sync(&self.dir, url.as_str()) {
            Ok(Some(original)) => original,
            Ok(None) => {
                self.forget(&key);
                return None;
            }
            Err(_) => {
                self.failed();
                return None;
            }
        };
        if original.integrity.to_string() != made.original {
            self.forget(&key);
            return None;
        }
        let fresh = serde_json::from_value::<Envelope>(original.metadata)
            .ok()
            .zip(request_parts(url))
            .is_some_and(|(stored, request)| {
                matches!(
                    stored.policy.before_request(&request, SystemTime::now()),
                    BeforeRequest::Fresh(_)
                )
            });
        if !fresh {
            return None;
        }
        let expected = made.width as usize * made.height as usize * 4;
        match cacache::read_hash_sync(&self.dir, &entry.integrity) {
            Ok(pixels) if pixels.len() == expected && entry.size == expected => {
                let mut ledger = self.ledger();
                let cost = line_cost(&key, 0) + expected as u64;
                // The response too: the thumbnail is no use without it.
                ledger.touch(url.as_str(), original.size as u64);
                ledger.touch(&key, cost);
                Some(Thumbnail {
                    url: Arc::from(url.as_str()),
                    width: made.width,
                    height: made.height,
                    pixels: Arc::from(pixels),
                })
            }
            Err(cacache::Error::IoError(error, _))
                if error.kind() != std::io::ErrorKind::NotFound =>
            {
                self.failed();
                None
            }
            Ok(_) | Err(_) => {
                self.discard_corrupt(&key);
                None
            }
        }
    }

    /// Writes `thumbnail`, made from `body`, if `body` is the response
    /// stored for `url` now. Not while the cache is being scanned.
    fn write_thumbnail(&self, url: &str, target: TargetSize, body: &[u8], thumbnail: &Thumbnail) {
        let scanning = self
            .deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        if scanning {
            return;
        }
        let Ok(Some(original)) = cacache::metadata_sync(&self.dir, url) else {
            return;
        };
        if original.integrity.check(body).is_err() {
            return;
        }
        let Ok(url) = Url::parse(url) else {
            return;
        };
        let key = thumbnail_key(&url, target);
        let original_integrity = original.integrity.to_string();
        // Already there (a stale response revalidated and decoded again).
        let kept = cacache::metadata_sync(&self.dir, &key)
            .ok()
            .flatten()
            .and_then(|entry| serde_json::from_value::<ThumbnailEnvelope>(entry.metadata).ok())
            .is_some_and(|made| {
                made.version == THUMBNAIL_VERSION
                    && made.original == original_integrity
                    && (made.width, made.height) == (thumbnail.width, thumbnail.height)
            });
        if kept {
            return;
        }
        let made = ThumbnailEnvelope {
            version: THUMBNAIL_VERSION,
            width: thumbnail.width,
            height: thumbnail.height,
            original: original_integrity,
        };
        match serde_json::to_value(&made) {
            Ok(metadata) => self.put(&key, metadata, &thumbnail.pixels),
            Err(_) => self.failed(),
        }
    }

    /// Stores `policy` for `key`'s body, which is unchanged (a 304).
    fn refresh(&self, key: &str, policy: &CachePolicy, body_size: usize) {
        let Ok(Some(entry)) = cacache::metadata_sync(&self.dir, key) else {
            return;
        };
        if entry.size != body_size {
            return;
        }
        let envelope = Envelope {
            version: ENVELOPE_VERSION,
            policy: policy.clone(),
        };
        let Ok(metadata) = serde_json::to_value(&envelope) else {
            return;
        };
        let extra = line_cost(key, metadata.to_string().len());
        self.evict_for(extra, Some(key));
        self.ledger().grow(key, extra);
        let options = cacache::WriteOpts::new()
            .integrity(entry.integrity)
            .size(entry.size)
            .metadata(metadata);
        if cacache::index::insert(&self.dir, key, options).is_err() {
            self.failed();
        }
        self.publish();
    }

    /// Removes `key`'s entry, if any, from disk and the ledger.
    fn forget(&self, key: &str) {
        self.ledger().remove(key);
        if remove_entry(&self.dir, key).is_err() {
            self.failed();
        }
        self.publish();
    }

    /// Evicts the least recently used entries, other than `keep`, while
    /// the ledger is over the budget.
    fn evict(&self, keep: Option<&str>) {
        self.evict_for(0, keep);
    }

    /// Evicts the least recently used entries, other than `keep`, until
    /// `room` more bytes fit in the budget.
    fn evict_for(&self, room: u64, keep: Option<&str>) {
        loop {
            let victim = {
                let mut ledger = self.ledger();
                if ledger.total() + room <= self.budget {
                    break;
                }
                match ledger.pop_oldest(keep) {
                    Some(victim) => victim,
                    None => break,
                }
            };
            match remove_entry(&self.dir, &victim) {
                Ok(()) => DiskCounters::add(&self.counters.evicted),
                Err(_) => self.failed(),
            }
        }
        self.publish();
    }

    fn publish(&self) {
        let (bytes, entries) = {
            let ledger = self.ledger();
            (ledger.total(), ledger.len() as u64)
        };
        self.counters.bytes.store(bytes, Relaxed);
        self.counters.entries.store(entries, Relaxed);
    }
}

/// The bytes an index line for `key` with `metadata_len` bytes of policy
/// costs.
fn line_cost(key: &str, metadata_len: usize) -> u64 {
    (key.len() + metadata_len) as u64 + INDEX_LINE_OVERHEAD
}

/// Removes `key`'s body and index from `dir`; an entry already gone, in
/// part or whole, is fine. The index is marked first, so that the entry is
/// absent for every reader even if a file cannot be removed.
fn remove_entry(dir: &Path, key: &str) -> cacache::Result<()> {
    let Some(entry) = cacache::metadata_sync(dir, key)? else {
        return Ok(());
    };
    cacache::index::delete(dir, key)?;
    missing_is_fine(cacache::remove_hash_sync(dir, &entry.integrity))?;
    // With the entry marked deleted, this removes only its index file.
    missing_is_fine(
        cacache::RemoveOpts::new()
            .remove_fully(true)
            .remove_sync(dir, key),
    )
}

fn missing_is_fine(result: cacache::Result<()>) -> cacache::Result<()> {
    match result {
        Err(cacache::Error::IoError(error, _)) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(())
        }
        other => other,
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
        let envelope = Envelope {
            version: ENVELOPE_VERSION,
            policy,
        };
        let stored = serde_json::to_value(&envelope).unwrap();
        let back: Envelope = serde_json::from_value(stored).unwrap();
        assert!(matches!(
            back.policy.before_request(&request, SystemTime::now()),
            BeforeRequest::Fresh(_)
        ));
    }
}
