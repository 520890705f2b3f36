//! The shared thumbnails as the load actor's thumbnail tier for `file://`
//! URLs: a look-up before a local file is read (a valid thumbnail that
//! covers the target is the load's result; a failure entry is its error),
//! and the thumbnail decoded from the file written back, with a failure
//! entry for a file the decoder refuses.
//!
//! Made by the pipeline's builder; its blocking work runs on the file
//! threads, and a look-up or write whose thread has stopped is dropped.
//! A thumbnail is written only if the file is as its load's look-up saw it
//! before the read (modification time to the nanosecond, size, inode): a
//! file changed during its load gets no thumbnail of either version. It is
//! written only into directories of the user's own that no one else may
//! write to, and only as the standard's files: a link, a device or a FIFO
//! planted in the cache is never opened as a thumbnail.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::UNIX_EPOCH;

use futures::future::BoxFuture;
use lru::LruCache;
use url::Url;

use super::cache_files::{read_small_file, write_privately};
use super::names::{SizeClass, canonical_uri, fail_dir_name, thumbnail_name};
use super::png_text::{PngInfo, encode, read_info};
use crate::decode::{DecodeLimits, decode_thumbnail};
use crate::load::ThumbnailTier;
use crate::metrics::Metrics;
use crate::request::{Fit, TargetSize};
use crate::workers::Workers;
use crate::{Body, Error, Thumbnail};

/// Files whose look-up is remembered until their thumbnail is offered.
const REMEMBERED: NonZeroUsize = NonZeroUsize::new(4096).unwrap();

/// A file as its look-up found it: what its thumbnail is checked against
/// and written with (the standard's whole seconds and size), and what
/// tells a change during its load (the nanoseconds and the inode too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    /// Modification time, whole seconds since 1970.
    mtime: u64,
    mtime_nanos: u32,
    size: u64,
    /// The file's inode, on Unix (0 elsewhere): a file replaced by another.
    inode: u64,
}

/// A load: its URL and target, of which one is under way at a time.
type LoadKey = (String, TargetSize);

/// The shared cache's look-ups and writes, for files under the roots.
pub(crate) struct SharedThumbnails {
    read: Option<PathBuf>,
    write: Option<PathBuf>,
    /// The file roots, symbolic links resolved: no file outside them is
    /// looked up, as none is read.
    roots: Arc<[PathBuf]>,
    threads: Arc<Workers>,
    limits: DecodeLimits,
    metrics: Arc<Metrics>,
    /// Each file's stamp when its load looked it up.
    seen: Arc<Mutex<LruCache<LoadKey, Stamp>>>,
}

impl SharedThumbnails {
    /// The tier reading from `read` and writing to `write` (at least one of
    /// them), for files under `roots`, its work on `threads`.
    pub(crate) fn new(
        read: Option<PathBuf>,
        write: Option<PathBuf>,
        roots: Arc<[PathBuf]>,
        threads: Arc<Workers>,
        limits: DecodeLimits,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            read,
            write,
            roots,
            threads,
            limits,
            metrics,
            seen: Arc::new(Mutex::new(LruCache::new(REMEMBERED))),
        }
    }

    fn remember(seen: &Mutex<LruCache<LoadKey, Stamp>>, load: LoadKey, stamp: Stamp) {
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.put(load, stamp);
    }

    fn recall(&self, url: &Url, target: TargetSize) -> Option<Stamp> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.pop(&(url.to_string(), target))
    }

    /// Writes `bytes` as `name` in `cache`'s subdirectory `sub` on a file
    /// thread, if the file at `path` still has `stamp` and lies outside
    /// the cache.
    fn write_later(&self, sub: &[&str], name: String, bytes: Vec<u8>, path: PathBuf, stamp: Stamp) {
        let Some(cache) = self.write.clone() else {
            return;
        };
        let sub: Vec<String> = sub.iter().map(|&part| part.to_owned()).collect();
        let metrics = Arc::clone(&self.metrics);
        self.threads.spawn(move || {
            let inside_cache = match (path.canonicalize(), cache.canonicalize()) {
                (Ok(path), Ok(cache)) => path.starts_with(cache),
                (Ok(_), Err(_)) => false,
                (Err(_), _) => true,
            };
            if inside_cache || file_stamp(&path) != Some(stamp) {
                return;
            }
            if write_privately(&cache, &sub, &name, &bytes).is_ok() {
                Metrics::add(&metrics.shared_thumbnails_written, 1);
            }
        });
    }
}

impl ThumbnailTier for SharedThumbnails {
    fn keeps(&self, url: &Url, target: TargetSize) -> bool {
        url.scheme() == "file" && matches!(target.fit, Fit::Inside | Fit::Cover)
    }

    fn widen(&self, _url: &Url, target: TargetSize) -> TargetSize {
        match (&self.write, SizeClass::for_writing(target)) {
            (Some(_), Some(class)) => TargetSize::square(class.side()),
            _ => target,
        }
    }

    fn lookup(
        &self,
        url: &Url,
        target: TargetSize,
    ) -> BoxFuture<'static, Option<Result<Thumbnail, Error>>> {
        let (url, read, roots, limits) = (
            url.clone(),
            self.read.clone(),
            Arc::clone(&self.roots),
            self.limits,
        );
        let (seen, metrics) = (Arc::clone(&self.seen), Arc::clone(&self.metrics));
        let writes = self.write.is_some();
        let found = self.threads.run(move || {
            let (path, stamp) = local_file(&url, &roots)?;
            let found = read.and_then(|read| look_up(&read, &url, &path, stamp, target, limits));
            match &found {
                Some(Ok(_)) => Metrics::add(&metrics.shared_thumbnails_used, 1),
                // A miss is decoded, and its thumbnail (or failure) written
                // against the file as it is now.
                None if writes => Self::remember(&seen, (url.to_string(), target), stamp),
                _ => {}
            }
            found
        });
        Box::pin(async move { found.await.ok().flatten() })
    }

    fn offer(&self, url: &Url, target: TargetSize, body: &Body, thumbnail: &Thumbnail) {
        let Some(stamp) = self.recall(url, target) else {
            return;
        };
        let Some(class) = SizeClass::for_writing(target).filter(|_| self.write.is_some()) else {
            return;
        };
        let (width, height) = (thumbnail.width, thumbnail.height);
        let longest = width.max(height);
        // Inside the class's square, reaching its side unless the image is
        // smaller: never a thumbnail scaled up, or one too small.
        let fits = longest <= class.side()
            && (longest == class.side() || (width, height) == thumbnail.source_size);
        let Some((path, uri)) = path_and_uri(url).filter(|_| fits) else {
            return;
        };
        let mut text = stamp_text(&uri, stamp);
        if let Some(media_type) = crate::formats::media_type(body) {
            text.push(("Thumb::Mimetype", media_type.to_owned()));
        }
        text.push(("Thumb::Image::Width", thumbnail.source_size.0.to_string()));
        text.push(("Thumb::Image::Height", thumbnail.source_size.1.to_string()));
        let Ok(bytes) = encode(width, height, &thumbnail.pixels, &text) else {
            return;
        };
        self.write_later(&[class.dir()], thumbnail_name(&uri), bytes, path, stamp);
    }

    /// A failure entry, for an image in a format this build decodes: one
    /// it does not know (an SVG without the `svg` feature) may decode in
    /// another app's build.
    fn failed(&self, url: &Url, target: TargetSize, body: &Body) {
        let Some(stamp) = self.recall(url, target) else {
            return;
        };
        let known = crate::formats::media_type(body).is_some();
        let Some((path, uri)) = path_and_uri(url).filter(|_| known && self.write.is_some()) else {
            return;
        };
        let Ok(bytes) = encode(1, 1, &[0; 4], &stamp_text(&uri, stamp)) else {
            return;
        };
        let version = fail_dir_name();
        self.write_later(
            &["fail", &version],
            thumbnail_name(&uri),
            bytes,
            path,
            stamp,
        );
    }
}

/// The path of `url`'s file as the URL gives it, and its canonical URI.
fn path_and_uri(url: &Url) -> Option<(PathBuf, String)> {
    let path = url.to_file_path().ok()?;
    let uri = canonical_uri(&path)?;
    Some((path, uri))
}

/// The text every entry carries: the file's URI, modification time and
/// size, and what wrote it.
fn stamp_text(uri: &str, stamp: Stamp) -> Vec<(&'static str, String)> {
    vec![
        ("Thumb::URI", uri.to_owned()),
        ("Thumb::MTime", stamp.mtime.to_string()),
        ("Thumb::Size", stamp.size.to_string()),
        (
            "Software",
            concat!("thumbpipe ", env!("CARGO_PKG_VERSION")).to_owned(),
        ),
    ]
}

/// The path of `url`'s file as the URL gives it (what its URI is made
/// from), and its stamp, if it is a regular file under one of `roots`
/// with a modification time. Blocks.
fn local_file(url: &Url, roots: &[PathBuf]) -> Option<(PathBuf, Stamp)> {
    let path = url.to_file_path().ok()?;
    let resolved = path.canonicalize().ok()?;
    if !roots.iter().any(|root| resolved.starts_with(root)) {
        return None;
    }
    let stamp = file_stamp(&resolved)?;
    Some((path, stamp))
}

/// A regular file's modification time and size. Blocks.
fn file_stamp(path: &Path) -> Option<Stamp> {
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_file() {
        return None;
    }
    let mtime = metadata.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&metadata);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp {
        mtime: mtime.as_secs(),
        mtime_nanos: mtime.subsec_nanos(),
        size: metadata.len(),
        inode,
    })
}

/// The thumbnail of the file at `path` in the cache at `dir`: thumbpipe's
/// failure entry for it as an error, or the smallest valid thumbnail that
/// covers `target`, decoded to it. Blocks.
fn look_up(
    dir: &Path,
    url: &Url,
    path: &Path,
    stamp: Stamp,
    target: TargetSize,
    limits: DecodeLimits,
) -> Option<Result<Thumbnail, Error>> {
    let uri = canonical_uri(path)?;
    let name = thumbnail_name(&uri);
    let valid = |info: &PngInfo| {
        info.text.get("Thumb::URI") == Some(&uri)
            && info.number("Thumb::MTime") == Some(stamp.mtime)
            && info
                .text
                .get("Thumb::Size")
                .is_none_or(|_| info.number("Thumb::Size") == Some(stamp.size))
    };
    let url_text: Arc<str> = Arc::from(url.as_str());
    if let Some(bytes) = read_small_file(&dir.join("fail").join(fail_dir_name()).join(&name))
        && read_info(&bytes).is_some_and(|info| valid(&info))
    {
        return Some(Err(Error::Decode {
            url: url_text.to_string(),
            reason: format!(
                "thumbpipe {} could not decode this file before, at this modification time \
                 (its failure entry in {}); it is tried again once the file changes",
                env!("CARGO_PKG_VERSION"),
                dir.join("fail").join(fail_dir_name()).display()
            ),
        }));
    }
    SizeClass::ALL.into_iter().find_map(|class| {
        let bytes = read_small_file(&dir.join(class.dir()).join(&name))?;
        let info = read_info(&bytes)?;
        let source = source_size(&info);
        let in_class = info.width.max(info.height) <= class.side();
        if !in_class || !valid(&info) || !covers((info.width, info.height), source, target) {
            return None;
        }
        let mut thumbnail = decode_thumbnail(&url_text, &bytes, target, limits).ok()?;
        thumbnail.source_size = source.unwrap_or((info.width, info.height));
        Some(Ok(thumbnail))
    })
}

/// The image size a thumbnail says it was made from, if it says.
fn source_size(info: &PngInfo) -> Option<(u32, u32)> {
    let side = |key| {
        info.number(key)
            .and_then(|side| u32::try_from(side).ok())
            .filter(|&side| side > 0)
    };
    Some((side("Thumb::Image::Width")?, side("Thumb::Image::Height")?))
}

/// Whether a thumbnail of `size`, made from an image of `source` (if
/// known), makes the thumbnail for `target` without scaling up: it is the
/// image at its own size, or reaches the box as the fit needs.
fn covers(size: (u32, u32), source: Option<(u32, u32)>, target: TargetSize) -> bool {
    if source == Some(size) {
        return true;
    }
    match target.fit {
        Fit::Inside => size.0 >= target.width || size.1 >= target.height,
        Fit::Cover => size.0 >= target.width && size.1 >= target.height,
        _ => false,
    }
}
