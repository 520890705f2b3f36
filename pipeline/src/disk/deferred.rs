//! Deferred: the operations that change an entry (writes, refreshes,
//! removals), asked for while the opening scan runs.
//!
//! Until the scan has added what the directory holds to the ledger, the
//! ledger cannot keep the budget, so these wait in `Store::deferred`, in
//! the order they were asked for, and the scan's thread does them when it
//! ends; only once none is left do new ones run at once, so that none
//! overtakes an older one. The bodies they hold are bounded apart from
//! those waiting for a disk thread: past [`DEFERRED_LIMIT`], a write
//! becomes a removal of the older copy (which would now be wrong), and is
//! counted as skipped.

use std::sync::PoisonError;

use super::DiskCounters;
use super::store::{Deferred, Store};
use super::unlink::Which;

/// Bytes of bodies held for writes asked for during the scan; past it,
/// they are not written. As many as may wait for a disk thread besides.
pub(super) const DEFERRED_LIMIT: usize = super::MAX_QUEUED_WRITE_BYTES as usize;

impl Deferred {
    /// The bytes of body (and pixels) it holds while it waits.
    fn held(&self) -> usize {
        match self {
            Deferred::Write { body, .. } => body.len(),
            Deferred::Thumbnail {
                body, thumbnail, ..
            } => body.len() + thumbnail.pixels.len(),
            Deferred::Refresh { .. } | Deferred::Forget { .. } => 0,
        }
    }
}

impl Store {
    /// Runs `operation` now (returned), or queues it behind the scan while
    /// the scan runs.
    fn after_scan(&self, operation: Deferred) -> Option<Deferred> {
        let mut deferred = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(waiting) = deferred.as_mut() else {
            return Some(operation);
        };
        let operation = match operation {
            Deferred::Write { body, key, .. }
                if waiting.held.saturating_add(body.len()) > DEFERRED_LIMIT =>
            {
                DiskCounters::add(&self.counters.writes_skipped);
                Deferred::Forget {
                    key,
                    which: Which::Any,
                    corrupt: false,
                }
            }
            Deferred::Write { key, policy, body } => {
                waiting.held += body.len();
                Deferred::Write { key, policy, body }
            }
            // Past the limit, a thumbnail is made again the next time.
            Deferred::Thumbnail { .. }
                if waiting.held.saturating_add(operation.held()) > DEFERRED_LIMIT =>
            {
                DiskCounters::add(&self.counters.writes_skipped);
                return None;
            }
            thumbnail @ Deferred::Thumbnail { .. } => {
                waiting.held += thumbnail.held();
                thumbnail
            }
            other => other,
        };
        waiting.operations.push(operation);
        None
    }

    /// Does `operation` now, or after the scan while the scan runs.
    pub(super) fn run_or_defer(&self, operation: Deferred) {
        if let Some(operation) = self.after_scan(operation) {
            self.apply(operation);
        }
    }

    /// Does an operation the scan held back.
    fn apply(&self, operation: Deferred) {
        match operation {
            Deferred::Write { key, policy, body } => self.write_now(key, *policy, body),
            Deferred::Refresh { head, policy } => self.refresh_now(&head, *policy),
            Deferred::Forget {
                key,
                which,
                corrupt,
            } => self.forget_now(&key, &which, corrupt),
            Deferred::Thumbnail {
                url,
                target,
                body,
                thumbnail,
            } => self.write_thumbnail_now(&url, target, &body, &thumbnail),
        }
    }

    /// Applies the deferred operations in order, until none is left; only
    /// then do new ones run at once, so that none overtakes an older one.
    pub(super) fn run_deferred(&self) {
        loop {
            let batch = {
                let mut deferred = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
                match deferred.as_mut() {
                    Some(waiting) if !waiting.operations.is_empty() => {
                        std::mem::take(&mut waiting.operations)
                    }
                    _ => {
                        *deferred = None;
                        return;
                    }
                }
            };
            for operation in batch {
                // Its body counts until it is written.
                let held = operation.held();
                self.apply(operation);
                if let Some(waiting) = self
                    .deferred
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .as_mut()
                {
                    waiting.held = waiting.held.saturating_sub(held);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::super::layout;
    use super::super::policy::fresh_policy;
    use super::*;
    use crate::request::TargetSize;
    use crate::thumbnail::Thumbnail;

    /// Regression: writes asked for during the opening scan waited for
    /// its end, removals did not; a removal that came after a write (a
    /// `no-store` answer, a redirect) ran first, and the held write then
    /// stored the body it had removed, to be served fresh.
    #[test]
    fn a_removal_during_the_scan_is_not_undone_by_an_earlier_write() {
        let dir = super::super::policy::scratch("scan-order");
        let store = Store::new(dir.clone(), 1 << 20);
        let key = "http://a.test/1.jpg".to_owned();
        store.write(key.clone(), fresh_policy(), Bytes::from_static(b"image"));
        store.forget(&key);
        store.write(
            "http://a.test/2.jpg".into(),
            fresh_policy(),
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

    /// Regression: a thumbnail decoded while the opening scan ran was
    /// dropped, uncounted (its response's write was held for the scan, so
    /// the thumbnail found no response to belong to). It now waits behind
    /// that write.
    #[test]
    fn a_thumbnail_made_during_the_scan_is_written_after_its_response() {
        let dir = super::super::policy::scratch("scan-thumbnail");
        let store = Store::new(dir.clone(), 1 << 20);
        let url = url::Url::parse("http://a.test/1.jpg").unwrap();
        let body = Bytes::from_static(b"image");
        let target = TargetSize::square(2);
        let thumbnail = Thumbnail {
            url: std::sync::Arc::from(url.as_str()),
            width: 2,
            height: 2,
            pixels: vec![7; 16].into(),
            source_size: (4, 4),
            animation: None,
        };
        store.write(url.to_string(), fresh_policy(), body.clone());
        store.write_thumbnail(url.to_string(), target, body, thumbnail);
        assert!(
            store.read_thumbnail(&url, target).is_none(),
            "held for the scan"
        );
        store.scan();
        let read = store.read_thumbnail(&url, target).unwrap();
        assert_eq!((read.width, read.source_size), (2, (4, 4)));
        assert_eq!(&read.pixels[..], &[7; 16]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Regression: a write dropped for want of room during the scan left
    /// the older copy on disk, to be served in place of the newer body.
    #[test]
    fn a_write_with_no_room_during_the_scan_removes_the_older_copy() {
        let dir = super::super::policy::scratch("scan-room");
        let key = "http://a.test/1.jpg".to_owned();
        let older = Store::new(dir.clone(), 64 << 20);
        older.scan();
        older.write(key.clone(), fresh_policy(), Bytes::from_static(b"old"));
        assert!(older.read_head(&key, u64::MAX).is_some());
        let store = Store::new(dir.clone(), 64 << 20);
        let filler = Bytes::from(vec![1; DEFERRED_LIMIT]);
        store.write("http://a.test/2.jpg".into(), fresh_policy(), filler);
        store.write(key.clone(), fresh_policy(), Bytes::from_static(b"new"));
        store.scan();
        assert!(store.read_head(&key, u64::MAX).is_none());
        assert_eq!(store.counters.snapshot().writes_skipped, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
