//! The store: the cache directory's entries, read, written and evicted on
//! the disk threads.
//!
//! Owned by the [`super::DiskCache`] and its jobs (an `Arc`); every method
//! blocks on the file system and runs on a `thumbpipe-disk-N` thread. An
//! entry is a cacache index line (its key, its body's SHA-256, and an
//! envelope: the response's caching policy, or how a thumbnail was made)
//! and a content file. Every content file begins with its key, so no two
//! keys share one (cacache names files by their hash: two URLs with the
//! same bytes, a default avatar, would otherwise share a file, and evicting
//! one would take the other's), and a file read back is checked against
//! the key asked for as well as its hash. Each key has one index line: a
//! rewrite or a refresh replaces it. cacache writes the entries; they are
//! read back through `layout.rs`, which trusts nothing in the directory.
//! The opening scan is `scan.rs`.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use bytes::Bytes;
use http_cache_semantics::{BeforeRequest, CachePolicy};
use url::Url;

use super::layout::{self, Unreadable};
use super::ledger::Ledger;
use super::{DiskCounters, Head, request_parts, sane_age};
use crate::{TargetSize, Thumbnail};

/// What the index stores beside a response's body.
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
    /// The integrity (SHA-256) of the response's content file it was made
    /// from.
    original: String,
}

const THUMBNAIL_VERSION: u32 = 1;

/// Bytes an index line costs beyond its key and envelope: the line's hash
/// and the entry's other fields (207 to 210 bytes in cacache 13's lines),
/// rounded up so that the ledger never counts less than the directory
/// holds.
const INDEX_LINE_OVERHEAD: u64 = 256;

/// The shared state of the disk threads.
#[derive(Debug)]
pub(super) struct Store {
    pub(super) dir: PathBuf,
    pub(super) budget: u64,
    ledger: Mutex<Ledger>,
    /// Operations that change an entry (writes, refreshes, removals),
    /// asked for while the entries already on disk are not yet in the
    /// ledger (which could not keep the budget without them): done in the
    /// order they were asked for, when the scan ends. `None` once it has.
    pub(super) deferred: Mutex<Option<Vec<Deferred>>>,
    /// Thumbnails waiting for the write of the response they were decoded
    /// from, by its key: written after it.
    waiting: Mutex<HashMap<String, Vec<WaitingThumbnail>>>,
    /// Keys being written, refreshed or removed: one such operation per
    /// key at a time, so that two threads never interleave on one entry.
    busy: Mutex<HashSet<String>>,
    free: Condvar,
    /// Set when a read took longer than its deadline, cleared when a disk
    /// job finishes: while it is set, loads do not ask the disk.
    pub(super) stalled: AtomicBool,
    pub(super) counters: Arc<DiskCounters>,
    /// Tests: while set, every read blocks, as on a disk that hangs.
    #[cfg(test)]
    pub(super) hang: (Mutex<bool>, Condvar),
}

/// A key held by one operation; released when dropped.
struct KeyHold<'a> {
    store: &'a Store,
    key: String,
}

impl Drop for KeyHold<'_> {
    fn drop(&mut self) {
        let mut busy = self
            .store
            .busy
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        busy.remove(&self.key);
        self.store.free.notify_all();
    }
}

/// An operation on an entry waiting for the scan. (A policy is half a
/// kilobyte: boxed, so that a removal is not as large.)
#[derive(Debug)]
pub(super) enum Deferred {
    Write {
        key: String,
        policy: Box<CachePolicy>,
        body: Bytes,
    },
    Refresh {
        head: Box<Head>,
        policy: Box<CachePolicy>,
    },
    Forget(String),
}

impl Deferred {
    /// Bytes of body it holds.
    pub(super) fn held(&self) -> usize {
        match self {
            Self::Write { body, .. } => body.len(),
            Self::Refresh { .. } | Self::Forget(_) => 0,
        }
    }
}

/// A thumbnail waiting for its response's write.
#[derive(Debug)]
pub(super) struct WaitingThumbnail {
    pub(super) target: TargetSize,
    pub(super) body: Bytes,
    pub(super) made: Thumbnail,
}

/// The index key of `url`'s thumbnail for `target`; a response's key is
/// its URL.
fn thumbnail_key(url: &str, target: TargetSize) -> String {
    format!(
        "thumbnail/v{THUMBNAIL_VERSION} {}x{} {url}",
        target.width, target.height
    )
}

/// `bytes` as stored under `key`: the key's length (4 bytes, little
/// endian), the key, the bytes.
fn frame(key: &str, bytes: &[u8]) -> Vec<u8> {
    let mut framed = Vec::with_capacity(4 + key.len() + bytes.len());
    framed.extend_from_slice(&(key.len() as u32).to_le_bytes());
    framed.extend_from_slice(key.as_bytes());
    framed.extend_from_slice(bytes);
    framed
}

fn frame_len(key: &str) -> usize {
    4 + key.len()
}

/// The bytes of a content file stored under `key`, or `None` if it was
/// stored under another.
fn unframe(key: &str, mut framed: Vec<u8>) -> Option<Vec<u8>> {
    let stored_len = u32::from_le_bytes(framed.get(..4)?.try_into().ok()?) as usize;
    if stored_len != key.len() || framed.get(4..frame_len(key))? != key.as_bytes() {
        return None;
    }
    framed.drain(..frame_len(key));
    Some(framed)
}

/// The caching policy stored in a response's index entry under `key`, if
/// it is in this release's layout and the caching rules can use it: its
/// `Age` is within [`super::MAX_AGE_SECONDS`] (as every policy this cache writes
/// is, `response_parts` sees to it) and asking it whether it is fresh does
/// not panic. An index line is read from a directory anyone with access to
/// it may have written.
fn stored_policy(key: &str, metadata: serde_json::Value) -> Option<CachePolicy> {
    // Every `Age` header, whatever the case of its name (the policy's
    // loader lowercases names, so `AGE` would be read as `age`).
    let sane = match metadata.pointer("/policy/res") {
        None => true,
        Some(serde_json::Value::Object(headers)) => headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("age"))
            .all(|(_, value)| match value {
                serde_json::Value::String(age) => sane_age(Some(age)),
                serde_json::Value::Array(ages) => ages.iter().all(|age| sane_age(age.as_str())),
                _ => false,
            }),
        Some(_) => false,
    };
    if !sane {
        return None;
    }
    let envelope = serde_json::from_value::<Envelope>(metadata)
        .ok()
        .filter(|envelope| envelope.version == ENVELOPE_VERSION)?;
    let request = request_parts(&Url::parse(key).ok()?)?;
    let policy = envelope.policy;
    let usable = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let now = SystemTime::now();
        let _ = policy.before_request(&request, now);
        policy.time_to_live(now)
    }));
    usable.is_ok().then_some(policy)
}

/// What `entry` costs in the ledger: its content file and its index line.
pub(super) fn entry_cost(entry: &cacache::Metadata) -> u64 {
    let envelope = serde_json::to_string(&entry.metadata).map_or(0, |m| m.len());
    (entry.size as u64).saturating_add(line_cost(&entry.key, envelope))
}

/// The bytes an index line for `key` with `envelope_len` bytes of envelope
/// costs.
fn line_cost(key: &str, envelope_len: usize) -> u64 {
    (key.len() as u64)
        .saturating_add(envelope_len as u64)
        .saturating_add(INDEX_LINE_OVERHEAD)
}

/// Removes `key`'s content file and index; an entry already gone, in part
/// or whole, is fine. The index is marked first, so that the entry is
/// absent for every reader even if a file cannot be removed. A bucket no
/// reader can use (a link, a FIFO, too large) is removed whatever it
/// holds.
fn remove_entry(dir: &Path, key: &str) -> std::io::Result<()> {
    match layout::find(dir, key) {
        Ok(None) | Err(Unreadable::Missing) => {}
        Ok(Some(entry)) => {
            cacache::index::delete(dir, key).map_err(std::io::Error::other)?;
            missing_is_fine(layout::remove_content(dir, &entry.integrity))?;
        }
        Err(Unreadable::Corrupt) => {}
        Err(Unreadable::Failed) => return Err(std::io::ErrorKind::PermissionDenied.into()),
    }
    missing_is_fine(std::fs::remove_file(layout::bucket_path(dir, key)))
}

pub(super) fn missing_is_fine(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

impl Store {
    pub(super) fn new(dir: PathBuf, budget: u64) -> Self {
        Self {
            dir,
            budget,
            ledger: Mutex::new(Ledger::default()),
            deferred: Mutex::new(Some(Vec::new())),
            waiting: Mutex::new(HashMap::new()),
            busy: Mutex::new(HashSet::new()),
            free: Condvar::new(),
            stalled: AtomicBool::new(false),
            counters: Arc::new(DiskCounters::default()),
            #[cfg(test)]
            hang: (Mutex::new(false), Condvar::new()),
        }
    }

    /// Tests: blocks while [`Store::hang`] is set.
    fn wait_while_hung(&self) {
        #[cfg(test)]
        {
            let mut hung = self.hang.0.lock().unwrap_or_else(PoisonError::into_inner);
            while *hung {
                hung = self
                    .hang
                    .1
                    .wait(hung)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }

    /// Counts a disk operation that failed; the load goes to the network.
    pub(super) fn failed(&self) {
        DiskCounters::add(&self.counters.errors);
    }

    /// Waits until no other operation holds `key`, and holds it.
    fn hold(&self, key: &str) -> KeyHold<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        while busy.contains(key) {
            busy = self.free.wait(busy).unwrap_or_else(PoisonError::into_inner);
        }
        busy.insert(key.to_owned());
        KeyHold {
            store: self,
            key: key.to_owned(),
        }
    }

    pub(super) fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn waiting(&self) -> MutexGuard<'_, HashMap<String, Vec<WaitingThumbnail>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The index entry of the response stored under `key`, if its body is
    /// within `max_bytes`. An entry that cannot be read is removed.
    pub(super) fn read_head(&self, key: &str, max_bytes: u64) -> Option<Head> {
        self.wait_while_hung();
        let entry = self.entry(key)?;
        let size = entry.size.checked_sub(frame_len(key))? as u64;
        if size > max_bytes {
            return None;
        }
        let cost = entry_cost(&entry);
        let Some(policy) = stored_policy(key, entry.metadata) else {
            self.discard_corrupt(key);
            return None;
        };
        Some(Head {
            key: key.to_owned(),
            policy,
            size,
            integrity: entry.integrity,
            cost,
        })
    }

    /// The body of `head`'s entry, checked against its hash and key. One
    /// that fails is removed, unless the entry was rewritten meanwhile.
    pub(super) fn read_body(&self, head: &Head) -> Option<Vec<u8>> {
        self.wait_while_hung();
        let framed_len = head.size.saturating_add(frame_len(&head.key) as u64);
        let body = layout::read_content(&self.dir, &head.integrity, framed_len)
            .map(|framed| unframe(&head.key, framed));
        match body {
            Ok(Some(body)) => {
                self.ledger().touch(&head.key, head.cost);
                Some(body)
            }
            Err(Unreadable::Failed) => {
                self.failed();
                None
            }
            // A hash, size or key that does not match, or a file gone:
            // corrupt, unless the entry was removed or rewritten meanwhile.
            _ => {
                let unchanged = layout::find(&self.dir, &head.key)
                    .ok()
                    .flatten()
                    .is_some_and(|entry| entry.integrity == head.integrity);
                if unchanged {
                    self.discard_corrupt(&head.key);
                }
                None
            }
        }
    }

    pub(super) fn discard_corrupt(&self, key: &str) {
        DiskCounters::add(&self.counters.corrupt);
        self.forget(key);
    }

    /// Writes `body` and its policy under `key`; asked for during the
    /// scan, at its end.
    pub(super) fn write(&self, key: String, policy: CachePolicy, body: Bytes) {
        let write = Deferred::Write {
            key,
            policy: Box::new(policy),
            body,
        };
        if let Some(Deferred::Write { key, policy, body }) = self.after_scan(write) {
            self.write_now(key, *policy, body);
        }
    }

    /// Runs `operation` now, or queues it behind the scan while the scan
    /// runs (writes up to [`super::scan::DEFERRED_LIMIT`] bytes of bodies;
    /// past it, a write is dropped).
    fn after_scan(&self, operation: Deferred) -> Option<Deferred> {
        let mut deferred = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(queue) = deferred.as_mut() else {
            return Some(operation);
        };
        let held: usize = queue.iter().map(Deferred::held).sum();
        if held.saturating_add(operation.held()) <= super::scan::DEFERRED_LIMIT {
            queue.push(operation);
        } else {
            DiskCounters::add(&self.counters.writes_skipped);
        }
        None
    }

    /// Does an operation the scan held back.
    pub(super) fn apply(&self, operation: Deferred) {
        match operation {
            Deferred::Write { key, policy, body } => self.write_now(key, *policy, body),
            Deferred::Refresh { head, policy } => self.refresh_now(&head, *policy),
            Deferred::Forget(key) => self.forget_now(&key),
        }
    }

    fn write_now(&self, key: String, policy: CachePolicy, body: Bytes) {
        let envelope = Envelope {
            version: ENVELOPE_VERSION,
            policy,
        };
        match serde_json::to_value(&envelope) {
            Ok(metadata) => self.put(&key, metadata, &body),
            Err(_) => self.failed(),
        }
    }

    /// Writes `bytes` with `metadata` under `key`, in place of what was
    /// there, having made room for them first: the ledger's entries never
    /// add up to more than the budget, and the files on disk are theirs,
    /// the one being written, and the victims being removed. Bytes too
    /// large for the whole budget are not written.
    fn put(&self, key: &str, metadata: serde_json::Value, bytes: &[u8]) {
        let _hold = self.hold(key);
        let framed = frame(key, bytes);
        let cost = (framed.len() as u64).saturating_add(line_cost(key, metadata.to_string().len()));
        if cost > self.budget {
            return self.remove_held(key);
        }
        self.make_room(key, cost);
        // The old entry's file (its content is its own: the key is in it)
        // and index line.
        if remove_entry(&self.dir, key).is_err() {
            self.failed();
        }
        let written = cacache::WriteOpts::new()
            .metadata(metadata)
            .size(framed.len())
            .open_sync(&self.dir, key)
            .and_then(|mut writer| {
                std::io::Write::write_all(&mut writer, &framed)
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

    /// Stores `policy` for `head`'s entry after a `304 Not Modified`, if
    /// the entry is still the one read; a policy that may not be stored
    /// any more removes it.
    pub(super) fn refresh(&self, head: &Head, policy: CachePolicy) {
        let refresh = Deferred::Refresh {
            head: Box::new(head.clone()),
            policy: Box::new(policy),
        };
        if let Some(Deferred::Refresh { head, policy }) = self.after_scan(refresh) {
            self.refresh_now(&head, *policy);
        }
    }

    fn refresh_now(&self, head: &Head, policy: CachePolicy) {
        let key = head.key.as_str();
        let _hold = self.hold(key);
        if !policy.is_storable() {
            return self.remove_held(key);
        }
        let Ok(Some(entry)) = layout::find(&self.dir, key) else {
            return;
        };
        if entry.integrity != head.integrity {
            return;
        }
        let envelope = Envelope {
            version: ENVELOPE_VERSION,
            policy,
        };
        let Ok(metadata) = serde_json::to_value(&envelope) else {
            return;
        };
        let cost = (entry.size as u64).saturating_add(line_cost(key, metadata.to_string().len()));
        self.make_room(key, cost);
        // One line per key: the old one goes (the content file stays).
        let options = cacache::WriteOpts::new()
            .integrity(entry.integrity)
            .size(entry.size)
            .metadata(metadata);
        let replaced = cacache::index::delete(&self.dir, key)
            .map_err(std::io::Error::other)
            .and_then(|()| {
                missing_is_fine(std::fs::remove_file(layout::bucket_path(&self.dir, key)))
            })
            .and_then(|()| {
                cacache::index::insert(&self.dir, key, options).map_err(std::io::Error::other)
            });
        if replaced.is_err() {
            self.failed();
            self.remove_held(key);
        }
        self.publish();
    }

    /// The thumbnail of `url` for `target` made from the response stored
    /// for `url`, if that response is still fresh and unchanged. A
    /// thumbnail whose response has changed or gone is removed.
    pub(super) fn read_thumbnail(&self, url: &Url, target: TargetSize) -> Option<Thumbnail> {
        self.wait_while_hung();
        let key = thumbnail_key(url.as_str(), target);
        let entry = self.entry(&key)?;
        let made = serde_json::from_value::<ThumbnailEnvelope>(entry.metadata)
            .ok()
            .filter(|made| made.version == THUMBNAIL_VERSION);
        let Some(made) = made else {
            self.discard_corrupt(&key);
            return None;
        };
        // A thumbnail has the size a decode of the target gives: within
        // the target, at least a pixel.
        let fits =
            (1..=target.width).contains(&made.width) && (1..=target.height).contains(&made.height);
        let expected = u64::from(made.width)
            .checked_mul(u64::from(made.height))
            .and_then(|pixels| pixels.checked_mul(4))
            .and_then(|bytes| bytes.checked_add(frame_len(&key) as u64));
        if !fits || expected != Some(entry.size as u64) {
            self.discard_corrupt(&key);
            return None;
        }
        let original = match layout::find(&self.dir, url.as_str()) {
            Ok(Some(original)) => original,
            Ok(None) | Err(Unreadable::Missing | Unreadable::Corrupt) => {
                self.forget(&key);
                return None;
            }
            Err(Unreadable::Failed) => {
                self.failed();
                return None;
            }
        };
        if original.integrity.to_string() != made.original {
            self.forget(&key);
            return None;
        }
        let original_cost = entry_cost(&original);
        // A policy that cannot be used is the response's to remove, when
        // it is read.
        let fresh = stored_policy(url.as_str(), original.metadata)
            .zip(request_parts(url))
            .is_some_and(|(policy, request)| {
                matches!(
                    policy.before_request(&request, SystemTime::now()),
                    BeforeRequest::Fresh(_)
                )
            });
        if !fresh {
            return None;
        }
        let pixels = layout::read_content(&self.dir, &entry.integrity, entry.size as u64)
            .map(|framed| unframe(&key, framed));
        match pixels {
            Ok(Some(pixels)) => {
                let mut ledger = self.ledger();
                // The response too: the thumbnail is no use without it.
                ledger.touch(url.as_str(), original_cost);
                ledger.touch(&key, entry.size as u64 + line_cost(&key, 0));
                Some(Thumbnail {
                    url: Arc::from(url.as_str()),
                    width: made.width,
                    height: made.height,
                    pixels: Arc::from(pixels),
                })
            }
            Err(Unreadable::Failed) => {
                self.failed();
                None
            }
            _ => {
                self.discard_corrupt(&key);
                None
            }
        }
    }

    /// Writes `thumbnail`, made from `body`, if `body` is the response
    /// stored under `url` now and the same thumbnail is not there yet. Not
    /// while the cache is being scanned.
    pub(super) fn write_thumbnail(
        &self,
        url: &str,
        target: TargetSize,
        body: &[u8],
        thumbnail: &Thumbnail,
    ) {
        let scanning = self
            .deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        if scanning {
            return;
        }
        let Ok(Some(original)) = layout::find(&self.dir, url) else {
            return;
        };
        if original.integrity.check(frame(url, body)).is_err() {
            return;
        }
        let key = thumbnail_key(url, target);
        let original_integrity = original.integrity.to_string();
        // Already there (a stale response revalidated and decoded again).
        let kept = layout::find(&self.dir, &key)
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

    /// Removes `key`'s entry, if any, from disk and the ledger; asked for
    /// during the scan, at its end, in order with the writes.
    pub(super) fn forget(&self, key: &str) {
        if let Some(Deferred::Forget(key)) = self.after_scan(Deferred::Forget(key.to_owned())) {
            self.forget_now(&key);
        }
    }

    fn forget_now(&self, key: &str) {
        let _hold = self.hold(key);
        self.remove_held(key);
    }

    /// [`Store::forget`], for an operation that holds `key` already.
    fn remove_held(&self, key: &str) {
        self.ledger().remove(key);
        if remove_entry(&self.dir, key).is_err() {
            self.failed();
        }
        self.publish();
    }

    /// Evicts the least recently used entries while the ledger is over the
    /// budget.
    pub(super) fn evict(&self) {
        while let Some(victim) = self.ledger().pop_over(self.budget) {
            self.remove_victim(&victim);
        }
        self.publish();
    }

    /// Records `key` at `cost` bytes in the ledger, having removed the
    /// least recently used entries it needs the room of.
    fn make_room(&self, key: &str, cost: u64) {
        let victims = self.ledger().make_room(key, cost, self.budget);
        for victim in victims {
            self.remove_victim(&victim);
        }
    }

    fn remove_victim(&self, victim: &str) {
        match remove_entry(&self.dir, victim) {
            Ok(()) => DiskCounters::add(&self.counters.evicted),
            Err(_) => self.failed(),
        }
    }

    /// `key`'s index entry, if any; a failed read is counted, and a bucket
    /// no reader can use is removed.
    fn entry(&self, key: &str) -> Option<cacache::Metadata> {
        match layout::find(&self.dir, key) {
            Ok(entry) => entry,
            Err(Unreadable::Missing) => None,
            Err(Unreadable::Corrupt) => {
                self.discard_corrupt(key);
                None
            }
            Err(Unreadable::Failed) => {
                self.failed();
                None
            }
        }
    }

    pub(super) fn publish(&self) {
        let (bytes, entries) = {
            let ledger = self.ledger();
            (ledger.total(), ledger.len() as u64)
        };
        self.counters.set_usage(bytes, entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> CachePolicy {
        let url = Url::parse("http://a.test/1.jpg").unwrap();
        let request = request_parts(&url).unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("max-age=600"),
        );
        let response = super::super::response_parts(http::StatusCode::OK, &headers);
        CachePolicy::new_options(
            &request,
            &response,
            SystemTime::now(),
            super::super::cache_options(),
        )
    }

    /// Regression: writes asked for during the opening scan waited for
    /// its end, removals did not; a removal that came after a write (a
    /// `no-store` answer, a redirect) ran first, and the held write then
    /// stored the body it had removed, to be served fresh.
    #[test]
    fn a_removal_during_the_scan_is_not_undone_by_an_earlier_write() {
        let dir = std::env::temp_dir().join(format!("thumbpipe-scan-order-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::new(dir.clone(), 1 << 20);
        let key = "http://a.test/1.jpg".to_owned();
        store.write(key.clone(), policy(), Bytes::from_static(b"image"));
        store.forget(&key);
        store.write(
            "http://a.test/2.jpg".into(),
            policy(),
            Bytes::from_static(b"kept"),
        );
        store.scan();
        assert!(layout::find(&dir, &key).unwrap().is_none());
        assert!(store.read_head(&key, 1 << 20).is_none());
        // The write after it is done, in order.
        let kept = store.read_head("http://a.test/2.jpg", 1 << 20).unwrap();
        assert_eq!(store.read_body(&kept).as_deref(), Some(&b"kept"[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_frame_holds_its_key() {
        let framed = frame("http://a/1.jpg", b"body");
        assert_eq!(
            unframe("http://a/1.jpg", framed.clone()).as_deref(),
            Some(&b"body"[..])
        );
        assert_eq!(unframe("http://a/2.jpg", framed.clone()), None);
        assert_eq!(unframe("http://a/1.jpg", framed[..10].to_vec()), None);
        assert_eq!(unframe("x", Vec::new()), None);
        // Two keys with the same bytes have files of their own.
        assert_ne!(
            cacache::Integrity::from(frame("a", b"same")),
            cacache::Integrity::from(frame("b", b"same"))
        );
    }
}
