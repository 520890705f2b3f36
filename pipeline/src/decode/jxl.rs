//! JPEG XL, decoded by jxl-oxide (pure Rust) on the decode thread that
//! runs it, with no thread pool of its own: its row of the format table
//! and its decoder, bytes to thumbnail. The header is read first and the
//! image refused past `decode.max_dimension` before any frame is decoded;
//! jxl-oxide's image buffers count against `decode.max_alloc_bytes` (its
//! allocation tracker), and the 8-bit pixels and the resize are reckoned
//! against it again before they are made, so a decode may hold up to
//! about twice the limit. Not tracked: an embedded ICC profile's buffer,
//! which jxl-oxide sizes from the file (up to 256 MiB). The first frame of an
//! animation is shown, turned as the file says.
//!
//! Runs on a decode thread; keeps nothing.

use std::sync::Arc;

use image::metadata::Orientation;
use jxl_oxide::{AllocTracker, InitializeResult, JxlImage, JxlThreadPool};

use super::DecodeLimits;
use super::fitting::Fitting;
use super::format::{Decoder, Format, Signature};
use super::header::{self, within_max_dimension};
use super::resize::{self, Layout, Pixels};
use super::upright::fit;
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// JPEG XL's row of the format table: a bare codestream or the container.
pub(super) const FORMAT: Format = Format {
    name: "JPEG XL",
    media_types: &["image/jxl"],
    signature: Signature::Told(is_jxl),
    decoder: Decoder::Own(thumbnail),
};

/// The container's signature box.
const CONTAINER: &[u8] = b"\0\0\0\x0cJXL \r\n\x87\n";

fn is_jxl(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xFF, 0x0A]) || bytes.starts_with(CONTAINER)
}

/// The thumbnail of `asked` of the JPEG XL `bytes`, under `limits`.
fn thumbnail(
    url: &Arc<str>,
    bytes: &[u8],
    asked: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    let decode_error = |reason: String| Error::Decode {
        url: url.to_string(),
        reason: format!("JPEG XL: {reason}"),
    };
    let image = read(bytes, &limits).map_err(decode_error)?;
    // Upright: jxl-oxide turns the picture as it renders it.
    let (width, height) = (image.width(), image.height());
    within_max_dimension(url, width, height, &limits)?;
    let fitting = Fitting::new(width, height, asked);
    let channels = u64::from(image.pixel_format().channels() as u32).max(1);
    let needed = (u64::from(width) * u64::from(height) * channels)
        .saturating_add(resize::working_bytes((width, height), fitting.size));
    if needed > limits.max_alloc {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {width}x{height}: its pixels and the resize take {needed} bytes, over \
                 the {}-byte decode limit",
                limits.max_alloc
            ),
            setting: "decode.max_alloc_bytes",
        });
    }
    let render = image
        .render_frame(0)
        .map_err(|error| decode_error(error.to_string()))?;
    let mut stream = render.stream();
    let format = image.pixel_format();
    let (stream_width, stream_height) = (stream.width(), stream.height());
    let mut data = vec![0u8; stream_width as usize * stream_height as usize * stream.channels() as usize];
    stream.write_to_buffer(&mut data);
    let (layout, data) = straight(data, format.channels(), format.has_black(), premultiplied(&image))
        .ok_or_else(|| decode_error(format!("{} channels", format.channels())))?;
    let pixels = Pixels {
        width: stream_width,
        height: stream_height,
        layout,
        data,
    };
    let rgba = fit(
        pixels,
        &fitting,
        (width, height),
        None,
        Orientation::NoTransforms,
    )
    .map_err(decode_error)?;
    Ok(header::still(url, rgba, (width, height)))
}

/// Whether the image's alpha is associated (its colour premultiplied).
fn premultiplied(image: &JxlImage) -> bool {
    image
        .image_header()
        .metadata
        .ec_info
        .iter()
        .any(|info| matches!(info.ty, jxl_oxide::ExtraChannelType::Alpha { alpha_associated: true }))
}

/// Interleaved samples of `channels` (colour, then black if `black`, then
/// alpha) as one of the resize's layouts: CMYK made RGB by its black
/// (each colour sample scaled by the black channel's, which is 1 where no
/// black ink is), premultiplied colour divided by its alpha.
fn straight(data: Vec<u8>, channels: usize, black: bool, premultiplied: bool) -> Option<(Layout, Vec<u8>)> {
    let (layout, mut data) = match (channels, black) {
        (1, _) => (Layout::Luma, data),
        (2, _) => (Layout::LumaAlpha, data),
        (3, false) => (Layout::Rgb, data),
        (4, false) => (Layout::Rgba, data),
        (4 | 5, true) => {
            let scale = |c: u8, k: u8| ((u16::from(c) * u16::from(k) + 127) / 255) as u8;
            let rgba = data
                .chunks_exact(channels)
                .flat_map(|p| [scale(p[0], p[3]), scale(p[1], p[3]), scale(p[2], p[3]), *p.get(4).unwrap_or(&255)])
                .collect();
            (Layout::Rgba, rgba)
        }
        _ => return None,
    };
    if premultiplied {
        let (colour, step) = match layout {
            Layout::LumaAlpha => (1, 2),
            Layout::Rgba => (3, 4),
            _ => (0, 1),
        };
        for pixel in data.chunks_exact_mut(step).filter(|_| colour > 0) {
            let alpha = u16::from(pixel[colour]);
            for sample in &mut pixel[..colour] {
                *sample = (u16::from(*sample) * 255 + alpha / 2)
                    .checked_div(alpha)
                    .map_or(0, |value| value.min(255) as u8);
            }
        }
    }
    Some((layout, data))
}

/// The image `bytes` hold, its frames read (not yet decoded), on this
/// thread, jxl-oxide's allocations bounded by the limit.
fn read(bytes: &[u8], limits: &DecodeLimits) -> Result<JxlImage, String> {
    let budget = usize::try_from(limits.max_alloc).unwrap_or(usize::MAX);
    let mut uninit = JxlImage::builder()
        .pool(JxlThreadPool::none())
        .alloc_tracker(AllocTracker::with_limit(budget))
        .build_uninit();
    let consumed = uninit.feed_bytes(bytes).map_err(|error| error.to_string())?;
    let mut image = match uninit.try_init().map_err(|error| error.to_string())? {
        InitializeResult::Initialized(image) => image,
        InitializeResult::NeedMoreData(_) => return Err("the file ends inside its header".into()),
    };
    let mut at = consumed;
    while at < bytes.len() {
        let more = image
            .feed_bytes(&bytes[at..])
            .map_err(|error| error.to_string())?;
        if more == 0 {
            break;
        }
        at += more;
    }
    image.finalize().map_err(|error| error.to_string())?;
    if image.num_loaded_keyframes() == 0 {
        return Err("the file ends before its first frame".into());
    }
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::formats;
    use crate::decode::route::tests::LIMITS;

    /// The fixture's picture 9 at 300x200, by libjxl's `cjxl -d 1 -e 3`.
    const LOSSY: &[u8] = include_bytes!("../../tests/data/picture-9-300x200.jxl");
    /// Picture 10 at 120x80, by `cjxl -d 0 -e 2` (lossless, modular).
    const LOSSLESS: &[u8] = include_bytes!("../../tests/data/picture-10-120x80-lossless.jxl");

    fn decoded(bytes: &[u8], side: u32, limits: DecodeLimits) -> Result<Thumbnail, Error> {
        let url: Arc<str> = "file:///a.jxl".into();
        crate::decode::decode_thumbnail(&url, bytes, TargetSize::square(side), limits)
    }

    fn picture_of(thumbnail: &Thumbnail) -> Option<u32> {
        fixture_server::decode_id(&thumbnail.pixels, thumbnail.width, thumbnail.height)
    }

    #[test]
    fn a_jpeg_xl_is_told_accepted_and_made_into_its_thumbnail() {
        assert_eq!(formats::media_type(LOSSY), Some("image/jxl"));
        assert!(formats::accept_header().split(',').any(|t| t == "image/jxl"));
        let small = decoded(LOSSY, 64, LIMITS).unwrap();
        assert_eq!((small.width, small.height, small.source_size), (64, 43, (300, 200)));
        assert_eq!(picture_of(&decoded(LOSSY, 150, LIMITS).unwrap()), Some(9));
        // Never scaled up.
        let whole = decoded(LOSSLESS, 256, LIMITS).unwrap();
        assert_eq!((whole.width, whole.height), (120, 80));
        assert_eq!(picture_of(&whole), Some(10));
    }

    #[test]
    fn premultiplied_colour_is_made_straight_and_cmyk_rgb_by_its_black() {
        // Half-covered red, premultiplied: straight red at half alpha.
        let (layout, data) = straight(vec![128, 0, 0, 128, 0, 0, 0, 0], 4, false, true).unwrap();
        assert!(matches!(layout, Layout::Rgba));
        assert_eq!(data, [255, 0, 0, 128, 0, 0, 0, 0]);
        // Colour samples scaled by black (255: no black ink), then alpha.
        let (layout, data) = straight(vec![255, 128, 0, 128, 200], 5, true, false).unwrap();
        assert!(matches!(layout, Layout::Rgba));
        assert_eq!(data, [128, 64, 0, 200]);
        assert!(straight(vec![0; 6], 6, false, false).is_none());
    }

    #[test]
    fn past_the_limits_or_damaged_is_an_error_never_a_panic() {
        let mut small = LIMITS;
        small.max_dimension = 200;
        assert!(matches!(decoded(LOSSY, 64, small), Err(Error::TooLarge { .. })));
        let mut tight = LIMITS;
        tight.max_alloc = 64 * 1024;
        assert!(decoded(LOSSY, 64, tight).is_err());
        for cut in (0..LOSSY.len()).step_by(61) {
            assert!(decoded(&LOSSY[..cut], 64, LIMITS).is_err(), "{cut}");
        }
        let mut flipped = LOSSY.to_vec();
        for at in (2..flipped.len()).step_by(37) {
            flipped[at] ^= 0x5A;
            let _ = decoded(&flipped, 64, LIMITS);
        }
    }
}
