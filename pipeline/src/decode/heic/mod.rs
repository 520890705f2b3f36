//! HEIC: the HEIF files phones and cameras write, HEVC-coded, decoded by
//! libheif (with its HEVC decoder, libde265): its row of the format table
//! and its decoder, bytes to thumbnail. The file's own thumbnail is decoded
//! in place of the photo when it covers the thumbnail asked for (a phone's
//! is 240 to 512 px), which skips the photo's decode; it is whatever picture
//! the file's maker put there.
//!
//! What is bounded, before anything is decoded: the size the chosen image
//! declares (`ispe`) and the pictures its HEVC streams declare (their
//! parameter sets, read here first, by `bmff/hevc.rs`: libheif 1.15
//! decodes what those say, whatever `ispe` says) by `decode.max_dimension`,
//! and what decoding them holds by `decode.max_alloc_bytes` (reckoned:
//! libheif allocates outside Rust). What is not: the time a grid of many
//! tiles takes (up to 65,536 of them, each a decode). libheif and libde265
//! are C: a file that crashes them crashes the process, which no Rust code
//! can catch. That is why this format is off by default (cargo feature
//! `heic`). Runs on a decode thread; libde265 starts and joins a thread of
//! its own for each picture it decodes (each tile of a grid). Keeps
//! nothing.

mod ffi;
mod libheif;

use std::sync::Arc;

use image::metadata::Orientation;

use super::DecodeLimits;
use super::bmff::{Picture, Streams};
use super::fitting::{Fitting, fit};
use super::formats::{self, Decoder, Format, Signature, is_heic};
use super::header::{self, within_max_dimension};
use super::resize::{self, Layout, Pixels};
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// HEIC's row of the format table: a HEIF file whose brands say HEVC.
pub(super) const FORMAT: Format = Format {
    name: "HEIC",
    media_types: &["image/heic", "image/heif"],
    signature: Signature::Told(is_heic),
    decoder: Decoder::Own(thumbnail),
};

/// The most thumbnails of a photo looked at (files hold one, or none).
const MOST_THUMBNAILS: usize = 8;

/// The thumbnail of `asked` of the HEIC `bytes`, under `limits`.
fn thumbnail(
    url: &Arc<str>,
    bytes: &[u8],
    asked: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    let decode_error = formats::decode_error(url, "HEIC");
    let failed = |failure: libheif::Failure| {
        if failure.too_large {
            Error::TooLarge {
                url: url.to_string(),
                what: failure.message,
                setting: "decode.max_dimension",
            }
        } else {
            decode_error(failure.message)
        }
    };
    // What the streams declare, read before libheif reads the file.
    let streams = Streams::read(bytes).map_err(decode_error)?;
    let file = libheif::File::read(bytes, limits.max_dimension).map_err(failed)?;
    let photo = file.primary().map_err(failed)?;
    // As shown: turned and cropped as the file says.
    let (width, height) = photo.size();
    within_max_dimension(url, width, height, &limits)?;
    if width == 0 || height == 0 {
        return Err(decode_error("its primary image has no size".into()));
    }
    let fitting = Fitting::new(width, height, asked);
    let thumbnails = photo.thumbnails(MOST_THUMBNAILS);
    let covering = covering(
        &thumbnails,
        (width, height),
        fitting.scaled_whole(width, height),
    );
    // An image decoded within the limits, its colour straight (libheif
    // leaves premultiplied colour so).
    let decode = |image: &libheif::Image<'_>| {
        let declared = streams.largest_for(image.id);
        within_reckoning(url, image, declared, fitting.size, bytes.len(), &limits)?;
        let (width, height, mut data) = image.decode_rgba().map_err(failed)?;
        if image.premultiplied() {
            resize::unpremultiply(&mut data);
        }
        Ok::<_, Error>((width, height, data))
    };
    // The file's thumbnail if it covers the target and decodes; else the
    // photo.
    let (decoded_width, decoded_height, data) =
        match covering.and_then(|thumbnail| decode(thumbnail).ok()) {
            Some(decoded) => decoded,
            None => decode(&photo)?,
        };
    drop(thumbnails);
    drop(photo);
    drop(file);
    let pixels = Pixels {
        width: decoded_width,
        height: decoded_height,
        layout: Layout::Rgba,
        data,
    };
    // Upright already: libheif turns the image as the file says.
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

/// The smallest of `thumbnails` that is at least `needed` (the photo, of
/// `size`, at the thumbnail's scale) and shaped as the photo is (a
/// thumbnail the file did not turn as it turns the photo is not).
fn covering<'a, 'f>(
    thumbnails: &'a [libheif::Image<'f>],
    size: (u32, u32),
    needed: (u32, u32),
) -> Option<&'a libheif::Image<'f>> {
    thumbnails
        .iter()
        .filter(|thumbnail| {
            let (width, height) = thumbnail.size();
            width >= needed.0 && height >= needed.1 && same_shape((width, height), size)
        })
        .min_by_key(|thumbnail| {
            let (width, height) = thumbnail.size();
            u64::from(width) * u64::from(height)
        })
}

/// Whether two sizes have the same aspect ratio, to within 2% (a
/// thumbnail's sides are rounded, and may be padded to a coding block).
fn same_shape(a: (u32, u32), b: (u32, u32)) -> bool {
    let cross = |x: (u32, u32), y: (u32, u32)| u64::from(x.0) * u64::from(y.1);
    let (ab, ba) = (cross(a, b), cross(b, a));
    ab.abs_diff(ba) * 50 <= ab.max(ba)
}

/// Refuses `image` if a picture its streams declare (`declared`, the
/// largest) is wider or taller than the limit, or if its decode would hold
/// more than the limit: its coded planes twice (libde265's picture and
/// libheif's copy of it; at the larger of its declared and its streams'
/// sizes, chroma reckoned at full resolution, which no phone writes),
/// libheif's RGBA (and for a deeper image the 16-bit RGBA it is converted
/// through) and the copy of it taken here, the resize to `thumbnail`, and
/// the file.
fn within_reckoning(
    url: &Arc<str>,
    image: &libheif::Image<'_>,
    declared: Option<Picture>,
    thumbnail: (u32, u32),
    file_bytes: usize,
    limits: &DecodeLimits,
) -> Result<(), Error> {
    if let Some(picture) = declared
        && (picture.width > limits.max_dimension || picture.height > limits.max_dimension)
    {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "its HEVC stream declares a {}x{} picture, over the {} limit",
                picture.width, picture.height, limits.max_dimension
            ),
            setting: "decode.max_dimension",
        });
    }
    let (width, height) = image.size();
    let (coded_width, coded_height) = image.coded_size();
    let coded = (u64::from(coded_width.max(width)) * u64::from(coded_height.max(height)))
        .max(declared.map_or(0, |picture| picture.area()));
    let deep = image.bits() > 8;
    let sample = if deep { 2 } else { 1 }.max(declared.map_or(1, |picture| picture.sample_bytes));
    let planes = if image.has_alpha() { 4 } else { 3 };
    let shown = u64::from(width) * u64::from(height);
    let rgba = if deep { 4 + 8 + 4 } else { 4 + 4 };
    let needed = coded
        .saturating_mul(2 * planes * sample)
        .saturating_add(shown.saturating_mul(rgba))
        .saturating_add(resize::working_bytes((width, height), thumbnail))
        .saturating_add(file_bytes as u64);
    if needed > limits.max_alloc {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {width}x{height} ({coded_width}x{coded_height} coded{}): its decode \
                 takes about {needed} bytes, over the {}-byte decode limit",
                declared.map_or(String::new(), |picture| format!(
                    ", its HEVC stream {}x{}",
                    picture.width, picture.height
                )),
                limits.max_alloc
            ),
            setting: "decode.max_alloc_bytes",
        });
    }
    Ok(())
}
