//! Route: one image, from its bytes to its thumbnail, as a choice. The
//! header is read (`header.rs`); a JPEG's own shortcuts are tried first,
//! each reading only part of it and falling through when it does not
//! serve: the thumbnail a camera embedded (`jpeg/exif.rs`), then a
//! progressive photo's DC scans (`jpeg/dc_scans.rs`); otherwise the whole
//! image takes libjpeg at a DCT scale or `image`'s full decode
//! ([`choose`]), what that allocates counted against the limit before it
//! runs; an animation may take every frame (`animation.rs`). The resize to
//! the target (`resize.rs`; a cover crop is part of it) and the EXIF turn
//! (`fitting.rs`) end every route.
//!
//! Runs on the thread that calls it (a decode thread, or the caller's for
//! [`thumbnail_from_bytes`](super::thumbnail_from_bytes)); keeps nothing.

use std::sync::Arc;

use image::Limits;

use super::fitting::{Fitting, fit};
use super::header::{self, Image, Opened, Photo, full_rgba};
use super::jpeg::{self, JpegLayout, JpegWalk};
use super::resize::Pixels;
use super::{DecodeLimits, animation, resize};
use crate::body::Body;
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::{Animation, Thumbnail};

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
    decode(url, bytes, target, limits, None, Extent::Whole, None)
}

/// [`decode_thumbnail`] of a body, whole or cut short (see
/// [`decode_thumbnail_from_prefix`]), going on from the walk over its JPEG
/// markers its read began, if it did.
pub(crate) fn decode_body(
    url: &Arc<str>,
    body: &Body,
    target: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    let extent = if body.complete {
        Extent::Whole
    } else {
        Extent::Start
    };
    let walk = body.found::<JpegWalk>().cloned();
    decode(url, body, target, limits, None, extent, walk)
}

/// [`decode_thumbnail`] of a JPEG `preview` of a `photo` in another format
/// (a camera RAW's), turned as the photo is and reporting its size, going
/// on from `walk`, the walk over the preview's markers to its frame.
#[cfg_attr(not(feature = "raw"), allow(dead_code))]
pub(super) fn decode_preview(
    url: &Arc<str>,
    preview: &[u8],
    target: TargetSize,
    limits: DecodeLimits,
    photo: &Photo,
    walk: JpegWalk,
) -> Result<Thumbnail, Error> {
    decode(
        url,
        preview,
        target,
        limits,
        Some(photo),
        Extent::Whole,
        Some(walk),
    )
}

#[cfg(test)]
/// [`decode_thumbnail`] of the first bytes of a JPEG, which hold its
/// headers and an embedded thumbnail that serves `target`, or its DC scans
/// (the fetch read up to there: `jpeg/prefix.rs`). If neither makes the
/// thumbnail, the error says the photo was cut short; the rest of the photo
/// is never decoded as if it were all there.
pub(crate) fn decode_thumbnail_from_prefix(
    url: &Arc<str>,
    bytes: &[u8],
    target: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    decode(url, bytes, target, limits, None, Extent::Start, None)
}

/// Whether a body is all of its file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extent {
    Whole,
    /// Its start, up to a JPEG's embedded thumbnail or its DC scans.
    Start,
}

/// [`decode_thumbnail`] of `bytes`, or of the thumbnail embedded in
/// `photo` when `bytes` are it, going on from `walk` if their read began
/// one.
fn decode(
    url: &Arc<str>,
    bytes: &[u8],
    asked: TargetSize,
    limits: DecodeLimits,
    photo: Option<&Photo>,
    extent: Extent,
    walk: Option<JpegWalk>,
) -> Result<Thumbnail, Error> {
    let decode_error = |reason: String| Error::Decode {
        url: url.to_string(),
        reason,
    };
    let image = match header::open(url, bytes, asked, &limits, photo, walk)? {
        Opened::Own(decode) => return decode(url, bytes, asked, limits),
        Opened::Raster(image) => image,
    };
    let target = image.stored_target(asked);
    // A JPEG's shortcuts, each reading part of it: the embedded thumbnail
    // first, decoded on its own terms.
    let embedded_failed = match from_embedded(url, &image, asked, target, limits, photo) {
        Ok(Some(thumbnail)) => return Ok(thumbnail),
        Ok(None) => None,
        Err(error) => Some(error),
    };
    // What a JPEG's markers say, before any decoder reads past them.
    let layout = image.jpeg();
    if let Some(layout) = layout {
        layout
            .check(image.width, image.height)
            .map_err(decode_error)?;
    }
    // The size comes from the original dimensions: a DCT-scaled image is
    // only a step on the way.
    let fitting = Fitting::new(image.width, image.height, target);
    if let Some(layout) = layout
        && let Some(pixels) = from_dc_scans(&image, layout, &fitting, target, limits)
    {
        let rgba = fit(
            pixels,
            &fitting,
            (image.width, image.height),
            Some(1),
            image.orientation,
        )
        .map_err(decode_error)?;
        return Ok(image.thumbnail(url, rgba));
    }
    if extent == Extent::Start {
        return Err(decode_error(cut_short(embedded_failed)));
    }
    // The whole image.
    let route = choose(&image, layout, &fitting, limits);
    route.check(url, &image, limits)?;
    if let Some(thumbnail) = animated(url, &image, &route, &fitting, limits) {
        return Ok(thumbnail);
    }
    let pixels = run(&image, &route, &image_limits(limits)).map_err(decode_error)?;
    let rgba = fit(
        pixels,
        &fitting,
        (image.width, image.height),
        route.eighths,
        image.orientation,
    )
    .map_err(decode_error)?;
    Ok(image.thumbnail(url, rgba))
}

/// A camera's own small rendering of a JPEG photo (EXIF), decoded in its
/// place when the thumbnail comes out the same from it: `Ok(None)` when
/// there is none that serves, `Err` when it did not decode (which is no
/// reason to fail the photo).
fn from_embedded(
    url: &Arc<str>,
    image: &Image<'_>,
    asked: TargetSize,
    target: TargetSize,
    limits: DecodeLimits,
    photo: Option<&Photo>,
) -> Result<Option<Thumbnail>, Error> {
    if !limits.embedded_thumbnails || photo.is_some() {
        return Ok(None);
    }
    let Some(embedded) = image.jpeg().and_then(|layout| layout.thumbnail.as_ref()) else {
        return Ok(None);
    };
    let size = (image.width, image.height);
    let Some(bytes) = image.bytes.get(embedded.bytes.clone()) else {
        return Ok(None);
    };
    if !jpeg::embedded_covers(size, embedded, target) {
        return Ok(None);
    }
    let photo = Photo {
        orientation: image.orientation,
        size: image.upright(),
    };
    decode(
        url,
        bytes,
        asked,
        limits,
        Some(&photo),
        Extent::Whole,
        image
            .jpeg_walk
            .as_deref()
            .and_then(JpegWalk::thumbnail_walk),
    )
    .map(Some)
}

/// A progressive JPEG bound for 1/8 of its size or less, from its DC scans
/// alone, when they hold every block's DC and what they take is within
/// the limit: the image at 1/8.
fn from_dc_scans(
    image: &Image<'_>,
    layout: &JpegLayout,
    fitting: &Fitting,
    target: TargetSize,
    limits: DecodeLimits,
) -> Option<Pixels> {
    let (width, height) = (image.width, image.height);
    if !limits.progressive_dc || !layout.progressive || !jpeg::dc_scans_cover(width, height, target)
    {
        return None;
    }
    let decoded = (jpeg::scaled_side(width, 1), jpeg::scaled_side(height, 1));
    let needed = (u64::from(decoded.0) * u64::from(decoded.1) * 3)
        .saturating_add(resize::working_bytes(decoded, fitting.size))
        .saturating_add(layout.dc_decoder_bytes());
    if needed > limits.max_alloc {
        return None;
    }
    let segments = image.jpeg_walk.as_deref()?.segments()?;
    jpeg::decode_dc(&image.bytes, segments)
}

/// Why a body cut short made no thumbnail.
fn cut_short(embedded_failed: Option<Error>) -> String {
    match embedded_failed {
        Some(error) => format!(
            "only the photo's start was read, up to its embedded thumbnail, which did not \
             decode: {error}"
        ),
        None => "only the photo's start was read, and neither an embedded thumbnail nor its DC \
                 scans make this size"
            .into(),
    }
}

/// How a whole image is decoded, and what that allocates.
struct Route {
    /// libjpeg's DCT scale, in eighths; `None` for `image`'s full decode.
    eighths: Option<u32>,
    /// The decoded pixels, and the resize's working memory.
    pixel_bytes: u64,
    /// The decoder's own buffers, which for a progressive JPEG outweigh
    /// the pixels.
    decoder_bytes: u64,
}

/// The route of a whole image: a JPEG at the smallest DCT scale that covers
/// the thumbnail (4:4:4 or 4:2:0; CMYK and YCCK take the full decode), and
/// anything else in full, each counted as its format reckons.
fn choose(
    image: &Image<'_>,
    layout: Option<&JpegLayout>,
    fitting: &Fitting,
    limits: DecodeLimits,
) -> Route {
    let (width, height) = (image.width, image.height);
    let eighths = layout
        .filter(|layout| limits.jpeg_dct_scaling && layout.sampling.len() != 4)
        .map(|_| {
            let (want_width, want_height) = fitting.scaled_whole(width, height);
            jpeg::scale_eighths(width, height, want_width, want_height)
        });
    let (decoded, decoded_bytes, decoder_bytes) = match (layout, eighths) {
        (Some(layout), Some(eighths)) => {
            let decoded = (
                jpeg::scaled_side(width, eighths),
                jpeg::scaled_side(height, eighths),
            );
            let rgb = u64::from(decoded.0) * u64::from(decoded.1) * 3;
            (decoded, rgb, layout.scaled_decoder_bytes(eighths))
        }
        (Some(layout), None) => (
            (width, height),
            full_rgba(width, height),
            layout.decoder_bytes(),
        ),
        (None, _) if image.raster.decodes_to_rgba => (
            (width, height),
            full_rgba(width, height),
            image.decoder_bytes,
        ),
        (None, _) => (
            (width, height),
            image.full_decode_bytes,
            image.decoder_bytes,
        ),
    };
    Route {
        eighths,
        pixel_bytes: decoded_bytes.saturating_add(resize::working_bytes(decoded, fitting.size)),
        decoder_bytes,
    }
}

impl Route {
    /// What it allocates in all.
    fn needed(&self) -> u64 {
        self.pixel_bytes.saturating_add(self.decoder_bytes)
    }

    /// Refuses a route that allocates past the decode limit.
    fn check(&self, url: &Arc<str>, image: &Image<'_>, limits: DecodeLimits) -> Result<(), Error> {
        let needed = self.needed();
        if needed <= limits.max_alloc {
            return Ok(());
        }
        Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {}x{}: decoding it takes {needed} bytes ({} of pixels, {} of decoder \
                 buffers), over the {}-byte decode limit",
                image.width, image.height, self.pixel_bytes, self.decoder_bytes, limits.max_alloc
            ),
            setting: "decode.max_alloc_bytes",
        })
    }
}

/// `image`'s limits for a decode under `limits`.
fn image_limits(limits: DecodeLimits) -> Limits {
    let mut image_limits = Limits::default();
    image_limits.max_image_width = Some(limits.max_dimension);
    image_limits.max_image_height = Some(limits.max_dimension);
    image_limits.max_alloc = Some(limits.max_alloc);
    image_limits
}

/// Every frame of an animation, when animations are played and its
/// canvases and frames fit in the decode limit beside the route's own.
fn animated(
    url: &Arc<str>,
    image: &Image<'_>,
    route: &Route,
    fitting: &Fitting,
    limits: DecodeLimits,
) -> Option<Thumbnail> {
    let animation = limits.animation?;
    let (width, height) = (image.width, image.height);
    let needed = route
        .needed()
        .saturating_add(animation::canvas_bytes(width, height))
        .saturating_add(animation.max_bytes);
    if needed > limits.max_alloc {
        return None;
    }
    let (thumb_width, thumb_height) = fitting.size;
    // The frames kept are outside the decoder's count.
    let mut frame_limits = image_limits(limits);
    frame_limits.max_alloc = Some(limits.max_alloc.saturating_sub(animation.max_bytes));
    let frames = animation::frames(
        &image.bytes,
        image.raster.frames.as_ref()?,
        (width, height),
        u64::from(thumb_width) * u64::from(thumb_height) * 4,
        animation,
        frame_limits,
        |pixels| {
            fit(
                pixels,
                fitting,
                (width, height),
                route.eighths,
                image.orientation,
            )
        },
    )?;
    let (width, height) = if image.quarter_turn() {
        (thumb_height, thumb_width)
    } else {
        (thumb_width, thumb_height)
    };
    Some(Thumbnail {
        url: Arc::clone(url),
        width,
        height,
        pixels: Arc::clone(&frames[0].pixels),
        source_size: image.source_size,
        animation: Animation::new(frames).map(Arc::new),
    })
}

/// The image's pixels by `route`: libjpeg at its scale, or `image`'s full
/// decode with its row's fixes (a GIF without a colour table, a PNG's grey
/// key).
fn run(image: &Image<'_>, route: &Route, limits: &Limits) -> Result<Pixels, String> {
    let bytes: &[u8] = &image.bytes;
    if let Some(eighths) = route.eighths
        && let Some(pixels) =
            jpeg::decode_scaled(bytes, eighths).map_err(|e| format!("JPEG: {e}"))?
    {
        return Ok(pixels);
    }
    let (format, raster) = (image.format(), image.raster);
    let mut decoded = match resize::decode_image(bytes, format, limits) {
        Ok(decoded) => decoded,
        Err(error) => match (raster.recover)(bytes, limits.clone()) {
            Some(decoded) => decoded,
            None => return Err(format!("{format:?}: {error}")),
        },
    };
    (raster.after_decode)(bytes, &mut decoded);
    Ok(Pixels::from_image(decoded))
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Cursor;

    use image::ImageFormat;

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
