//! Decode: bytes to a thumbnail, on a bounded pool of the pipeline's own
//! threads. JPEGs are scaled down while decoding (in the DCT domain) when
//! that still covers the thumbnail; everything else is decoded in full and
//! downscaled.
//!
//! Owns the decode threads (`thumbpipe-decode-N`) and their queue. Jobs
//! arrive from the load actor and are served visible rows first, newest
//! first, with large images kept off the last free thread; a job cancelled
//! while queued is skipped, and every job reports back to the actor once.
//! The threads end when the pool is shut down: queued jobs report
//! cancelled, running decodes finish, and `shutdown` joins the threads.

use std::collections::HashMap;
use std::io::Cursor;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use bytes::Bytes;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use tokio_util::sync::CancellationToken;

use crate::queue::{TaskId, TaskQueue};
use crate::{Config, Error, Priority, TargetSize};

/// A decoded, downscaled image: RGBA8, shared without copying.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thumbnail {
    /// The URL it was loaded from.
    pub url: Arc<str>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes, row-major RGBA, not premultiplied.
    pub pixels: Arc<[u8]>,
}

impl Thumbnail {
    /// Bytes of pixel data: what the thumbnail costs in the cache.
    pub fn cost(&self) -> usize {
        self.pixels.len()
    }
}

/// Bytes to a thumbnail: the decode stage's seam. The default,
/// [`ImageDecoder`], decodes JPEG, PNG, WebP and GIF under the config's
/// limits; tests and benchmarks plug in others with
/// [`PipelineBuilder::decoder`](crate::PipelineBuilder::decoder).
///
/// It runs on the pipeline's decode threads, never on the UI thread or the
/// I/O runtime; a panic in it is caught and becomes [`Error::Decode`].
///
/// ```
/// use std::sync::Arc;
/// use thumbpipe::{Decode, Error, TargetSize, Thumbnail};
///
/// /// Every image becomes one grey pixel.
/// struct Grey;
///
/// impl Decode for Grey {
///     fn decode(&self, url: &Arc<str>, _bytes: &[u8], _target: TargetSize) -> Result<Thumbnail, Error> {
///         Ok(Thumbnail { url: Arc::clone(url), width: 1, height: 1, pixels: Arc::from([128u8, 128, 128, 255]) })
///     }
/// }
///
/// let pipeline = thumbpipe::Pipeline::<u32>::builder().decoder(Grey).build()?;
/// # Ok::<(), thumbpipe::BuildError>(())
/// ```
pub trait Decode: Send + Sync + 'static {
    /// A thumbnail of `bytes`, fitted inside `target`, or why there is none.
    fn decode(&self, url: &Arc<str>, bytes: &[u8], target: TargetSize) -> Result<Thumbnail, Error>;
}

/// The default decoder: [`thumbnail_from_bytes`]'s work under a
/// [`Config`]'s limits.
#[derive(Clone, Copy, Debug)]
pub struct ImageDecoder {
    limits: DecodeLimits,
}

impl ImageDecoder {
    /// A decoder with `config`'s dimension and allocation limits.
    pub fn new(config: &Config) -> Self {
        Self {
            limits: config.into(),
        }
    }
}

impl Decode for ImageDecoder {
    fn decode(&self, url: &Arc<str>, bytes: &[u8], target: TargetSize) -> Result<Thumbnail, Error> {
        decode_thumbnail(url, bytes, target, self.limits)
    }
}

/// The limits a decode runs under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DecodeLimits {
    pub(crate) max_dimension: u32,
    pub(crate) max_alloc: u64,
}

impl From<&Config> for DecodeLimits {
    fn from(config: &Config) -> Self {
        Self {
            max_dimension: config.max_dimension,
            max_alloc: config.max_decode_alloc,
        }
    }
}

/// Decodes `bytes` (JPEG, PNG, WebP or GIF's first frame) into a thumbnail
/// that fits `target`, under `config`'s size limits, on the calling thread:
/// the same work the pipeline's decode threads do, for bytes you already
/// have.
///
/// ```
/// use thumbpipe::{Config, TargetSize};
///
/// let mut png = std::io::Cursor::new(Vec::new());
/// image::RgbaImage::new(300, 150).write_to(&mut png, image::ImageFormat::Png).unwrap();
/// let thumbnail = thumbpipe::decode::thumbnail_from_bytes(
///     "memory:banner", png.get_ref(), TargetSize::square(64), &Config::default())?;
/// assert_eq!((thumbnail.width, thumbnail.height), (64, 32));
/// # Ok::<(), thumbpipe::Error>(())
/// ```
pub fn thumbnail_from_bytes(
    name: &str,
    bytes: &[u8],
    target: TargetSize,
    config: &Config,
) -> Result<Thumbnail, Error> {
    decode_thumbnail(&Arc::from(name), bytes, target, config.into())
}

/// Decodes `bytes` (JPEG, PNG, WebP or GIF's first frame) and scales the
/// image down to fit `target`, keeping its aspect ratio and never scaling up.
///
/// Refuses images that declare more than the limits before allocating for
/// them, and turns a decoder panic into [`Error::Decode`].
pub(crate) fn decode_thumbnail(
    url: &Arc<str>,
    bytes: &[u8],
    target: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        decode_unguarded(url, bytes, target, limits)
    }))
    .unwrap_or_else(|_| {
        Err(Error::Decode {
            url: url.to_string(),
            reason: "the decoder panicked on this input".into(),
        })
    })
}

fn decode_unguarded(
    url: &Arc<str>,
    bytes: &[u8],
    target: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    let decode_error = |reason: String| Error::Decode {
        url: url.to_string(),
        reason,
    };
    let reader = || {
        ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| decode_error(e.to_string()))
    };
    let probe = reader()?;
    let Some(format) = probe.format() else {
        return Err(decode_error(not_an_image(bytes)));
    };
    let (width, height) = probe
        .into_dimensions()
        .map_err(|e| decode_error(format!("unreadable {format:?} header: {e}")))?;
    if width > limits.max_dimension || height > limits.max_dimension {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {width}x{height}, over the {} limit",
                limits.max_dimension
            ),
            setting: "max_dimension",
        });
    }
    let decoded_bytes = u64::from(width) * u64::from(height) * 4;
    if decoded_bytes > limits.max_alloc {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {width}x{height} ({decoded_bytes} bytes decoded), over the {}-byte \
                 decode limit",
                limits.max_alloc
            ),
            setting: "max_decode_alloc",
        });
    }
    let scaled = match format {
        ImageFormat::Jpeg => decode_jpeg_scaled(bytes, (width, height), target, limits),
        _ => None,
    };
    let image = match scaled {
        Some(image) => image,
        None => {
            let mut image_limits = Limits::default();
            image_limits.max_image_width = Some(limits.max_dimension);
            image_limits.max_image_height = Some(limits.max_dimension);
            image_limits.max_alloc = Some(limits.max_alloc);
            let mut reader = reader()?;
            reader.limits(image_limits);
            reader
                .decode()
                .map_err(|e| decode_error(format!("{format:?}: {e}")))?
        }
    };
    // The size comes from the original dimensions: a DCT-scaled image is
    // only a step on the way.
    let (width, height) = fit_inside(width, height, target);
    let rgba = if (width, height) == (image.width(), image.height()) {
        image.into_rgba8()
    } else {
        downscale(&image, width, height)
    };
    Ok(Thumbnail {
        url: Arc::clone(url),
        width,
        height,
        pixels: Arc::from(rgba.into_raw()),
    })
}

/// Outputs wider than this make jpeg-decoder (without rayon) start a thread
/// per colour component; a decode thread must not start threads.
const JPEG_SCALED_MAX_WIDTH: u16 = 128;

/// A JPEG decoded at 1/2, 1/4 or 1/8 of its size by scaling in the DCT
/// domain, several times faster than a full decode, when that size still
/// covers the thumbnail. `None` when it does not apply (no reduction, an
/// output over [`JPEG_SCALED_MAX_WIDTH`], CMYK or 16-bit) or fails: the full
/// decode then runs and reports any error.
fn decode_jpeg_scaled(
    bytes: &[u8],
    (width, height): (u32, u32),
    target: TargetSize,
    limits: DecodeLimits,
) -> Option<DynamicImage> {
    let (want_width, want_height) = fit_inside(width, height, target);
    if want_width * 2 > width || want_height * 2 > height {
        return None;
    }
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    decoder.set_max_decoding_buffer_size(usize::try_from(limits.max_alloc).unwrap_or(usize::MAX));
    let (out_width, _) = decoder
        .scale(
            u16::try_from(want_width).ok()?,
            u16::try_from(want_height).ok()?,
        )
        .ok()?;
    if out_width > JPEG_SCALED_MAX_WIDTH || u32::from(out_width) >= width {
        return None;
    }
    let pixels = decoder.decode().ok()?;
    let info = decoder.info()?;
    let (w, h) = (u32::from(info.width), u32::from(info.height));
    match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => {
            image::RgbImage::from_raw(w, h, pixels).map(DynamicImage::ImageRgb8)
        }
        jpeg_decoder::PixelFormat::L8 => {
            image::GrayImage::from_raw(w, h, pixels).map(DynamicImage::ImageLuma8)
        }
        jpeg_decoder::PixelFormat::L16 | jpeg_decoder::PixelFormat::CMYK32 => None,
    }
}

fn downscale(image: &DynamicImage, width: u32, height: u32) -> image::RgbaImage {
    image.thumbnail_exact(width, height).into_rgba8()
}

/// The largest size with `width`/`height`'s aspect ratio that fits in
/// `target`, never larger than the original and never 0.
pub(crate) fn fit_inside(width: u32, height: u32, target: TargetSize) -> (u32, u32) {
    if width <= target.width && height <= target.height {
        return (width.max(1), height.max(1));
    }
    let scale = f64::min(
        f64::from(target.width) / f64::from(width),
        f64::from(target.height) / f64::from(height),
    );
    let scaled = |side: u32| ((f64::from(side) * scale).round() as u32).max(1);
    (scaled(width), scaled(height))
}

/// Says what the bytes look like when they are not an image.
fn not_an_image(bytes: &[u8]) -> String {
    let start = &bytes[..bytes.len().min(64)];
    let text = String::from_utf8_lossy(start).to_ascii_lowercase();
    if bytes.is_empty() {
        "the response was empty".into()
    } else if text.trim_start().starts_with("<!doctype html") || text.contains("<html") {
        "the server sent an HTML page, not an image".into()
    } else {
        format!(
            "not a JPEG, PNG, WebP or GIF ({} bytes starting {:02x?})",
            bytes.len(),
            &bytes[..bytes.len().min(4)]
        )
    }
}

/// One decode for the pool.
pub(crate) struct DecodeJob {
    /// The load task it belongs to: the key to change its priority by.
    pub(crate) task: TaskId,
    pub(crate) priority: Priority,
    pub(crate) url: Arc<str>,
    pub(crate) bytes: Bytes,
    pub(crate) target: TargetSize,
    pub(crate) cancel: CancellationToken,
    /// Called on the decode thread with the outcome; `None` when the job was
    /// cancelled before it started.
    pub(crate) done: DecodeDone,
}

/// Reports a decode job's outcome: `None` when it was cancelled first.
pub(crate) type DecodeDone = Box<dyn FnOnce(Option<Result<Thumbnail, Error>>) + Send>;

/// A fixed set of decode threads serving one queue, visible rows first and
/// newest first, in which large images may hold all threads but one.
///
/// A decode cannot be interrupted, so a thumbnail that arrives while every
/// thread is busy with a 12-megapixel photo would wait for the photo. Images
/// over [`Config::large_image_pixels`] (read from the header, before any
/// thread commits to them) therefore run on at most `threads - 1` threads at
/// once: with two or more threads, one is always left for small images.
pub(crate) struct DecodePool {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

struct Shared {
    // A std mutex, held only to queue or take a job, never across a decode
    // or a `done` call.
    state: Mutex<PoolState>,
    work: Condvar,
    decoder: Arc<dyn Decode>,
    large_pixels: u64,
    /// Most large decodes running at once.
    large_limit: usize,
}

#[derive(Default)]
struct PoolState {
    order: TaskQueue,
    waiting: HashMap<TaskId, Waiting>,
    large_running: usize,
    closed: bool,
}

struct Waiting {
    job: DecodeJob,
    large: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // Nothing panics while the lock is held (decodes and callbacks run
        // outside it), and the state is consistent between statements.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl DecodePool {
    pub(crate) fn start(
        threads: usize,
        large_pixels: u64,
        decoder: Arc<dyn Decode>,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            work: Condvar::new(),
            decoder,
            large_pixels,
            large_limit: threads.saturating_sub(1).max(1),
        });
        let threads = (0..threads)
            .map(|n| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("thumbpipe-decode-{n}"))
                    .spawn(move || decode_worker(&shared))
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Self {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// Queues a job; if the pool has shut down, the job reports cancelled.
    pub(crate) fn submit(&self, job: DecodeJob) {
        let large = is_large(&job.bytes, self.shared.large_pixels);
        let mut state = self.shared.lock();
        if state.closed {
            drop(state);
            (job.done)(None);
            return;
        }
        state.order.push(job.task, job.priority);
        state.waiting.insert(job.task, Waiting { job, large });
        drop(state);
        self.shared.work.notify_one();
    }

    /// Moves a queued job to `priority`; a job already decoding is left be.
    pub(crate) fn reprioritize(&self, task: TaskId, priority: Priority) {
        self.shared.lock().order.reprioritize(task, priority);
    }

    /// Closes the queue and joins the threads: each finishes the decode it
    /// is running, and the jobs still queued report cancelled.
    pub(crate) fn shutdown(&self) {
        self.shared.lock().closed = true;
        self.shared.work.notify_all();
        let threads = match self.threads.lock() {
            Ok(mut threads) => std::mem::take(&mut *threads),
            Err(_) => return,
        };
        for thread in threads {
            let _ = thread.join();
        }
    }
}

/// Whether `bytes`' header declares more than `limit` pixels. Unreadable
/// headers count as small: the decoder refuses them quickly.
fn is_large(bytes: &[u8], limit: u64) -> bool {
    std::panic::catch_unwind(|| imagesize::blob_size(bytes))
        .ok()
        .and_then(Result::ok)
        .is_some_and(|size| (size.width as u64).saturating_mul(size.height as u64) > limit)
}

/// What a worker takes from the queue.
enum Next {
    Decode(Waiting),
    Skip(DecodeJob),
    Exit,
}

/// Waits for the next job this worker may run: the first in serving order
/// that is small, cancelled (to report it at once), or large while a large
/// slot is free. After shutdown, every queued job is skipped.
fn next_job(shared: &Shared) -> Next {
    let mut state = shared.lock();
    loop {
        let PoolState {
            order,
            waiting,
            large_running,
            closed,
        } = &mut *state;
        let free = *large_running < shared.large_limit;
        let picked = order.pop_next(|task| {
            *closed
                || waiting
                    .get(&task)
                    .is_some_and(|w| !w.large || free || w.job.cancel.is_cancelled())
        });
        match picked.and_then(|task| waiting.remove(&task)) {
            Some(waiting) if *closed || waiting.job.cancel.is_cancelled() => {
                return Next::Skip(waiting.job);
            }
            Some(waiting) => {
                if waiting.large {
                    *large_running += 1;
                }
                return Next::Decode(waiting);
            }
            None if *closed => return Next::Exit,
            None => {
                state = shared
                    .work
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner)
            }
        }
    }
}

fn decode_worker(shared: &Shared) {
    loop {
        let Waiting { job, large } = match next_job(shared) {
            Next::Decode(waiting) => waiting,
            Next::Skip(job) => {
                (job.done)(None);
                continue;
            }
            Next::Exit => return,
        };
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            shared.decoder.decode(&job.url, &job.bytes, job.target)
        }))
        .unwrap_or_else(|_| {
            Err(Error::Decode {
                url: job.url.to_string(),
                reason: "the decoder panicked on this input".into(),
            })
        });
        if large {
            shared.lock().large_running -= 1;
            // A large job may have been waiting for this slot while the
            // other threads sleep.
            shared.work.notify_one();
        }
        (job.done)(Some(result));
    }
}

impl Drop for DecodePool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: DecodeLimits = DecodeLimits {
        max_dimension: 16_384,
        max_alloc: 256 * 1024 * 1024,
    };

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbaImage::from_pixel(width, height, image::Rgba([10, 20, 30, 255]));
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn fits_inside_keeping_aspect_and_never_upscales() {
        assert_eq!(fit_inside(600, 600, TargetSize::square(64)), (64, 64));
        assert_eq!(fit_inside(800, 400, TargetSize::square(64)), (64, 32));
        assert_eq!(fit_inside(400, 800, TargetSize::new(100, 64)), (32, 64));
        assert_eq!(fit_inside(20, 10, TargetSize::square(64)), (20, 10));
        assert_eq!(fit_inside(10_000, 1, TargetSize::square(64)), (64, 1));
    }

    /// A JPEG scaled down while decoding gives a thumbnail of the same size
    /// and content as the full decode would; one that would need an output
    /// over 128 wide (jpeg-decoder would start threads) takes the full decode.
    #[test]
    fn jpegs_are_scaled_in_the_dct_domain_when_that_covers_the_thumbnail() {
        let jpeg = fixture_server::picture::render(4242, 600, 600)
            .encode_jpeg(85)
            .unwrap();
        let scaled = decode_jpeg_scaled(&jpeg, (600, 600), TargetSize::square(64), LIMITS).unwrap();
        assert_eq!((scaled.width(), scaled.height()), (75, 75));
        assert!(decode_jpeg_scaled(&jpeg, (600, 600), TargetSize::square(128), LIMITS).is_none());
        assert!(decode_jpeg_scaled(&jpeg, (600, 600), TargetSize::square(400), LIMITS).is_none());
        let url: Arc<str> = "http://x/a.jpg".into();
        for side in [32, 64, 128] {
            let thumb = decode_thumbnail(&url, &jpeg, TargetSize::square(side), LIMITS).unwrap();
            assert_eq!((thumb.width, thumb.height), (side, side));
            assert_eq!(
                fixture_server::decode_id(&thumb.pixels, side, side),
                Some(4242),
                "{side}"
            );
        }
    }

    #[test]
    fn decodes_and_downscales_to_rgba() {
        let url: Arc<str> = "http://x/a.png".into();
        let thumb = decode_thumbnail(&url, &png(300, 150), TargetSize::square(64), LIMITS).unwrap();
        assert_eq!((thumb.width, thumb.height), (64, 32));
        assert_eq!(thumb.pixels.len(), 64 * 32 * 4);
        assert_eq!(&thumb.pixels[..4], &[10, 20, 30, 255]);
    }

    #[test]
    fn oversized_declared_dimensions_are_refused_before_decoding() {
        let url: Arc<str> = "http://x/a.png".into();
        let small = DecodeLimits {
            max_dimension: 100,
            ..LIMITS
        };
        let error =
            decode_thumbnail(&url, &png(300, 10), TargetSize::square(64), small).unwrap_err();
        assert!(
            matches!(
                error,
                Error::TooLarge {
                    setting: "max_dimension",
                    ..
                }
            ),
            "{error}"
        );
        let tight = DecodeLimits {
            max_alloc: 1000,
            ..LIMITS
        };
        let error =
            decode_thumbnail(&url, &png(300, 10), TargetSize::square(64), tight).unwrap_err();
        assert!(
            matches!(
                error,
                Error::TooLarge {
                    setting: "max_decode_alloc",
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn non_images_are_decode_errors_that_say_what_they_are() {
        let url: Arc<str> = "http://x/a.jpg".into();
        let html = b"<!doctype html><html><body>sign in</body></html>";
        let error = decode_thumbnail(&url, html, TargetSize::square(64), LIMITS).unwrap_err();
        assert!(error.to_string().contains("HTML page"), "{error}");
        let error = decode_thumbnail(&url, b"", TargetSize::square(64), LIMITS).unwrap_err();
        assert!(error.to_string().contains("empty"), "{error}");
        let truncated = &png(50, 50)[..60];
        assert!(matches!(
            decode_thumbnail(&url, truncated, TargetSize::square(64), LIMITS),
            Err(Error::Decode { .. })
        ));
    }

    /// A decoder that records the order it is called in and holds every
    /// job whose URL starts with "hold" until the gate opens.
    #[derive(Default)]
    struct Gated {
        started: Mutex<Vec<String>>,
        open: Mutex<bool>,
        opened: Condvar,
    }

    impl Gated {
        fn open(&self) {
            *self.open.lock().unwrap() = true;
            self.opened.notify_all();
        }

        fn started(&self) -> Vec<String> {
            self.started.lock().unwrap().clone()
        }

        /// Waits until `count` decodes have started.
        fn wait_started(&self, count: usize) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while self.started().len() < count {
                assert!(std::time::Instant::now() < deadline, "{:?}", self.started());
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }

    impl Decode for Gated {
        fn decode(&self, url: &Arc<str>, _: &[u8], _: TargetSize) -> Result<Thumbnail, Error> {
            self.started.lock().unwrap().push(url.to_string());
            if url.starts_with("hold") {
                let mut open = self.open.lock().unwrap();
                while !*open {
                    open = self.opened.wait(open).unwrap();
                }
            }
            Ok(Thumbnail {
                url: Arc::clone(url),
                width: 1,
                height: 1,
                pixels: Arc::from([0u8; 4]),
            })
        }
    }

    type Outcomes = Arc<Mutex<Vec<(String, Option<bool>)>>>;

    fn job(
        task: TaskId,
        url: &str,
        priority: Priority,
        bytes: &[u8],
        outcomes: &Outcomes,
    ) -> DecodeJob {
        let (outcomes, name) = (Arc::clone(outcomes), url.to_string());
        DecodeJob {
            task,
            priority,
            url: url.into(),
            bytes: Bytes::copy_from_slice(bytes),
            target: TargetSize::square(8),
            cancel: CancellationToken::new(),
            done: Box::new(move |outcome| {
                let decoded = outcome.map(|result| result.is_ok());
                outcomes.lock().unwrap().push((name, decoded));
            }),
        }
    }

    fn wait_outcomes(outcomes: &Outcomes, count: usize) -> Vec<(String, Option<bool>)> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let seen = outcomes.lock().unwrap().clone();
            if seen.len() >= count {
                return seen;
            }
            assert!(std::time::Instant::now() < deadline, "{seen:?}");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// With every thread but one holding a large image, large images wait
    /// and small ones still decode; once the large ones finish, the waiting
    /// large ones run too. Each job reports once.
    #[test]
    fn large_images_never_take_the_last_free_thread() {
        let gate = Arc::new(Gated::default());
        // 400 pixels is large here, 25 is not.
        let (large, small) = (png(20, 20), png(5, 5));
        let pool = DecodePool::start(3, 100, Arc::clone(&gate) as Arc<dyn Decode>).unwrap();
        let outcomes = Outcomes::default();
        for n in 0..4 {
            pool.submit(job(
                n,
                &format!("hold-large-{n}"),
                Priority::Visible,
                &large,
                &outcomes,
            ));
        }
        gate.wait_started(2);
        for n in 4..7 {
            pool.submit(job(
                n,
                &format!("small-{n}"),
                Priority::Visible,
                &small,
                &outcomes,
            ));
        }
        let done = wait_outcomes(&outcomes, 3);
        let mut names: Vec<_> = done.iter().map(|(name, _)| name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["small-4", "small-5", "small-6"]);
        // Still only two large decodes have started: the third thread was
        // kept for the small ones.
        let started_large = gate
            .started()
            .iter()
            .filter(|u| u.contains("large"))
            .count();
        assert_eq!(started_large, 2, "{:?}", gate.started());
        gate.open();
        let done = wait_outcomes(&outcomes, 7);
        assert_eq!(done.len(), 7);
        assert!(
            done.iter().all(|(_, decoded)| *decoded == Some(true)),
            "{done:?}"
        );
        pool.shutdown();
        assert_eq!(outcomes.lock().unwrap().len(), 7);
    }

    /// Queued jobs run visible first, newest first within a priority, and a
    /// reprioritized job moves with its new priority.
    #[test]
    fn queued_jobs_run_visible_first_then_newest_first() {
        let gate = Arc::new(Gated::default());
        let small = png(5, 5);
        let pool = DecodePool::start(1, u64::MAX, Arc::clone(&gate) as Arc<dyn Decode>).unwrap();
        let outcomes = Outcomes::default();
        pool.submit(job(0, "hold", Priority::Visible, &small, &outcomes));
        gate.wait_started(1);
        for (task, priority) in [
            (1, Priority::Prefetch),
            (2, Priority::Visible),
            (3, Priority::Visible),
            (4, Priority::Prefetch),
            (5, Priority::Prefetch),
        ] {
            pool.submit(job(
                task,
                &format!("job-{task}"),
                priority,
                &small,
                &outcomes,
            ));
        }
        pool.reprioritize(1, Priority::Visible);
        gate.open();
        wait_outcomes(&outcomes, 6);
        assert_eq!(
            gate.started(),
            ["hold", "job-3", "job-2", "job-1", "job-5", "job-4"]
        );
    }

    /// A job cancelled while queued reports `None` without being decoded,
    /// even a large one with no large slot free; after shutdown, queued jobs
    /// and new ones report `None`, and the threads are joined.
    #[test]
    fn cancelled_and_shut_down_jobs_report_once_without_decoding() {
        let gate = Arc::new(Gated::default());
        let large = png(20, 20);
        let pool = DecodePool::start(2, 100, Arc::clone(&gate) as Arc<dyn Decode>).unwrap();
        let outcomes = Outcomes::default();
        pool.submit(job(0, "hold-running", Priority::Visible, &large, &outcomes));
        gate.wait_started(1);
        let cancelled = job(1, "cancelled", Priority::Visible, &large, &outcomes);
        let token = cancelled.cancel.clone();
        pool.submit(cancelled);
        pool.submit(job(2, "queued", Priority::Visible, &large, &outcomes));
        token.cancel();
        // Wake a worker to notice the cancellation.
        pool.submit(job(3, "small", Priority::Visible, &png(5, 5), &outcomes));
        let done = wait_outcomes(&outcomes, 2);
        assert!(done.contains(&("cancelled".into(), None)), "{done:?}");
        assert!(done.contains(&("small".into(), Some(true))), "{done:?}");
        let opener = Arc::clone(&gate);
        let shutting = std::thread::Builder::new()
            .name("test-gate-opener".into())
            .spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                opener.open();
            })
            .unwrap();
        pool.shutdown();
        shutting.join().unwrap();
        pool.submit(job(4, "late", Priority::Visible, &large, &outcomes));
        let mut done = outcomes.lock().unwrap().clone();
        done.sort();
        assert_eq!(
            done,
            [
                ("cancelled".into(), None),
                ("hold-running".into(), Some(true)),
                ("late".into(), None),
                ("queued".into(), None),
                ("small".into(), Some(true)),
            ]
        );
        assert!(!gate.started().contains(&"queued".to_string()));
        assert!(!gate.started().contains(&"cancelled".to_string()));
    }
}
