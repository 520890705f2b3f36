//! Formats: the one table of the image formats this build decodes, which
//! the rest of the crate reads: [`SUPPORTED_FORMATS`], the `Accept` header
//! of every request, and the decoder's check of what it was given.
//!
//! Plain constants, fixed when the crate is built: JPEG, PNG, WebP and GIF
//! always; BMP, ICO and TIFF each behind a cargo feature of the same name
//! (on by default; pure Rust, so they need nothing from the system).

use image::ImageFormat;

/// A format the decoder reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Format {
    /// What users call it, as listed in [`SUPPORTED_FORMATS`].
    pub(crate) name: &'static str,
    /// The media types servers label it with, the first the one `Accept`
    /// names.
    pub(crate) media_type: &'static str,
    /// `image`'s name for it, which its magic bytes are matched to.
    pub(crate) image: ImageFormat,
}

/// Every format this build decodes, most common on the web first (the
/// order of the `Accept` header).
pub(crate) const FORMATS: &[Format] = &[
    Format {
        name: "WebP",
        media_type: "image/webp",
        image: ImageFormat::WebP,
    },
    Format {
        name: "PNG",
        media_type: "image/png",
        image: ImageFormat::Png,
    },
    Format {
        name: "JPEG",
        media_type: "image/jpeg",
        image: ImageFormat::Jpeg,
    },
    Format {
        name: "GIF",
        media_type: "image/gif",
        image: ImageFormat::Gif,
    },
    #[cfg(feature = "bmp")]
    Format {
        name: "BMP",
        media_type: "image/bmp",
        image: ImageFormat::Bmp,
    },
    #[cfg(feature = "ico")]
    Format {
        name: "ICO",
        // What IANA registered; browsers and most servers still send the
        // older `image/x-icon`, which `Accept` names too.
        media_type: "image/vnd.microsoft.icon",
        image: ImageFormat::Ico,
    },
    #[cfg(feature = "tiff")]
    Format {
        name: "TIFF",
        media_type: "image/tiff",
        image: ImageFormat::Tiff,
    },
];

/// The image formats [`ImageDecoder`](crate::ImageDecoder) decodes in this
/// build: JPEG, PNG, WebP and GIF, and each of BMP, ICO and TIFF whose
/// cargo feature is on (all three by default). The `Accept` header of every
/// request names the same formats.
///
/// ```
/// assert!(thumbpipe::SUPPORTED_FORMATS.contains(&"WebP"));
/// # #[cfg(feature = "tiff")]
/// assert!(thumbpipe::SUPPORTED_FORMATS.contains(&"TIFF"));
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

/// The format `image` recognised, if this build decodes it.
pub(crate) fn supported(format: ImageFormat) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.image == format)
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
            assert_eq!(supported(format.image).map(|f| f.name), Some(format.name));
        }
        assert!(accept.starts_with("image/webp,image/png,image/jpeg,image/gif"));
        assert_eq!(
            cfg!(feature = "tiff"),
            supported(ImageFormat::Tiff).is_some()
        );
        assert!(supported(ImageFormat::Dds).is_none());
    }
}
