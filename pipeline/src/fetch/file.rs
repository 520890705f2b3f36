//! `file://` URLs: the files under
//! [`FetchConfig::file_roots`](crate::FetchConfig::file_roots), opened
//! beneath them and read on threads of their own (both the
//! [`LocalFiles`]').
//!
//! The pipeline's source for the `file` scheme (`sources.rs`), made by its
//! builder only when a root is set. Reading a file blocks, so it happens on the
//! named file threads (`thumbpipe-file-N`,
//! [`FetchConfig::file_readers`](crate::FetchConfig::file_readers)), not on
//! the I/O runtime: a slow disk or network share holds up only the file
//! reads behind it, never the host name lookups that reqwest runs on the
//! runtime's blocking thread. The body carries the file's stamp, taken
//! from the open handle before and after the read. A file is read by
//! positioned reads of 32 KiB, doubling to 1 MiB,
//! and only as far as the request's stop rule wants. A read whose load was
//! cancelled before a thread reached it is skipped. The threads end when
//! the last holder (this source, the desktop's thumbnail cache) is
//! dropped, which waits for them a bounded time.

use std::sync::Arc;

use futures::future::BoxFuture;
use url::Url;

use super::stop::{BodySoFar, ReadOn, StopRule};
use super::{Fetch, FetchRequest, FetchResponse, fetch_from_response};
use crate::body::FileStamp;
use crate::error::Error;
use crate::local_files::{LocalFiles, OpenFile, unreadable};
use crate::workers::Unfinished;

/// The `file` source: the local files, read on their threads.
#[derive(Debug)]
pub(crate) struct FileSource {
    files: Arc<LocalFiles>,
}

/// A file's bytes as read: the body so far, whether the stop rule ended
/// the read, and the file's stamp if it did not change while it was read.
type FileRead = (BodySoFar, bool, Option<FileStamp>);

impl FileSource {
    /// The source of the files `files` opens.
    pub(crate) fn new(files: Arc<LocalFiles>) -> Self {
        Self { files }
    }

    /// The bytes of the file at `url`, read on the file thread until
    /// `rule` says they are enough (then `true`) or to the end; dropping
    /// the future abandons the read if it has not started.
    fn read(
        files: Arc<LocalFiles>,
        url: Url,
        max_bytes: u64,
        rule: Option<StopRule>,
    ) -> impl Future<Output = Result<FileRead, Error>> + Send + 'static {
        let url_text = url.to_string();
        async move {
            let threads = Arc::clone(files.threads());
            let read = threads.run(move || read_file(&url, &files, max_bytes, rule));
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

impl Fetch for FileSource {
    fetch_from_response!();

    fn fetch_response(
        &self,
        request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        let files = Arc::clone(&self.files);
        Box::pin(async move {
            // The file's size is known only once it is open: the cap is
            // reserved first, and the rest given back.
            let reservation = request.reserve(request.max_bytes).await;
            let rule = request.stop_rule.clone();
            let (body, stopped, stamp) =
                Self::read(files, request.url.clone(), request.max_bytes, rule).await?;
            let mut body = body.finish(stopped, |bytes| reservation.hold(bytes));
            if let Some(stamp) = stamp {
                body = body.read_from_file(stamp);
            }
            Ok(FetchResponse::new(request.url, body))
        })
    }
}

/// The first read of a file a stop rule watches: a camera's EXIF
/// thumbnail ends within it or the next, and the kernel's first readahead
/// follows its size.
const FIRST_CHUNK_BYTES: usize = 32 * 1024;
/// The largest read: each read after the first is twice the last, up to
/// it; a file read whole takes reads of it.
const MAX_CHUNK_BYTES: usize = 1024 * 1024;

/// The bytes of a `file://` URL's file, if it lies beneath a root and is
/// no larger than `max_bytes`, read until `rule` says they are enough
/// (`true`) or to the end, and its stamp if the read saw one file
/// throughout. Blocks.
fn read_file(
    url: &Url,
    files: &LocalFiles,
    max_bytes: u64,
    rule: Option<StopRule>,
) -> Result<FileRead, Error> {
    let OpenFile { file, stamp } = files.open(url)?;
    let over = stamp.size > max_bytes;
    let too_large = || Error::TooLarge {
        url: url.to_string(),
        what: format!(
            "the file is {} bytes, over the {max_bytes}-byte limit{}",
            stamp.size,
            if rule.is_some() {
                ", and its start did not make the thumbnail"
            } else {
                ""
            }
        ),
        setting: "fetch.max_body_bytes",
    };
    // A file whose start may make the thumbnail (a camera RAW's preview)
    // is read as far as the limit; any other is refused unread.
    if over && rule.is_none() {
        return Err(too_large());
    }
    let size = stamp.size;
    // The stamp the body carries, if the file is the same once read: one
    // written to while it was read is no one version's.
    let unchanged = |file: &std::fs::File| {
        let after = file.metadata().ok().and_then(|m| FileStamp::of(&m));
        (after == Some(stamp)).then_some(stamp)
    };
    // Read in chunks, for the stop rule to look at; a file that grows after
    // the check is never read past the cap.
    // With a stop rule, room for a few chunks first: most reads it cuts
    // short end within them; one read whole gets the file's size at once.
    // What may be held: all of it, or as far as the limit.
    let whole = size.min(max_bytes) as usize;
    let (capacity, mut chunk_size) = match rule {
        Some(_) => (whole.min(FIRST_CHUNK_BYTES * 8), FIRST_CHUNK_BYTES),
        None => (whole, MAX_CHUNK_BYTES),
    };
    let mut body =
        BodySoFar::of_known_size(capacity, whole, max_bytes, rule.as_ref()).declared(Some(size));
    let mut chunk = vec![0; whole.clamp(1, MAX_CHUNK_BYTES)];
    let mut offset = 0u64;
    // While the rule watches, the kernel reads no more than is asked for;
    // once it gives up, the rest is read ahead as usual.
    let mut watched = body.watching();
    advise(&file, watched);
    loop {
        let wanted = chunk_size.min(chunk.len());
        let read = match read_at(&file, &mut chunk[..wanted], offset) {
            Ok(0) => return Ok((body, false, unchanged(&file))),
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(unreadable(url, error)),
        };
        let grew = || {
            if over {
                return too_large();
            }
            Error::TooLarge {
                url: url.to_string(),
                what: format!("the file grew past the {max_bytes}-byte limit while read"),
                setting: "fetch.max_body_bytes",
            }
        };
        offset += read as u64;
        if body.push(&chunk[..read], grew)? == ReadOn::Stop {
            return Ok((body, true, unchanged(&file)));
        }
        chunk_size = (chunk_size * 2).min(MAX_CHUNK_BYTES);
        // Its start did not do (a file over the limit was refused as the
        // rule gave up): read on, with the kernel's readahead.
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
