//! Local files: the roots `file://` URLs may read under
//! ([`FetchConfig::file_roots`](crate::FetchConfig::file_roots)), the file
//! threads that read them
//! ([`FetchConfig::file_readers`](crate::FetchConfig::file_readers)), and a
//! URL's file opened so that what is read is what was checked: opened
//! beneath a root first (`beneath.rs`), then its type and stamp taken
//! from the open handle (`fstat`), never from the path again.
//!
//! One `LocalFiles` serves the fetch stage's file source and the desktop's
//! shared thumbnails. Made by the pipeline's builder when there is
//! a root;
//! its threads end when the last holder drops it, which waits for them a
//! bounded time.

mod beneath;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use url::Url;

use self::beneath::{Refused, Root, open_beneath};
use crate::body::FileStamp;
use crate::error::{BuildError, Error};
use crate::workers::Workers;

/// The roots and the threads that read beneath them.
#[derive(Debug)]
pub(crate) struct LocalFiles {
    roots: Vec<Root>,
    threads: Arc<Workers>,
}

/// A local file, open, with its stamp as the open handle gave it.
pub(crate) struct OpenFile {
    pub(crate) file: File,
    pub(crate) stamp: FileStamp,
}

impl LocalFiles {
    /// Starts `readers` file threads (`thumbpipe-file-N`) for the files
    /// under `roots`; fails if a root is not a directory or a thread
    /// cannot start.
    pub(crate) fn start(roots: &[PathBuf], readers: usize) -> Result<Self, BuildError> {
        let roots = roots
            .iter()
            .map(|root| {
                Root::new(root).map_err(|e| {
                    BuildError::Config(format!(
                        "fetch.file_roots: '{}' cannot be opened as a directory: {e}",
                        root.display()
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let threads = Workers::start(readers, |n| format!("thumbpipe-file-{n}"))
            .map_err(|e| BuildError::Config(format!("cannot start the file threads: {e}")))?;
        Ok(Self {
            roots,
            threads: Arc::new(threads),
        })
    }

    /// The file threads: every blocking read of a local file runs on them.
    pub(crate) fn threads(&self) -> &Arc<Workers> {
        &self.threads
    }

    /// The regular file of `url`, opened beneath a root, and its stamp.
    /// Blocks: call it on the file threads.
    pub(crate) fn open(&self, url: &Url) -> Result<OpenFile, Error> {
        let path = url.to_file_path().map_err(|()| Error::File {
            url: url.to_string(),
            reason: "not a local file path".into(),
        })?;
        let file = open_beneath(&self.roots, &path).map_err(|refused| match refused {
            Refused::Outside(resolved) => self.outside(url, &resolved),
            Refused::Changed => Error::File {
                url: url.to_string(),
                reason: "the path changed while it was opened (a link took the place of a \
                         part of it)"
                    .into(),
            },
            Refused::Io(error) => unreadable(url, error),
        })?;
        // The type comes from the open handle, not the path: a FIFO or a
        // device is refused here, without a read that would wait on it.
        let metadata = file.metadata().map_err(|e| unreadable(url, e))?;
        if !metadata.is_file() {
            return Err(Error::File {
                url: url.to_string(),
                reason: "not a regular file".into(),
            });
        }
        let stamp = FileStamp::of(&metadata).ok_or_else(|| Error::File {
            url: url.to_string(),
            reason: "the file has no modification time".into(),
        })?;
        Ok(OpenFile { file, stamp })
    }

    fn outside(&self, url: &Url, resolved: &Path) -> Error {
        let roots: Vec<_> = self
            .roots
            .iter()
            .map(|root| root.canonical().display().to_string())
            .collect();
        Error::UnsupportedUrl {
            url: url.to_string(),
            reason: format!(
                "'{}' is outside config.fetch.file_roots ({})",
                resolved.display(),
                roots.join(", ")
            ),
        }
    }
}

/// [`Error::File`] for `url`, from an I/O error.
pub(crate) fn unreadable(url: &Url, error: std::io::Error) -> Error {
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

/// Opens `path` for reading without waiting: opening a FIFO would block
/// until a writer comes, holding up every file read behind it.
#[cfg(not(unix))]
fn open_without_waiting(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new().read(true).open(path)
}
