//! Formats: the one table of the image formats this build decodes, what
//! one of its rows is, and what the crate asks of it. A row ([`Format`])
//! says what a format is called, the media types servers label it with,
//! how its bytes are told, and how it is decoded: by its own module, bytes
//! to thumbnail (AVIF, SVG), or by `image`'s decoder with the format's own
//! fixes around it ([`Raster`]). Each row is defined beside its decoder
//! (`png.rs`' `FORMAT`, `jpeg/`'s, ...) and listed once, behind its cargo
//! feature, in the table (`decode/mod.rs`' `format_table!`, which declares
//! the format's module too): a format switched off is a row that is not
//! there. The tests of magic bytes the rows share are here too.
//!
//! The table is read by the header (what the bytes are), the route and the animation
//! (the row's fixes), the fetch stage (the `Accept` header), the shared
//! thumbnails (`Thumb::Mimetype`) and [`SUPPORTED_FORMATS`]. Plain
//! constants and plain functions, fixed when the crate is built.
//!
//! Adding a format: a file (or folder) in `decode/` with its `FORMAT` row
//! and what its row names, a cargo feature in `pipeline/Cargo.toml` (with
//! `image`'s feature for it, if `image` decodes it), and its line in the
//! table.

use std::sync::Arc;

use image::metadata::Orientation;
use image::{DynamicImage, Frames, ImageDecoder, ImageFormat, Limits};

use super::{DecodeLimits, FORMATS};
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
            orientation: |_, header| super::fitting::orientation_of(header),
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

/// The image formats [`ImageDecoder`](crate::ImageDecoder) decodes in this
/// build: JPEG, PNG, WebP and GIF always, and each other format whose cargo
/// feature (of its name, in lower case) is on; the crate's docs list them
/// and which are on by default. The `Accept` header of every request names
/// the same formats.
///
/// ```
/// assert!(thumbpipe::SUPPORTED_FORMATS.contains(&"WebP"));
/// # #[cfg(feature = "tiff")]
/// assert!(thumbpipe::SUPPORTED_FORMATS.contains(&"TIFF"));
/// # #[cfg(feature = "avif")]
/// assert!(thumbpipe::SUPPORTED_FORMATS.contains(&"AVIF"));
/// ```
pub const SUPPORTED_FORMATS: [&str; FORMATS.len()] = names();

const fn names() -> [&'static str; FORMATS.len()] {
    let mut names = [""; FORMATS.len()];
    let mut i = 0;
    while i < FORMATS.len() {
        names[i] = FORMATS[i].name;
        i += 1;
    }
    names
}

/// The row of the format `bytes` are in, if this build decodes it.
pub(crate) fn detect(bytes: &[u8]) -> Option<&'static Format> {
    FORMATS
        .iter()
        .copied()
        .find(|format| format.signature.matches(bytes))
}

/// The media type of the image `bytes` hold, if this build decodes it
/// (what a shared thumbnail's `Thumb::Mimetype` says).
#[cfg_attr(not(feature = "shared-thumbnails"), allow(dead_code))]
pub(crate) fn media_type(bytes: &[u8]) -> Option<&'static str> {
    detect(bytes).and_then(|format| format.media_types.first().copied())
}

/// The `Accept` header's value: every media type of [`FORMATS`].
pub(crate) fn accept_header() -> String {
    let types: Vec<&str> = FORMATS
        .iter()
        .flat_map(|format| format.media_types.iter().copied())
        .collect();
    types.join(",")
}

/// Why `bytes`, which no row detects, are refused: a format this build
/// leaves out (named, with the feature that adds it), an HTML page, an
/// empty body, or bytes of no format known.
pub(crate) fn not_decoded(bytes: &[u8]) -> String {
    let off = if is_avif(bytes) {
        Some("AVIF".to_owned())
    } else if is_heic(bytes) {
        Some("HEIC".to_owned())
    } else if is_tiff(bytes) {
        Some("Tiff".to_owned())
    } else {
        image::guess_format(bytes).ok().map(|f| format!("{f:?}"))
    };
    if let Some(format) = off {
        return format!(
            "the image is {format}, which this build does not decode (it decodes {}; others \
             need thumbpipe's cargo feature of the format's name)",
            SUPPORTED_FORMATS.join(", ")
        );
    }
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
    use image::{DynamicImage, ImageFormat};

    use super::*;

    #[test]
    fn every_format_is_named_once_and_accepted() {
        let accept = accept_header();
        for (i, format) in FORMATS.iter().enumerate() {
            assert_eq!(SUPPORTED_FORMATS[i], format.name);
            assert_eq!(
                SUPPORTED_FORMATS
                    .iter()
                    .filter(|n| **n == format.name)
                    .count(),
                1
            );
            for media_type in format.media_types {
                assert!(accept.split(',').any(|t| t == *media_type), "{media_type}");
            }
        }
        assert!(accept.starts_with("image/webp,image/png,image/jpeg,image/gif"));
        assert_eq!(
            cfg!(feature = "avif"),
            accept.split(',').any(|t| t == "image/avif")
        );
        assert_eq!(
            cfg!(feature = "ico"),
            accept.split(',').any(|t| t == "image/x-icon")
        );
    }

    /// Each row detects its own format's bytes, and no other row does.
    #[test]
    fn each_format_is_told_by_its_own_row_alone() {
        let image = DynamicImage::ImageRgba8(image::RgbaImage::new(4, 4));
        for (format, name) in [
            (ImageFormat::Png, "PNG"),
            (ImageFormat::Jpeg, "JPEG"),
            (ImageFormat::Gif, "GIF"),
            (ImageFormat::WebP, "WebP"),
            (ImageFormat::Bmp, "BMP"),
            (ImageFormat::Ico, "ICO"),
            (ImageFormat::Tiff, "TIFF"),
            (ImageFormat::Qoi, "QOI"),
        ] {
            let image = match format {
                ImageFormat::Jpeg => DynamicImage::ImageRgb8(image.to_rgb8()),
                _ => image.clone(),
            };
            let mut bytes = std::io::Cursor::new(Vec::new());
            if image.write_to(&mut bytes, format).is_err() {
                // `image` writes only the formats whose features it has.
                continue;
            }
            let bytes = bytes.into_inner();
            let matching: Vec<&str> = FORMATS
                .iter()
                .filter(|f| f.signature.matches(&bytes))
                .map(|f| f.name)
                .collect();
            if SUPPORTED_FORMATS.contains(&name) {
                assert_eq!(matching, [name]);
            } else {
                assert!(matching.is_empty(), "{name}: {matching:?}");
                assert!(not_decoded(&bytes).contains("does not decode"), "{name}");
            }
        }
    }

    #[test]
    fn look_alikes_are_not_told_as_the_format_they_resemble() {
        // An ISO-BMFF file whose ftyp box is 256 bytes long starts with
        // ICO's four bytes.
        let mut heif = 256u32.to_be_bytes().to_vec();
        heif.extend_from_slice(b"ftypavif\0\0\0\0mif1");
        heif.resize(256, 0);
        let told = detect(&heif).map(|format| format.name);
        assert_eq!(told, cfg!(feature = "avif").then_some("AVIF"));
        let mut icon = vec![0, 0, 1, 0, 1, 0];
        icon.resize(256, 0);
        assert_eq!(
            detect(&icon).map(|format| format.name),
            cfg!(feature = "ico").then_some("ICO")
        );
        // GIF has two versions; a third is no GIF.
        for (version, gif) in [
            (&b"GIF87a"[..], true),
            (b"GIF89a", true),
            (b"GIF8xa", false),
        ] {
            let name = detect(version).map(|format| format.name);
            assert_eq!(name, gif.then_some("GIF"), "{version:?}");
        }
    }

    /// A file type box: its major brand, a minor version of 0, and its
    /// compatible brands.
    fn ftyp(major: &[u8; 4], compatible: &[&[u8; 4]]) -> Vec<u8> {
        let mut bytes = ((16 + 4 * compatible.len()) as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(b"ftyp");
        bytes.extend_from_slice(major);
        bytes.extend_from_slice(&[0; 4]);
        compatible
            .iter()
            .for_each(|brand| bytes.extend_from_slice(*brand));
        bytes
    }

    #[test]
    fn avif_is_told_by_any_of_its_brands() {
        assert!(is_avif(&ftyp(b"avif", &[b"mif1"])));
        assert!(is_avif(&ftyp(b"mif1", &[b"miaf", b"avif"])));
        assert!(is_avif(&ftyp(b"avis", &[])));
        // HEIC, and a minor version that spells the brand, are not AVIF.
        assert!(!is_avif(&ftyp(b"heic", &[b"mif1"])));
        let mut minor = ftyp(b"heic", &[]);
        minor[12..16].copy_from_slice(b"avif");
        assert!(!is_avif(&minor));
    }

    #[test]
    fn heic_is_told_by_its_hevc_brands_and_named_when_off() {
        let phone = ftyp(b"heic", &[b"mif1", b"heic"]);
        let camera = ftyp(b"mif1", &[b"heix", b"miaf"]);
        for heic in [&phone, &camera] {
            assert!(is_heic(heic));
            assert!(!is_avif(heic));
            let told = detect(heic).map(|format| format.name);
            assert_eq!(told, cfg!(feature = "heic").then_some("HEIC"));
            if !cfg!(feature = "heic") {
                assert!(not_decoded(heic).starts_with("the image is HEIC, which this build"));
            }
        }
        // A HEIF of no HEVC brand (AVIF's, or the bare structural one) is not HEIC.
        assert!(!is_heic(&ftyp(b"mif1", &[b"avif", b"miaf"])));
        assert!(!is_heic(&ftyp(b"mif1", &[])));
    }
}
