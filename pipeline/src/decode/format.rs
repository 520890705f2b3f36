//! Format: what one row of the format table (`formats.rs`) is. A format
//! is called by a name, labelled with media types, told by its bytes, and
//! decoded by its own module, bytes to thumbnail (AVIF, SVG), or by
//! `image`'s decoder with the format's own fixes around it ([`Raster`]).
//! And the tests of magic bytes the rows share.
//!
//! Plain data and plain functions; each row is a constant beside its
//! decoder.

use std::sync::Arc;

use image::metadata::Orientation;
use image::{DynamicImage, Frames, ImageDecoder, ImageFormat, Limits};

use super::DecodeLimits;
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// A format the decoder reads: one row of the format table.
pub(crate) struct Format {
    /// What users call it, as listed in
    /// [`SUPPORTED_FORMATS`](crate::SUPPORTED_FORMATS).
    pub(crate) name: &'static str,
    /// The media types servers label it with, each named by `Accept`; the
    /// first is its registered one, which a shared thumbnail records.
    pub(crate) media_types: &'static [&'static str],
    /// How its bytes (a file's first bytes, or all of it) are told.
    pub(crate) signature: Signature,
    /// How it is decoded.
    pub(crate) decoder: Decoder,
}

/// How a format's bytes are told from others'.
pub(crate) enum Signature {
    /// Each of these bytes at its offset: plain data, so telling a file
    /// runs no format's code but the one it is.
    Magic(&'static [(usize, &'static [u8])]),
    /// Told by a function: brands (AVIF), several magics (GIF, TIFF), a
    /// magic and what must not follow it (ICO), markup (SVG).
    Told(fn(&[u8]) -> bool),
}

impl Signature {
    /// Whether `bytes` are the format's.
    pub(crate) fn matches(&self, bytes: &[u8]) -> bool {
        match self {
            Signature::Magic(parts) => parts
                .iter()
                .all(|&(at, magic)| bytes.get(at..at + magic.len()) == Some(magic)),
            Signature::Told(told) => told(bytes),
        }
    }
}

/// How a format is decoded.
pub(crate) enum Decoder {
    /// By its own module, from bytes to the thumbnail, under the limits:
    /// it reads its own header, and checks its own size and memory. A build
    /// with none of those formats on makes none.
    #[allow(dead_code)]
    Own(OwnDecode),
    /// By `image`'s decoder for it: the header read, its memory reckoned
    /// and the route chosen by `header.rs` and `route.rs`, with the row's
    /// fixes.
    Image(Raster),
}

/// What an own decoder's failures are: [`Error::Decode`] for `url`, its
/// reason led by the format's `name`.
#[cfg_attr(
    not(any(feature = "avif", feature = "jxl", feature = "heic")),
    allow(dead_code)
)]
pub(crate) fn decode_error<'a>(
    url: &'a Arc<str>,
    name: &'static str,
) -> impl Fn(String) -> Error + Copy + 'a {
    move |reason| Error::Decode {
        url: url.to_string(),
        reason: format!("{name}: {reason}"),
    }
}

/// A format's own decoder: the thumbnail of `target` from the bytes, for
/// the URL, under the limits.
pub(crate) type OwnDecode =
    fn(&Arc<str>, &[u8], TargetSize, DecodeLimits) -> Result<Thumbnail, Error>;

/// A format `image` decodes, and what is done around its decoder. Start
/// from [`Raster::of`], which does nothing around it.
pub(crate) struct Raster {
    /// `image`'s name for it.
    pub(crate) image: ImageFormat,
    /// Bytes to decode in place of the file's, before the header is read:
    /// a PNG without its large colour profile, an icon's best entry.
    pub(crate) prepare: fn(&[u8], TargetSize) -> Option<Prepared>,
    /// What the decoder holds besides its output, known before the header
    /// is read, or why the file is refused before it is (a TIFF layout its
    /// decoder panics on).
    pub(crate) before_header: fn(&[u8]) -> Result<u64, String>,
    /// What the decoder holds besides its output at `width` x `height`:
    /// WebP's, GIF's and PNG's working memory.
    pub(crate) decoder_bytes: fn(&[u8], u32, u32) -> u64,
    /// How the camera held the picture; `image`'s EXIF reading by default.
    pub(crate) orientation: fn(&[u8], &mut dyn ImageDecoder) -> Orientation,
    /// Whether `image` decodes it to 8-bit RGBA whatever its header says
    /// (WebP), which is what its decode then allocates.
    pub(crate) decodes_to_rgba: bool,
    /// An image when `image`'s decode fails and the format has another way
    /// (a GIF with no colour table).
    pub(crate) recover: fn(&[u8], Limits) -> Option<DynamicImage>,
    /// A fix to `image`'s output (a PNG's grey transparency key).
    pub(crate) after_decode: fn(&[u8], &mut DynamicImage),
    /// Its animation's frames, when it has them.
    pub(crate) frames: Option<FrameReader>,
}

/// What a format's `prepare` gives to decode in place of the file.
pub(crate) struct Prepared {
    pub(crate) bytes: Vec<u8>,
    /// The size the thumbnail reports as its source, when it is not the
    /// prepared image's own (an icon's largest entry).
    pub(crate) source_size: Option<(u32, u32)>,
}

/// How an animated format's frames are counted, checked and decoded.
pub(crate) struct FrameReader {
    /// How many frames the file's structure holds, counting no further
    /// than the second argument.
    pub(crate) count: fn(&[u8], usize) -> usize,
    /// Whether each of the first frames (the third argument) claims no
    /// more than the screen (the second).
    pub(crate) fit: fn(&[u8], (u32, u32), usize) -> bool,
    /// The frames, decoded one by one under the limits.
    pub(crate) decode: for<'a> fn(&'a [u8], Limits) -> Option<Frames<'a>>,
}

impl Raster {
    /// `image`'s decoder for `image`, with nothing done around it.
    pub(crate) const fn of(image: ImageFormat) -> Self {
        Self {
            image,
            prepare: |_, _| None,
            before_header: |_| Ok(0),
            decoder_bytes: |_, _, _| 0,
            orientation: |_, header| super::upright::orientation_of(header),
            decodes_to_rgba: false,
            recover: |_, _| None,
            after_decode: |_, _| {},
            frames: None,
        }
    }
}

/// Whether `bytes` start with a file type box whose major or compatible
/// brands name AVIF (`avif`, or `avis` for a sequence): `image` knows an
/// AVIF only by its major brand, and phones write `mif1` there.
pub(crate) fn is_avif(bytes: &[u8]) -> bool {
    has_brand(bytes, &[b"avif", b"avis"])
}

/// Whether `bytes` start with a file type box whose brands name HEVC-coded
/// HEIF (ISO/IEC 23008-12's `heic` and `heix` for stills, `heim` and
/// `heis` for layered ones, `hevc`, `hevx`, `hevm`, `hevs` for sequences):
/// a phone's HEIC, or a camera's HIF.
pub(crate) fn is_heic(bytes: &[u8]) -> bool {
    has_brand(
        bytes,
        &[
            b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"hevm", b"hevs",
        ],
    )
}

/// Whether `bytes` start with a file type box whose major or compatible
/// brands (within its first 256 bytes) include one of `brands`.
fn has_brand(bytes: &[u8], brands: &[&[u8; 4]]) -> bool {
    let Some(size) = bytes.get(..4) else {
        return false;
    };
    let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]) as usize;
    if bytes.get(4..8) != Some(b"ftyp") || size < 16 {
        return false;
    }
    let named = bytes
        .get(8..size.min(bytes.len()).min(256))
        .unwrap_or_default();
    // The major brand, the minor version, then the compatible brands.
    named
        .chunks_exact(4)
        .enumerate()
        .any(|(i, brand)| i != 1 && brands.iter().any(|wanted| brand == *wanted))
}

/// Whether `bytes` are a TIFF, or a BigTIFF (64-bit offsets, `II+\0` or
/// `MM\0+`), which the TIFF decoder reads and `image` does not recognise.
pub(crate) fn is_tiff(bytes: &[u8]) -> bool {
    matches!(
        bytes.get(..4),
        Some(b"II*\0" | b"MM\0*" | b"II+\0" | b"MM\0+")
    )
}
