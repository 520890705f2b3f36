//! `file://` URLs: the files under
//! [`FetchConfig::file_roots`](crate::FetchConfig::file_roots), read on
//! threads of their own.
//!
//! Owned by the [`crate::HttpFetcher`] (shared by its clones), and started
//! only when a root is set. Reading a file blocks, so it happens on the
//! named file threads (`thumbpipe-file-N`,
//! [`FetchConfig::file_readers`](crate::FetchConfig::file_readers)), not on
//! the I/O runtime: a slow disk or network share holds up only the file
//! reads behind it, never the host name lookups that reqwest runs on the
//! runtime's blocking thread. A file is read by positioned reads of 64 KiB,
//! and only as far as the request's stop rule wants. A read whose load was
//! cancelled before a thread reached it is skipped. The threads end when
//! the last holder (the fetchers, the desktop's thumbnail cache) is
//! dropped, which waits for them a bounded time.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use url::Url;

use super::stop::{BodySoFar, ReadOn, StopRule};
use crate::workers::{Unfinished, Workers};
use crate::{BuildError, Error};

/// The file threads and the roots they read under.
#[derive(Debug)]
pub(super) struct FileReader {
    roots: Arc<[PathBuf]>,
    threads: Arc<Workers>,
}

impl FileReader {
    /// Starts `readers` file threads for the files under `roots`; fails if
    /// a root is not a directory or a thread cannot start.
    pub(super) fn start(roots: &[PathBuf], readers: usize) -> Result<Self, BuildError> {
        let roots = canonical_roots(roots)?;
        let threads = Workers::start(readers, |n| format!("thumbpipe-file-{n}"))
            .map_err(|e| BuildError::Config(format!("cannot start the file threads: {e}")))?;
        Ok(Self {
            roots,
            threads: Arc::new(threads),
        })
    }

    /// The file threads, for other blocking work on local files (the
    /// desktop's thumbnail cache).
    pub(crate) fn threads(&self) -> Arc<Workers> {
        Arc::clone(&self.threads)
    }

    /// The bytes of the file at `url`, read on the file thread until
    /// `rule` says they are enough (then `true`) or to the end; dropping
    /// the future abandons the read if it has not started.
    pub(super) fn read(
        &self,
        url: Url,
        max_bytes: u64,
        rule: Option<StopRule>,
    ) -> impl Future<Output = Result<(BodySoFar, bool), Error>> + Send + 'static {
        let url_text = url.to_string();
        let roots = Arc::clone(&self.roots);
        let read = self
            .threads
            .run(move || read_file(&url, &roots, max_bytes, rule));
        async move {
            match read.await {
                Ok(read) => read,
                Err(Unfinished::Panicked) => Err(Error::File {
                    url: url_text,
                    reason: "reading the file panicked".into(),
                }),
                Err(Unfinished::Stopped) => Err(Error::Shutdown { url: url_text }),
            }
        }
    }
}

/// `roots` with symbolic links resolved, if each is a directory.
pub(crate) fn canonical_roots(roots: &[PathBuf]) -> Result<Arc<[PathBuf]>, BuildError> {
    roots.iter().map(|root| canonical_root(root)).collect()
}

/// `root` with symbolic links resolved, if it is a directory.
fn canonical_root(root: &Path) -> Result<PathBuf, BuildError> {
    let invalid =
        |why: String| BuildError::Config(format!("fetch.file_roots: '{}' {why}", root.display()));
    let canonical = root
        .canonicalize()
        .map_err(|e| invalid(format!("cannot be opened: {e}")))?;
    if !canonical.is_dir() {
        return Err(invalid("is not a directory".into()));
    }
    Ok(canonical)
}

/// Opens `path` for reading without waiting: opening a FIFO would block
/// until a writer comes, holding up every file read behind it. Reads of a
/// regular file are not affected by the flag.
fn open_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// The first read of a file a stop rule watches: a camera's EXIF
/// thumbnail ends within it or the next, and the kernel's first readahead
/// follows its size.
const FIRST_CHUNK_BYTES: usize = 32 * 1024;
/// The largest read: each read after the first is twice the last, up to
/// it; a file read whole takes reads of it.
const MAX_CHUNK_BYTES: usize = 1024 * 1024;

/// The bytes of a `file://` URL's file, if it lies under one of `roots`
/// (both with symbolic links resolved) and is no larger than `max_bytes`,
/// read until `rule` says they are enough (`true`) or to the end. Blocks.
fn read_file(
    url: &Url,
    roots: &[PathBuf],
    max_bytes: u64,
    rule: Option<StopRule>,
) -> Result<(BodySoFar, bool), Error> {
    let (file, size) = open_under_roots(url, roots, max_bytes)?;
    // Read in chunks, for the stop rule to look at; a file that grows after
    // the check is never read past the cap.
    // With a stop rule, room for a few chunks first: most reads it cuts
    // short end within them; one read whole gets the file's size at once.
    let whole = size as usize;
    let (capacity, mut chunk_size) = match rule {
        Some(_) => (whole.min(FIRST_CHUNK_BYTES * 8), FIRST_CHUNK_BYTES),
        None => (whole, MAX_CHUNK_BYTES),
    };
    let mut body = BodySoFar::of_known_size(capacity, whole, max_bytes, rule.as_ref());
    let mut chunk = vec![0; whole.clamp(1, MAX_CHUNK_BYTES)];
    let mut offset = 0u64;
    // While the rule watches, the kernel reads no more than is asked for;
    // once it gives up, the rest is read ahead as usual.
    let mut watched = body.watching();
    advise(&file, watched);
    loop {
        let wanted = chunk_size.min(chunk.len());
        let read = match read_at(&file, &mut chunk[..wanted], offset) {
            Ok(0) => return Ok((body, false)),
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(unreadable(url, error)),
        };
        let grew = || Error::TooLarge {
            url: url.to_string(),
            what: format!("the file grew past the {max_bytes}-byte limit while read"),
            setting: "fetch.max_body_bytes",
        };
        offset += read as u64;
        if body.push(&chunk[..read], grew)? == ReadOn::Stop {
            return Ok((body, true));
        }
        chunk_size = (chunk_size * 2).min(MAX_CHUNK_BYTES);
        if watched && !body.watching() {
            watched = false;
            advise(&file, false);
            chunk_size = MAX_CHUNK_BYTES;
        }
    }
}

/// Tells the kernel how `file` is read: a few chunks from its start while
/// a stop rule watches (`watched`: no readahead, which reads up to
/// megabytes past what is asked), or through to its end. Where there is no
/// such advice, reads are as they are.
fn advise(file: &std::fs::File, watched: bool) {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        use rustix::fs::{Advice, fadvise};
        let advice = if watched {
            Advice::Random
        } else {
            Advice::Sequential
        };
        // Advice only: a file system that ignores it reads as before.
        let _ = fadvise(file, 0, None, advice);
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let _ = (file, watched);
}

/// The file of a `file://` URL, opened, and its size: if it lies under one
/// of `roots`, is a regular file, and has at most `max_bytes`. Blocks.
fn open_under_roots(
    url: &Url,
    roots: &[PathBuf],
    max_bytes: u64,
) -> Result<(std::fs::File, u64), Error> {
    let path: PathBuf = url.to_file_path().map_err(|()| Error::File {
        url: url.to_string(),
        reason: "not a local file path".into(),
    })?;
    let path = path.canonicalize().map_err(|e| unreadable(url, e))?;
    if !roots.iter().any(|root| path.starts_with(root)) {
        let roots: Vec<_> = roots
            .iter()
            .map(|root| root.display().to_string())
            .collect();
        return Err(Error::UnsupportedUrl {
            url: url.to_string(),
            reason: format!(
                "'{}' is outside config.fetch.file_roots ({})",
                path.display(),
                roots.join(", ")
            ),
        });
    }
    let file = open_without_blocking(&path).map_err(|e| unreadable(url, e))?;
    // The type comes from the open handle, not the path: a FIFO or device
    // (or a path swapped for one since the check above) is refused here.
    let metadata = file.metadata().map_err(|e| unreadable(url, e))?;
    if !metadata.is_file() {
        return Err(Error::File {
            url: url.to_string(),
            reason: "not a regular file".into(),
        });
    }
    if metadata.len() > max_bytes {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "the file is {} bytes, over the {max_bytes}-byte limit",
                metadata.len()
            ),
            setting: "fetch.max_body_bytes",
        });
    }
    Ok((file, metadata.len()))
}

/// [`Error::File`] for `url`, from an I/O error.
fn unreadable(url: &Url, error: std::io::Error) -> Error {
    let reason = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => error.to_string(),
    };
    Error::File {
        url: url.to_string(),
        reason,
    }
}

/// One positioned read of `file` at `offset`: the file's own position is
/// never used, so a read needs no seek and no shared state.
fn read_at(file: &std::fs::File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buffer, offset)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, buffer, offset)
    }
    #[cfg(not(any(unix, windows)))]
    {
        // Reads here are in order, from the start: the position is the
        // offset.
        let _ = offset;
        std::io::Read::read(&mut &*file, buffer)
    }
}
