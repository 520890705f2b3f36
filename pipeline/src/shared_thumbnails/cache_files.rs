//! The files of the shared thumbnail cache itself, read and written only
//! where the user alone may have put them: each directory from the cache's
//! own down (`thumbnails/`, then `normal/` or `fail/thumbpipe-VERSION/`) is
//! opened from the one above it, never through a link, and must be the
//! user's and writable by no one else; a thumbnail is read only if it is
//! a small regular file of the user's (never a link, a FIFO or a device
//! planted there), and written through a private temporary file renamed
//! into place. Every check is of the open handle (`fstat`), and the next
//! open is relative to it: a directory swapped for a link after its check
//! is never followed.
//!
//! A directory, once opened and checked, is used again for a second
//! ([`CacheDirs`]), so that a screen of look-ups walks down from the
//! cache's directory once.
//!
//! Blocking functions, called on the file threads by the tier; each ends
//! when its file is read or written, or with `None` or an error.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::small_files::read_at_most;

/// A thumbnail file larger than this is passed over unread: an xx-large
/// RGBA thumbnail is at most 4 MiB of pixels, less once compressed.
const MAX_THUMBNAIL_BYTES: u64 = 16 * 1024 * 1024;

/// How long a directory of the cache, once opened and checked, is used
/// again before it is opened and checked anew: a first screen's look-ups
/// walk from the cache's directory once, not once each, and a cache
/// removed, replaced or made writable by others is found within it.
/// Elsewhere than Unix, a directory is a path checked again at each use
/// (nothing is held open that a check could vouch for): never reused.
const REOPEN_AFTER: Duration = if cfg!(unix) {
    Duration::from_secs(1)
} else {
    Duration::ZERO
};

/// The shared cache at a path, with the directories of it opened in the
/// last [`REOPEN_AFTER`]. Shared by the file threads. A directory stays
/// open until the first use of the cache a second after it was opened
/// (at most one a size class, and `fail/`): a removed one's space is
/// freed then.
pub(super) struct CacheDirs {
    cache: PathBuf,
    reopen_after: Duration,
    opened: Mutex<HashMap<String, (Instant, Arc<PrivateDir>)>>,
}

impl CacheDirs {
    pub(super) fn new(cache: PathBuf) -> Self {
        Self::reopened_after(cache, REOPEN_AFTER)
    }

    fn reopened_after(cache: PathBuf, reopen_after: Duration) -> Self {
        Self {
            cache,
            reopen_after,
            opened: Mutex::new(HashMap::new()),
        }
    }

    /// The cache's directory.
    pub(super) fn path(&self) -> &Path {
        &self.cache
    }

    /// The directory `sub` of the cache, private all the way down: the
    /// one opened in the last `reopen_after`, or opened (and made, if
    /// `create`) now. Directories opened longer ago are closed first,
    /// whether or not this one opens. Blocks.
    fn dir(&self, sub: &[&str], create: bool) -> std::io::Result<Arc<PrivateDir>> {
        let key = sub.join("/");
        let now = Instant::now();
        {
            let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
            opened.retain(|_, (at, _)| now.duration_since(*at) < self.reopen_after);
            if let Some((_, dir)) = opened.get(&key) {
                return Ok(Arc::clone(dir));
            }
        }
        let dir = Arc::new(PrivateDir::open(&self.cache, sub, create)?);
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        opened.insert(key, (now, Arc::clone(&dir)));
        Ok(dir)
    }

    /// Reads the thumbnail `name` in the directory `sub` into `bytes`
    /// (whose room is kept), if every directory on the way is private and
    /// the file is a regular file of the user's of at most
    /// [`MAX_THUMBNAIL_BYTES`]; `false` (and `bytes` not the file)
    /// otherwise. Blocks.
    pub(super) fn read_small_file(&self, sub: &[&str], name: &str, bytes: &mut Vec<u8>) -> bool {
        let Some(file) = self
            .dir(sub, false)
            .ok()
            .and_then(|dir| dir.open_file(name).ok())
        else {
            return false;
        };
        let Ok(metadata) = file.metadata() else {
            return false;
        };
        if !metadata.is_file() || !mine(&metadata) || metadata.len() > MAX_THUMBNAIL_BYTES {
            return false;
        }
        read_at_most(file, metadata.len(), MAX_THUMBNAIL_BYTES, bytes).unwrap_or(false)
    }

    /// Writes `bytes` as `name` in the directory `sub`, each level made
    /// (0700) where missing and checked private, through a temporary file
    /// (0600) renamed into place. Blocks.
    pub(super) fn write_privately(
        &self,
        sub: &[&str],
        name: &str,
        bytes: &[u8],
    ) -> std::io::Result<()> {
        self.dir(sub, true)?.write_atomically(name, bytes)
    }
}

/// Whether a file or directory is the user's (on Unix: the process's
/// effective user; elsewhere, yes).
fn mine(metadata: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        metadata.uid() == rustix::process::geteuid().as_raw()
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        true
    }
}

fn not_private() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        "not a private directory of the user's",
    )
}

/// A directory of the cache, open, that is the user's and that no one else
/// may write to, reached from the cache's directory without a link.
#[cfg(unix)]
struct PrivateDir(std::os::fd::OwnedFd);

#[cfg(unix)]
impl PrivateDir {
    /// The cache's directory `cache` (its parents as their paths resolve;
    /// it not a link), then each of `sub` within the last; each made
    /// (0700) where missing if `create`.
    fn open(cache: &Path, sub: &[&str], create: bool) -> std::io::Result<Self> {
        let parent = cache.parent().unwrap_or(Path::new("/"));
        let name = cache.file_name().ok_or_else(not_private)?;
        if create {
            std::fs::create_dir_all(parent)?;
        }
        let parent = Self::at(rustix::fs::CWD, parent.as_os_str(), false, false)?;
        let mut dir = Self::checked(Self::at(&parent.0, name, create, true)?)?;
        for level in sub {
            dir = Self::checked(Self::at(&dir.0, std::ffi::OsStr::new(level), create, true)?)?;
        }
        Ok(dir)
    }

    /// The directory `name` in `parent`, made (0700) first if missing and
    /// `create`; not followed if it is a link and `no_link`.
    fn at(
        parent: impl std::os::fd::AsFd,
        name: &std::ffi::OsStr,
        create: bool,
        no_link: bool,
    ) -> std::io::Result<Self> {
        use rustix::fs::{Mode, OFlags, mkdirat, openat};
        use rustix::io::Errno;
        let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if no_link {
            flags |= OFlags::NOFOLLOW;
        }
        match openat(&parent, name, flags, Mode::empty()) {
            Err(Errno::NOENT) if create => {
                match mkdirat(&parent, name, Mode::RWXU) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(error) => return Err(error.into()),
                }
                Ok(Self(openat(&parent, name, flags, Mode::empty())?))
            }
            opened => Ok(Self(opened?)),
        }
    }

    /// `dir`, if it is the user's and no one else may write into it.
    fn checked(dir: Self) -> std::io::Result<Self> {
        use rustix::fs::{FileType, fstat};
        let stat = fstat(&dir.0)?;
        let private = FileType::from_raw_mode(stat.st_mode) == FileType::Directory
            && stat.st_uid == rustix::process::geteuid().as_raw()
            && stat.st_mode & 0o022 == 0;
        if !private {
            return Err(not_private());
        }
        Ok(dir)
    }

    /// The file `name` in it, for reading, never through a link and never
    /// waiting (a FIFO).
    fn open_file(&self, name: &str) -> std::io::Result<std::fs::File> {
        use rustix::fs::{Mode, OFlags, openat};
        let flags =
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC;
        Ok(openat(&self.0, name, flags, Mode::empty())?.into())
    }

    /// Writes `bytes` as `name` in it through a temporary file (0600),
    /// renamed into place.
    fn write_atomically(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        use rustix::fs::{AtFlags, Mode, OFlags, openat, renameat, unlinkat};
        let temporary = temporary_name(name);
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mode = Mode::RUSR | Mode::WUSR;
        let mut file = std::fs::File::from(openat(&self.0, &temporary, flags, mode)?);
        let written = file
            .write_all(bytes)
            .and_then(|()| Ok(renameat(&self.0, &temporary, &self.0, name)?));
        if written.is_err() {
            let _ = unlinkat(&self.0, &temporary, AtFlags::empty());
        }
        written
    }
}

/// A directory of the cache, by its path: where there are no directory
/// handles to open files from, each level is checked by its path (not a
/// link, not shared with others) and then used by its path.
#[cfg(not(unix))]
struct PrivateDir(std::path::PathBuf);

#[cfg(not(unix))]
impl PrivateDir {
    fn open(cache: &Path, sub: &[&str], create: bool) -> std::io::Result<Self> {
        let mut dir = cache.to_path_buf();
        for level in std::iter::once(None).chain(sub.iter().map(Some)) {
            if let Some(level) = level {
                dir.push(level);
            }
            if create && std::fs::symlink_metadata(&dir).is_err() {
                std::fs::create_dir_all(&dir)?;
            }
            let metadata = std::fs::symlink_metadata(&dir)?;
            // Without Unix's owners and modes, "private" is "not a link".
            if !metadata.is_dir() {
                return Err(not_private());
            }
        }
        Ok(Self(dir))
    }

    fn open_file(&self, name: &str) -> std::io::Result<std::fs::File> {
        let path = self.0.join(name);
        if std::fs::symlink_metadata(&path)?.is_symlink() {
            return Err(not_private());
        }
        std::fs::File::open(path)
    }

    fn write_atomically(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let temporary = self.0.join(temporary_name(name));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .and_then(|mut file| file.write_all(bytes))
            .and_then(|()| std::fs::rename(&temporary, self.0.join(name)));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written
    }
}

/// A temporary name for `name`'s file, this process's and this write's.
fn temporary_name(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        ".{name}.thumbpipe-{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_used_again_for_a_while_then_opened_and_checked_anew() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = std::env::temp_dir().join(format!("thumbpipe-cachedirs-{}", std::process::id()));
        let cache = root.join("thumbnails");
        let _ = std::fs::remove_dir_all(&root);
        let read = |dirs: &CacheDirs| {
            let mut bytes = Vec::new();
            dirs.read_small_file(&["normal"], "a.png", &mut bytes)
                .then_some(bytes)
        };
        // Used again for an hour, or not at all.
        let kept = CacheDirs::reopened_after(cache.clone(), Duration::from_secs(3600));
        let fresh = CacheDirs::reopened_after(cache.clone(), Duration::ZERO);
        kept.write_privately(&["normal"], "a.png", b"first")
            .unwrap();
        assert_eq!(read(&kept).as_deref(), Some(&b"first"[..]));
        // The directory moved away and another put in its place: the one
        // opened is read while it is used again...
        std::fs::rename(cache.join("normal"), root.join("moved")).unwrap();
        std::fs::create_dir(cache.join("normal")).unwrap();
        let private = std::fs::Permissions::from_mode(0o700);
        std::fs::set_permissions(cache.join("normal"), private).unwrap();
        std::fs::write(cache.join("normal").join("a.png"), b"second").unwrap();
        assert_eq!(read(&kept).as_deref(), Some(&b"first"[..]));
        // ...and the new one once opened anew, and checked: one others
        // may write to is not read.
        assert_eq!(read(&fresh).as_deref(), Some(&b"second"[..]));
        let shared = std::fs::Permissions::from_mode(0o777);
        std::fs::set_permissions(cache.join("normal"), shared).unwrap();
        assert_eq!(read(&fresh), None);
        // A directory no longer used again is closed at the next use.
        assert_eq!(fresh.opened.lock().unwrap().len(), 0);
        assert_eq!(kept.opened.lock().unwrap().len(), 1);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
