//! Decode: bytes to a [`Thumbnail`]. The [`Decode`] trait is the stage's seam
//! and [`ImageDecoder`] its default, which decodes the [`SUPPORTED_FORMATS`]
//! under the config's size limits. A JPEG is decoded by libjpeg at the smallest
//! DCT scale (1/8 to 8/8) that still covers the thumbnail (`jpeg/`), unless
//! [`DecodeConfig::jpeg_dct_scaling`](crate::DecodeConfig::jpeg_dct_scaling) is
//! off or the binary is built with `panic = "abort"` (libjpeg's errors unwind);
//! a progressive JPEG bound for 1/8 of its size or less is decoded from its
//! DC scans alone (`jpeg/dc_scans.rs`), and a camera photo from the thumbnail
//! its EXIF embeds where that serves (`jpeg/exif.rs`);
//! everything else is decoded in full by
//! `image`. Either way, fast_image_resize
//! takes it the rest of the way (`resize.rs`), and the EXIF orientation turns
//! the thumbnail.
//!
//! Decodes run on the decode pool's threads (`pool.rs`), never on the UI
//! thread or the I/O runtime, and start no threads of their own;
//! [`thumbnail_from_bytes`] runs the same work on the caller's thread.
//! Nothing here keeps state between decodes.
//!
//! Where to change what: a new format is a row of the format table
//! (`formats.rs` says how: its file here with its `FORMAT`, its cargo
//! feature, its line in the table); a fix for one format is a hook of its
//! row, in its file (`png.rs`, `gif.rs`, `ico.rs`); a faster path for a
//! JPEG is in `jpeg/`, chosen by `route.rs`, which takes one image from
//! its bytes to its thumbnail once `header.rs` has read what it is; the
//! resize filter is `resize::filter()`; how an image goes in its box (inside
//! or a cover crop) and is turned upright is `fitting.rs`.

mod animation;
pub(crate) mod config;
mod fitting;
pub(crate) mod formats;
mod header;
mod ifd;
mod off;
mod pool;
mod resize;
mod route;
mod watch;

/// The format table: each format's module, and its `FORMAT` row in
/// [`FORMATS`], in the order given.
macro_rules! format_table {
    ($($(#[$on:meta])* $format:ident,)*) => {
        $($(#[$on])* mod $format;)*

        /// Every format this build decodes, one row each, most common on
        /// the web first (the order of the `Accept` header, and the order
        /// rows are asked whether bytes are theirs: markup last, after
        /// every format told by magic bytes). `formats.rs` reads it.
        pub(crate) const FORMATS: &[&formats::Format] = &[$($(#[$on])* &$format::FORMAT,)*];
    };
}

// One line a format, behind its cargo feature: a format that is off has no
// row and no module, and is named nowhere else.
format_table! {
    webp,
    png,
    jpeg,
    gif,
    // After the formats that decode fastest: a server that can send either
    // chooses by its own order, most of them AVIF whenever it is named.
    #[cfg(feature = "avif")] avif,
    #[cfg(feature = "jxl")] jxl,
    #[cfg(feature = "heic")] heic,
    #[cfg(feature = "bmp")] bmp,
    #[cfg(feature = "ico")] ico,
    // Before TIFF's row: most camera RAWs are TIFF-structured.
    #[cfg(feature = "raw")] raw,
    #[cfg(feature = "tiff")] tiff,
    #[cfg(feature = "qoi")] qoi,
    #[cfg(feature = "svg")] svg,
}
// ISO BMFF's boxes and item tables, which AVIF and HEIC files are made of.
#[cfg(any(feature = "avif", feature = "heic"))]
mod bmff;
// SVG's own parts: what a drawing costs, and what its references reach.
#[cfg(feature = "svg")]
mod svg_cost;
#[cfg(feature = "svg")]
mod svg_refs;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

pub use config::DecodeConfig;
pub(crate) use fitting::refit;
pub(crate) use pool::{DecodeJob, DecodeOutcome, DecodePool, SHUTDOWN_PATIENCE};
pub(crate) use route::decode_thumbnail;
pub(crate) use watch::{stop_rule, watches_bodies};

use crate::body::Body;
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// A body to a thumbnail: the decode stage's seam. The default,
/// [`ImageDecoder`], decodes the formats it lists under the config's
/// limits; tests and benchmarks plug in others with
/// [`PipelineBuilder::decoder`](crate::PipelineBuilder::decoder).
///
/// It runs on the pipeline's decode threads, never on the UI thread or the
/// I/O runtime; a panic in it is caught and becomes [`Error::Decode`].
///
/// ```
/// use std::sync::Arc;
/// use thumbpipe::{Body, Decode, Error, TargetSize, Thumbnail};
///
/// /// Every image becomes one grey pixel.
/// struct Grey;
///
/// impl Decode for Grey {
///     fn decode(&self, url: &Arc<str>, _body: &Body, _target: TargetSize) -> Result<Thumbnail, Error> {
///         Ok(Thumbnail { url: Arc::clone(url), width: 1, height: 1, pixels: Arc::from([128u8, 128, 128, 255]), source_size: (1, 1), animation: None })
///     }
/// }
///
/// let pipeline = thumbpipe::Pipeline::<u32>::builder().decoder(Grey).build()?;
/// # Ok::<(), thumbpipe::BuildError>(())
/// ```
pub trait Decode: Send + Sync + 'static {
    /// A thumbnail of `body` for `target` (fitted inside it, cropped to
    /// cover it, or at the image's own size, as its [`Fit`](crate::Fit)
    /// says), with the image's own size in
    /// [`Thumbnail::source_size`], or why there is none.
    ///
    /// The body is whole ([`Body::complete`]) unless the decoder
    /// [takes bodies cut short](Decode::takes_cut_short_bodies).
    fn decode(&self, url: &Arc<str>, body: &Body, target: TargetSize) -> Result<Thumbnail, Error>;

    /// Whether it may be given the start of a body, read only as far as
    /// the thumbnail needs: a JPEG up to an embedded thumbnail that serves,
    /// or a progressive photo's DC scans, as
    /// [`DecodeConfig::embedded_thumbnails`] and
    /// [`DecodeConfig::progressive_dc_scans`] allow; a camera RAW (cargo
    /// feature `raw`) up to the preview that serves. When its decode of
    /// such a body fails, the pipeline reads the body again whole, once.
    /// Default `false`: every body it is given is whole. [`ImageDecoder`]
    /// takes them when either of its settings is on or RAWs are read; how
    /// far a fetch reads follows the pipeline's
    /// [`Config::decode`](crate::Config::decode), so give it the same
    /// [`DecodeConfig`].
    fn takes_cut_short_bodies(&self) -> bool {
        false
    }
}

/// The default decoder: [`thumbnail_from_bytes`]'s work under a
/// [`DecodeConfig`]'s limits.
///
/// It decodes the [`SUPPORTED_FORMATS`](crate::SUPPORTED_FORMATS); of an animated GIF or WebP, the
/// first frame, or every frame with [`DecodeConfig::animation`]. A photo whose EXIF orientation says it was taken turned
/// (JPEG, and WebP and PNG where they carry EXIF) comes out upright, its
/// width and height swapped for a quarter turn, and fitted to the target
/// as it is seen. Anything else is [`Error::Decode`], which says what the
/// bytes look like instead (an HTML page, an empty body, or their first
/// bytes). In the pipeline, a panic of the decoder is caught by the decode
/// pool; [`thumbnail_from_bytes`] catches it on your thread.
#[derive(Clone, Copy, Debug)]
pub struct ImageDecoder {
    limits: DecodeLimits,
}

impl ImageDecoder {
    /// A decoder with `config`'s dimension and allocation limits and its
    /// JPEG route.
    ///
    /// ```
    /// let decoder = thumbpipe::ImageDecoder::new(&thumbpipe::DecodeConfig::default());
    /// let pipeline = thumbpipe::Pipeline::<u32>::builder().decoder(decoder).build()?;
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub fn new(config: &DecodeConfig) -> Self {
        Self {
            limits: config.into(),
        }
    }
}

impl Decode for ImageDecoder {
    fn decode(&self, url: &Arc<str>, body: &Body, target: TargetSize) -> Result<Thumbnail, Error> {
        route::decode_body(url, body, target, self.limits)
    }

    fn takes_cut_short_bodies(&self) -> bool {
        watch::watches_bodies(&self.limits)
    }
}

/// The limits a decode runs under, and its JPEG route.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DecodeLimits {
    pub(crate) max_dimension: u32,
    pub(crate) max_alloc: u64,
    /// libjpeg's DCT-scaled route for JPEGs: asked for, and possible (built
    /// with the `libjpeg` feature, and unwinding: a libjpeg error is an
    /// unwind, which `panic = "abort"` cannot catch).
    pub(crate) jpeg_dct_scaling: bool,
    /// A JPEG's EXIF thumbnail decoded instead of it where it serves.
    pub(crate) embedded_thumbnails: bool,
    /// A progressive JPEG bound for 1/8 of its size or less decoded from
    /// its DC scans alone (`jpeg/dc_scans.rs`, pure Rust: with or without
    /// libjpeg).
    pub(crate) progressive_dc: bool,
    #[cfg_attr(not(feature = "svg"), allow(dead_code))]
    pub(crate) svg_max_elements: u32,
    /// How animations are played, if they are.
    pub(crate) animation: Option<AnimationLimits>,
}

/// The limits an animation is played under ([`DecodeConfig::animation`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AnimationLimits {
    pub(crate) max_frames: u32,
    pub(crate) max_bytes: u64,
    pub(crate) max_pixels: u64,
}

impl From<&DecodeConfig> for DecodeLimits {
    fn from(config: &DecodeConfig) -> Self {
        Self {
            max_dimension: config.max_dimension,
            max_alloc: config.max_alloc_bytes,
            jpeg_dct_scaling: config.jpeg_dct_scaling && UNWINDS && cfg!(feature = "libjpeg"),
            embedded_thumbnails: config.embedded_thumbnails,
            progressive_dc: config.progressive_dc_scans,
            svg_max_elements: config.svg_max_elements,
            animation: config.animation.then_some(AnimationLimits {
                max_frames: config.max_animation_frames,
                max_bytes: config.max_animation_bytes,
                max_pixels: config.max_animation_pixels,
            }),
        }
    }
}

/// Whether this binary unwinds on a panic (not built with `panic =
/// "abort"`).
const UNWINDS: bool = cfg!(panic = "unwind");

/// Decodes `bytes` (in a format [`ImageDecoder`] lists) into a thumbnail
/// that fits `target`, under `config`'s size limits, on the calling thread:
/// the same work the pipeline's decode threads do, for bytes you already
/// have. Like them, the calling thread keeps the room it decoded a small
/// image into (up to 288 KiB) for its next call, until the thread ends.
///
/// ```
/// use thumbpipe::{DecodeConfig, TargetSize};
///
/// let mut png = std::io::Cursor::new(Vec::new());
/// image::RgbaImage::new(300, 150).write_to(&mut png, image::ImageFormat::Png).unwrap();
/// let thumbnail = thumbpipe::thumbnail_from_bytes(
///     "memory:banner", png.get_ref(), TargetSize::square(64), &DecodeConfig::default())?;
/// assert_eq!((thumbnail.width, thumbnail.height), (64, 32));
/// # Ok::<(), thumbpipe::Error>(())
/// ```
pub fn thumbnail_from_bytes(
    name: &str,
    bytes: &[u8],
    target: TargetSize,
    config: &DecodeConfig,
) -> Result<Thumbnail, Error> {
    let url = Arc::from(name);
    catch_panic(&url, || {
        decode_thumbnail(&url, bytes, target, config.into())
    })
}

/// Runs `decode` for `url`, turning a panic into [`Error::Decode`]: the
/// decoders are not trusted with hostile input.
pub(crate) fn catch_panic(
    url: &Arc<str>,
    decode: impl FnOnce() -> Result<Thumbnail, Error>,
) -> Result<Thumbnail, Error> {
    std::panic::catch_unwind(AssertUnwindSafe(decode)).unwrap_or_else(|_| {
        Err(Error::Decode {
            url: url.to_string(),
            reason: "the decoder panicked on this input".into(),
        })
    })
}
