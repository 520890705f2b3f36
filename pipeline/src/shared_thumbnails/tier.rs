//! The shared thumbnails as the load actor's thumbnail tier for `file://`
//! URLs: a look-up before a local file is read (a valid thumbnail that
//! covers the target is the load's result; a failure entry is its error),
//! and the thumbnail decoded from the file written back, with a failure
//! entry for a file the decoder refuses.
//!
//! Made by the pipeline's builder; its blocking work runs on the file
//! threads, and a look-up or write whose thread has stopped is dropped.
//! The photo is opened beneath the roots as the fetch opens it, and stamped
//! from the open handle: a look-up checks a thumbnail against that stamp,
//! and a thumbnail is written with the stamp its body's read took from the
//! file it read (modification time to the nanosecond, size, inode, the same
//! before and after the read), and only if the file opened again still has
//! it: a file changed during its load gets no thumbnail of either version,
//! and a path swapped for a link to a file outside the roots is never read
//! nor stamped. It is written only into directories of the user's own that
//! no one else may write to, and only as the standard's files: a link, a
//! device or a FIFO planted in the cache is never opened as a thumbnail.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use url::Url;

use super::cache_files::CacheDirs;
use super::names::{SizeClass, canonical_uri, fail_dir_name, thumbnail_name};
use super::png_text::{PngInfo, encode, read_info};
use crate::body::{Body, FileStamp};
use crate::decode::{DecodeLimits, decode_thumbnail};
use crate::error::Error;
use crate::load::tier::ThumbnailTier;
use crate::local_files::LocalFiles;
use crate::metrics::Metrics;
use crate::request::{Fit, TargetSize};
use crate::room::Room;
use crate::thumbnail::Thumbnail;

/// The largest class written stored, not deflated (unless the app asks):
/// the classes of a grid's cells, looked up a screen at a time, where the
/// inflate is about 40% of a look-up's cost. A stored thumbnail above it
/// would take 0.6-2.4 MB of disk (and of the writes waiting, at most 64)
/// for one look-up of the few a screen that large shows.
const STORED_UP_TO: u32 = 256;

/// The shared cache's look-ups and writes, for files under the roots.
pub(crate) struct SharedThumbnails {
    read: Option<Arc<CacheDirs>>,
    write: Option<Arc<CacheDirs>>,
    /// The files beneath the roots, opened as the fetch opens them, and
    /// the threads this tier's blocking work runs on.
    files: Arc<LocalFiles>,
    limits: DecodeLimits,
    metrics: Arc<Metrics>,
    /// [`SharedThumbnailsConfig::compress_writes`](crate::SharedThumbnailsConfig::compress_writes).
    compress_writes: bool,
}

impl SharedThumbnails {
    /// The tier reading from `read` and writing to `write` (at least one of
    /// them), for the local `files`.
    pub(crate) fn new(
        read: Option<PathBuf>,
        write: Option<PathBuf>,
        files: Arc<LocalFiles>,
        limits: DecodeLimits,
        metrics: Arc<Metrics>,
        compress_writes: bool,
    ) -> Self {
        let dirs = |cache: Option<PathBuf>| cache.map(|cache| Arc::new(CacheDirs::new(cache)));
        // One set of open directories where the app reads and writes one
        // cache (the desktop's, by default).
        let (read, write) = match (dirs(read), write) {
            (Some(read), Some(write)) if read.path() == write => {
                (Some(Arc::clone(&read)), Some(read))
            }
            (read, write) => (read, dirs(write)),
        };
        Self {
            read,
            write,
            files,
            limits,
            metrics,
            compress_writes,
        }
    }

    /// Whether a thumbnail of `class` is written deflated: when the app
    /// asks, and above [`STORED_UP_TO`].
    fn deflates(&self, class: SizeClass) -> bool {
        self.compress_writes || class.side() > STORED_UP_TO
    }

    /// Writes `bytes` as `name` in `cache`'s subdirectory `sub` on a file
    /// thread, if `url`'s file, opened again, still has `stamp` and lies
    /// outside the cache.
    fn write_later(&self, sub: &[&str], name: String, bytes: Vec<u8>, url: &Url, stamp: FileStamp) {
        let Some(cache) = self.write.clone() else {
            return;
        };
        let sub: Vec<String> = sub.iter().map(|&part| part.to_owned()).collect();
        let (url, files) = (url.clone(), Arc::clone(&self.files));
        let metrics = Arc::clone(&self.metrics);
        self.files.threads().spawn_later(move || {
            if files.open(&url).map(|file| file.stamp).ok() != Some(stamp)
                || inside(&url, cache.path())
            {
                return;
            }
            let sub: Vec<&str> = sub.iter().map(String::as_str).collect();
            if cache.write_privately(&sub, &name, &bytes).is_ok() {
                Metrics::add(&metrics.shared_thumbnails_written, 1);
            }
        });
    }
}

/// Whether `url`'s file lies in the cache at `cache` (as the paths
/// resolve now): the standard makes no thumbnails of thumbnails. A loop
/// guard, not a trust one: what is written is only ever the thumbnail of
/// a file read beneath the roots, with its own stamp.
fn inside(url: &Url, cache: &Path) -> bool {
    let path = url.to_file_path().ok().and_then(|p| p.canonicalize().ok());
    match (path, cache.canonicalize()) {
        (Some(path), Ok(cache)) => path.starts_with(cache),
        (Some(_), Err(_)) => false,
        (None, _) => true,
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
        let Some(read) = self.read.clone() else {
            return Box::pin(std::future::ready(None));
        };
        let (url, files, limits) = (url.clone(), Arc::clone(&self.files), self.limits);
        let metrics = Arc::clone(&self.metrics);
        let found = self.files.threads().run(move || {
            // The photo as the fetch would open it: a file this load may
            // not read has no thumbnail either.
            let stamp = files.open(&url).ok()?.stamp;
            let path = url.to_file_path().ok()?;
            let found = look_up(&read, &url, &path, stamp, target, limits);
            if let Some(Ok(_)) = &found {
                Metrics::add(&metrics.shared_thumbnails_used, 1);
            }
            found
        });
        Box::pin(async move { found.await.ok().flatten() })
    }

    fn offer(&self, url: &Url, target: TargetSize, body: &Body, thumbnail: &Thumbnail) {
        let Some(stamp) = body.file_stamp() else {
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
        let Some(uri) = uri_of(url).filter(|_| fits) else {
            return;
        };
        let mut text = stamp_text(&uri, stamp);
        if let Some(media_type) = crate::decode::formats::media_type(body) {
            text.push(("Thumb::Mimetype", media_type.to_owned()));
        }
        text.push(("Thumb::Image::Width", thumbnail.source_size.0.to_string()));
        text.push(("Thumb::Image::Height", thumbnail.source_size.1.to_string()));
        let Ok(bytes) = encode(
            width,
            height,
            &thumbnail.pixels,
            &text,
            self.deflates(class),
        ) else {
            return;
        };
        self.write_later(&[class.dir()], thumbnail_name(&uri), bytes, url, stamp);
    }

    /// A failure entry, for an image in a format this build decodes: one
    /// it does not know (an SVG without the `svg` feature) may decode in
    /// another app's build.
    fn failed(&self, url: &Url, _target: TargetSize, body: &Body) {
        let Some(stamp) = body.file_stamp() else {
            return;
        };
        let known = crate::decode::formats::media_type(body).is_some();
        let Some(uri) = uri_of(url).filter(|_| known && self.write.is_some()) else {
            return;
        };
        let Ok(bytes) = encode(1, 1, &[0; 4], &stamp_text(&uri, stamp), true) else {
            return;
        };
        let version = fail_dir_name();
        self.write_later(&["fail", &version], thumbnail_name(&uri), bytes, url, stamp);
    }
}

/// The canonical URI of `url`'s file, made from its path as the URL gives
/// it (links not resolved, as GLib makes it).
fn uri_of(url: &Url) -> Option<String> {
    canonical_uri(&url.to_file_path().ok()?)
}

/// The text every entry carries: the file's URI, modification time and
/// size, and what wrote it.
fn stamp_text(uri: &str, stamp: FileStamp) -> Vec<(&'static str, String)> {
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

/// The thumbnail of the file at `path` in the cache `dir`: the smallest
/// valid thumbnail that covers `target`, decoded to it, or else
/// thumbpipe's failure entry for it as an error. A thumbnail comes first:
/// another program's, or a later decoder's, shows what this one could
/// not; and a screen of thumbnails found reads no failure directory.
/// Blocks.
fn look_up(
    dir: &CacheDirs,
    url: &Url,
    path: &Path,
    stamp: FileStamp,
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
    let mut bytes = Room::FileBytes.take();
    let found = SizeClass::ALL.into_iter().find_map(|class| {
        if !dir.read_small_file(&[class.dir()], &name, &mut bytes) {
            return None;
        }
        let info = read_info(&bytes)?;
        let source = source_size(&info);
        let in_class = info.width.max(info.height) <= class.side();
        if !in_class || !valid(&info) || !covers((info.width, info.height), source, target) {
            return None;
        }
        let mut thumbnail = decode_thumbnail(&url_text, &bytes, target, limits).ok()?;
        thumbnail.source_size = source.unwrap_or((info.width, info.height));
        Some(Ok(thumbnail))
    });
    // No thumbnail: thumbpipe's failure entry, if it wrote one.
    let found = found.or_else(|| {
        let failed = dir.read_small_file(&["fail", &fail_dir_name()], &name, &mut bytes)
            && read_info(&bytes).is_some_and(|info| valid(&info));
        failed.then(|| {
            Err(Error::Decode {
                url: url_text.to_string(),
                reason: format!(
                    "thumbpipe {} could not decode this file before, at this modification \
                     time (its failure entry in {}); it is tried again once the file changes",
                    env!("CARGO_PKG_VERSION"),
                    dir.path().join("fail").join(fail_dir_name()).display()
                ),
            })
        })
    });
    Room::FileBytes.give_back(bytes);
    found
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
