//! AVIF: an AVIF file to its thumbnail. The container says what the image
//! is (`container.rs`; an image sequence's first frame, `sequence.rs`), as
//! plain data (`still.rs`); what that takes is counted against the decode
//! limit before anything is decoded, each AV1 image by what its sequence
//! header says the decoder will allocate (the container's `av1C` only sums
//! that up, and may be wrong: the image is decoded as its sequence header
//! says, as libavif and browsers do); each AV1 image (the colour, each
//! tile of a grid, the alpha; its coding read first, `coding.rs`) is
//! decoded by rav1d (`dav1d.rs`) and turned
//! into RGBA on one canvas of the part the clean aperture keeps (`yuv.rs`),
//! one picture at a time; the usual resize and turn (`fitting.rs`) make
//! the thumbnail, the file's `irot` and `imir` applied as an EXIF
//! orientation would be.
//!
//! Runs on the decode thread that calls it, start to end (rav1d starts no
//! thread); keeps nothing.

mod coding;
mod container;
mod dav1d;
mod sequence;
mod still;
mod tables;
mod yuv;

use std::sync::Arc;

use image::metadata::Orientation;

use self::coding::Coding;
use self::dav1d::Picture;
use self::still::{Coded, Data, Still, Transforms};
use self::yuv::{Canvas, Rect};
use super::DecodeLimits;
use super::fitting::{Fitting, fit, quarter_turn, swapped};
use super::formats::{self, Decoder, Format, Signature};
use super::header::{self, within_max_dimension};
use super::resize::{self, Layout, Pixels};
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// AVIF's row of the format table: told by any of its brands, decoded by
/// this module.
pub(super) const FORMAT: Format = Format {
    name: "AVIF",
    media_types: &["image/avif"],
    signature: Signature::Told(formats::is_avif),
    decoder: Decoder::Own(thumbnail),
};

/// Decodes `bytes`, an AVIF file, into a thumbnail for `asked`, under
/// `limits`.
fn thumbnail(
    url: &Arc<str>,
    bytes: &[u8],
    asked: TargetSize,
    limits: DecodeLimits,
) -> Result<Thumbnail, Error> {
    let decode_error = formats::decode_error(url, "AVIF");
    let still = container::read(bytes).map_err(decode_error)?;
    let (width, height) = (still.width, still.height);
    within_max_dimension(url, width, height, &limits)?;
    let shows = still.transforms.crop.unwrap_or((0, 0, width, height));
    // The part shown, as the header of any image says it: fitted with the
    // target's sides swapped for a quarter turn, turned after the resize.
    let orientation = orientation(&still.transforms);
    let (stored_target, source_size) = if quarter_turn(orientation) {
        (swapped(asked), (shows.3, shows.2))
    } else {
        (asked, (shows.2, shows.3))
    };
    let fitting = Fitting::new(shows.2, shows.3, stored_target);
    let coding = coding_of(&still).map_err(decode_error)?;
    let needed = bytes_needed(&still, coding, shows, &fitting);
    if needed > limits.max_alloc {
        return Err(Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "image is {width}x{height}: decoding it takes {needed} bytes (its pixels, the \
                 AV1 decoder's frame and the resize), over the {}-byte decode limit",
                limits.max_alloc
            ),
            setting: "decode.max_alloc_bytes",
        });
    }
    let pixels = Pixels {
        width: shows.2,
        height: shows.3,
        layout: Layout::Rgba,
        data: pixels(&still, coding, shows, bytes.len()).map_err(decode_error)?,
    };
    let rgba =
        fit(pixels, &fitting, (shows.2, shows.3), None, orientation).map_err(decode_error)?;
    Ok(header::still(url, rgba, source_size))
}

/// The turn and mirror as the EXIF orientation that does the same: the
/// turn (anticlockwise) first, then the mirror (`Some(0)` top and bottom
/// exchanged, `Some(1)` left and right).
fn orientation(transforms: &Transforms) -> Orientation {
    use Orientation::*;
    match (transforms.quarter_turns, transforms.mirror) {
        (0, None) => NoTransforms,
        (0, Some(0)) => FlipVertical,
        (0, Some(_)) => FlipHorizontal,
        (1, None) => Rotate270,
        (1, Some(0)) => Rotate90FlipH,
        (1, Some(_)) => Rotate270FlipH,
        (2, None) => Rotate180,
        (2, Some(0)) => FlipHorizontal,
        (2, Some(_)) => FlipVertical,
        (_, None) => Rotate90,
        (_, Some(0)) => Rotate270FlipH,
        (_, Some(_)) => Rotate90FlipH,
    }
}

/// How the pictures a decode makes are coded, as far as the decoder
/// allocates by it: the heavier of the colour's (a grid's first tile's)
/// and the alpha's, by their sequence headers. Every other tile is
/// checked against it before it is decoded.
fn coding_of(still: &Still<'_>) -> Result<Coding, String> {
    fn first<'a>(coded: &Coded<'a>) -> Option<Data<'a>> {
        match coded {
            Coded::Av1(data) => Some(data.clone()),
            Coded::Grid(grid) => grid.tiles.first().cloned(),
        }
    }
    let colour = first(&still.colour).ok_or("the grid has no tiles")?;
    let mut coding = dav1d::coding(&colour.bytes())?;
    if let Some(alpha) = still.alpha.as_ref().and_then(first) {
        coding = coding.max(dav1d::coding(&alpha.bytes())?);
    }
    Ok(coding)
}

/// Bytes the decode holds at its peak: the canvas, one AV1 picture coded
/// as `coding` and the decoder's state for it (counted at the whole
/// image's size for a grid's tile: no smaller bound is known before a tile
/// is decoded), and the resize.
fn bytes_needed(still: &Still<'_>, coding: Coding, shows: Rect, fitting: &Fitting) -> u64 {
    let canvas = u64::from(shows.2) * u64::from(shows.3) * 4;
    let frame = decoder_bytes(still.width, still.height, coding);
    canvas
        .saturating_add(frame)
        .saturating_add(resize::working_bytes((shows.2, shows.3), fitting.size))
}

/// What rav1d holds to decode a `width` x `height` image coded as
/// `coding`: each frame it holds (a picture whose planes are as `coding`
/// says, at the image's size or the largest its sequence header allows;
/// rows rounded up to 128, as rav1d allocates them), half a picture again
/// of per-block state, and 4 MB. Measured by `avif-report`: a 12 MP 8-bit
/// 4:2:0 image held 26 MB besides its canvas, counted here as 33 MB.
fn decoder_bytes(width: u32, height: u32, coding: Coding) -> u64 {
    let width = width.max(coding.max_size.0);
    let height = height.max(coding.max_size.1);
    let rows = u64::from(height).next_multiple_of(128);
    let stride = u64::from(width).next_multiple_of(64) + 128;
    let picture = (stride * rows).saturating_mul(coding.quarter_bytes()) / 4;
    picture
        .saturating_mul(coding.frames_held())
        .saturating_add(picture / 2)
        .saturating_add(4 << 20)
}

/// The RGBA of the part `shows` of the image, its pictures coded as
/// `coding` at the most; the file is `file_bytes` long.
fn pixels(
    still: &Still<'_>,
    coding: Coding,
    shows: Rect,
    file_bytes: usize,
) -> Result<Vec<u8>, String> {
    let within = (still.width, still.height);
    let limits = Decoding {
        within,
        coding,
        file_bytes,
    };
    let mut rgba = vec![0u8; shows.2 as usize * shows.3 as usize * 4];
    let mut canvas = Canvas {
        rgba: &mut rgba,
        shows,
    };
    each_picture(
        &still.colour,
        &limits,
        still.operating_point,
        |picture, at| {
            let colour = still.nclx.unwrap_or_else(|| picture.colour());
            yuv::colour_into(&mut canvas, picture, at, within, colour);
        },
    )?;
    if let Some(alpha) = &still.alpha {
        each_picture(alpha, &limits, 0, |picture, at| {
            yuv::alpha_into(
                &mut canvas,
                picture,
                at,
                within,
                picture.colour().full_range,
            );
        })?;
        if still.premultiplied {
            resize::unpremultiply(&mut rgba);
        }
    }
    Ok(rgba)
}

/// What every picture of a decode is held to: the image's size, the
/// coding its memory was counted by, and the file's length (no grid's
/// tiles hold more).
struct Decoding {
    within: (u32, u32),
    coding: Coding,
    file_bytes: usize,
}

/// Decodes each AV1 picture of `coded` (at its `operating_point`), one at a
/// time, handing each to `draw` with where it lies in the image (a tile
/// that fills several cells of a grid is decoded once, and handed on for
/// each); checks that the pictures make the image, and that each is coded
/// within what the decode counted, before it is decoded.
fn each_picture(
    coded: &Coded<'_>,
    limits: &Decoding,
    operating_point: u8,
    mut draw: impl FnMut(&Picture, (u32, u32)),
) -> Result<(), String> {
    let within = limits.within;
    match coded {
        Coded::Av1(data) => {
            let picture = decode_within(data, limits, operating_point)?;
            if (picture.width(), picture.height()) != within {
                return Err(format!(
                    "the AV1 image is {}x{}, the file says {}x{}",
                    picture.width(),
                    picture.height(),
                    within.0,
                    within.1
                ));
            }
            draw(&picture, (0, 0));
        }
        Coded::Grid(grid) => {
            if (grid.width, grid.height) != within {
                return Err("the alpha grid's size is not the image's".into());
            }
            let mut tile_size = None;
            let mut decoded_bytes = 0;
            for (first, tile) in grid.tiles.iter().enumerate() {
                if grid.tiles[..first].iter().any(|earlier| earlier.same(tile)) {
                    continue;
                }
                // Tiles are items of their own: together no more than the
                // file, however many cells they fill.
                decoded_bytes += tile.len();
                if decoded_bytes > limits.file_bytes {
                    return Err("the grid's tiles hold more bytes than the file".into());
                }
                let picture = decode_within(tile, limits, operating_point)?;
                let size = (picture.width(), picture.height());
                let (tile_width, tile_height) = *tile_size.get_or_insert(size);
                if size != (tile_width, tile_height)
                    || !covers(tile_width, grid.columns, grid.width)
                    || !covers(tile_height, grid.rows, grid.height)
                {
                    return Err("the grid's tiles do not make its image".into());
                }
                for (index, _) in (first..)
                    .zip(&grid.tiles[first..])
                    .filter(|(_, cell)| cell.same(tile))
                {
                    let (row, column) = (index as u32 / grid.columns, index as u32 % grid.columns);
                    draw(&picture, (column * tile_width, row * tile_height));
                }
            }
        }
    }
    Ok(())
}

/// Decodes the AV1 image `data` if its OBUs make it take no more than the
/// decode counted, and it comes out so.
fn decode_within(
    data: &Data<'_>,
    limits: &Decoding,
    operating_point: u8,
) -> Result<Picture, String> {
    let bytes = data.bytes();
    let (width, height) = limits.within;
    let counted = decoder_bytes(width, height, limits.coding);
    let heavier = |coding: Coding| decoder_bytes(width, height, coding) > counted;
    if heavier(dav1d::coding(&bytes)?) {
        return Err(
            "a tile or the alpha is coded to take more memory (more bits, chroma, \
                    frames or a larger frame) than the image's first picture, by which the \
                    decode was counted"
                .into(),
        );
    }
    let max_pixels = u64::from(width) * u64::from(height);
    let picture = dav1d::decode(&bytes, operating_point, max_pixels)?;
    if heavier(picture.coding()) {
        return Err("the AV1 picture is not coded as its sequence header says".into());
    }
    Ok(picture)
}

/// Whether `count` tiles of `side` cover `length`, the last one needed.
fn covers(side: u32, count: u32, length: u32) -> bool {
    let all = u64::from(side) * u64::from(count);
    all >= u64::from(length) && all - u64::from(side) < u64::from(length)
}
