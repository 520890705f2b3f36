//! Route: one image, from its bytes to its thumbnail. The header is read
//! (size, EXIF orientation), the format checked against this build's, a
//! JPEG's embedded thumbnail taken in its place where it serves
//! (`exif.rs`), what the decode would allocate counted against the limits,
//! then the route taken: libjpeg at a DCT scale (`jpeg.rs`, `libjpeg.rs`)
//! or `image`'s full decode with each format's fixes (`gif.rs`, `png.rs`,
//! `ico.rs`, `tiff.rs`), the resize to the target (`resize.rs`; a cover
//! crop is part of it) and the EXIF turn (`upright.rs`).
//!
//! Runs on the thread that calls it (a decode thread, or the caller's for
//! [`thumbnail_from_bytes`](super::thumbnail_from_bytes)); keeps nothing.

use std::io::Cursor;
use std::sync::Arc;

use image::metadata::Orientation;
use image::{ColorType, ImageDecoder as _, ImageFormat, ImageReader, Limits};

#[cfg(feature = "ico")]
use super::ico;
#[cfg(feature = "svg")]
use super::svg;
#[cfg(feature = "tiff")]
use super::tiff;
use super::upright::{fit, orientation_of, quarter_turn, swapped};
use super::{DecodeLimits, SUPPORTED_FORMATS, animation, formats, gif, jpeg, png, resize, webp};
use crate::request::TargetSize;
use crate::thumbnail::Fitting;
use crate::{Animation, Error, Thumbnail};

/// Decodes `bytes` (in a format [`ImageDecoder`] lists) and scales the
/// image down to `target` (fitted inside it, cropped to cover it, or at
/// its own size scaled within it), never scaling up.
///
/// Refuses images that declare more than the limits before allocating for
/// them. A decoder panic is the caller's to catch ([`catch_panic`]).
pub(crate) fn decode_thumbnail(
    url: &Arc<str>,
    bytes: &[u8],
    target: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    decode(url, bytes, target, limits, None, Extent::Whole)
}

/// [`decode_thumbnail`] of the first bytes of a JPEG, which hold its
/// headers and an embedded thumbnail that serves `target` (the fetch read
/// up to there: `jpeg/exif.rs`). If that thumbnail does not
/// decode, the error says the photo was cut short; the rest of the photo
/// is never decoded as if it were all there.
pub(crate) fn decode_thumbnail_from_prefix(
    url: &Arc<str>,
    bytes: &[u8],
    target: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    decode(url, bytes, target, limits, None, Extent::Start)
}

/// Whether a body is all of its file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extent {
    Whole,
    /// Its start, up to a JPEG's embedded thumbnail or its DC scans.
    Start,
}

/// What a photo says of the thumbnail embedded in it, which is decoded in
/// its place: how to turn it, and the photo's size.
struct Photo {
    orientation: Orientation,
    /// The photo's size, upright.
    size: (u32, u32),
}

/// [`decode_thumbnail`] of `bytes`, or of the thumbnail embedded in
/// `photo` when `bytes` are it.
fn decode(
    url: &Arc<str>,
    bytes: &[u8],
    target: TargetSize,
    limits: DecodeLimits,
    photo: Option<&Photo>,
    extent: Extent,
) -> Result<Thumbnail, Error> {
    let asked = target;
    let decode_error = |reason: String| Error::Decode {
        url: url.to_string(),
        reason,
    };
    // An icon: the entry of the size that best fits the target.
    #[cfg(feature = "ico")]
    let best_icon = ico::best_entry(bytes, target);
    #[cfg(feature = "ico")]
    let (bytes, icon_size) = match &best_icon {
        Some(best) => (best.icon.as_slice(), Some(best.largest)),
        None => (bytes, None),
    };
    #[cfg(not(feature = "ico"))]
    let icon_size = None;
    let Some(format) = formats::guess(bytes) else {
        // Markup, not magic bytes: a vector image, drawn at the target's
        // size.
        #[cfg(feature = "svg")]
        if svg::looks_like_svg(bytes) {
            return svg::rasterise(url, bytes, target, limits);
        }
        return Err(decode_error(not_an_image(bytes)));
    };
    if formats::supported(format).is_none() {
        return Err(decode_error(format!(
            "the image is {format:?}, which this build does not decode (it decodes {}; BMP, \
             ICO, TIFF and SVG need thumbpipe's cargo features of those names)",
            SUPPORTED_FORMATS.join(", ")
        )));
    }
    // TIFF's decoder buffers, or its refusal of a layout it panics on.
    #[cfg(feature = "tiff")]
    let tiff_decoder_bytes = match format {
        ImageFormat::Tiff => tiff::inspect(bytes).map_err(decode_error)?,
        _ => 0,
    };
    #[cfg(not(feature = "tiff"))]
    let tiff_decoder_bytes = 0;
    let reader = || ImageReader::with_format(Cursor::new(bytes), format);
    let probe = reader();
    let (width, height, orientation, full_decode_bytes) = match probe.into_decoder() {
        Ok(mut header) => {
            let (width, height) = header.dimensions();
            if width == 0 || height == 0 {
                return Err(decode_error(format!(
                    "the {format:?} header says the image is {width}x{height} pixels"
                )));
            }
            // How the camera held the picture (EXIF, where the format has
            // it); an unreadable tag is no reason to refuse the image, and
            // a WebP whose chunks claim more than the file holds is not
            // asked (its decoder would allocate what the EXIF chunk claims).
            let orientation = if let Some(photo) = photo {
                photo.orientation
            } else if format == ImageFormat::WebP && !webp::chunks_fit(bytes) {
                Orientation::NoTransforms
            } else {
                orientation_of(&mut header, format)
            };
            // What a full decode allocates: the decoder's output in its own
            // layout (16 bits a sample for a 16-bit PNG), and an 8-bit RGBA
            // copy of it when that layout is not one the resize takes.
            let full_decode_bytes =
                header
                    .total_bytes()
                    .saturating_add(match header.color_type() {
                        ColorType::L8 | ColorType::La8 | ColorType::Rgb8 | ColorType::Rgba8 => 0,
                        _ => full_rgba(width, height),
                    });
            (width, height, orientation, full_decode_bytes)
        }
        // The pure-Rust header reader refuses some JPEGs that libjpeg (and
        // browsers) decode, such as one whose APP14 segment is shorter
        // than its kind (Pillow's `truncated_app14.jpg`): with libjpeg's
        // route, the frame header says the size.
        Err(error) => match (format == ImageFormat::Jpeg && limits.jpeg_dct_scaling)
            .then(|| jpeg::frame_size(bytes))
            .flatten()
        {
            Some((width, height, orientation)) => (width, height, orientation, 0),
            None => {
                return Err(decode_error(format!(
                    "unreadable {format:?} header: {error}"
                )));
            }
        },
    };
    // The upright image fits the target, so a photo turned a quarter is
    // fitted (and scaled) with the target's sides swapped, then turned:
    // the thumbnail is turned, never the full image.
    let quarter_turn = quarter_turn(orientation);
    let target = if quarter_turn {
        swapped(target)
    } else {
        target
    };
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
    let upright = if quarter_turn {
        (height, width)
    } else {
        (width, height)
    };
    // A camera's own small rendering of the photo (EXIF), when the
    // thumbnail comes out the same from it: a fraction of the work. One
    // that does not decode is no reason to fail the photo.
    let embedded = (format == ImageFormat::Jpeg && limits.embedded_thumbnails && photo.is_none())
        .then(|| jpeg::embedded_covering(bytes, (width, height), target))
        .flatten();
    let failed = match embedded {
        Some(embedded) => {
            let photo = Photo {
                orientation,
                size: upright,
            };
            match decode(
                url,
                embedded.jpeg,
                asked,
                limits,
                Some(&photo),
                Extent::Whole,
            ) {
                Ok(thumbnail) => return Ok(thumbnail),
                Err(error) => Some(error),
            }
        }
        None => None,
    };
    // The size comes from the original dimensions: a DCT-scaled image is
    // only a step on the way.
    let fitting = Fitting::new(width, height, target);
    let (thumb_width, thumb_height) = fitting.size;
    let resize_bytes = |decoded_width: u32, decoded_height: u32| {
        resize::working_bytes((decoded_width, decoded_height), fitting.size)
    };
    let source_size = match (photo, icon_size) {
        (Some(photo), _) => photo.size,
        (None, Some(size)) => size,
        (None, None) => upright,
    };
    let finished = |rgba: image::RgbaImage| {
        let (width, height) = rgba.dimensions();
        Thumbnail {
            url: Arc::clone(url),
            width,
            height,
            pixels: Arc::from(rgba.into_raw()),
            source_size,
            animation: None,
        }
    };
    // What the route allocates: the decoded pixels and the decoder's own
    // buffers, which for a progressive JPEG outweigh the pixels. A JPEG is
    // decoded at the smallest DCT scale that covers the thumbnail (4:4:4
    // or 4:2:0; CMYK takes the full decode).
    let jpeg_layout = match format {
        ImageFormat::Jpeg => Some(jpeg::JpegLayout::read(bytes)),
        _ => None,
    };
    if let Some(layout) = &jpeg_layout {
        layout.check(width, height).map_err(decode_error)?;
    }
    // A progressive JPEG bound for 1/8 of its size or less: its DC scans
    // alone, when they hold every block's DC.
    if let Some(layout) = &jpeg_layout
        && limits.progressive_dc
        && layout.progressive
        && jpeg::dc_scans_cover(width, height, target)
    {
        let (dc_width, dc_height) = (jpeg::scaled_side(width, 1), jpeg::scaled_side(height, 1));
        let needed = (u64::from(dc_width) * u64::from(dc_height) * 3)
            .saturating_add(resize_bytes(dc_width, dc_height))
            .saturating_add(layout.dc_decoder_bytes());
        if needed <= limits.max_alloc
            && let Some(pixels) = jpeg::decode_dc(bytes)
        {
            let rgba = fit(pixels, &fitting, (width, height), Some(1), orientation)
                .map_err(decode_error)?;
            return Ok(finished(rgba));
        }
    }
    if extent == Extent::Start {
        return Err(decode_error(match failed {
            Some(error) => format!(
                "only the photo's start was read, up to its embedded thumbnail, which did \
                 not decode: {error}"
            ),
            None => "only the photo's start was read, and neither an embedded thumbnail nor \
                     its DC scans make this size"
                .into(),
        }));
    }
    // CMYK and YCCK (four components) take the full decode.
    let jpeg_eighths = jpeg_layout
        .as_ref()
        .filter(|layout| limits.jpeg_dct_scaling && layout.sampling.len() != 4)
        .map(|_| {
            let (want_width, want_height) = fitting.scaled_whole(width, height);
            jpeg::scale_eighths(width, height, want_width, want_height)
        });
    let (decoded_width, decoded_height, decoded_bytes, decoder_bytes) =
        match (&jpeg_layout, jpeg_eighths) {
            (Some(layout), Some(eighths)) => {
                let (w, h) = (
                    jpeg::scaled_side(width, eighths),
                    jpeg::scaled_side(height, eighths),
                );
                let rgb = u64::from(w) * u64::from(h) * 3;
                (w, h, rgb, layout.scaled_decoder_bytes(eighths))
            }
            (Some(layout), None) => (
                width,
                height,
                full_rgba(width, height),
                layout.decoder_bytes(),
            ),
            (None, _) if format == ImageFormat::WebP => (
                width,
                height,
                full_rgba(width, height),
                webp::decoder_bytes(bytes, width, height),
            ),
            (None, _) if format == ImageFormat::Gif => {
                (width, height, full_decode_bytes, gif::decoder_bytes(bytes))
            }
            (None, _) if format == ImageFormat::Tiff => {
                (width, height, full_decode_bytes, tiff_decoder_bytes)
            }
            (None, _) if format == ImageFormat::Png => {
                (width, height, full_decode_bytes, png::DECODER_BYTES)
            }
            (None, _) => (width, height, full_decode_bytes, 0),
        };
    let decoded_bytes = decoded_bytes.saturating_add(resize_bytes(decoded_width, decoded_height));
    let needed = decoded_bytes.saturating_add(decoder_bytes);
    if needed > limits.max_alloc {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {width}x{height}: decoding it takes {needed} bytes ({decoded_bytes} of \
                 pixels, {decoder_bytes} of decoder buffers), over the {}-byte decode limit",
                limits.max_alloc
            ),
            setting: "decode.max_alloc_bytes",
        });
    }
    let mut image_limits = Limits::default();
    image_limits.max_image_width = Some(limits.max_dimension);
    image_limits.max_image_height = Some(limits.max_dimension);
    image_limits.max_alloc = Some(limits.max_alloc);
    let fit_frame = |pixels| fit(pixels, &fitting, (width, height), jpeg_eighths, orientation);
    // Every frame of an animation, when animations are played and its
    // canvases and frames fit in the decode limit too.
    if let Some(animation) = limits.animation
        && needed
            .saturating_add(animation::canvas_bytes(width, height))
            .saturating_add(animation.max_bytes)
            <= limits.max_alloc
        && let Some(frames) = animation::frames(
            bytes,
            format,
            (width, height),
            u64::from(thumb_width) * u64::from(thumb_height) * 4,
            animation,
            // The frames kept are outside the decoder's count.
            {
                let mut frame_limits = image_limits.clone();
                frame_limits.max_alloc = Some(limits.max_alloc.saturating_sub(animation.max_bytes));
                frame_limits
            },
            fit_frame,
        )
    {
        let (width, height) = if quarter_turn {
            (thumb_height, thumb_width)
        } else {
            (thumb_width, thumb_height)
        };
        return Ok(Thumbnail {
            url: Arc::clone(url),
            width,
            height,
            pixels: Arc::clone(&frames[0].pixels),
            source_size,
            animation: Animation::new(frames).map(Arc::new),
        });
    }
    #[cfg(feature = "libjpeg")]
    let scaled = match jpeg_eighths {
        Some(eighths) => {
            jpeg::decode_scaled(bytes, eighths).map_err(|e| decode_error(format!("JPEG: {e}")))?
        }
        None => None,
    };
    // Without libjpeg, `jpeg_dct_scaling` is off: no JPEG is scaled.
    #[cfg(not(feature = "libjpeg"))]
    let scaled = None;
    let pixels = match scaled {
        Some(pixels) => pixels,
        None => {
            let mut reader = reader();
            reader.limits(image_limits.clone());
            let mut image = match reader.decode() {
                Ok(image) => image,
                // A GIF with no colour table, which `image` refuses.
                Err(error) => match (format == ImageFormat::Gif)
                    .then(|| gif::without_colour_table(bytes, image_limits))
                    .flatten()
                {
                    Some(image) => image,
                    None => return Err(decode_error(format!("{format:?}: {error}"))),
                },
            };
            if format == ImageFormat::Png {
                png::restore_grey_key(bytes, &mut image);
            }
            resize::Pixels::from_image(image)
        }
    };
    let rgba = fit_frame(pixels).map_err(decode_error)?;
    Ok(finished(rgba))
}

/// Bytes of a `width` x `height` RGBA image.
fn full_rgba(width: u32, height: u32) -> u64 {
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::decode) const LIMITS: DecodeLimits = DecodeLimits {
        max_dimension: 16_384,
        max_alloc: 256 * 1024 * 1024,
        jpeg_dct_scaling: true,
        embedded_thumbnails: true,
        progressive_dc: true,
        svg_max_elements: 20_000,
        animation: None,
    };

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbaImage::from_pixel(width, height, image::Rgba([10, 20, 30, 255]));
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    /// A `width` x `height` JPEG, red on its left half and blue on its
    /// right, tagged with EXIF orientation `tag` (1-8).
    fn jpeg_tagged(width: u32, height: u32, tag: u16) -> Vec<u8> {
        let image = image::RgbImage::from_fn(width, height, |x, _| {
            if x < width / 2 {
                image::Rgb([230, 20, 20])
            } else {
                image::Rgb([20, 20, 230])
            }
        });
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
        fixture_server::photo::with_exif_orientation(&out.into_inner(), tag)
    }

    /// Whether the pixel at (`x`, `y`) is mostly red (else blue).
    fn red_at(thumbnail: &Thumbnail, x: u32, y: u32) -> bool {
        let i = ((y * thumbnail.width + x) * 4) as usize;
        thumbnail.pixels[i] > thumbnail.pixels[i + 2]
    }

    #[test]
    fn a_photo_tagged_with_an_orientation_comes_out_upright() {
        let url: Arc<str> = Arc::from("http://x/photo.jpg");
        let thumbnail = |width, height, tag, target| {
            decode_thumbnail(&url, &jpeg_tagged(width, height, tag), target, LIMITS).unwrap()
        };
        let square = TargetSize::square(64);
        // Small (the plain path) and large (the DCT-scaled path).
        for (width, height) in [(80, 40), (1600, 800)] {
            // 6: turned 90 degrees clockwise to be upright. The left (red)
            // half comes on top; the sides swap.
            let turned = thumbnail(width, height, 6, square);
            assert_eq!((turned.width, turned.height), (32, 64), "{width}x{height}");
            assert_eq!(turned.source_size, (height, width));
            assert!(
                red_at(&turned, 16, 8) && !red_at(&turned, 16, 56),
                "{width}x{height}"
            );
            // 3: upside down. The red half goes right.
            let flipped = thumbnail(width, height, 3, square);
            assert_eq!((flipped.width, flipped.height), (64, 32));
            assert!(!red_at(&flipped, 8, 16) && red_at(&flipped, 56, 16));
            // 1: as stored.
            let plain = thumbnail(width, height, 1, square);
            assert_eq!((plain.width, plain.height), (64, 32));
            assert!(red_at(&plain, 8, 16) && !red_at(&plain, 56, 16));
            assert_eq!(plain.source_size, (width, height));
            // At its own size: every pixel, upright.
            let own = thumbnail(width, height, 6, TargetSize::original(100, 16_384));
            assert_eq!((own.width, own.height), (height, width));
        }
        // A quarter turn fits the upright image in a wide target.
        let wide = thumbnail(80, 40, 8, TargetSize::new(128, 32));
        assert_eq!((wide.width, wide.height), (16, 32));
    }

    /// A `width` x `height` image in three upright bands: red on the
    /// left quarter, green in the middle half, blue on the right quarter.
    fn bands(width: u32, height: u32) -> image::RgbImage {
        image::RgbImage::from_fn(width, height, |x, _| match x * 4 / width {
            0 => image::Rgb([230, 20, 20]),
            3 => image::Rgb([20, 20, 230]),
            _ => image::Rgb([20, 230, 20]),
        })
    }

    #[test]
    fn a_cover_keeps_the_centre_on_every_route() {
        let url: Arc<str> = Arc::from("http://x/bands");
        let pure_rust = DecodeLimits {
            jpeg_dct_scaling: false,
            ..LIMITS
        };
        let mut png = Cursor::new(Vec::new());
        bands(1600, 800)
            .write_to(&mut png, ImageFormat::Png)
            .unwrap();
        let mut jpeg = Cursor::new(Vec::new());
        bands(1600, 800)
            .write_to(&mut jpeg, ImageFormat::Jpeg)
            .unwrap();
        let routes = [
            ("PNG", png.get_ref(), LIMITS),
            ("JPEG, DCT-scaled", jpeg.get_ref(), LIMITS),
            ("JPEG, full decode", jpeg.get_ref(), pure_rust),
        ];
        for (route, bytes, limits) in routes {
            let cover = decode_thumbnail(&url, bytes, TargetSize::cover(64, 64), limits).unwrap();
            assert_eq!((cover.width, cover.height), (64, 64), "{route}");
            // The middle 800x800 is the green band, edge to edge.
            for x in [1, 32, 62] {
                let i = (32 * 64 + x) * 4;
                let pixel = &cover.pixels[i..i + 3];
                assert!(
                    pixel[1] > 180 && pixel[0] < 70 && pixel[2] < 70,
                    "{route} x {x}: {pixel:?}"
                );
            }
            // Fitted inside, the red and blue bands are there.
            let inside = decode_thumbnail(&url, bytes, TargetSize::square(64), limits).unwrap();
            assert_eq!((inside.width, inside.height), (64, 32), "{route}");
            assert!(inside.pixels[16 * 64 * 4 + 4] > 180, "{route}");
        }
        // Turned a quarter by EXIF (the bands run across, upright): the
        // cover is of the upright image, in the box as given.
        let turned = fixture_server::photo::with_exif_orientation(jpeg.get_ref(), 6);
        let cover = decode_thumbnail(&url, &turned, TargetSize::cover(32, 64), LIMITS).unwrap();
        assert_eq!((cover.width, cover.height), (32, 64));
    }

    /// Regression: the crop in the decoded image's pixels is a product of
    /// floats, which for an 1819x868 JPEG decoded at 1/8 (228x109) came to
    /// 109.00000000000001 rows, past the image: the resize refused it.
    /// And a quarter-turned photo lost its cover when its box was turned.
    #[test]
    fn crops_stay_inside_the_decoded_image_and_a_turned_cover_stays_a_cover() {
        let url: Arc<str> = Arc::from("http://x/a.jpg");
        let mut jpeg = Cursor::new(Vec::new());
        bands(1819, 868)
            .write_to(&mut jpeg, ImageFormat::Jpeg)
            .unwrap();
        for target in [TargetSize::square(192), TargetSize::cover(192, 100)] {
            let thumbnail = decode_thumbnail(&url, jpeg.get_ref(), target, LIMITS).unwrap();
            assert!(
                thumbnail.width <= 192 && thumbnail.height <= 192,
                "{target:?}"
            );
        }
        let turned = fixture_server::photo::with_exif_orientation(jpeg.get_ref(), 6);
        let cover = decode_thumbnail(&url, &turned, TargetSize::cover(128, 128), LIMITS).unwrap();
        assert_eq!((cover.width, cover.height), (128, 128));
    }

    /// A JPEG whose side is not a whole number of the DCT scale's blocks:
    /// libjpeg's last row at 1/4 holds the image's last rows and the
    /// block's padding. Placed as the first rows are, the scaled route
    /// draws the picture where the full decode does.
    #[test]
    fn a_scaled_decode_of_a_side_between_blocks_keeps_the_picture_in_place() {
        // 320x213, horizontal bands 16 rows high.
        let image = image::RgbImage::from_fn(320, 213, |_, y| {
            if (y / 16) % 2 == 0 {
                image::Rgb([240, 240, 240])
            } else {
                image::Rgb([15, 15, 15])
            }
        });
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
        let jpeg = out.into_inner();
        let url: Arc<str> = "bands.jpg".into();
        let scaled = decode_thumbnail(&url, &jpeg, TargetSize::square(64), LIMITS).unwrap();
        let full_limits = DecodeLimits {
            jpeg_dct_scaling: false,
            ..LIMITS
        };
        let full = decode_thumbnail(&url, &jpeg, TargetSize::square(64), full_limits).unwrap();
        assert_eq!((scaled.width, scaled.height), (64, 43));
        assert_eq!((full.width, full.height), (64, 43));
        let mean_difference = scaled
            .pixels
            .iter()
            .zip(full.pixels.iter())
            .map(|(a, b)| f64::from(a.abs_diff(*b)))
            .sum::<f64>()
            / scaled.pixels.len() as f64;
        assert!(mean_difference < 6.0, "{mean_difference:.1}");
    }

    #[test]
    fn decodes_and_downscales_to_rgba() {
        let url: Arc<str> = "http://x/a.png".into();
        let thumb = decode_thumbnail(&url, &png(300, 150), TargetSize::square(64), LIMITS).unwrap();
        assert_eq!((thumb.width, thumb.height), (64, 32));
        assert_eq!(thumb.pixels.len(), 64 * 32 * 4);
        assert_eq!(&thumb.pixels[..4], &[10, 20, 30, 255]);
    }

    #[test]
    fn oversized_declared_dimensions_are_refused_before_decoding() {
        let url: Arc<str> = "http://x/a.png".into();
        let small = DecodeLimits {
            max_dimension: 100,
            ..LIMITS
        };
        let error =
            decode_thumbnail(&url, &png(300, 10), TargetSize::square(64), small).unwrap_err();
        assert!(
            matches!(
                error,
                Error::TooLarge {
                    setting: "decode.max_dimension",
                    ..
                }
            ),
            "{error}"
        );
        let tight = DecodeLimits {
            max_alloc: 1000,
            ..LIMITS
        };
        let error =
            decode_thumbnail(&url, &png(300, 10), TargetSize::square(64), tight).unwrap_err();
        assert!(
            matches!(
                error,
                Error::TooLarge {
                    setting: "decode.max_alloc_bytes",
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn non_images_are_decode_errors_that_say_what_they_are() {
        let url: Arc<str> = "http://x/a.jpg".into();
        let html = b"<!doctype html><html><body>sign in</body></html>";
        let error = decode_thumbnail(&url, html, TargetSize::square(64), LIMITS).unwrap_err();
        assert!(error.to_string().contains("HTML page"), "{error}");
        let error = decode_thumbnail(&url, b"", TargetSize::square(64), LIMITS).unwrap_err();
        assert!(error.to_string().contains("empty"), "{error}");
        let truncated = &png(50, 50)[..60];
        assert!(matches!(
            decode_thumbnail(&url, truncated, TargetSize::square(64), LIMITS),
            Err(Error::Decode { .. })
        ));
    }
}
