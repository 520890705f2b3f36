//! JPEG's fast path: decoding at 1/2, 1/4 or 1/8 of the size by scaling in
//! the DCT domain, when that still covers the thumbnail.
//!
//! Runs inside a decode, on the decode thread that called it; it starts no
//! threads and keeps nothing.

use image::DynamicImage;

use super::DecodeLimits;
use crate::TargetSize;
use crate::thumbnail::fit_inside;

/// Outputs wider than this make jpeg-decoder (without rayon) start a thread
/// per colour component; a decode thread must not start threads.
const JPEG_SCALED_MAX_WIDTH: u16 = 128;

/// A JPEG decoded at 1/2, 1/4 or 1/8 of its size by scaling in the DCT
/// domain, several times faster than a full decode, when that size still
/// covers the thumbnail. `None` when it does not apply (no reduction, an
/// output over [`JPEG_SCALED_MAX_WIDTH`], CMYK or 16-bit) or fails: the full
/// decode then runs and reports any error.
pub(super) fn decode_jpeg_scaled(
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::decode_thumbnail;
    use super::super::tests::LIMITS;
    use super::*;

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
}
