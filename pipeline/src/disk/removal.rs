//! Removal: how an entry leaves the directory, and which entry a removal
//! is for.
//!
//! An entry goes when the fetch stage asks (a `no-store` answer, a
//! redirect, a write that could not be queued), in its URL's lane; when a
//! read finds it corrupt or stale, on that read's disk thread; when the
//! ledger evicts it to keep the budget; and when the opening scan finds it
//! damaged. A removal decided on a read names the entry it read
//! ([`Which`]), so that it never takes one written since. While the scan
//! runs, removals wait for it with the writes (`deferred.rs`). The files
//! themselves are unlinked by `unlink.rs`. Run on the disk threads and the
//! scan's thread.

use super::DiskCounters;
use super::layout::{self, Unreadable};
use super::store::{Deferred, Store};
use super::unlink::{Which, remove_entry};

impl Store {
    /// Removes `key`'s entry `which`, found corrupt, and counts it, if the
    /// key still holds it (once: the scan or another read may have
    /// removed it first).
    pub(super) fn discard_corrupt(&self, key: &str, which: Which) {
        self.forget_entry(key, which, true);
    }

    /// Removes `key`'s entry, if any, from disk and the ledger; asked for
    /// during the scan, at its end, in order with the writes.
    pub(super) fn forget(&self, key: &str) {
        self.forget_entry(key, Which::Any, false);
    }

    /// Removes `key`'s entry `which`, if the key still holds it; counted
    /// as corrupt if `corrupt`.
    pub(super) fn forget_entry(&self, key: &str, which: Which, corrupt: bool) {
        self.run_or_defer(Deferred::Forget {
            key: key.to_owned(),
            which,
            corrupt,
        });
    }

    /// [`Store::forget_entry`], now.
    pub(super) fn forget_now(&self, key: &str, which: &Which, corrupt: bool) {
        let _hold = self.hold(key);
        let found = layout::find(&self.dir, key);
        if !which.matches(&found) {
            return;
        }
        if corrupt && matches!(found, Ok(Some(_)) | Err(Unreadable::Corrupt)) {
            DiskCounters::add(&self.counters.corrupt);
        }
        self.remove_held(key);
        self.answered();
    }

    /// [`Store::forget`], for an operation that holds `key` already.
    pub(super) fn remove_held(&self, key: &str) {
        self.ledger().remove(key);
        if remove_entry(&self.dir, key).is_err() {
            self.failed();
        }
        self.publish();
    }

    /// Evicts the least recently used entries while the ledger is over the
    /// budget.
    pub(super) fn evict(&self) {
        loop {
            // Taken in a statement of its own: the ledger is not locked
            // while the files are removed.
            let victim = self.ledger().pop_over(self.budget);
            let Some(victim) = victim else { break };
            self.remove_victim(&victim);
        }
        self.publish();
    }

    /// Removes `victim`, taken out of the ledger, from the directory.
    pub(super) fn remove_victim(&self, victim: &str) {
        match remove_entry(&self.dir, victim) {
            Ok(()) => DiskCounters::add(&self.counters.evicted),
            Err(_) => self.failed(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::policy::{fresh_policy, scratch};
    use super::*;
    use bytes::Bytes;

    /// Regression: a removal decided on a read named the entry by its
    /// content's hash alone, and a rewrite of the same bytes has the same
    /// hash: a read that found the file missing while it was rewritten
    /// removed the new, whole entry.
    #[test]
    fn a_read_that_found_an_entry_broken_spares_its_rewrite() {
        let dir = scratch("removal-rewrite");
        let key = "http://a.test/1.jpg".to_owned();
        let store = Store::new(dir.clone(), 1 << 20);
        store.scan();
        store.write(key.clone(), fresh_policy(), Bytes::from_static(b"image"));
        let read = store.read_head(&key, u64::MAX).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        store.write(key.clone(), fresh_policy(), Bytes::from_static(b"image"));
        store.discard_corrupt(&key, read.line());
        let kept = store
            .read_head(&key, u64::MAX)
            .expect("the rewrite was removed");
        assert_eq!(store.read_body(&kept).as_deref(), Some(&b"image"[..]));
        assert_eq!(store.counters.snapshot().corrupt, 0);
        // The entry read itself is still removed, and counted.
        store.discard_corrupt(&key, kept.line());
        assert!(store.read_head(&key, u64::MAX).is_none());
        assert_eq!(store.counters.snapshot().corrupt, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Regression: an entry the ledger did not know was added when read,
    /// even if it had been removed meanwhile: room was made for a file
    /// that no longer existed, evicting live entries.
    #[test]
    fn an_entry_removed_after_its_read_is_not_counted() {
        let dir = scratch("removal-touch");
        let key = "http://a.test/1.jpg".to_owned();
        let writer = Store::new(dir.clone(), 1 << 20);
        writer.scan();
        writer.write(key.clone(), fresh_policy(), Bytes::from_static(b"image"));
        // Another store on the directory, its scan not run: its ledger
        // does not know the entry.
        let reader = Store::new(dir.clone(), 1 << 20);
        let head = reader.read_head(&key, u64::MAX).unwrap();
        reader.forget_now(&key, &Which::Any, false);
        reader.touch(&key, &head.line(), 1000);
        assert_eq!(reader.ledger().total(), 0);
        writer.write(key.clone(), fresh_policy(), Bytes::from_static(b"image"));
        let head = reader.read_head(&key, u64::MAX).unwrap();
        reader.touch(&key, &head.line(), 1000);
        assert_eq!(reader.ledger().total(), 1000);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
