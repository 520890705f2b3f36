//! Opening a file beneath the roots: the file is opened first and what was
//! opened is what is checked, so that a link swapped in for a part of the
//! path while it is checked can never lead a read out of the roots.
//!
//! Each open starts at the root's directory, itself opened by its resolved
//! path without following a link anywhere on it (a root swapped for a
//! link since the pipeline was built is refused). On Linux the kernel
//! resolves the path beneath it (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS`): a link that leads out of it fails the open. A path that does lead out of the root
//! it names (an absolute link into another root, say), or a kernel without
//! `openat2`, is resolved once, checked against the roots, and then walked
//! from that root's directory one component at a time, each opened with
//! `O_NOFOLLOW` from the last: a link that appears there after the check
//! fails the walk. Elsewhere (Windows) the path is resolved, checked and
//! opened as resolved; a link swapped in between the two is not caught
//! there.
//!
//! Plain blocking functions, called on the file threads; they keep nothing.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// A root as the app gave it, and with its links resolved.
#[derive(Debug)]
pub(super) struct Root {
    given: PathBuf,
    canonical: PathBuf,
}

impl Root {
    /// `given`, with its links resolved, if it is a directory.
    pub(super) fn new(given: &Path) -> io::Result<Self> {
        let canonical = given.canonicalize()?;
        if !canonical.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "is not a directory",
            ));
        }
        let given = std::path::absolute(given)?;
        Ok(Self { given, canonical })
    }

    /// Its path with links resolved.
    pub(super) fn canonical(&self) -> &Path {
        &self.canonical
    }
}

/// Why a path's file was not opened.
#[derive(Debug)]
pub(super) enum Refused {
    /// The path leads to this file, outside every root.
    Outside(PathBuf),
    /// A part of the path became a link while it was opened.
    Changed,
    /// The file could not be opened.
    Io(io::Error),
}

/// The file at `path` (absolute), opened for reading without waiting (a
/// FIFO or a device is opened, not waited on; the caller checks the
/// file's type on what was opened), if it lies beneath one of `roots`.
/// Blocks.
pub(super) fn open_beneath(roots: &[Root], path: &Path) -> Result<File, Refused> {
    let named = named_beneath(roots, path);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Some((root, relative)) = named {
        use rustix::io::Errno;
        match unix::open_resolved_beneath(&root.canonical, relative) {
            Ok(file) => return Ok(file),
            // A link (or `..`) that leads out of this root, maybe into
            // another; a kernel without openat2 (before 5.6, or a sandbox
            // that filters it): resolved and walked below.
            Err(Errno::XDEV | Errno::NOSYS | Errno::PERM | Errno::AGAIN) => {}
            Err(Errno::LOOP | Errno::NOTDIR) => return Err(Refused::Changed),
            Err(error) => return Err(Refused::Io(error.into())),
        }
    }
    // A path no root names is resolved only to see whether a link leads
    // it into one; why it does not (it is missing, unreadable) is not
    // told, or every URL would ask what exists outside the roots.
    let resolved = match path.canonicalize() {
        Ok(resolved) => resolved,
        Err(_) if named.is_none() => return Err(Refused::Outside(path.to_path_buf())),
        Err(error) => return Err(Refused::Io(error)),
    };
    let Some(root) = roots.iter().find(|r| resolved.starts_with(&r.canonical)) else {
        return Err(Refused::Outside(resolved));
    };
    let relative = resolved
        .strip_prefix(&root.canonical)
        .map_err(|_| Refused::Outside(resolved.clone()))?;
    #[cfg(unix)]
    {
        unix::open_walking(&root.canonical, relative)
    }
    #[cfg(not(unix))]
    {
        let _ = relative;
        super::open_without_waiting(&resolved).map_err(Refused::Io)
    }
}

/// The first root whose path (as given, or resolved) `path` starts with,
/// and the rest of `path` beneath it (`.` for the root itself).
fn named_beneath<'a>(roots: &'a [Root], path: &'a Path) -> Option<(&'a Root, &'a Path)> {
    roots.iter().find_map(|root| {
        let relative = path
            .strip_prefix(&root.given)
            .or_else(|_| path.strip_prefix(&root.canonical))
            .ok()?;
        let relative = match relative.as_os_str().is_empty() {
            true => Path::new("."),
            false => relative,
        };
        Some((root, relative))
    })
}

#[cfg(unix)]
mod unix {
    use std::fs::File;
    use std::os::fd::OwnedFd;
    use std::path::{Component, Path};

    use rustix::fs::{Mode, OFlags, open, openat};
    use rustix::io::Errno;

    use super::Refused;

    /// How the file is opened: read only, never waiting (a FIFO), never
    /// becoming the process's terminal, closed in a child process.
    const FILE: OFlags = OFlags::RDONLY
        .union(OFlags::NONBLOCK)
        .union(OFlags::NOCTTY)
        .union(OFlags::CLOEXEC);

    /// How a directory on the way is opened: only to look up names in it
    /// (Linux's `O_PATH`, which needs no read permission on it; elsewhere
    /// read only).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const DIRECTORY: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const DIRECTORY: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::CLOEXEC);

    /// The directory `root` (a path with no links: a root as resolved when
    /// the pipeline was built), opened without following a link anywhere
    /// on it: a root, or a directory above it, swapped for a link since
    /// then is refused, never followed. One `openat2` with
    /// `RESOLVE_NO_SYMLINKS` on Linux, else one `O_NOFOLLOW` open a
    /// component from `/`.
    fn open_root(root: &Path) -> Result<OwnedFd, Errno> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            use rustix::fs::{CWD, ResolveFlags, openat2};
            match openat2(
                CWD,
                root,
                DIRECTORY,
                Mode::empty(),
                ResolveFlags::NO_SYMLINKS,
            ) {
                Err(Errno::NOSYS | Errno::PERM | Errno::AGAIN) => {}
                opened => return opened,
            }
        }
        let mut dir = open("/", DIRECTORY, Mode::empty())?;
        for name in root.components() {
            match name {
                Component::RootDir => {}
                Component::Normal(name) => {
                    dir = openat(&dir, name, DIRECTORY | OFlags::NOFOLLOW, Mode::empty())?;
                }
                _ => return Err(Errno::INVAL),
            }
        }
        Ok(dir)
    }

    /// `relative` opened beneath the directory `root`, resolved by the
    /// kernel, which fails it with `EXDEV` if a link or `..` leads out.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) fn open_resolved_beneath(root: &Path, relative: &Path) -> Result<File, Errno> {
        use rustix::fs::{ResolveFlags, openat2};
        let dir = open_root(root)?;
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        // EAGAIN: a rename elsewhere on the way raced the look-up; the
        // kernel asks for the open again.
        let mut tries = 0;
        loop {
            match openat2(&dir, relative, FILE, Mode::empty(), resolve) {
                Err(Errno::AGAIN) if tries < 3 => tries += 1,
                opened => return opened.map(File::from),
            }
        }
    }

    /// `relative` (with no links, `.` or `..` in it) opened from the
    /// directory `root` one component at a time, none followed if it is a
    /// link: a link put there since `relative` was resolved fails it.
    pub(super) fn open_walking(root: &Path, relative: &Path) -> Result<File, Refused> {
        let refused = |error: Errno| match error {
            Errno::LOOP | Errno::NOTDIR => Refused::Changed,
            error => Refused::Io(error.into()),
        };
        fn normal<'a>(name: &Component<'a>) -> Result<&'a std::ffi::OsStr, Refused> {
            match name {
                Component::Normal(name) => Ok(name),
                _ => Err(Refused::Changed),
            }
        }
        let mut dir = open_root(root).map_err(refused)?;
        let names: Vec<Component<'_>> = relative.components().collect();
        let Some((last, on_the_way)) = names.split_last() else {
            // The root itself: the caller refuses a directory.
            return openat(&dir, ".", FILE, Mode::empty())
                .map(File::from)
                .map_err(|e| Refused::Io(e.into()));
        };
        for name in on_the_way {
            dir = openat(
                &dir,
                normal(name)?,
                DIRECTORY | OFlags::NOFOLLOW,
                Mode::empty(),
            )
            .map_err(refused)?;
        }
        openat(&dir, normal(last)?, FILE | OFlags::NOFOLLOW, Mode::empty())
            .map(File::from)
            .map_err(refused)
    }
}
