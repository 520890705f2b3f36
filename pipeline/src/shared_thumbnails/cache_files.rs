//! The files of the shared thumbnail cache itself: a thumbnail read only
//! if it is a small regular file (never through a link, a FIFO or a
//! device planted there), and one written only into directories of the
//! user's own that no one else may write to, through a private temporary
//! file renamed into place.
//!
//! Plain blocking functions, called on the file threads by the tier; each
//! ends when its file is read or written, or with `None` or an error.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// A thumbnail file larger than this is passed over unread: an xx-large
/// RGBA thumbnail is at most 4 MiB of pixels, less once compressed.
const MAX_THUMBNAIL_BYTES: u64 = 16 * 1024 * 1024;

/// The bytes of the regular file at `path`, if it has at most
/// [`MAX_THUMBNAIL_BYTES`]: a link, a FIFO, a device or a directory
/// planted in the cache is passed over without opening what it names or
/// waiting on it. Blocks.
pub(super) fn read_small_file(path: &Path) -> Option<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY,
    );
    let file = options.open(path).ok()?;
    let metadata = file.metadata().ok()?;
    if !metadata.is_file() || metadata.len() > MAX_THUMBNAIL_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(MAX_THUMBNAIL_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// Writes `bytes` as `name` in the directory `sub` of the cache at
/// `cache`, made (0700) where missing, through a temporary file (0600)
/// renamed into place; only if each level from the cache down is a
/// directory (never a link) of the user's own that no one else may write
/// to, as the temporary file's owner tells. Blocks.
pub(super) fn write_privately(
    cache: &Path,
    sub: &[String],
    name: &str,
    bytes: &[u8],
) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    let mut dir = cache.to_path_buf();
    let mut levels = Vec::with_capacity(sub.len() + 1);
    for level in std::iter::once(None).chain(sub.iter().map(Some)) {
        if let Some(level) = level {
            dir.push(level);
        }
        if std::fs::symlink_metadata(&dir).is_err() {
            builder.create(&dir)?;
        }
        let metadata = std::fs::symlink_metadata(&dir)?;
        if !metadata.is_dir() || shared_with_others(&metadata) {
            return Err(std::io::Error::other("not a private directory"));
        }
        levels.push(metadata);
    }
    write_atomically(&dir, name, bytes, |mine| {
        levels.iter().all(|level| same_owner(level, mine))
    })
}

/// Whether others than its owner may write into a directory.
fn shared_with_others(metadata: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        metadata.mode() & 0o022 != 0
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        false
    }
}

/// Whether two files have the same owner (on Unix; elsewhere, yes).
fn same_owner(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        a.uid() == b.uid()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        true
    }
}

/// Writes `bytes` as `dir/name` through a temporary file in `dir` (0600),
/// renamed into place if `trusted` says yes to the temporary file's
/// metadata (owned by this process's user). Blocks.
fn write_atomically(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    trusted: impl FnOnce(&std::fs::Metadata) -> bool,
) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let temporary = dir.join(format!(
        ".{name}.thumbpipe-{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&temporary).and_then(|mut file| {
        if !trusted(&file.metadata()?) {
            return Err(std::io::Error::other("the directory is another user's"));
        }
        file.write_all(bytes)?;
        std::fs::rename(&temporary, dir.join(name))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}
