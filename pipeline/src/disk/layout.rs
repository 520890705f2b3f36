//! The layout: where cacache keeps an entry's index line and content file,
//! and how they are read back without trusting the directory.
//!
//! cacache writes the directory; everything that reads it goes through
//! here, because cacache's own readers trust it: they follow symbolic
//! links, read a file to its end whatever its size (a content file that is
//! a link to `/dev/zero` never ends), and panic on an index line with a
//! valid hash and a malformed integrity. Here every read is of a regular
//! file opened without following a link (and without blocking on a FIFO),
//! capped at the size its entry records, and every value parsed is
//! checked. A line or file that fails is an absent entry, never a panic.
//!
//! Plain functions, called on the disk threads; nothing here keeps state.
//! The layout is cacache 13's: `index-v5/aa/bb/<rest of the SHA-1 of the
//! key>` holds one JSON line per write of a key, `<SHA-256 hex of the
//! line>\t<line>`, the last one winning (a line without an integrity is a
//! removal); `content-v2/sha256/aa/bb/<rest of the hex digest>` is the
//! content named by its hash.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::small_files::{self, hex};
use base64::Engine as _;
use sha1::Digest as _;

/// Most bytes of index lines one key's bucket may hold: a key has one line
/// of about 1 KB (its policy), and a few more until a rewrite removes them.
pub(super) const MAX_BUCKET_BYTES: u64 = 1024 * 1024;

const INDEX_DIR: &str = "index-v5";
const CONTENT_DIR: &str = "content-v2";

/// The index bucket that holds `key`'s lines.
pub(super) fn bucket_path(dir: &Path, key: &str) -> PathBuf {
    let hashed = hex(&sha1::Sha1::digest(key.as_bytes()));
    dir.join(INDEX_DIR)
        .join(&hashed[0..2])
        .join(&hashed[2..4])
        .join(&hashed[4..])
}

/// The content file of `integrity`, if it is a SHA-256 one (the only kind
/// this cache writes) with a digest of the right length.
pub(super) fn content_path(dir: &Path, integrity: &cacache::Integrity) -> Option<PathBuf> {
    let hash = integrity.hashes.first()?;
    if hash.algorithm != cacache::Algorithm::Sha256 {
        return None;
    }
    let digest = base64::engine::general_purpose::STANDARD
        .decode(&hash.digest)
        .ok()
        .filter(|digest| digest.len() == 32)?;
    let hexed = hex(&digest);
    Some(
        dir.join(CONTENT_DIR)
            .join("sha256")
            .join(&hexed[0..2])
            .join(&hexed[2..4])
            .join(&hexed[4..]),
    )
}

/// Why a file gave no bytes.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unreadable {
    /// No such file.
    Missing,
    /// Not what its entry says: longer or shorter, another hash, too
    /// large, or not a regular file (a link, a FIFO, a device).
    Corrupt,
    /// The file system failed (a permission, an I/O error).
    Failed,
}

/// Opens `path` for reading if it is a regular file: a symbolic link is
/// not followed, and a FIFO or device is refused without blocking.
pub(super) fn open_regular(path: &Path) -> Result<std::fs::File, Unreadable> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => Unreadable::Missing,
        std::io::ErrorKind::PermissionDenied => Unreadable::Failed,
        // A link (ELOOP under O_NOFOLLOW), a FIFO or device without a
        // writer, a name that is not a file.
        _ => Unreadable::Corrupt,
    })?;
    match file.metadata() {
        Ok(metadata) if metadata.is_file() => Ok(file),
        Ok(_) => Err(Unreadable::Corrupt),
        Err(_) => Err(Unreadable::Failed),
    }
}

/// Reads `file` to its end if it holds at most `cap` bytes.
fn read_capped(file: std::fs::File, cap: u64) -> Result<Vec<u8>, Unreadable> {
    small_files::read_capped(file, cap)
        .map_err(|_| Unreadable::Failed)?
        .ok_or(Unreadable::Corrupt)
}

/// The content of `integrity`, which its entry says is `size` bytes: read
/// up to one byte past `size` and checked against the hash.
pub(super) fn read_content(
    dir: &Path,
    integrity: &cacache::Integrity,
    size: u64,
) -> Result<Vec<u8>, Unreadable> {
    let path = content_path(dir, integrity).ok_or(Unreadable::Corrupt)?;
    let bytes = read_capped(open_regular(&path)?, size)?;
    if bytes.len() as u64 != size || integrity.check(&bytes).is_err() {
        return Err(Unreadable::Corrupt);
    }
    Ok(bytes)
}

/// Removes `integrity`'s content file (a link itself, never its target).
pub(super) fn remove_content(dir: &Path, integrity: &cacache::Integrity) -> std::io::Result<()> {
    match content_path(dir, integrity) {
        Some(path) => std::fs::remove_file(path),
        None => Ok(()),
    }
}

/// One index line as cacache writes it.
#[derive(serde::Deserialize)]
struct Line {
    key: String,
    integrity: Option<String>,
    time: u128,
    size: u64,
    metadata: serde_json::Value,
}

/// The entries of a bucket's bytes by key, the last line of each key
/// winning: `None` for a key whose last line removed it. Lines whose hash
/// does not match, that do not parse, or whose integrity or size is not
/// one this cache writes are skipped; so are keys that do not belong in
/// the bucket at `bucket` (a line moved from another).
fn parse_bucket(bytes: &[u8], bucket: &Path) -> HashMap<String, Option<cacache::Metadata>> {
    let mut entries = HashMap::new();
    let text = String::from_utf8_lossy(bytes);
    for line in text.lines() {
        let Some((hash, json)) = line.split_once('\t') else {
            continue;
        };
        if hex(&sha2::Sha256::digest(json.as_bytes())) != hash {
            continue;
        }
        let Ok(line) = serde_json::from_str::<Line>(json) else {
            continue;
        };
        if bucket_path(Path::new(""), &line.key) != strip_to_index(bucket) {
            continue;
        }
        let entry = match line.integrity {
            None => None,
            Some(integrity) => {
                let Ok(integrity) = integrity.parse::<cacache::Integrity>() else {
                    continue;
                };
                let Ok(size) = usize::try_from(line.size) else {
                    continue;
                };
                if content_path(Path::new(""), &integrity).is_none() {
                    continue;
                }
                Some(cacache::Metadata {
                    key: line.key.clone(),
                    integrity,
                    time: line.time,
                    size,
                    metadata: line.metadata,
                    raw_metadata: None,
                })
            }
        };
        entries.insert(line.key, entry);
    }
    entries
}

/// `bucket` from its index directory on (`index-v5/aa/bb/...`), to compare
/// with a key's bucket path under an empty root.
fn strip_to_index(bucket: &Path) -> PathBuf {
    let parts: Vec<_> = bucket.components().collect();
    let start = parts.len().saturating_sub(4);
    parts[start..].iter().collect()
}

/// Reads a bucket file: `None` if there is none.
fn read_bucket(path: &Path) -> Result<Option<Vec<u8>>, Unreadable> {
    match open_regular(path) {
        Ok(file) => read_capped(file, MAX_BUCKET_BYTES).map(Some),
        Err(Unreadable::Missing) => Ok(None),
        Err(other) => Err(other),
    }
}

/// `key`'s entry, if its bucket holds one. A bucket that is not a regular
/// file or is larger than [`MAX_BUCKET_BYTES`] is [`Unreadable::Corrupt`].
pub(super) fn find(dir: &Path, key: &str) -> Result<Option<cacache::Metadata>, Unreadable> {
    let path = bucket_path(dir, key);
    let Some(bytes) = read_bucket(&path)? else {
        return Ok(None);
    };
    Ok(parse_bucket(&bytes, &path).remove(key).flatten())
}

/// What a walk of the directory found.
#[derive(Debug, Default)]
pub(super) struct Listing {
    /// Bucket files no reader can use: not regular files, or too large.
    /// Removed by the caller.
    pub(super) bad_buckets: Vec<PathBuf>,
    /// Bucket files holding no live entry (removals only, or damaged
    /// lines), last changed before `quiet_since` (a younger one may be
    /// another process's write under way). Removed by the caller, if they
    /// are still quiet.
    pub(super) dead_buckets: Vec<PathBuf>,
    /// Buckets that could not be read (a permission, an I/O error).
    pub(super) failures: u64,
}

/// Walks the index: every bucket at the depth cacache writes them, named
/// as it names them. Symbolic links are not followed. Each live entry is
/// given to `each` as it is found, with the bytes of the bucket file that
/// holds it (its index line, and whatever else the file holds), so that
/// the walk holds one bucket at a time.
pub(super) fn list(
    dir: &Path,
    quiet_since: SystemTime,
    mut each: impl FnMut(cacache::Metadata, u64),
) -> Listing {
    let mut listing = Listing::default();
    for bucket in files_at_depth(&dir.join(INDEX_DIR), 2) {
        match read_bucket(&bucket) {
            Ok(Some(bytes)) => {
                let live: Vec<_> = parse_bucket(&bytes, &bucket)
                    .into_values()
                    .flatten()
                    .collect();
                let quiet = std::fs::symlink_metadata(&bucket)
                    .and_then(|metadata| metadata.modified())
                    .is_ok_and(|modified| modified < quiet_since);
                if live.is_empty() && quiet {
                    listing.dead_buckets.push(bucket);
                }
                let len = bytes.len() as u64;
                for entry in live {
                    each(entry, len);
                }
            }
            Ok(None) => {}
            Err(Unreadable::Failed) => listing.failures += 1,
            Err(_) => listing.bad_buckets.push(bucket),
        }
    }
    listing
}

/// Content files (and anything else) under the content directory, at the
/// depth cacache writes them.
pub(super) fn content_files(dir: &Path) -> Vec<PathBuf> {
    files_at_depth(&dir.join(CONTENT_DIR).join("sha256"), 2)
}

/// The entries `depth` directories below `root` that are not directories
/// (files, links, FIFOs), in directories whose names are two hex digits,
/// as cacache's are. Links to directories are not entered.
fn files_at_depth(root: &Path, depth: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![root.to_path_buf()];
    for _ in 0..depth {
        let mut next = Vec::new();
        for directory in level {
            let Ok(children) = std::fs::read_dir(&directory) else {
                continue;
            };
            for child in children.flatten() {
                let is_dir = child.file_type().is_ok_and(|kind| kind.is_dir());
                let named = child
                    .file_name()
                    .to_str()
                    .is_some_and(|name| name.len() == 2 && name.bytes().all(is_hex_digit));
                if is_dir && named {
                    next.push(child.path());
                }
            }
        }
        level = next;
    }
    for directory in level {
        let Ok(children) = std::fs::read_dir(&directory) else {
            continue;
        };
        for child in children.flatten() {
            if child.file_type().is_ok_and(|kind| !kind.is_dir()) {
                found.push(child.path());
            }
        }
    }
    found
}

fn is_hex_digit(byte: u8) -> bool {
    byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cacaches() {
        let dir = std::env::temp_dir().join(format!("thumbpipe-layout-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let integrity = cacache::write_sync(&dir, "http://a/1.jpg", b"body").unwrap();
        assert!(bucket_path(&dir, "http://a/1.jpg").is_file());
        assert!(content_path(&dir, &integrity).unwrap().is_file());
        let entry = find(&dir, "http://a/1.jpg").unwrap().unwrap();
        assert_eq!(entry.integrity, integrity);
        assert_eq!(read_content(&dir, &integrity, 4).unwrap(), b"body");
        // A size other than the entry's is corrupt, read no further.
        assert_eq!(read_content(&dir, &integrity, 3), Err(Unreadable::Corrupt));
        let mut found = 0;
        let listing = list(&dir, SystemTime::UNIX_EPOCH, |_, _| found += 1);
        assert_eq!(found, 1);
        assert!(listing.bad_buckets.is_empty());
        cacache::index::delete(&dir, "http://a/1.jpg").unwrap();
        assert!(find(&dir, "http://a/1.jpg").unwrap().is_none());
        // A bucket of removals only: kept while it may be another
        // process's, then removed.
        let listing = list(&dir, SystemTime::UNIX_EPOCH, |_, _| panic!("no live entry"));
        assert!(listing.bad_buckets.is_empty() && listing.dead_buckets.is_empty());
        let later = SystemTime::now() + std::time::Duration::from_secs(1);
        assert_eq!(list(&dir, later, |_, _| {}).dead_buckets.len(), 1);
        assert_eq!(content_files(&dir).len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_integrity_that_is_not_base64_has_no_path() {
        for text in ["sha256-!!!!", "sha256-AAAA", "sha1-deadbeef", ""] {
            if let Ok(integrity) = text.parse::<cacache::Integrity>() {
                assert!(content_path(Path::new("/"), &integrity).is_none(), "{text}");
            }
        }
    }
}
