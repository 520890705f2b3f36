//! Formats: the one table of the image formats this build decodes, which
//! the rest of the crate reads: [`SUPPORTED_FORMATS`], the `Accept` header
//! of every request (the fetch stage's), and the decoder's check of what it
//! was given. A leaf of the crate, like `request.rs`: the fetch and the
//! decode both read it, and it uses neither.
//!
//! Plain constants, fixed when the crate is built: JPEG, PNG, WebP and GIF
//! always; AVIF, BMP, ICO, TIFF and SVG each behind a cargo feature of the
//! same name (all but SVG on by default; pure Rust, so they need nothing
//! from the system).

use image::ImageFormat;

/// A format the decoder reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Format {
    /// What users call it, as listed in [`SUPPORTED_FORMATS`].
    pub(crate) name: &'static str,
    /// The media types servers label it with, the first the one `Accept`
    /// names.
    pub(crate) media_type: &'static str,
    /// `image`'s name for it, which its magic bytes are matched to; none
    /// for SVG, which is markup (`decode/svg.rs` tells it).
    pub(crate) image: Option<ImageFormat>,
}

/// Every format this build decodes, most common on the web first (the
/// order of the `Accept` header).
pub(crate) const FORMATS: &[Format] = &[
    Format {
        name: "WebP",
        media_type: "image/webp",
        image: Some(ImageFormat::WebP),
    },
    Format {
        name: "PNG",
        media_type: "image/png",
        image: Some(ImageFormat::Png),
    },
    Format {
        name: "JPEG",
        media_type: "image/jpeg",
        image: Some(ImageFormat::Jpeg),
    },
    Format {
        name: "GIF",
        media_type: "image/gif",
        image: Some(ImageFormat::Gif),
    },
    // After the formats that decode fastest: a server that can send either
    // chooses by its own order, most of them AVIF whenever it is named.
    #[cfg(feature = "avif")]
    Format {
        name: "AVIF",
        media_type: "image/avif",
        image: Some(ImageFormat::Avif),
    },
    #[cfg(feature = "bmp")]
    Format {
        name: "BMP",
        media_type: "image/bmp",
        image: Some(ImageFormat::Bmp),
    },
    #[cfg(feature = "ico")]
    Format {
        name: "ICO",
        // What IANA registered; browsers and most servers still send the
        // older `image/x-icon`, which `Accept` names too.
        media_type: "image/vnd.microsoft.icon",
        image: Some(ImageFormat::Ico),
    },
    #[cfg(feature = "tiff")]
    Format {
        name: "TIFF",
        media_type: "image/tiff",
        image: Some(ImageFormat::Tiff),
    },
    #[cfg(feature = "svg")]
    Format {
        name: "SVG",
        media_type: "image/svg+xml",
        image: None,
    },
];

/// The image formats [`ImageDecoder`](crate::ImageDecoder) decodes in this
/// build: JPEG, PNG, WebP and GIF, and each of AVIF, BMP, ICO, TIFF and SVG
/// whose cargo feature is on (all but SVG by default). The `Accept` header of every
/// request names the same formats.
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

/// The media type of the image `bytes` hold, if they are one of the
/// formats' (what a shared thumbnail's `Thumb::Mimetype` says).
#[cfg_attr(not(feature = "shared-thumbnails"), allow(dead_code))]
pub(crate) fn media_type(bytes: &[u8]) -> Option<&'static str> {
    supported(guess(bytes)?).map(|format| format.media_type)
}

/// The format `bytes` are in, by their first bytes: `image`'s guess, an
/// AVIF by any of its brands, and BigTIFF (a TIFF with 64-bit offsets,
/// `II+\0` or `MM\0+`), which the TIFF decoder reads and `image` does not
/// recognise.
pub(crate) fn guess(bytes: &[u8]) -> Option<ImageFormat> {
    if is_avif(bytes) {
        return Some(ImageFormat::Avif);
    }
    image::guess_format(bytes).ok().or_else(|| {
        matches!(bytes.get(..4), Some(b"II+\0" | b"MM\0+")).then_some(ImageFormat::Tiff)
    })
}

/// Whether `bytes` start with a file type box whose major or compatible
/// brands name AVIF (`avif`, or `avis` for a sequence): `image` knows an
/// AVIF only by its major brand, and phones write `mif1` there.
pub(crate) fn is_avif(bytes: &[u8]) -> bool {
    let Some(size) = bytes.get(..4) else {
        return false;
    };
    let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]) as usize;
    if bytes.get(4..8) != Some(b"ftyp") || size < 16 {
        return false;
    }
    let brands = bytes
        .get(8..size.min(bytes.len()).min(256))
        .unwrap_or_default();
    // The major brand, the minor version, then the compatible brands.
    brands
        .chunks_exact(4)
        .enumerate()
        .any(|(i, brand)| i != 1 && (brand == b"avif" || brand == b"avis"))
}

/// The format `image` recognised, if this build decodes it.
pub(crate) fn supported(format: ImageFormat) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.image == Some(format))
}

/// The `Accept` header's value: the media types of [`FORMATS`], ICO's old
/// name beside its registered one.
pub(crate) fn accept_header() -> String {
    let mut types: Vec<&str> = FORMATS.iter().map(|f| f.media_type).collect();
    if cfg!(feature = "ico") {
        types.push("image/x-icon");
    }
    types.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_named_once_and_accepted() {
        let accept = accept_header();
        for (i, format) in FORMATS.iter().enumerate() {
            assert_eq!(SUPPORTED_FORMATS[i], format.name);
            assert!(accept.split(',').any(|t| t == format.media_type));
            if let Some(image) = format.image {
                assert_eq!(supported(image).map(|f| f.name), Some(format.name));
            }
        }
        assert!(accept.starts_with("image/webp,image/png,image/jpeg,image/gif"));
        assert_eq!(
            cfg!(feature = "tiff"),
            supported(ImageFormat::Tiff).is_some()
        );
        assert!(supported(ImageFormat::Dds).is_none());
        assert_eq!(
            cfg!(feature = "avif"),
            accept.split(',').any(|t| t == "image/avif")
        );
    }

    #[test]
    fn avif_is_told_by_any_of_its_brands() {
        let ftyp = |major: &[u8; 4], compatible: &[&[u8; 4]]| {
            let mut bytes = ((16 + 4 * compatible.len()) as u32).to_be_bytes().to_vec();
            bytes.extend_from_slice(b"ftyp");
            bytes.extend_from_slice(major);
            bytes.extend_from_slice(&[0; 4]);
            compatible
                .iter()
                .for_each(|brand| bytes.extend_from_slice(*brand));
            bytes
        };
        assert_eq!(guess(&ftyp(b"avif", &[b"mif1"])), Some(ImageFormat::Avif));
        assert_eq!(
            guess(&ftyp(b"mif1", &[b"miaf", b"avif"])),
            Some(ImageFormat::Avif)
        );
        assert_eq!(guess(&ftyp(b"avis", &[])), Some(ImageFormat::Avif));
        // HEIC, and a minor version that spells the brand, are not AVIF.
        assert_ne!(guess(&ftyp(b"heic", &[b"mif1"])), Some(ImageFormat::Avif));
        let mut minor = ftyp(b"heic", &[]);
        minor[12..16].copy_from_slice(b"avif");
        assert_ne!(guess(&minor), Some(ImageFormat::Avif));
    }
}
