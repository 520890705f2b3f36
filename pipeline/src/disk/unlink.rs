//! Unlinking: how an entry's files leave the directory (its index line,
//! its content file, a bucket no reader can use), and which entry a removal
//! is for ([`Which`]). Plain functions over the directory, called on the
//! disk threads and the scan's thread by the store's removals
//! (`removal.rs`), its writes (`store.rs`) and the scan.

use std::path::Path;

use super::Head;
use super::layout::{self, Unreadable};

/// Which of a key's entries a removal is for. One decided on a read (the
/// entry was found corrupt or stale), which runs outside the URL's lane,
/// is for the entry read, not for one written since by another thread.
#[derive(Clone, Debug)]
pub(super) enum Which {
    /// Whatever the key holds.
    Any,
    /// The entry of this index line: its content's hash and the time the
    /// line was written (a rewrite of the same bytes has the same hash).
    Line {
        integrity: cacache::Integrity,
        time: u128,
    },
    /// A bucket no reader can use, if it still is one.
    Unreadable,
}

impl Which {
    /// The entry `entry` is.
    pub(super) fn entry(entry: &cacache::Metadata) -> Self {
        Self::Line {
            integrity: entry.integrity.clone(),
            time: entry.time,
        }
    }

    /// Whether `found`, what the key's bucket holds now, is the entry meant
    /// (anything, for [`Which::Any`]).
    pub(super) fn matches(&self, found: &Result<Option<cacache::Metadata>, Unreadable>) -> bool {
        match (self, found) {
            (Self::Any, _) => true,
            (Self::Line { integrity, time }, Ok(Some(entry))) => {
                entry.integrity == *integrity && entry.time == *time
            }
            (Self::Unreadable, Err(Unreadable::Corrupt)) => true,
            _ => false,
        }
    }
}

/// Removes `key`'s content file and index; an entry already gone, in part
/// or whole, is fine. The index is marked first, so that the entry is
/// absent for every reader even if a file cannot be removed. A bucket no
/// reader can use (a link, a FIFO, too large) is removed whatever it
/// holds.
pub(super) fn remove_entry(dir: &Path, key: &str) -> std::io::Result<()> {
    remove_entry_keeping(dir, key, None)
}

/// [`remove_entry`], leaving the content file if it holds the bytes
/// `keep` (about to be written again: a reader never finds the file
/// missing). Hashed only when the sizes match.
pub(super) fn remove_entry_keeping(
    dir: &Path,
    key: &str,
    keep: Option<&[u8]>,
) -> std::io::Result<()> {
    match layout::find(dir, key) {
        Ok(None) | Err(Unreadable::Missing) => {}
        Ok(Some(entry)) => {
            cacache::index::delete(dir, key).map_err(std::io::Error::other)?;
            let same = keep.is_some_and(|bytes| {
                entry.size == bytes.len() && entry.integrity.check(bytes).is_ok()
            });
            if !same {
                missing_is_fine(layout::remove_content(dir, &entry.integrity))?;
            }
        }
        Err(Unreadable::Corrupt) => {}
        Err(Unreadable::Failed) => return Err(std::io::ErrorKind::PermissionDenied.into()),
    }
    missing_is_fine(std::fs::remove_file(layout::bucket_path(dir, key)))
}

/// Removes `key`'s index line (its bucket), leaving its content file.
pub(super) fn remove_line(dir: &Path, key: &str) -> std::io::Result<()> {
    cacache::index::delete(dir, key).map_err(std::io::Error::other)?;
    missing_is_fine(std::fs::remove_file(layout::bucket_path(dir, key)))
}

pub(super) fn missing_is_fine(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

impl Head {
    /// The index line this head was read from.
    pub(super) fn line(&self) -> Which {
        Which::Line {
            integrity: self.integrity.clone(),
            time: self.time,
        }
    }
}
