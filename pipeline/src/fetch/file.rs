//! `file://` URLs: the files under
//! [`FetchConfig::file_root`](crate::FetchConfig::file_root), read on a thread
//! of their own.
//!
//! Owned by the [`crate::HttpFetcher`] (shared by its clones), and started
//! only when a root is set. Reading a file blocks, so it happens on one
//! named thread (`thumbpipe-file`), not on the I/O runtime: a slow disk or
//! network share holds up only the file reads behind it, never the host
//! name lookups that reqwest runs on the runtime's blocking thread. A read
//! whose load was cancelled before the thread reached it is skipped. The
//! thread ends when the last fetcher is dropped, which waits for it a
//! bounded time.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use url::Url;

use super::stop::{BodySoFar, ReadOn, StopRule};
use crate::workers::{Unfinished, Workers};
use crate::{BuildError, Error};

/// The file thread and the root it reads under.
#[derive(Debug)]
pub(super) struct FileReader {
    root: Arc<Path>,
    thread: Workers,
}

impl FileReader {
    /// Starts the file thread for the files under `root`; fails if `root`
    /// is not a directory or the thread cannot start.
    pub(super) fn start(root: &Path) -> Result<Self, BuildError> {
        let root = canonical_root(root)?;
        let thread = Workers::start(1, |_| "thumbpipe-file".into())
            .map_err(|e| BuildError::Config(format!("cannot start the file thread: {e}")))?;
        Ok(Self { root, thread })
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
        let root = Arc::clone(&self.root);
        let read = self
            .thread
            .run(move || read_file(&url, &root, max_bytes, rule));
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

/// `root` with symbolic links resolved, if it is a directory.
fn canonical_root(root: &Path) -> Result<Arc<Path>, BuildError> {
    let invalid =
        |why: String| BuildError::Config(format!("fetch.file_root '{}' {why}", root.display()));
    let canonical = root
        .canonicalize()
        .map_err(|e| invalid(format!("cannot be opened: {e}")))?;
    if !canonical.is_dir() {
        return Err(invalid("is not a directory".into()));
    }
    Ok(Arc::from(canonical))
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
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// How much of a file one read asks for: what a stop rule is asked after.
const CHUNK_BYTES: usize = 64 * 1024;

/// The bytes of a `file://` URL's file, if it lies under `root` (both with
/// symbolic links resolved) and is no larger than `max_bytes`, read until
/// `rule` says they are enough (`true`) or to the end. Blocks.
fn read_file(
    url: &Url,
    root: &Path,
    max_bytes: u64,
    rule: Option<StopRule>,
) -> Result<(BodySoFar, bool), Error> {
    let unreadable = |reason: String| Error::File {
        url: url.to_string(),
        reason,
    };
    let io_reason = |error: std::io::Error| match error.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => error.to_string(),
    };
    let path: PathBuf = url
        .to_file_path()
        .map_err(|()| unreadable("not a local file path".into()))?;
    let path = path.canonicalize().map_err(|e| unreadable(io_reason(e)))?;
    if !path.starts_with(root) {
        return Err(Error::UnsupportedUrl {
            url: url.to_string(),
            reason: format!(
                "'{}' is outside config.fetch.file_root '{}'",
                path.display(),
                root.display()
            ),
        });
    }
    let file = open_without_blocking(&path).map_err(|e| unreadable(io_reason(e)))?;
    // The type comes from the open handle, not the path: a FIFO or device
    // (or a path swapped for one since the check above) is refused here.
    let metadata = file.metadata().map_err(|e| unreadable(io_reason(e)))?;
    if !metadata.is_file() {
        return Err(unreadable("not a regular file".into()));
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
    // Read in chunks, for the stop rule to look at; a file that grows after
    // the check is never read past the cap.
    // With a stop rule, room for a few chunks first: most reads it cuts
    // short end within them; one read whole gets the file's size at once.
    let whole = metadata.len() as usize;
    let capacity = match rule {
        Some(_) => whole.min(CHUNK_BYTES * 4),
        None => whole,
    };
    let mut body = BodySoFar::of_known_size(capacity, whole, max_bytes, rule.as_ref());
    let mut chunk = vec![0; CHUNK_BYTES];
    let mut file = file;
    loop {
        let read = match file.read(&mut chunk) {
            Ok(0) => return Ok((body, false)),
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(unreadable(io_reason(error))),
        };
        let grew = || Error::TooLarge {
            url: url.to_string(),
            what: format!("the file grew past the {max_bytes}-byte limit while read"),
            setting: "fetch.max_body_bytes",
        };
        if body.push(&chunk[..read], grew)? == ReadOn::Stop {
            return Ok((body, true));
        }
    }
}
