//! Decode: bytes to a [`Thumbnail`]. The [`Decode`] trait is the stage's seam
//! and [`ImageDecoder`] its default, which decodes the [`SUPPORTED_FORMATS`]
//! under the config's size limits. A JPEG is decoded by libjpeg at the smallest
//! DCT scale (1/8 to 8/8) that still covers the thumbnail (`jpeg.rs`), unless
//! [`DecodeConfig::jpeg_dct_scaling`](crate::DecodeConfig::jpeg_dct_scaling) is
//! off or the binary is built with `panic = "abort"` (libjpeg's errors unwind);
//! everything else is decoded in full by `image`. Either way, fast_image_resize
//! takes it the rest of the way (`resize.rs`), and the EXIF orientation turns
//! the thumbnail.
//!
//! Decodes run on the decode pool's threads (`pool.rs`), never on the UI
//! thread or the I/O runtime, and start no threads of their own;
//! [`thumbnail_from_bytes`] runs the same work on the caller's thread.
//! Nothing here keeps state between decodes.
//!
//! Where to change what: a new format is an `image` cargo feature in
//! `pipeline/Cargo.toml` and a name in [`SUPPORTED_FORMATS`]; a faster path
//! for one format is a file like `jpeg.rs`, called from `decode_thumbnail`'s
//! match on the format; the resize filter is `resize::FILTER`.

mod config;
mod gif;
mod jpeg;
#[cfg(feature = "libjpeg")]
mod libjpeg;
mod png;
mod pool;
mod resize;

use std::io::Cursor;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use image::metadata::Orientation;
use image::{ColorType, DynamicImage, ImageDecoder as _, ImageFormat, ImageReader, Limits};

pub use config::DecodeConfig;
pub(crate) use pool::{DecodeJob, DecodeOutcome, DecodePool, SHUTDOWN_PATIENCE};

use crate::request::TargetSize;
use crate::thumbnail::fit_inside;
use crate::{Error, Thumbnail};

/// Bytes to a thumbnail: the decode stage's seam. The default,
/// [`ImageDecoder`], decodes the formats it lists under the config's
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
/// [`DecodeConfig`]'s limits.
///
/// It decodes the [`SUPPORTED_FORMATS`]; of an animated GIF or WebP, the
/// first frame. A photo whose EXIF orientation says it was taken turned
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
    fn decode(&self, url: &Arc<str>, bytes: &[u8], target: TargetSize) -> Result<Thumbnail, Error> {
        decode_thumbnail(url, bytes, target, self.limits)
    }
}

/// The image formats [`ImageDecoder`] decodes: the one list of them.
///
/// ```
/// assert!(thumbpipe::SUPPORTED_FORMATS.contains(&"WebP"));
/// ```
pub const SUPPORTED_FORMATS: [&str; 4] = ["JPEG", "PNG", "WebP", "GIF"];

/// The limits a decode runs under, and its JPEG route.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DecodeLimits {
    pub(crate) max_dimension: u32,
    pub(crate) max_alloc: u64,
    /// libjpeg's DCT-scaled route for JPEGs: asked for, and possible (built
    /// with the `libjpeg` feature, and unwinding: a libjpeg error is an
    /// unwind, which `panic = "abort"` cannot catch).
    pub(crate) jpeg_dct_scaling: bool,
}

impl From<&DecodeConfig> for DecodeLimits {
    fn from(config: &DecodeConfig) -> Self {
        Self {
            max_dimension: config.max_dimension,
            max_alloc: config.max_alloc_bytes,
            jpeg_dct_scaling: config.jpeg_dct_scaling && UNWINDS && cfg!(feature = "libjpeg"),
        }
    }
}

/// Whether this binary unwinds on a panic (not built with `panic =
/// "abort"`).
const UNWINDS: bool = cfg!(panic = "unwind");

/// Decodes `bytes` (in a format [`ImageDecoder`] lists) into a thumbnail
/// that fits `target`, under `config`'s size limits, on the calling thread:
/// the same work the pipeline's decode threads do, for bytes you already
/// have.
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

/// Decodes `bytes` (in a format [`ImageDecoder`] lists) and scales the
/// image down to fit `target`, keeping its aspect ratio and never scaling up.
///
/// Refuses images that declare more than the limits before allocating for
/// them. A decoder panic is the caller's to catch ([`catch_panic`]).
pub(crate) fn decode_thumbnail(
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
    let (width, height, orientation, full_decode_bytes) = match probe.into_decoder() {
        Ok(mut header) => {
            let (width, height) = header.dimensions();
            // How the camera held the picture (EXIF, where the format has
            // it); an unreadable tag is no reason to refuse the image.
            let orientation = orientation_of(&mut header, format);
            // What a full decode allocates: the decoder's output in its own
            // layout (16 bits a sample for a 16-bit PNG), and an 8-bit RGBA
            // copy of it when that layout is not one the resize takes.
            let full_decode_bytes =
                header
                    .total_bytes()
                    .saturating_add(match header.color_type() {
                        ColorType::L8 | ColorType::La8 | ColorType::Rgb8 | ColorType::Rgba8 => 0,
                        _ => full_rgba(width, height),
                    });
            (width, height, orientation, full_decode_bytes)
        }
        // The pure-Rust header reader refuses some JPEGs that libjpeg (and
        // browsers) decode, such as one whose APP14 segment is shorter
        // than its kind (Pillow's `truncated_app14.jpg`): with libjpeg's
        // route, the frame header says the size.
        Err(error) => match (format == ImageFormat::Jpeg && limits.jpeg_dct_scaling)
            .then(|| jpeg::frame_size(bytes))
            .flatten()
        {
            Some((width, height, orientation)) => (width, height, orientation, 0),
            None => {
                return Err(decode_error(format!(
                    "unreadable {format:?} header: {error}"
                )));
            }
        },
    };
    // The upright image fits the target, so a photo turned a quarter is
    // fitted (and scaled) with the target's sides swapped, then turned:
    // the thumbnail is turned, never the full image.
    let quarter_turn = matches!(
        orientation,
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    );
    let target = if quarter_turn {
        TargetSize::new(target.height, target.width)
    } else {
        target
    };
    if width > limits.max_dimension || height > limits.max_dimension {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {width}x{height}, over the {} limit",
                limits.max_dimension
            ),
            setting: "decode.max_dimension",
        });
    }
    // The size comes from the original dimensions: a DCT-scaled image is
    // only a step on the way.
    let (thumb_width, thumb_height) = fit_inside(width, height, target);
    // What the route allocates: the decoded pixels and the decoder's own
    // buffers, which for a progressive JPEG outweigh the pixels. A JPEG is
    // decoded at the smallest DCT scale that covers the thumbnail (4:4:4
    // or 4:2:0; CMYK takes the full decode).
    let jpeg_layout = match format {
        ImageFormat::Jpeg => Some(jpeg::JpegLayout::read(bytes)),
        _ => None,
    };
    if let Some(layout) = &jpeg_layout {
        layout.check(width, height).map_err(decode_error)?;
    }
    // CMYK and YCCK (four components) take the full decode.
    let jpeg_eighths = jpeg_layout
        .as_ref()
        .filter(|layout| limits.jpeg_dct_scaling && layout.sampling.len() != 4)
        .map(|_| jpeg::scale_eighths(width, height, thumb_width, thumb_height));
    let (decoded_width, decoded_height, decoded_bytes, decoder_bytes) =
        match (&jpeg_layout, jpeg_eighths) {
            (Some(layout), Some(eighths)) => {
                let (w, h) = (
                    jpeg::scaled_side(width, eighths),
                    jpeg::scaled_side(height, eighths),
                );
                let rgb = u64::from(w) * u64::from(h) * 3;
                (w, h, rgb, layout.scaled_decoder_bytes(eighths))
            }
            (Some(layout), None) => (
                width,
                height,
                full_rgba(width, height),
                layout.decoder_bytes(),
            ),
            (None, _) if format == ImageFormat::WebP => (
                width,
                height,
                full_rgba(width, height),
                webp_decoder_bytes(bytes, width, height),
            ),
            (None, _) => (width, height, full_decode_bytes, 0),
        };
    // The resize's pass between its two (thumbnail width x decoded
    // height), its output, the RGBA and its copy in the Thumbnail, and its
    // filter weights: small beside a full decode, most of a scaled one.
    let resize_bytes = u64::from(thumb_width) * u64::from(decoded_height) * 4
        + u64::from(thumb_width) * u64::from(thumb_height) * 4 * 3
        + (u64::from(decoded_width) + u64::from(decoded_height)) * 32;
    let decoded_bytes = decoded_bytes.saturating_add(resize_bytes);
    let needed = decoded_bytes.saturating_add(decoder_bytes);
    if needed > limits.max_alloc {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {width}x{height}: decoding it takes {needed} bytes ({decoded_bytes} of \
                 pixels, {decoder_bytes} of decoder buffers), over the {}-byte decode limit",
                limits.max_alloc
            ),
            setting: "decode.max_alloc_bytes",
        });
    }
    #[cfg(feature = "libjpeg")]
    let scaled = match jpeg_eighths {
        Some(eighths) => libjpeg::decode_scaled(bytes, eighths)
            .map_err(|e| decode_error(format!("JPEG: {e}")))?,
        None => None,
    };
    // Without libjpeg, `jpeg_dct_scaling` is off: no JPEG is scaled.
    #[cfg(not(feature = "libjpeg"))]
    let scaled = None;
    let pixels = match scaled {
        Some(pixels) => pixels,
        None => {
            let mut image_limits = Limits::default();
            image_limits.max_image_width = Some(limits.max_dimension);
            image_limits.max_image_height = Some(limits.max_dimension);
            image_limits.max_alloc = Some(limits.max_alloc);
            let mut reader = reader()?;
            reader.limits(image_limits.clone());
            let mut image = match reader.decode() {
                Ok(image) => image,
                // A GIF with no colour table, which `image` refuses.
                Err(error) => match (format == ImageFormat::Gif)
                    .then(|| gif::without_colour_table(bytes, image_limits))
                    .flatten()
                {
                    Some(image) => image,
                    None => return Err(decode_error(format!("{format:?}: {error}"))),
                },
            };
            if format == ImageFormat::Png {
                png::restore_grey_key(bytes, &mut image);
            }
            resize::Pixels::from_image(image)
        }
    };
    let mut rgba = pixels
        .into_rgba(thumb_width, thumb_height)
        .map_err(decode_error)?;
    if orientation != Orientation::NoTransforms {
        let mut turned = DynamicImage::ImageRgba8(rgba);
        turned.apply_orientation(orientation);
        rgba = turned.into_rgba8();
    }
    let (width, height) = rgba.dimensions();
    Ok(Thumbnail {
        url: Arc::clone(url),
        width,
        height,
        pixels: Arc::from(rgba.into_raw()),
    })
}

/// How the camera held the picture, by its EXIF orientation: an
/// unreadable tag is no reason to refuse the image. A WebP's EXIF chunk
/// may begin with JPEG's `Exif\0\0` before its TIFF header (as Pillow and
/// other writers put it); `image` reads the TIFF header only, so such a
/// chunk is read here, as browsers read it.
fn orientation_of(header: &mut impl image::ImageDecoder, format: ImageFormat) -> Orientation {
    match header.orientation() {
        Ok(orientation) if orientation != Orientation::NoTransforms => orientation,
        // Only WebP's chunk is read again (for a JPEG it would parse the
        // file's headers a second time, for nothing).
        _ if format != ImageFormat::WebP => Orientation::NoTransforms,
        _ => header
            .exif_metadata()
            .ok()
            .flatten()
            .and_then(|exif| {
                exif.strip_prefix(b"Exif\0\0")
                    .and_then(Orientation::from_exif_chunk)
            })
            .unwrap_or(Orientation::NoTransforms),
    }
}

/// Bytes of a `width` x `height` RGBA image.
fn full_rgba(width: u32, height: u32) -> u64 {
    u64::from(width) * u64::from(height) * 4
}

/// Bytes the WebP decoder holds besides the pixels it returns, measured
/// with the peak allocator (`pipeline/tests/bomb.rs`): a lossy (VP8) frame
/// keeps its Y, U and V planes, 1.5 bytes per pixel (in 16x16 macroblocks);
/// a lossless (VP8L) one, and an extended file that may hold either, an
/// ARGB word per pixel.
fn webp_decoder_bytes(bytes: &[u8], width: u32, height: u32) -> u64 {
    let (width, height) = (u64::from(width), u64::from(height));
    match bytes.get(12..16) {
        Some(b"VP8 ") => width.next_multiple_of(16) * height.next_multiple_of(16) * 3 / 2,
        _ => width * height * 4,
    }
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
            "not one of {} ({} bytes starting {:02x?})",
            SUPPORTED_FORMATS.join(", "),
            bytes.len(),
            &bytes[..bytes.len().min(4)]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const LIMITS: DecodeLimits = DecodeLimits {
        max_dimension: 16_384,
        max_alloc: 256 * 1024 * 1024,
        jpeg_dct_scaling: true,
    };

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbaImage::from_pixel(width, height, image::Rgba([10, 20, 30, 255]));
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    /// A `width` x `height` JPEG, red on its left half and blue on its
    /// right, tagged with EXIF orientation `tag` (1-8).
    fn jpeg_tagged(width: u32, height: u32, tag: u16) -> Vec<u8> {
        let image = image::RgbImage::from_fn(width, height, |x, _| {
            if x < width / 2 {
                image::Rgb([230, 20, 20])
            } else {
                image::Rgb([20, 20, 230])
            }
        });
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
        fixture_server::photo::with_exif_orientation(&out.into_inner(), tag)
    }

    /// Whether the pixel at (`x`, `y`) is mostly red (else blue).
    fn red_at(thumbnail: &Thumbnail, x: u32, y: u32) -> bool {
        let i = ((y * thumbnail.width + x) * 4) as usize;
        thumbnail.pixels[i] > thumbnail.pixels[i + 2]
    }

    #[test]
    fn a_photo_tagged_with_an_orientation_comes_out_upright() {
        let url: Arc<str> = Arc::from("http://x/photo.jpg");
        let thumbnail = |width, height, tag, target| {
            decode_thumbnail(&url, &jpeg_tagged(width, height, tag), target, LIMITS).unwrap()
        };
        let square = TargetSize::square(64);
        // Small (the plain path) and large (the DCT-scaled path).
        for (width, height) in [(80, 40), (1600, 800)] {
            // 6: turned 90 degrees clockwise to be upright. The left (red)
            // half comes on top; the sides swap.
            let turned = thumbnail(width, height, 6, square);
            assert_eq!((turned.width, turned.height), (32, 64), "{width}x{height}");
            assert!(
                red_at(&turned, 16, 8) && !red_at(&turned, 16, 56),
                "{width}x{height}"
            );
            // 3: upside down. The red half goes right.
            let flipped = thumbnail(width, height, 3, square);
            assert_eq!((flipped.width, flipped.height), (64, 32));
            assert!(!red_at(&flipped, 8, 16) && red_at(&flipped, 56, 16));
            // 1: as stored.
            let plain = thumbnail(width, height, 1, square);
            assert_eq!((plain.width, plain.height), (64, 32));
            assert!(red_at(&plain, 8, 16) && !red_at(&plain, 56, 16));
        }
        // A quarter turn fits the upright image in a wide target.
        let wide = thumbnail(80, 40, 8, TargetSize::new(128, 32));
        assert_eq!((wide.width, wide.height), (16, 32));
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
                    setting: "decode.max_dimension",
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
                    setting: "decode.max_alloc_bytes",
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
}
