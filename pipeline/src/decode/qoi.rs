//! QOI, the Quite OK Image format: lossless RGB or RGBA, made to encode
//! and decode fast (game assets, screenshots, tools' caches). Its row of
//! the format table; `image` decodes it (the `qoi` crate), with nothing
//! done around its decoder. Plain data.

use image::ImageFormat;

use super::formats::{Decoder, Format, Raster, Signature};

/// QOI's row of the format table: told by its `qoif` magic.
pub(super) const FORMAT: Format = Format {
    name: "QOI",
    // Not registered with IANA; what its specification and servers use.
    media_types: &["image/qoi"],
    signature: Signature::Magic(&[(0, b"qoif")]),
    decoder: Decoder::Image(Raster::of(ImageFormat::Qoi)),
};

#[cfg(test)]
mod tests {
    use std::io::Cursor;
    use std::sync::Arc;

    use crate::decode::route::tests::LIMITS;
    use crate::decode::{decode_thumbnail, formats};
    use crate::request::TargetSize;

    #[test]
    fn a_qoi_is_told_accepted_and_decoded_to_its_thumbnail() {
        let picture = image::RgbaImage::from_fn(300, 150, |x, _| {
            image::Rgba([if x < 150 { 200 } else { 10 }, 40, 60, 128])
        });
        let mut bytes = Cursor::new(Vec::new());
        picture
            .write_to(&mut bytes, image::ImageFormat::Qoi)
            .unwrap();
        let bytes = bytes.into_inner();
        assert_eq!(formats::media_type(&bytes), Some("image/qoi"));
        assert!(
            formats::accept_header()
                .split(',')
                .any(|t| t == "image/qoi")
        );
        let url: Arc<str> = "file:///a.qoi".into();
        let thumbnail = decode_thumbnail(&url, &bytes, TargetSize::square(64), LIMITS).unwrap();
        assert_eq!((thumbnail.width, thumbnail.height), (64, 32));
        assert_eq!(thumbnail.source_size, (300, 150));
        // Its alpha kept; its colour within the resize's rounding.
        let first = &thumbnail.pixels[..4];
        assert_eq!(first[3], 128, "{first:?}");
        assert!(
            first[0].abs_diff(200) <= 2 && first[1].abs_diff(40) <= 2,
            "{first:?}"
        );
        let cut = decode_thumbnail(&url, &bytes[..40], TargetSize::square(64), LIMITS);
        assert!(matches!(cut, Err(crate::Error::Decode { .. })), "{cut:?}");
    }
}
