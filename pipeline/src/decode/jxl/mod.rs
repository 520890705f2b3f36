//! JPEG XL, decoded by jxl-oxide (pure Rust) on the decode thread that
//! runs it, with no thread pool of its own: its row of the format table
//! and its decoder, bytes to thumbnail. A lossy photo whose eighth-size
//! LF covers the thumbnail is made from that alone ([`lf`]), as a JPEG
//! is from its DC; any other image is rendered whole. Before jxl-oxide
//! reads the file, its header is read here ([`plan`]): the image is refused past
//! `decode.max_dimension`, and what the decode will hold outside
//! jxl-oxide's allocation tracker (an embedded ICC profile, which
//! jxl-oxide sizes from the file, up to 256 MiB encoded and as much
//! decoded; the 8-bit pixels and the resize) is reckoned against
//! `decode.max_alloc_bytes`. The tracker is given what is left of it, so a
//! decode holds no more than the limit. The first frame of an animation
//! is shown, turned as the file says.
//!
//! Runs on a decode thread; keeps nothing.

use std::sync::Arc;

use image::metadata::Orientation;
use jxl_bitstream::{Bitstream, ContainerParser, ParseEvent};
use jxl_oxide::{
    AllocTracker, ExtraChannelType, ImageHeader, InitializeResult, JxlImage, JxlThreadPool,
};
use jxl_oxide_common::Bundle as _;

use super::DecodeLimits;
use super::fitting::{Fitting, fit, quarter_turn, swapped};
use super::formats::{self, Decoder, Format, Signature};
use super::header::{self, within_max_dimension};
use super::resize::{self, Layout, Pixels};
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

mod lf;
pub(in crate::decode) mod watch;

/// JPEG XL's row of the format table: a bare codestream or the container.
pub(super) const FORMAT: Format = Format {
    name: "JPEG XL",
    media_types: &["image/jxl"],
    signature: Signature::Told(is_jxl),
    decoder: Decoder::Own(thumbnail),
};

/// The container's signature box.
pub(in crate::decode) const CONTAINER: &[u8] = b"\0\0\0\x0cJXL \r\n\x87\n";

pub(in crate::decode) fn is_jxl(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xFF, 0x0A]) || bytes.starts_with(CONTAINER)
}

/// The thumbnail of `asked` of the JPEG XL `bytes`, under `limits`.
fn thumbnail(
    url: &Arc<str>,
    bytes: &[u8],
    asked: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    let plan = plan(bytes, &limits).map_err(formats::decode_error(url, "JPEG XL"))?;
    within_max_dimension(url, plan.size.0, plan.size.1, &limits)?;
    match from_lf(url, bytes, asked, &limits, &plan)? {
        Some(thumbnail) => Ok(thumbnail),
        None => whole(url, bytes, asked, &limits, &plan),
    }
}

/// The thumbnail made from the whole image, rendered by jxl-oxide.
fn whole(
    url: &Arc<str>,
    bytes: &[u8],
    asked: TargetSize,
    limits: &DecodeLimits,
    plan: &Plan,
) -> Result<Thumbnail, Error> {
    let decode_error = formats::decode_error(url, "JPEG XL");
    // Upright, as jxl-oxide renders it.
    let (width, height) = plan.size;
    let fitting = Fitting::new(width, height, asked);
    let area = u64::from(width) * u64::from(height);
    // Held outside jxl-oxide's tracker: the 8-bit pixels, the resize, the
    // ICC profile, and jxl-oxide's own copy of the codestream.
    let untracked = area
        .saturating_mul(plan.bytes_per_pixel)
        .saturating_add(resize::working_bytes((width, height), fitting.size))
        .saturating_add(plan.icc_bytes)
        .saturating_add(bytes.len() as u64);
    // Its render holds at least the three colour planes, in f32.
    let rendered = area.saturating_mul(3 * 4);
    let tracked = limits.max_alloc.saturating_sub(untracked);
    if tracked < rendered {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {width}x{height}: its render takes at least {rendered} bytes and its \
                 pixels, the resize, its ICC profile and its codestream {untracked}, over the \
                 {}-byte decode limit",
                limits.max_alloc
            ),
            setting: "decode.max_alloc_bytes",
        });
    }
    let image = read(bytes, tracked).map_err(|failure| failed(url, plan, limits, failure))?;
    if (image.width(), image.height()) != (width, height) {
        return Err(decode_error("its header read twice gave two sizes".into()));
    }
    let render = image
        .render_frame(0)
        .map_err(|failure| failed(url, plan, limits, failure))?;
    let mut stream = render.stream();
    let format = image.pixel_format();
    let (stream_width, stream_height) = (stream.width(), stream.height());
    // What was reckoned for: the image's size, and a channel a sample (an
    // ICC profile of CMYK with no black channel gives fewer).
    if (stream_width, stream_height) != (width, height)
        || stream.channels() as usize != format.channels()
    {
        return Err(decode_error(format!(
            "its render is {stream_width}x{stream_height} with {} channels, where its header \
             says {width}x{height} with {}",
            stream.channels(),
            format.channels()
        )));
    }
    let mut data =
        vec![0u8; stream_width as usize * stream_height as usize * stream.channels() as usize];
    stream.write_to_buffer(&mut data);
    let (layout, data) = straight(
        data,
        format.channels(),
        format.has_black(),
        premultiplied(&image),
    )
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

/// The thumbnail made from the image's LF, at an eighth of its size,
/// when that is at least the thumbnail's and its frame is one
/// [`lf::render`] reads; `None` where the whole image is to be rendered.
fn from_lf(
    url: &Arc<str>,
    bytes: &[u8],
    asked: TargetSize,
    limits: &DecodeLimits,
    plan: &Plan,
) -> Result<Option<Thumbnail>, Error> {
    let decode_error = formats::decode_error(url, "JPEG XL");
    let Some(LfFit {
        orientation,
        coded,
        fitting,
        lf_size,
    }) = lf_fit(plan, asked)
    else {
        return Ok(None);
    };
    // Held outside jxl-oxide's tracker: the LF's planes in f32 (with a
    // JPEG's chroma made whole, the smoothing's copy: at most nine), its
    // 8-bit samples, the resize, the ICC profile and jxl-oxide's copy of
    // the codestream. The LF groups' own samples are tracked.
    let lf_area = u64::from(lf_size.0) * u64::from(lf_size.1);
    let untracked = lf_area
        .saturating_mul(9 * 4 + 3)
        .saturating_add(resize::working_bytes(lf_size, fitting.size))
        .saturating_add(plan.icc_bytes)
        .saturating_add(bytes.len() as u64);
    let Some(tracked) = limits.max_alloc.checked_sub(untracked) else {
        return Ok(None);
    };
    // As far as the bytes go: a fetch may have stopped at the LF.
    let image = read_start(bytes, tracked).map_err(|failure| failed(url, plan, limits, failure))?;
    let Some(pixels) = lf::render(&image).map_err(|failure| failed(url, plan, limits, failure))?
    else {
        return Ok(None);
    };
    if (pixels.width, pixels.height) != lf_size {
        return Err(decode_error(format!(
            "its LF is {}x{}, where its header says {}x{}",
            pixels.width, pixels.height, coded.0, coded.1
        )));
    }
    let rgba = fit(pixels, &fitting, coded, Some(1), orientation).map_err(decode_error)?;
    Ok(Some(header::still(url, rgba, plan.size)))
}

/// How a thumbnail is made from an image's LF.
struct LfFit {
    /// How the image is turned to be upright.
    orientation: Orientation,
    /// Its size as coded (before it is turned).
    coded: (u32, u32),
    /// The thumbnail's part and size, as coded.
    fitting: Fitting,
    /// The LF's size: an eighth of the coded size, rounded up.
    lf_size: (u32, u32),
}

/// How the thumbnail of `asked` is made from the LF of the image `plan`
/// reads, or `None` where the LF does not cover it, or the image has
/// alpha or black (told before the file is read; any other extra
/// channel is told by [`lf::render`]), which only the whole render has.
fn lf_fit(plan: &Plan, asked: TargetSize) -> Option<LfFit> {
    let orientation = Orientation::from_exif(plan.orientation).unwrap_or(Orientation::NoTransforms);
    let (width, height) = plan.size;
    // The LF is as coded: fitted with the target's sides swapped for a
    // quarter turn, turned after the resize.
    let (coded, target) = if quarter_turn(orientation) {
        ((height, width), swapped(asked))
    } else {
        ((width, height), asked)
    };
    let fitting = Fitting::new(coded.0, coded.1, target);
    let lf_size = (coded.0.div_ceil(8), coded.1.div_ceil(8));
    let needed = fitting.scaled_whole(coded.0, coded.1);
    let colour_alone = plan.bytes_per_pixel == 3;
    (colour_alone && lf_size.0 >= needed.0 && lf_size.1 >= needed.1).then_some(LfFit {
        orientation,
        coded,
        fitting,
        lf_size,
    })
}

/// Whether the image's alpha is associated (its colour premultiplied).
fn premultiplied(image: &JxlImage) -> bool {
    image.image_header().metadata.ec_info.iter().any(|info| {
        matches!(
            info.ty,
            jxl_oxide::ExtraChannelType::Alpha {
                alpha_associated: true
            }
        )
    })
}

/// Interleaved samples of `channels` (colour, then black if `black`, then
/// alpha) as one of the resize's layouts: CMYK made RGB by its black
/// (each colour sample scaled by the black channel's, which is 1 where no
/// black ink is), premultiplied colour divided by its alpha.
fn straight(
    data: Vec<u8>,
    channels: usize,
    black: bool,
    premultiplied: bool,
) -> Option<(Layout, Vec<u8>)> {
    let (layout, mut data) = match (channels, black) {
        (1, _) => (Layout::Luma, data),
        (2, _) => (Layout::LumaAlpha, data),
        (3, false) => (Layout::Rgb, data),
        (4, false) => (Layout::Rgba, data),
        (4 | 5, true) => {
            let scale = |c: u8, k: u8| ((u16::from(c) * u16::from(k) + 127) / 255) as u8;
            let rgba = data
                .chunks_exact(channels)
                .flat_map(|p| {
                    [
                        scale(p[0], p[3]),
                        scale(p[1], p[3]),
                        scale(p[2], p[3]),
                        *p.get(4).unwrap_or(&255),
                    ]
                })
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

/// What decoding a JPEG XL will hold outside jxl-oxide's tracker, read
/// from its header before jxl-oxide reads it.
struct Plan {
    /// Its upright size.
    size: (u32, u32),
    /// Bytes a pixel takes once rendered to 8 bits: colour, alpha, and
    /// black with the RGBA it is made into.
    bytes_per_pixel: u64,
    /// Its embedded ICC profile's bytes, encoded and decoded.
    icc_bytes: u64,
    /// How it is turned to be upright, as an EXIF orientation.
    orientation: u8,
}

/// Reads the header of the JPEG XL `bytes` (bare, or in its container),
/// and the sizes of its ICC profile: read here first, under a bound, since
/// jxl-oxide allocates both from the sizes the file declares.
fn plan(bytes: &[u8], limits: &DecodeLimits) -> Result<Plan, String> {
    let mut parts = Vec::new();
    let mut container = ContainerParser::new();
    for event in container.feed_bytes(bytes) {
        if let ParseEvent::Codestream(part) = event.map_err(|error| error.to_string())? {
            parts.push(part);
        }
    }
    // One part (a bare codestream, or one `jxlc` box) is read where it
    // lies; parts (`jxlp` boxes) are put together.
    let codestream: std::borrow::Cow<'_, [u8]> = match parts.as_slice() {
        [one] => (*one).into(),
        _ => parts.concat().into(),
    };
    let mut bitstream = Bitstream::new(&codestream);
    let header = ImageHeader::parse(&mut bitstream, ()).map_err(|error| error.to_string())?;
    let channels = header
        .metadata
        .ec_info
        .iter()
        .fold(3, |channels, info| match info.ty {
            ExtraChannelType::Alpha { .. } => channels + 1,
            // Black, and the RGBA the colour is made into with it.
            ExtraChannelType::Black => channels + 1 + 4,
            _ => channels,
        });
    let mut icc_bytes = 0;
    if header.metadata.colour_encoding.want_icc() {
        let encoded = bitstream
            .clone()
            .read_u64()
            .map_err(|error| error.to_string())?;
        // Read here only within the limits: it is allocated as declared.
        let most = MAX_ICC_BYTES.min(limits.max_alloc);
        if encoded > most {
            return Err(format!(
                "its ICC profile is {encoded} bytes encoded, over {most}"
            ));
        }
        let icc = jxl_color::icc::read_icc(&mut bitstream).map_err(|error| error.to_string())?;
        // The decoded size leads the encoded profile, as a varint of at
        // most 9 bytes (as jxl-color reads it).
        let mut decoded = 0u64;
        for (at, byte) in icc.iter().take(9).enumerate() {
            decoded |= u64::from(byte & 0x7F) << (7 * at);
            if byte & 0x80 == 0 {
                break;
            }
        }
        if decoded > MAX_ICC_BYTES {
            return Err(format!(
                "its ICC profile is {decoded} bytes decoded, over {MAX_ICC_BYTES}"
            ));
        }
        icc_bytes = encoded + decoded;
    }
    Ok(Plan {
        size: (
            header.width_with_orientation(),
            header.height_with_orientation(),
        ),
        bytes_per_pixel: channels,
        icc_bytes,
        orientation: u8::try_from(header.metadata.orientation).unwrap_or(1),
    })
}

/// How jxl-oxide, and the LF read with its parts, fail.
type Failure = Box<dyn std::error::Error + Send + Sync>;

/// `failure` as thumbpipe's error: an allocation jxl-oxide's tracker
/// refused is `TooLarge` (the decode needed more than was left of
/// `decode.max_alloc_bytes`), anything else the file's.
fn failed(url: &Arc<str>, plan: &Plan, limits: &DecodeLimits, failure: Failure) -> Error {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&*failure);
    while let Some(error) = cause {
        if let Some(refused) = error.downcast_ref::<jxl_grid::OutOfMemory>() {
            let (width, height) = plan.size;
            return Error::TooLarge {
                url: url.to_string(),
                what: format!(
                    "image is {width}x{height}: an allocation of {} bytes in its decode was over what \
                     was left of the {}-byte decode limit",
                    refused.bytes(),
                    limits.max_alloc
                ),
                setting: "decode.max_alloc_bytes",
            };
        }
        cause = error.source();
    }
    formats::decode_error(url, "JPEG XL")(failure.to_string())
}

/// The largest ICC profile read, encoded or decoded: profiles of cameras,
/// screens and printers are kilobytes to a few megabytes.
const MAX_ICC_BYTES: u64 = 16 * 1024 * 1024;

/// The image `bytes` hold, its frames read (not yet decoded), on this
/// thread, jxl-oxide's allocations bounded by `budget`.
fn read(bytes: &[u8], budget: u64) -> Result<JxlImage, Failure> {
    let mut image = read_start(bytes, budget)?;
    image.finalize()?;
    if image.num_loaded_keyframes() == 0 {
        return Err("the file ends before its first frame".into());
    }
    Ok(image)
}

/// [`read`] of bytes that may be only the start of the file (a fetch
/// stops once a frame's LF is read, [`watch`]): as much as they hold.
fn read_start(bytes: &[u8], budget: u64) -> Result<JxlImage, Failure> {
    let budget = usize::try_from(budget).unwrap_or(usize::MAX);
    let mut uninit = JxlImage::builder()
        .pool(JxlThreadPool::none())
        .alloc_tracker(AllocTracker::with_limit(budget))
        .build_uninit();
    let consumed = uninit.feed_bytes(bytes)?;
    let mut image = match uninit.try_init()? {
        InitializeResult::Initialized(image) => image,
        InitializeResult::NeedMoreData(_) => return Err("the file ends inside its header".into()),
    };
    let mut at = consumed;
    while at < bytes.len() {
        let more = image.feed_bytes(&bytes[at..])?;
        if more == 0 {
            break;
        }
        at += more;
    }
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::formats;
    use crate::decode::route::tests::LIMITS;
    use crate::decode::watch::tests::fetched;

    /// The fixture's picture 9 at 300x200, by libjxl's `cjxl -d 1 -e 3`.
    const LOSSY: &[u8] = include_bytes!("../../../tests/data/picture-9-300x200.jxl");
    /// Picture 10 at 120x80, by `cjxl -d 0 -e 2` (lossless, modular).
    const LOSSLESS: &[u8] = include_bytes!("../../../tests/data/picture-10-120x80-lossless.jxl");

    /// Picture 9 at 1200x800 by `cjxl -d 1 -e 3`: its LF is 150x100.
    const LARGE: &[u8] = include_bytes!("../../../tests/data/picture-9-1200x800.jxl");
    /// The fixture server's 4:2:0 JPEG of the same, by cjxl's lossless
    /// JPEG transcode: YCbCr, its chroma halved each way.
    const FROM_JPEG: &[u8] = include_bytes!("../../../tests/data/picture-9-1200x800-from-jpeg.jxl");
    /// The same turned a quarter anticlockwise and stored so, with
    /// orientation 6 (by `cjxl -j 0 -d 1 -e 3` from a JPEG saying so):
    /// 1200x800 upright.
    const TURNED: &[u8] = include_bytes!("../../../tests/data/picture-9-1200x800-turned.jxl");

    /// `LARGE` with lines of text drawn over its top, by `cjxl -d 1 -e 7`,
    /// which draws the letters as patches from an earlier frame.
    const PATCHES: &[u8] = include_bytes!("../../../tests/data/picture-9-1200x800-patches.jxl");

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
        assert!(
            formats::accept_header()
                .split(',')
                .any(|t| t == "image/jxl")
        );
        let small = decoded(LOSSY, 64, LIMITS).unwrap();
        assert_eq!(
            (small.width, small.height, small.source_size),
            (64, 43, (300, 200))
        );
        assert_eq!(picture_of(&decoded(LOSSY, 150, LIMITS).unwrap()), Some(9));
        // Never scaled up.
        let whole = decoded(LOSSLESS, 256, LIMITS).unwrap();
        assert_eq!((whole.width, whole.height), (120, 80));
        assert_eq!(picture_of(&whole), Some(10));
    }

    /// PSNR of two thumbnails of one size, over their RGB.
    fn psnr(ours: &Thumbnail, theirs: &Thumbnail) -> f64 {
        let (sum, count) = ours
            .pixels
            .chunks_exact(4)
            .zip(theirs.pixels.chunks_exact(4))
            .flat_map(|(a, b)| (0..3).map(move |c| (f64::from(a[c]) - f64::from(b[c])).powi(2)))
            .fold((0.0, 0.0), |(sum, count), error| (sum + error, count + 1.0));
        10.0 * (255.0f64.powi(2) / (sum / count).max(1e-9)).log10()
    }

    #[test]
    fn a_large_frame_is_read_from_its_lf_and_agrees_with_the_whole_render() {
        let url: Arc<str> = "file:///a.jxl".into();
        for (name, bytes) in [("XYB", LARGE), ("a JPEG's", FROM_JPEG), ("turned", TURNED)] {
            let plan = plan(bytes, &LIMITS).unwrap();
            let asked = TargetSize::square(128);
            let from_lf = from_lf(&url, bytes, asked, &LIMITS, &plan)
                .unwrap()
                .expect(name);
            let whole = whole(&url, bytes, asked, &LIMITS, &plan).unwrap();
            assert_eq!(
                (from_lf.width, from_lf.height, from_lf.source_size),
                (128, 85, (1200, 800)),
                "{name}"
            );
            assert_eq!((whole.width, whole.height), (128, 85), "{name}");
            // Upright: the picture's id reads only the right way up.
            assert_eq!(picture_of(&from_lf), Some(9), "{name}");
            let db = psnr(&from_lf, &whole);
            assert!(db >= 30.0, "{name}: {db:.1} dB");
        }
    }

    #[test]
    fn the_lf_is_read_only_where_it_covers_the_thumbnail_and_the_frame_has_one() {
        let url: Arc<str> = "file:///a.jxl".into();
        let lf = |bytes: &[u8], side| {
            from_lf(
                &url,
                bytes,
                TargetSize::square(side),
                &LIMITS,
                &plan(bytes, &LIMITS).unwrap(),
            )
            .unwrap()
        };
        // The LF is 150x100: it covers a thumbnail of 150x100, not 151x101.
        assert!(
            lf(LARGE, 150)
                .is_some_and(|thumbnail| (thumbnail.width, thumbnail.height) == (150, 100))
        );
        assert!(lf(LARGE, 151).is_none());
        assert!(lf(TURNED, 151).is_none());
        // A lossless (modular) frame has no LF, and patches are drawn
        // only by the whole render: each is rendered whole.
        assert!(lf(LOSSLESS, 8).is_none());
        assert!(lf(PATCHES, 128).is_none());
        assert_eq!(picture_of(&decoded(PATCHES, 128, LIMITS).unwrap()), Some(9));
        assert_eq!(
            picture_of(&decoded(LOSSLESS, 100, LIMITS).unwrap()),
            Some(10)
        );
        // Room for the LF, not for the whole render's planes: a thumbnail
        // its LF covers is made, a larger one refused.
        let mut tight = LIMITS;
        tight.max_alloc = 2 * 1024 * 1024;
        assert_eq!(picture_of(&decoded(LARGE, 128, tight).unwrap()), Some(9));
        assert!(matches!(
            decoded(LARGE, 400, tight),
            Err(Error::TooLarge { .. })
        ));
    }

    /// How many of `bytes` hold the first frame's LF: the shortest start
    /// of them that does.
    fn lf_end(bytes: &[u8]) -> usize {
        let holds_lf = |end: usize| {
            read_start(&bytes[..end], LIMITS.max_alloc)
                .ok()
                .and_then(|image| image.frame_by_keyframe(0).map(|frame| lf::loaded(frame)))
                == Some(true)
        };
        (0..=bytes.len())
            .collect::<Vec<_>>()
            .partition_point(|&end| !holds_lf(end))
    }

    #[test]
    fn a_fetch_stops_once_the_lf_that_makes_the_thumbnail_is_read() {
        let url: Arc<str> = "file:///a.jxl".into();
        for (name, bytes) in [("XYB", LARGE), ("a JPEG's", FROM_JPEG), ("turned", TURNED)] {
            let end = lf_end(bytes);
            assert!(
                end < bytes.len(),
                "{name}: the LF ends at {end} of {}",
                bytes.len()
            );
            // However the body arrives, each part is given to jxl-oxide once.
            let body = fetched(bytes, TargetSize::square(128), 512);
            assert!(
                !body.complete && (end..end + 16 * 1024).contains(&body.len()),
                "{name}: {}",
                body.len()
            );
            let in_pieces = fetched(bytes, TargetSize::square(128), 7);
            assert_eq!(
                (in_pieces.complete, in_pieces.len() >= end),
                (false, true),
                "{name}"
            );
            // The thumbnail of the start read is the whole file's.
            let from_start =
                crate::decode::route::decode_body(&url, &body, TargetSize::square(128), LIMITS)
                    .unwrap();
            let from_whole = decoded(bytes, 128, LIMITS).unwrap();
            assert!(from_start.pixels == from_whole.pixels, "{name}");
            assert_eq!(from_start.source_size, from_whole.source_size, "{name}");
        }
        // A thumbnail the LF does not cover, a frame without one, or one
        // with patches drawn over it: all of the file.
        assert!(fetched(LARGE, TargetSize::square(400), 512).complete);
        assert!(fetched(LOSSLESS, TargetSize::square(8), 64).complete);
        assert!(fetched(PATCHES, TargetSize::square(128), 512).complete);
    }

    #[test]
    fn a_render_the_tracker_stops_is_too_large_naming_the_limit() {
        // Room for all reckoned before the render (the colour planes, and
        // what is held outside the tracker), none for its other buffers:
        // jxl-oxide's tracker stops it, which is the limit's refusal.
        let asked = TargetSize::square(400);
        let held = resize::working_bytes((1200, 800), Fitting::new(1200, 800, asked).size);
        let area = 1200 * 800;
        let mut tight = LIMITS;
        tight.max_alloc = area * 3 + held + LARGE.len() as u64 + area * 12;
        let error = decoded(LARGE, 400, tight).unwrap_err();
        assert!(
            matches!(
                &error,
                Error::TooLarge {
                    setting: "decode.max_alloc_bytes",
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            error.to_string().contains("was over what was left"),
            "{error}"
        );
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

    /// The header of an 8x8 JPEG XL codestream, bit by bit (least
    /// significant first), whose ICC profile is `encoded` bytes long; the
    /// profile itself is not there.
    fn declaring_an_icc_profile_of(encoded: u64) -> Vec<u8> {
        let mut bytes = vec![0xFF, 0x0A];
        let mut used = 0;
        let mut put = |value: u64, bits: u32| {
            for bit in 0..bits {
                if used % 8 == 0 {
                    bytes.push(0);
                }
                *bytes.last_mut().unwrap() |= (((value >> bit) & 1) as u8) << (used % 8);
                used += 1;
            }
        };
        // Size: 8 high (div8, 1 + 0), as wide (ratio 1).
        put(1, 1);
        put(0, 5);
        put(1, 3);
        // Metadata: not all default, no extra fields, 8-bit integer
        // samples, 16-bit buffers, no extra channels, XYB.
        put(0, 1);
        put(0, 1);
        put(0, 1);
        put(0, 2);
        put(1, 1);
        put(0, 2);
        put(1, 1);
        // Colour: not default, an ICC profile of an RGB space.
        put(0, 1);
        put(1, 1);
        put(0, 2);
        // No extensions; the default matrix.
        put(0, 2);
        put(1, 1);
        // The profile's encoded size as a U64: 12 bits, then 8 at a time.
        put(3, 2);
        put(encoded & 0xFFF, 12);
        let mut rest = encoded >> 12;
        while rest > 0 {
            put(1, 1);
            put(rest & 0xFF, 8);
            rest >>= 8;
        }
        put(0, 1);
        bytes
    }

    #[test]
    fn an_icc_profile_is_sized_before_jxl_oxide_allocates_it() {
        // The header is read as written: a small profile is then read,
        // and found missing.
        let small = plan(&declaring_an_icc_profile_of(4096), &LIMITS)
            .err()
            .unwrap_or_default();
        assert!(!small.contains("over"), "{small}");
        // One past the bound is refused before jxl-oxide reads the file
        // (it would allocate the declared size, untracked).
        let large = declaring_an_icc_profile_of(MAX_ICC_BYTES + 1);
        let refused = plan(&large, &LIMITS).err().unwrap_or_default();
        assert!(
            refused.contains(&format!("{} bytes encoded, over", MAX_ICC_BYTES + 1)),
            "{refused}"
        );
        let error = decoded(&large, 64, LIMITS).unwrap_err();
        assert!(
            matches!(error, Error::Decode { .. }) && error.to_string().contains("ICC"),
            "{error}"
        );
        // A file without one: its size, and nothing reckoned for a profile.
        let plain = plan(LOSSY, &LIMITS).unwrap();
        assert_eq!(
            (plain.size, plain.icc_bytes, plain.bytes_per_pixel),
            ((300, 200), 0, 3)
        );
    }

    #[test]
    fn past_the_limits_or_damaged_is_an_error_never_a_panic() {
        let mut small = LIMITS;
        small.max_dimension = 200;
        assert!(matches!(
            decoded(LOSSY, 64, small),
            Err(Error::TooLarge { .. })
        ));
        let mut tight = LIMITS;
        tight.max_alloc = 64 * 1024;
        assert!(matches!(
            decoded(LOSSY, 64, tight),
            Err(Error::TooLarge { .. })
        ));
        // Room for the pixels and all held outside the tracker, but not for
        // the render's colour planes: refused before jxl-oxide runs.
        tight.max_alloc = 300 * 200 * 3 * 4;
        assert!(matches!(
            decoded(LOSSY, 64, tight),
            Err(Error::TooLarge { .. })
        ));
        // Cut or damaged, read whole or from the LF (each JPEG XL here
        // at 128 px): an error, or a thumbnail, never a panic. Cut after
        // its LF, a frame read from its LF is shown, as a JPEG cut after
        // its DC scans is.
        for bytes in [LOSSY, LARGE, FROM_JPEG] {
            let shown_from = if bytes == LOSSY {
                bytes.len()
            } else {
                lf_end(bytes)
            };
            // About 80 places in each.
            let step = bytes.len() / 80;
            for cut in (0..bytes.len()).step_by(step) {
                let cut_short = decoded(&bytes[..cut], 128, LIMITS);
                if cut < shown_from {
                    assert!(cut_short.is_err(), "{cut}");
                } else {
                    assert_eq!(picture_of(&cut_short.unwrap()), Some(9), "{cut}");
                }
            }
            let mut flipped = bytes.to_vec();
            for at in (2..flipped.len()).step_by(step) {
                flipped[at] ^= 0x5A;
                let _ = decoded(&flipped, 128, LIMITS);
            }
        }
    }
}
