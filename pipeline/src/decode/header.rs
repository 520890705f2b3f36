//! Header: what a decode knows of an image before it decodes a pixel. The
//! format is told by the format table (`formats.rs`): a format with its
//! own decoder is handed to it; for one `image` decodes, the row's
//! `prepare` may give other bytes first (an icon's best entry, a PNG
//! without its large profile), and the header is read: the size (refused
//! past the limit), the EXIF orientation, and what `image`'s full decode
//! and the format's own decoder would allocate, each row reckoning its
//! own.
//!
//! Runs inside a decode, on the thread that called it; keeps nothing.

use std::borrow::Cow;
use std::io::Cursor;
use std::sync::Arc;

use image::metadata::Orientation;
use image::{ColorType, ImageDecoder as _, ImageFormat, ImageReader};

use super::DecodeLimits;
use super::fitting::{quarter_turn, swapped};
use super::formats;
use super::formats::{Decoder, OwnDecode, Raster};
use super::jpeg::{JpegLayout, JpegWalk};
use crate::error::Error;
use crate::request::TargetSize;
use crate::room::Room;
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
    /// A format with its own decoder, bytes to thumbnail (AVIF, SVG).
    Own(OwnDecode),
    Raster(Image<'a>),
}

/// A raster image whose header is read.
pub(super) struct Image<'a> {
    /// The image's bytes: an icon's best entry, or all of them.
    pub(super) bytes: Cow<'a, [u8]>,
    /// Its format's row: how `image` decodes it, and the fixes around.
    pub(super) raster: &'static Raster,
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) orientation: Orientation,
    /// What `image`'s full decode allocates: its output in its own layout
    /// (16 bits a sample for a 16-bit PNG), and an 8-bit RGBA copy of it
    /// when that layout is not one the resize takes. A JPEG's route counts
    /// its own, by its layout.
    pub(super) full_decode_bytes: u64,
    /// What the format's decoder holds besides its output, at full size:
    /// TIFF's chunk buffers, WebP's and GIF's working memory, PNG's
    /// buffers. A JPEG's depend on the route (`jpeg/layout.rs`).
    pub(super) decoder_bytes: u64,
    /// The size the thumbnail reports as its source
    /// ([`Thumbnail::source_size`]): the image's upright, an icon's largest
    /// entry's, or the photo's whose embedded thumbnail this is.
    pub(super) source_size: (u32, u32),
    /// A JPEG's one walk over its markers (`jpeg/walk.rs`), which read its
    /// header: its layout, which the route's shortcuts and its count of the
    /// decoder's memory read, and its embedded thumbnail's walk.
    pub(super) jpeg_walk: Option<Box<JpegWalk>>,
}

impl Image<'_> {
    /// A JPEG's layout, as its walk read it.
    pub(super) fn jpeg(&self) -> Option<&JpegLayout> {
        self.jpeg_walk.as_deref().map(JpegWalk::layout)
    }

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

    /// `image`'s name for its format.
    pub(super) fn format(&self) -> ImageFormat {
        self.raster.image
    }

    /// The thumbnail of `rgba`, for `url`.
    pub(super) fn thumbnail(&self, url: &Arc<str>, rgba: image::RgbaImage) -> Thumbnail {
        still(url, rgba, self.source_size)
    }
}

/// The still thumbnail of `rgba`, for `url`, of an image `source_size`
/// upright.
pub(super) fn still(url: &Arc<str>, rgba: image::RgbaImage, source_size: (u32, u32)) -> Thumbnail {
    let (width, height) = rgba.dimensions();
    let raw = rgba.into_raw();
    let pixels = Arc::from(&raw[..]);
    // The pixels were copied: their buffer may be the room a decode of
    // this image's size took (one not resized).
    Room::Pixels.give_back(raw);
    Thumbnail {
        url: Arc::clone(url),
        width,
        height,
        pixels,
        source_size,
        animation: None,
    }
}

/// Opens `bytes` for a thumbnail of `target`: an SVG, or a raster image
/// with its header read, refused past the limits' dimension. `photo` when
/// the bytes are the thumbnail embedded in it; `walk` when a walk over
/// their JPEG markers was begun as they were read (it goes on from there).
pub(super) fn open<'a>(
    url: &Arc<str>,
    bytes: &'a [u8],
    target: TargetSize,
    limits: &DecodeLimits,
    photo: Option<&Photo>,
    walk: Option<JpegWalk>,
) -> Result<Opened<'a>, Error> {
    let decode_error = |reason: String| Error::Decode {
        url: url.to_string(),
        reason,
    };
    let Some(format) = formats::detect(bytes) else {
        return Err(decode_error(formats::not_decoded(bytes)));
    };
    let raster = match &format.decoder {
        Decoder::Own(decode) => return Ok(Opened::Own(*decode)),
        Decoder::Image(raster) => raster,
    };
    // Other bytes in the file's place: an icon's entry of the size that
    // best fits the target, a PNG without the large colour profile its
    // header read would inflate whole and no thumbnail uses.
    let (bytes, prepared_size, walk) = match (raster.prepare)(bytes, target) {
        Some(prepared) => (Cow::Owned(prepared.bytes), prepared.source_size, None),
        None => (Cow::Borrowed(bytes), None, walk),
    };
    // What the decoder holds that its header read does not say (TIFF's
    // buffers), or its refusal of a layout it panics on.
    let before_header = (raster.before_header)(&bytes).map_err(decode_error)?;
    // A JPEG's header is its markers', walked once for everything the
    // decode reads of them; any other format's is `image`'s.
    let jpeg_walk = (raster.image == ImageFormat::Jpeg).then(|| {
        let mut walk = Box::new(walk.unwrap_or_default());
        walk.walk_to_end(&bytes);
        walk
    });
    let header = match &jpeg_walk {
        Some(walk) => jpeg_header(url, walk.layout(), photo)?,
        None => read_header(url, &bytes, raster, limits, photo)?,
    };
    let (width, height) = (header.width, header.height);
    within_max_dimension(url, width, height, limits)?;
    let decoder_bytes = before_header.saturating_add((raster.decoder_bytes)(&bytes, width, height));
    let mut image = Image {
        bytes,
        raster,
        width,
        height,
        orientation: header.orientation,
        full_decode_bytes: header.full_decode_bytes,
        decoder_bytes,
        source_size: (0, 0),
        jpeg_walk,
    };
    image.source_size = match (photo, prepared_size) {
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
    raster: &Raster,
    limits: &DecodeLimits,
    photo: Option<&Photo>,
) -> Result<Header, Error> {
    let unreadable = |reason: String| Error::Decode {
        url: url.to_string(),
        reason,
    };
    let format = raster.image;
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
        Err(error) => return Err(unreadable(format!("unreadable {format:?} header: {error}"))),
    };
    let (width, height) = header.dimensions();
    if width == 0 || height == 0 {
        return Err(unreadable(format!(
            "the {format:?} header says the image is {width}x{height} pixels"
        )));
    }
    // How the camera held the picture (EXIF, where the format has it, as
    // its row reads it); an unreadable tag is no reason to refuse the
    // image.
    let orientation = match photo {
        Some(photo) => photo.orientation,
        None => (raster.orientation)(bytes, &mut header),
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

/// A JPEG's header as the walk over its markers read it: its one frame's
/// size, its EXIF's orientation, and what `image`'s full decode allocates
/// (8-bit grey, or RGB: it turns CMYK into RGB).
fn jpeg_header(
    url: &Arc<str>,
    layout: &JpegLayout,
    photo: Option<&Photo>,
) -> Result<Header, Error> {
    let (width, height) = (layout.width, layout.height);
    if layout.frames == 0 || width == 0 || height == 0 {
        return Err(Error::Decode {
            url: url.to_string(),
            reason: format!(
                "unreadable JPEG header: {}",
                if layout.frames == 0 {
                    "no frame header (SOF) gives its size".to_string()
                } else {
                    format!("its frame header says the image is {width}x{height} pixels")
                }
            ),
        });
    }
    let channels = if layout.sampling.len() == 1 { 1 } else { 3 };
    Ok(Header {
        width,
        height,
        orientation: match photo {
            Some(photo) => photo.orientation,
            None => layout.orientation.unwrap_or(Orientation::NoTransforms),
        },
        full_decode_bytes: u64::from(width) * u64::from(height) * channels,
    })
}

/// Bytes of a `width` x `height` RGBA image.
pub(super) fn full_rgba(width: u32, height: u32) -> u64 {
    u64::from(width) * u64::from(height) * 4
}
