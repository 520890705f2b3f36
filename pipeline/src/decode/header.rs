//! Header: what a decode knows of an image before it decodes a pixel. An
//! icon's best entry is taken in its place (`ico.rs`), the format told from
//! the magic bytes and checked against this build's (or the markup of an
//! SVG recognised), and the header read: the size (refused past the
//! limit), the EXIF orientation, and what `image`'s full decode and the
//! format's own decoder would allocate, each format reckoning its own
//! (`tiff.rs`, `webp.rs`, `gif.rs`, `png.rs`).
//!
//! Runs inside a decode, on the thread that called it; keeps nothing.

use std::borrow::Cow;
use std::io::Cursor;
use std::sync::Arc;

use image::metadata::Orientation;
use image::{ColorType, ImageDecoder as _, ImageFormat, ImageReader};

use super::upright::{orientation_of, quarter_turn, swapped};
use super::{DecodeLimits, gif, ico, jpeg, png, svg, tiff, webp};
use crate::error::Error;
use crate::formats::{self, SUPPORTED_FORMATS};
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// What the photo an embedded thumbnail came from says of it: how to turn
/// it, and the photo's size, which the thumbnail reports as its source.
pub(super) struct Photo {
    pub(super) orientation: Orientation,
    /// The photo's size, upright.
    pub(super) size: (u32, u32),
}

/// Bytes opened as an image.
pub(super) enum Opened<'a> {
    /// An SVG: drawn at the target's size, not decoded.
    Vector,
    /// An AVIF: its container read and its images decoded by `avif/`.
    Avif,
    Raster(Image<'a>),
}

/// A raster image whose header is read.
pub(super) struct Image<'a> {
    /// The image's bytes: an icon's best entry, or all of them.
    pub(super) bytes: Cow<'a, [u8]>,
    pub(super) format: ImageFormat,
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) orientation: Orientation,
    /// What `image`'s full decode allocates: its output in its own layout
    /// (16 bits a sample for a 16-bit PNG), and an 8-bit RGBA copy of it
    /// when that layout is not one the resize takes. 0 for a JPEG whose
    /// size only libjpeg's route could read (its route counts its own).
    pub(super) full_decode_bytes: u64,
    /// What the format's decoder holds besides its output, at full size:
    /// TIFF's chunk buffers, WebP's and GIF's working memory, PNG's
    /// buffers. A JPEG's depend on the route (`jpeg/layout.rs`).
    pub(super) decoder_bytes: u64,
    /// The size the thumbnail reports as its source
    /// ([`Thumbnail::source_size`]): the image's upright, an icon's largest
    /// entry's, or the photo's whose embedded thumbnail this is.
    pub(super) source_size: (u32, u32),
}

impl Image<'_> {
    /// Whether the picture is turned a quarter by its orientation.
    pub(super) fn quarter_turn(&self) -> bool {
        quarter_turn(self.orientation)
    }

    /// `target` as the image is stored: a photo turned a quarter is fitted
    /// (and scaled) with the target's sides swapped, then turned, so the
    /// thumbnail is turned, never the full image.
    pub(super) fn stored_target(&self, target: TargetSize) -> TargetSize {
        if self.quarter_turn() {
            swapped(target)
        } else {
            target
        }
    }

    /// Its size upright.
    pub(super) fn upright(&self) -> (u32, u32) {
        if self.quarter_turn() {
            (self.height, self.width)
        } else {
            (self.width, self.height)
        }
    }

    /// The thumbnail of `rgba`, for `url`.
    pub(super) fn thumbnail(&self, url: &Arc<str>, rgba: image::RgbaImage) -> Thumbnail {
        let (width, height) = rgba.dimensions();
        Thumbnail {
            url: Arc::clone(url),
            width,
            height,
            pixels: Arc::from(rgba.into_raw()),
            source_size: self.source_size,
            animation: None,
        }
    }
}

/// Opens `bytes` for a thumbnail of `target`: an SVG, or a raster image
/// with its header read, refused past the limits' dimension. `photo` when
/// the bytes are the thumbnail embedded in it.
pub(super) fn open<'a>(
    url: &Arc<str>,
    bytes: &'a [u8],
    target: TargetSize,
    limits: &DecodeLimits,
    photo: Option<&Photo>,
) -> Result<Opened<'a>, Error> {
    let decode_error = |reason: String| Error::Decode {
        url: url.to_string(),
        reason,
    };
    // An icon: the entry of the size that best fits the target.
    let (bytes, icon_size) = match ico::best_entry(bytes, target) {
        Some(best) => (Cow::Owned(best.icon), Some(best.largest)),
        None => (Cow::Borrowed(bytes), None),
    };
    let Some(format) = formats::guess(&bytes) else {
        // Markup, not magic bytes: a vector image.
        if svg::looks_like_svg(&bytes) {
            return Ok(Opened::Vector);
        }
        return Err(decode_error(not_an_image(&bytes)));
    };
    if formats::supported(format).is_none() {
        return Err(decode_error(format!(
            "the image is {format:?}, which this build does not decode (it decodes {}; AVIF, \
             BMP, ICO, TIFF and SVG need thumbpipe's cargo features of those names)",
            SUPPORTED_FORMATS.join(", ")
        )));
    }
    // An AVIF's container is read by its own module, and its size with it.
    if format == ImageFormat::Avif {
        return Ok(Opened::Avif);
    }
    // A PNG's large colour profile, which its header read would inflate
    // whole and no thumbnail uses, is left out first.
    let bytes = match format {
        ImageFormat::Png => png::without_large_profile(&bytes).map_or(bytes, Cow::Owned),
        _ => bytes,
    };
    // TIFF's decoder buffers, or its refusal of a layout it panics on,
    // before its header is read.
    let tiff_bytes = match format {
        ImageFormat::Tiff => tiff::inspect(&bytes).map_err(decode_error)?,
        _ => 0,
    };
    let header = read_header(url, &bytes, format, limits, photo)?;
    let (width, height) = (header.width, header.height);
    within_max_dimension(url, width, height, limits)?;
    let decoder_bytes = match format {
        ImageFormat::Tiff => tiff_bytes,
        ImageFormat::WebP => webp::decoder_bytes(&bytes, width, height),
        ImageFormat::Gif => gif::decoder_bytes(&bytes),
        ImageFormat::Png => png::decoder_bytes(&bytes),
        _ => 0,
    };
    let mut image = Image {
        bytes,
        format,
        width,
        height,
        orientation: header.orientation,
        full_decode_bytes: header.full_decode_bytes,
        decoder_bytes,
        source_size: (0, 0),
    };
    image.source_size = match (photo, icon_size) {
        (Some(photo), _) => photo.size,
        (None, Some(size)) => size,
        (None, None) => image.upright(),
    };
    Ok(Opened::Raster(image))
}

/// Refuses a `width` x `height` image with a side past the limits'
/// dimension, before anything is allocated for it.
pub(super) fn within_max_dimension(
    url: &Arc<str>,
    width: u32,
    height: u32,
    limits: &DecodeLimits,
) -> Result<(), Error> {
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
    Ok(())
}

/// The least a header is read with, whatever the decode limit: a PNG's
/// header chunks, a TIFF's first tags.
const HEADER_BYTES: u64 = 64 * 1024;

/// What a header says.
struct Header {
    width: u32,
    height: u32,
    orientation: Orientation,
    full_decode_bytes: u64,
}

/// The header of `bytes`, a `format` image; `Err` with why it does not
/// read.
fn read_header(
    url: &Arc<str>,
    bytes: &[u8],
    format: ImageFormat,
    limits: &DecodeLimits,
    photo: Option<&Photo>,
) -> Result<Header, Error> {
    let unreadable = |reason: String| Error::Decode {
        url: url.to_string(),
        reason,
    };
    // Under the decode limit: what a decoder allocates to read its header
    // (a PNG's colour profile, a TIFF's tags) counts as its decode does,
    // but for the few chunks any header read buffers, so that a tiny limit
    // still refuses an image by what its decode takes. The sides are
    // checked after, with the setting that refuses them.
    let mut probe = ImageReader::with_format(Cursor::new(bytes), format);
    let mut probe_limits = image::Limits::default();
    probe_limits.max_alloc = Some(limits.max_alloc.max(HEADER_BYTES));
    probe.limits(probe_limits);
    let mut header = match probe.into_decoder() {
        Ok(header) => header,
        Err(image::ImageError::Limits(error)) => {
            return Err(Error::TooLarge {
                url: url.to_string(),
                what: format!(
                    "reading the {format:?} header takes more than the {}-byte decode limit \
                     ({error})",
                    limits.max_alloc
                ),
                setting: "decode.max_alloc_bytes",
            });
        }
        // The pure-Rust header reader refuses some JPEGs that libjpeg (and
        // browsers) decode, such as one whose APP14 segment is shorter
        // than its kind (Pillow's `truncated_app14.jpg`): with libjpeg's
        // route, the frame header says the size.
        Err(error) => {
            return match (format == ImageFormat::Jpeg && limits.jpeg_dct_scaling)
                .then(|| jpeg::frame_size(bytes))
                .flatten()
            {
                Some((width, height, orientation)) => Ok(Header {
                    width,
                    height,
                    orientation,
                    full_decode_bytes: 0,
                }),
                None => Err(unreadable(format!("unreadable {format:?} header: {error}"))),
            };
        }
    };
    let (width, height) = header.dimensions();
    if width == 0 || height == 0 {
        return Err(unreadable(format!(
            "the {format:?} header says the image is {width}x{height} pixels"
        )));
    }
    // How the camera held the picture (EXIF, where the format has it); an
    // unreadable tag is no reason to refuse the image, and a WebP whose
    // chunks claim more than the file holds is not asked (its decoder
    // would allocate what the EXIF chunk claims).
    let orientation = if let Some(photo) = photo {
        photo.orientation
    } else if format == ImageFormat::WebP && !webp::chunks_fit(bytes) {
        Orientation::NoTransforms
    } else {
        orientation_of(&mut header, format)
    };
    let rgba_copy = match header.color_type() {
        ColorType::L8 | ColorType::La8 | ColorType::Rgb8 | ColorType::Rgba8 => 0,
        _ => full_rgba(width, height),
    };
    Ok(Header {
        width,
        height,
        orientation,
        full_decode_bytes: header.total_bytes().saturating_add(rgba_copy),
    })
}

/// Bytes of a `width` x `height` RGBA image.
pub(super) fn full_rgba(width: u32, height: u32) -> u64 {
    u64::from(width) * u64::from(height) * 4
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
