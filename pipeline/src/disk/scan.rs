//! The opening scan: the cache directory made ready (created for this
//! user alone; one of another user's is refused when the cache is built),
//! cut-off writes cleared, and what it already holds added to the ledger,
//! down to the budget; then the operations asked for meanwhile, in order.
//!
//! Runs once, on the `thumbpipe-disk-scan` thread, when the cache opens;
//! reads do not wait for it (they run on the disk threads), and every
//! operation that changes an entry waits for it (`deferred.rs`), so that
//! nothing it does can be undone by the scan. Nothing here trusts the
//! directory: files are found by the names cacache gives them, links are
//! not followed (on Unix), and only files by those names are removed.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::entry::entry_cost;
use super::layout;
use super::store::Store;
use super::unlink::{Which, missing_is_fine};

/// How old a file in cacache's `tmp` directory, or a content file no
/// index line names, must be to be removed when the cache opens: a write
/// that old was cut off (its process killed), not one under way in
/// another process.
const ABANDONED_AFTER: Duration = Duration::from_secs(60);

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

    fn add_found_entries(&self) {
        let now = SystemTime::now();
        let quiet_since = now.checked_sub(ABANDONED_AFTER).unwrap_or(now);
        // Per entry: when it was written, its cost, its key, its content.
        let mut found = Vec::new();
        let mut claims_wrong = Vec::new();
        let listing = layout::list(&self.dir, quiet_since, |entry, bucket| {
            // A content file missing, or not the size its line claims:
            // corrupt, and its claim is not counted (a line may claim any
            // size, and would evict every older entry).
            let content = layout::content_path(&self.dir, &entry.integrity).filter(|path| {
                std::fs::symlink_metadata(path)
                    .is_ok_and(|file| file.is_file() && file.len() == entry.size as u64)
            });
            let Some(content) = content else {
                return claims_wrong.push((entry.key.clone(), Which::entry(&entry)));
            };
            // An entry costs its content and its whole bucket file: bytes
            // that no line accounts for (damaged lines beside a good one)
            // are still the cache's.
            let cost = entry_cost(&entry).max((entry.size as u64).saturating_add(bucket));
            found.push((entry.time, cost, entry.key, content));
        });
        for _ in 0..listing.failures {
            self.failed();
        }
        // A dead bucket is looked at again: another process may have
        // written to it since it was listed.
        let still_dead = listing
            .dead_buckets
            .iter()
            .filter(|bucket| abandoned(bucket, SystemTime::now()));
        for bucket in listing.bad_buckets.iter().chain(still_dead) {
            super::DiskCounters::add(&self.counters.corrupt);
            if missing_is_fine(std::fs::remove_file(bucket)).is_err() {
                self.failed();
            }
        }
        for (key, which) in claims_wrong {
            self.forget_now(&key, &which, true);
        }
        let named: HashSet<&Path> = found
            .iter()
            .map(|(.., content)| content.as_path())
            .collect();
        remove_unnamed_content(&self.dir, &named);
        found.sort_unstable();
        let found = found
            .into_iter()
            .map(|(_, cost, key, _)| (key, cost))
            .collect();
        self.ledger().merge_found(found);
        self.evict();
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
pub(super) fn check_owner(dir: &Path) -> Result<(), crate::error::BuildError> {
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
            return Err(crate::error::BuildError::Config(format!(
                "disk.dir '{}' belongs to another user (uid {}): use a directory of \
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
fn remove_unnamed_content(dir: &Path, named: &HashSet<&Path>) {
    let now = SystemTime::now();
    for file in layout::content_files(dir) {
        if !named.contains(file.as_path()) && abandoned(&file, now) {
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
