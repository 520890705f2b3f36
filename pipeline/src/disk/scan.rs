//! The opening scan: the cache directory made ready (created for this
//! user alone), cut-off writes cleared, and what it already holds added to
//! the ledger, down to the budget; then the operations asked for meanwhile,
//! in order.
//!
//! Runs once, on the `thumbpipe-disk-scan` thread, when the cache opens;
//! reads do not wait for it (they run on the disk threads), and every
//! operation that changes an entry waits in `Store::deferred` until it
//! ends, so that nothing it does can be undone by the scan. Nothing here
//! trusts the directory: files are found by the names cacache gives them,
//! never through a link, and only those are ever removed.

use std::collections::HashSet;
use std::path::Path;
use std::sync::PoisonError;
use std::time::{Duration, SystemTime};

use super::layout;
use super::store::{Store, entry_cost, missing_is_fine};

/// How old a file in cacache's `tmp` directory, or a content file no
/// index line names, must be to be removed when the cache opens: a write
/// that old was cut off (its process killed), not one under way in
/// another process.
const ABANDONED_AFTER: Duration = Duration::from_secs(60);

/// Bytes of bodies held for writes asked for during the scan; past it,
/// they are not written. As many as may wait for a disk thread.
pub(super) const DEFERRED_LIMIT: usize = super::MAX_QUEUED_WRITE_BYTES as usize;

impl Store {
    /// Makes the directory ready, removes the files of writes cut off by a
    /// crash, adds what the directory holds to the ledger and evicts down
    /// to the budget (it may have shrunk since the last run); then does
    /// the operations asked for meanwhile.
    pub(super) fn scan(&self) {
        if create_private_dir(&self.dir).is_ok() {
            remove_abandoned_writes(&self.dir);
            self.add_found_entries();
        } else {
            self.failed();
        }
        self.run_deferred();
    }

    /// Applies the deferred operations in order, until none is left; only
    /// then do new ones run at once, so that none overtakes an older one.
    fn run_deferred(&self) {
        loop {
            let batch = {
                let mut deferred = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
                match deferred.as_mut() {
                    Some(queue) if !queue.is_empty() => std::mem::take(queue),
                    _ => {
                        *deferred = None;
                        return;
                    }
                }
            };
            for operation in batch {
                self.apply(operation);
            }
        }
    }

    fn add_found_entries(&self) {
        let now = SystemTime::now();
        let listing = layout::list(&self.dir, now.checked_sub(ABANDONED_AFTER).unwrap_or(now));
        for _ in 0..listing.failures {
            self.failed();
        }
        for bucket in &listing.bad_buckets {
            super::DiskCounters::add(&self.counters.corrupt);
            if missing_is_fine(std::fs::remove_file(bucket)).is_err() {
                self.failed();
            }
        }
        let named: HashSet<_> = listing
            .entries
            .iter()
            .filter_map(|(entry, _)| layout::content_path(&self.dir, &entry.integrity))
            .collect();
        remove_unnamed_content(&self.dir, &named);
        // An entry costs its content and its whole bucket file: bytes that
        // no line accounts for (damaged lines beside a good one) are still
        // the cache's.
        let mut found: Vec<_> = listing
            .entries
            .into_iter()
            .map(|(entry, bucket)| {
                let cost = entry_cost(&entry).max((entry.size as u64).saturating_add(bucket));
                (entry.time, cost, entry.key)
            })
            .collect();
        found.sort_unstable();
        let found = found
            .into_iter()
            .map(|(_, cost, key)| (key, cost))
            .collect();
        self.ledger().merge_found(found);
        self.evict();
    }
}

/// Creates `dir` if needed, readable by this user alone (on Unix, 0700, as
/// are the directories above it that it creates).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Whether `path` was last changed more than [`ABANDONED_AFTER`] ago, by
/// its own times (a link's, not its target's).
fn abandoned(path: &Path, now: SystemTime) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|metadata| metadata.modified())
        .is_ok_and(|modified| {
            now.duration_since(modified)
                .is_ok_and(|age| age > ABANDONED_AFTER)
        })
}

/// Removes the temporary files of cut-off writes: in `tmp`, if it is a
/// directory and not a link to one, the entries named as cacache's
/// temporary files are (`.tmp` and six letters or digits) that are older
/// than [`ABANDONED_AFTER`]. Nothing else there is touched.
fn remove_abandoned_writes(dir: &Path) {
    let tmp = dir.join("tmp");
    let is_dir = std::fs::symlink_metadata(&tmp).is_ok_and(|metadata| metadata.is_dir());
    let Ok(files) = std::fs::read_dir(&tmp)
        .map_err(drop)
        .and_then(|files| if is_dir { Ok(files) } else { Err(()) })
    else {
        return;
    };
    let now = SystemTime::now();
    for file in files.flatten() {
        let named = file.file_name().to_str().is_some_and(is_temporary_name);
        let not_a_dir = file.file_type().is_ok_and(|kind| !kind.is_dir());
        if named && not_a_dir && abandoned(&file.path(), now) {
            let _ = std::fs::remove_file(file.path());
        }
    }
}

/// Whether `name` is one the `tempfile` crate gives cacache's temporary
/// files: `.tmp` and six ASCII letters or digits.
fn is_temporary_name(name: &str) -> bool {
    name.strip_prefix(".tmp")
        .is_some_and(|rest| rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Removes the content files no live index line names, once they are
/// older than [`ABANDONED_AFTER`] (younger ones may be another process's
/// writes, their lines not written yet): the body of a write cut off
/// between its file and its line, or of an entry whose line was damaged.
fn remove_unnamed_content(dir: &Path, named: &HashSet<std::path::PathBuf>) {
    let now = SystemTime::now();
    for file in layout::content_files(dir) {
        if !named.contains(&file) && abandoned(&file, now) {
            let _ = std::fs::remove_file(&file);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_are_cacaches_only() {
        assert!(is_temporary_name(".tmpAb12Cd"));
        for other in [
            "",
            ".tmp",
            ".tmpAb12C",
            ".tmpAb12Cde",
            "photo.jpg",
            ".tmp../../",
        ] {
            assert!(!is_temporary_name(other), "{other}");
        }
    }
}
