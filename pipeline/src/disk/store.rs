//! The store: the cache directory's entries, read, written and evicted on
//! the disk threads.
//!
//! Owned by the [`super::DiskCache`] and its jobs (an `Arc`); every method
//! blocks on the file system and runs on a `thumbpipe-disk-N` thread. What
//! an entry is, its framing and its cost, is `entry.rs`; each key has one
//! index line: a rewrite or a refresh replaces it. cacache writes the
//! entries; they are read back through `layout.rs`, which trusts nothing
//! in the directory. The opening scan is `scan.rs`, the operations that
//! wait for it `deferred.rs`, removals `removal.rs`, the thumbnails
//! `thumbnails.rs`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use http_cache_semantics::CachePolicy;

use super::entry::{
    ENVELOPE_VERSION, Envelope, entry_cost, frame, frame_len, line_cost, stored_policy, unframe,
};
use super::layout::{self, Unreadable};
use super::ledger::Ledger;
use super::stall::Stall;
use super::unlink::{Which, remove_entry_keeping, remove_line};
use super::{DiskCounters, Head};
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

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
    pub(super) deferred: Mutex<Option<Waiting>>,
    /// Keys being written, refreshed or removed: one such operation per
    /// key at a time, so that two threads never interleave on one entry.
    busy: Mutex<HashSet<String>>,
    free: Condvar,
    /// Whether the disk answers reads in time.
    pub(super) stall: Stall,
    pub(super) counters: Arc<DiskCounters>,
    /// Tests: while set, every read blocks, as on a disk that hangs.
    #[cfg(test)]
    pub(super) hang: (Mutex<bool>, Condvar),
}

/// A key held by one operation; released when dropped.
pub(super) struct KeyHold<'a> {
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

impl Store {
    pub(super) fn new(dir: PathBuf, budget: u64) -> Self {
        Self {
            dir,
            budget,
            ledger: Mutex::new(Ledger::default()),
            deferred: Mutex::new(Some(Waiting::default())),
            busy: Mutex::new(HashSet::new()),
            free: Condvar::new(),
            stall: Stall::default(),
            counters: Arc::new(DiskCounters::default()),
            #[cfg(test)]
            hang: (Mutex::new(false), Condvar::new()),
        }
    }

    /// Tests: blocks while [`Store::hang`] is set.
    pub(super) fn wait_while_hung(&self) {
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
    pub(super) fn hold(&self, key: &str) -> KeyHold<'_> {
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

    /// A disk operation finished: the disk answers.
    pub(super) fn answered(&self) {
        self.stall.answered();
    }

    /// Records `key`'s entry `read`, just read, as used: at its known cost,
    /// or, if the ledger did not know it (another process wrote it, or the
    /// scan had not reached it) and the key still holds it, at `cost`,
    /// having made room for it.
    pub(super) fn touch(&self, key: &str, read: &Which, cost: u64) {
        if self.ledger().touch_known(key) {
            return;
        }
        // Not an entry removed since it was read: it would take room no
        // file uses.
        if !read.matches(&layout::find(&self.dir, key)) {
            return;
        }
        let victims = self.ledger().make_room(key, cost, self.budget);
        for victim in &victims {
            self.remove_victim(victim);
        }
        if !victims.is_empty() {
            self.publish();
        }
    }

    /// The index entry of the response stored under `key`, if its body is
    /// within `max_bytes`. An entry that cannot be read is removed.
    pub(super) fn read_head(&self, key: &str, max_bytes: u64) -> Option<Head> {
        self.wait_while_hung();
        let entry = self.entry(key)?;
        let this = Which::entry(&entry);
        let Some(size) = entry.size.checked_sub(frame_len(key)) else {
            // Smaller than its own frame: no body this cache wrote.
            self.discard_corrupt(key, this);
            return None;
        };
        let size = size as u64;
        if size > max_bytes {
            return None;
        }
        let cost = entry_cost(&entry);
        let Some(policy) = stored_policy(key, entry.metadata) else {
            self.discard_corrupt(key, this);
            return None;
        };
        Some(Head {
            key: key.to_owned(),
            policy,
            size,
            integrity: entry.integrity,
            time: entry.time,
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
                self.touch(&head.key, &head.line(), head.cost);
                Some(body)
            }
            Err(Unreadable::Failed) => {
                self.failed();
                None
            }
            // A hash, size or key that does not match, or a file gone:
            // corrupt, unless the entry was removed or rewritten meanwhile.
            _ => {
                self.discard_corrupt(&head.key, head.line());
                None
            }
        }
    }

    pub(super) fn write(&self, key: String, policy: CachePolicy, body: Bytes) {
        self.run_or_defer(Deferred::Write {
            key,
            policy: Box::new(policy),
            body,
        });
    }

    pub(super) fn write_now(&self, key: String, policy: CachePolicy, body: Bytes) {
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
    pub(super) fn put(&self, key: &str, metadata: serde_json::Value, bytes: &[u8]) {
        let _hold = self.hold(key);
        let framed = frame(key, bytes);
        let cost = (framed.len() as u64).saturating_add(line_cost(key, metadata.to_string().len()));
        if cost > self.budget {
            return self.remove_held(key);
        }
        self.make_room(key, cost);
        // The old entry's file (its content is its own: the key is in it)
        // and index line; the file is kept if it holds these very bytes.
        if remove_entry_keeping(&self.dir, key, Some(&framed)).is_err() {
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
            Ok(_) => {
                DiskCounters::add(&self.counters.written);
                self.answered();
            }
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
        self.run_or_defer(Deferred::Refresh {
            head: Box::new(head.clone()),
            policy: Box::new(policy),
        });
    }

    pub(super) fn refresh_now(&self, head: &Head, policy: CachePolicy) {
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
        let replaced = remove_line(&self.dir, key).and_then(|()| {
            cacache::index::insert(&self.dir, key, options).map_err(std::io::Error::other)
        });
        match replaced {
            Ok(_) => self.answered(),
            Err(_) => {
                self.failed();
                self.remove_held(key);
            }
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

    /// `key`'s index entry, if any; a failed read is counted, and a bucket
    /// no reader can use is removed.
    pub(super) fn entry(&self, key: &str) -> Option<cacache::Metadata> {
        match layout::find(&self.dir, key) {
            Ok(entry) => entry,
            Err(Unreadable::Missing) => None,
            Err(Unreadable::Corrupt) => {
                self.discard_corrupt(key, Which::Unreadable);
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
    Forget {
        key: String,
        which: Which,
        /// Counted as corrupt, if it is still there.
        corrupt: bool,
    },
    /// A decoded thumbnail of `url`'s response, `body`.
    Thumbnail {
        url: String,
        target: TargetSize,
        body: Bytes,
        thumbnail: Box<Thumbnail>,
    },
}

/// The operations waiting for the scan, and the bytes of bodies they hold.
#[derive(Debug, Default)]
pub(super) struct Waiting {
    pub(super) operations: Vec<Deferred>,
    pub(super) held: usize,
}
