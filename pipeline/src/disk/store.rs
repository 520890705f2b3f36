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
//! rewrite or a refresh replaces it.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_cache_semantics::{BeforeRequest, CachePolicy};
use url::Url;

use super::ledger::Ledger;
use super::{DiskCounters, Head, request_parts};
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

/// How old a file in cacache's `tmp` directory must be to be removed when
/// the cache opens: a write that old was cut off (its process killed), not
/// one under way in another process.
const ABANDONED_AFTER: Duration = Duration::from_secs(60);

/// Bytes of bodies held for writes asked for during the scan; past it,
/// they are not written.
const DEFERRED_LIMIT: usize = 16 * 1024 * 1024;

/// The shared state of the disk threads.
#[derive(Debug)]
pub(super) struct Store {
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
    /// Keys being written, refreshed or removed: one such operation per
    /// key at a time, so that two threads never interleave on one entry.
    busy: Mutex<HashSet<String>>,
    free: Condvar,
    pub(super) counters: Arc<DiskCounters>,
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

/// A write waiting for the scan.
#[derive(Debug)]
struct Deferred {
    key: String,
    policy: CachePolicy,
    body: Bytes,
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

/// What `entry` costs in the ledger: its content file and its index line.
fn entry_cost(entry: &cacache::Metadata) -> u64 {
    let envelope = serde_json::to_string(&entry.metadata).map_or(0, |m| m.len());
    entry.size as u64 + line_cost(&entry.key, envelope)
}

/// The bytes an index line for `key` with `envelope_len` bytes of envelope
/// costs.
fn line_cost(key: &str, envelope_len: usize) -> u64 {
    (key.len() + envelope_len) as u64 + INDEX_LINE_OVERHEAD
}

fn is_missing(error: &cacache::Error) -> bool {
    matches!(error, cacache::Error::IoError(io, _) if io.kind() == std::io::ErrorKind::NotFound)
}

/// Removes `key`'s content file and index; an entry already gone, in part
/// or whole, is fine. The index is marked first, so that the entry is
/// absent for every reader even if a file cannot be removed.
fn remove_entry(dir: &Path, key: &str) -> cacache::Result<()> {
    let Some(entry) = cacache::metadata_sync(dir, key)? else {
        return Ok(());
    };
    cacache::index::delete(dir, key)?;
    missing_is_fine(cacache::remove_hash_sync(dir, &entry.integrity))?;
    remove_index_file(dir, key)
}

/// Removes `key`'s index file, once its last line marks it deleted (with
/// no entry, cacache removes only the index file).
fn remove_index_file(dir: &Path, key: &str) -> cacache::Result<()> {
    missing_is_fine(
        cacache::RemoveOpts::new()
            .remove_fully(true)
            .remove_sync(dir, key),
    )
}

fn missing_is_fine(result: cacache::Result<()>) -> cacache::Result<()> {
    match result {
        Err(error) if is_missing(&error) => Ok(()),
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
            counters: Arc::new(DiskCounters::default()),
        }
    }

    /// Counts a disk operation that failed; the load goes to the network.
    fn failed(&self) {
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

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn waiting(&self) -> MutexGuard<'_, HashMap<String, Vec<WaitingThumbnail>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates the directory, removes the temporary files of writes cut off
    /// by a crash, adds what the directory holds to the ledger and evicts
    /// down to the budget (it may have shrunk since the last run); then
    /// does the writes asked for meanwhile.
    pub(super) fn scan(&self) {
        if std::fs::create_dir_all(&self.dir).is_ok() {
            self.remove_abandoned_writes();
            // A panic in the index's parser costs the entries it hid, not
            // the writes waiting below.
            let scanned = std::panic::catch_unwind(AssertUnwindSafe(|| self.add_found_entries()));
            if scanned.is_err() {
                self.failed();
            }
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

    fn add_found_entries(&self) {
        let mut found = Vec::new();
        for entry in cacache::list_sync(&self.dir) {
            match entry {
                Ok(entry) => found.push((entry.time, entry_cost(&entry), entry.key)),
                // A new cache has no index directory yet.
                Err(error) if is_missing(&error) => {}
                Err(_) => self.failed(),
            }
        }
        found.sort_unstable();
        let found = found
            .into_iter()
            .map(|(_, cost, key)| (key, cost))
            .collect();
        self.ledger().merge_found(found);
        self.evict();
    }

    /// The index entry of the response stored under `key`, if its body is
    /// within `max_bytes`. An entry that cannot be read is removed.
    pub(super) fn read_head(&self, key: &str, max_bytes: u64) -> Option<Head> {
        let entry = self.entry(key)?;
        let size = entry.size.checked_sub(frame_len(key))? as u64;
        if size > max_bytes {
            return None;
        }
        let cost = entry_cost(&entry);
        let envelope = serde_json::from_value::<Envelope>(entry.metadata)
            .ok()
            .filter(|envelope| envelope.version == ENVELOPE_VERSION);
        let Some(envelope) = envelope else {
            self.discard_corrupt(key);
            return None;
        };
        Some(Head {
            key: key.to_owned(),
            policy: envelope.policy,
            size,
            integrity: entry.integrity,
            cost,
        })
    }

    /// The body of `head`'s entry, checked against its hash and key. One
    /// that fails is removed, unless the entry was rewritten meanwhile.
    pub(super) fn read_body(&self, head: &Head) -> Option<Vec<u8>> {
        let body = cacache::read_hash_sync(&self.dir, &head.integrity)
            .map(|framed| unframe(&head.key, framed));
        match body {
            Ok(Some(body)) if body.len() as u64 == head.size => {
                self.ledger().touch(&head.key, head.cost);
                Some(body)
            }
            Err(error) if !is_missing(&error) && !is_corrupt(&error) => {
                self.failed();
                None
            }
            // A hash, size or key that does not match, or a file gone:
            // corrupt, unless the entry was removed or rewritten meanwhile.
            _ => {
                let unchanged = cacache::metadata_sync(&self.dir, &head.key)
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

    fn discard_corrupt(&self, key: &str) {
        DiskCounters::add(&self.counters.corrupt);
        self.forget(key);
    }

    /// Writes `body` and its policy under `key`. A write asked for during
    /// the scan waits for its end (up to [`DEFERRED_LIMIT`] bytes of them).
    pub(super) fn write(&self, key: String, policy: CachePolicy, body: Bytes) {
        if let Some(deferred) = self
            .deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            let held: usize = deferred.iter().map(|write| write.body.len()).sum();
            if held + body.len() <= DEFERRED_LIMIT {
                deferred.push(Deferred { key, policy, body });
            }
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

    /// Writes `bytes` with `metadata` under `key`, in place of what was
    /// there, having made room for them first: the ledger's entries never
    /// add up to more than the budget, and the files on disk are theirs,
    /// the one being written, and the victims being removed. Bytes too
    /// large for the whole budget are not written.
    fn put(&self, key: &str, metadata: serde_json::Value, bytes: &[u8]) {
        let _hold = self.hold(key);
        let framed = frame(key, bytes);
        let cost = framed.len() as u64 + line_cost(key, metadata.to_string().len());
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
        let key = head.key.as_str();
        let _hold = self.hold(key);
        if !policy.is_storable() {
            return self.remove_held(key);
        }
        let Ok(Some(entry)) = cacache::metadata_sync(&self.dir, key) else {
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
        let cost = entry.size as u64 + line_cost(key, metadata.to_string().len());
        self.make_room(key, cost);
        // One line per key: the old one goes (the content file stays).
        let options = cacache::WriteOpts::new()
            .integrity(entry.integrity)
            .size(entry.size)
            .metadata(metadata);
        let replaced = cacache::index::delete(&self.dir, key)
            .and_then(|()| remove_index_file(&self.dir, key))
            .and_then(|()| cacache::index::insert(&self.dir, key, options));
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
        let key = thumbnail_key(url.as_str(), target);
        let entry = self.entry(&key)?;
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
        let original_cost = entry_cost(&original);
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
        let expected = (made.width as usize)
            .checked_mul(made.height as usize)
            .and_then(|pixels| pixels.checked_mul(4))?;
        let pixels = cacache::read_hash_sync(&self.dir, &entry.integrity)
            .map(|framed| unframe(&key, framed));
        match pixels {
            Ok(Some(pixels)) if pixels.len() == expected => {
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
            Err(error) if !is_missing(&error) && !is_corrupt(&error) => {
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
        let Ok(Some(original)) = cacache::metadata_sync(&self.dir, url) else {
            return;
        };
        if original.integrity.check(frame(url, body)).is_err() {
            return;
        }
        let key = thumbnail_key(url, target);
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

    /// Removes `key`'s entry, if any, from disk and the ledger.
    pub(super) fn forget(&self, key: &str) {
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
    fn evict(&self) {
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

    /// `key`'s index entry, if any; a failed read is counted.
    fn entry(&self, key: &str) -> Option<cacache::Metadata> {
        match cacache::metadata_sync(&self.dir, key) {
            Ok(entry) => entry,
            Err(_) => {
                self.failed();
                None
            }
        }
    }

    fn publish(&self) {
        let (bytes, entries) = {
            let ledger = self.ledger();
            (ledger.total(), ledger.len() as u64)
        };
        self.counters.set_usage(bytes, entries);
    }
}

/// Whether a read failed its check: a hash or size that does not match.
fn is_corrupt(error: &cacache::Error) -> bool {
    matches!(
        error,
        cacache::Error::IntegrityError(_) | cacache::Error::SizeMismatch(..)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
