//! Tables: what an AVIF's item properties say (`ipco`: size, colours,
//! alpha, crop, turn, mirror) and how a grid is laid out, each read into
//! plain values, with the crop checked against the image. Which item has
//! which property, and the item tables, are `bmff/items.rs`'.
//!
//! Plain functions over a box's body; they keep nothing.

use super::still::Colour;
use crate::decode::bmff::{FourCc, Reader, full_box};

/// A property of an item, as far as a still needs it.
pub(super) enum Property<'a> {
    Size(u32, u32),
    Colour(Colour),
    Auxiliary(&'a [u8]),
    Crop(Clap),
    Turn(u8),
    Mirror(u8),
    /// The operating point to decode (`a1op`), of an image of layers.
    OperatingPoint(u8),
    /// One this reader does not act on (`av1C`, which only sums up what
    /// the AV1 sequence header says; `pixi`, an ICC `colr`...).
    Known,
    Unknown,
}

/// A `clap` box: fractions of the width, height and centre offset.
#[derive(Clone, Copy)]
pub(super) struct Clap {
    width: (u32, u32),
    height: (u32, u32),
    horizontal_offset: (i32, u32),
    vertical_offset: (i32, u32),
}

pub(super) fn read_property(kind: FourCc, body: &[u8]) -> Result<Property<'_>, String> {
    let short = || {
        format!(
            "the {} property is cut short",
            String::from_utf8_lossy(&kind)
        )
    };
    let property = match &kind {
        b"ispe" => {
            let mut reader = Reader::new(full_box(body)?.1);
            let (width, height) = (reader.u32(), reader.u32());
            Property::Size(width.ok_or_else(short)?, height.ok_or_else(short)?)
        }
        b"colr" => {
            let mut reader = Reader::new(body);
            match &reader.four_cc().ok_or_else(short)? {
                b"nclx" => {
                    let _primaries = reader.u16().ok_or_else(short)?;
                    let _transfer = reader.u16().ok_or_else(short)?;
                    let matrix = reader.u16().ok_or_else(short)?;
                    let full_range = reader.u8().ok_or_else(short)? & 0x80 != 0;
                    Property::Colour(Colour { matrix, full_range })
                }
                _ => Property::Known,
            }
        }
        b"auxC" => {
            let name = full_box(body)?.1;
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            Property::Auxiliary(&name[..end])
        }
        b"clap" => {
            let mut reader = Reader::new(body);
            let mut next = || reader.u32().ok_or_else(short);
            Property::Crop(Clap {
                width: (next()?, next()?),
                height: (next()?, next()?),
                horizontal_offset: (next()? as i32, next()?),
                vertical_offset: (next()? as i32, next()?),
            })
        }
        b"irot" => Property::Turn(body.first().ok_or_else(short)? & 3),
        b"imir" => Property::Mirror(body.first().ok_or_else(short)? & 1),
        // dav1d's operating points are 0 to 31.
        b"a1op" => Property::OperatingPoint(body.first().ok_or_else(short)? & 31),
        b"av1C" | b"pixi" | b"pasp" | b"clli" | b"mdcv" | b"cclv" | b"amve" | b"lsel" | b"a1lx" => {
            Property::Known
        }
        _ => Property::Unknown,
    };
    Ok(property)
}

/// A grid's rows, columns and output size (`ImageGrid`).
pub(super) fn read_grid(data: &[u8]) -> Result<(u32, u32, u32, u32), String> {
    let mut reader = Reader::new(data);
    let grid = (|| {
        let _version = reader.u8()?;
        let flags = reader.u8()?;
        let rows = u32::from(reader.u8()?) + 1;
        let columns = u32::from(reader.u8()?) + 1;
        let (width, height) = if flags & 1 == 1 {
            (reader.u32()?, reader.u32()?)
        } else {
            (u32::from(reader.u16()?), u32::from(reader.u16()?))
        };
        Some((rows, columns, width, height))
    })();
    grid.ok_or_else(|| "the grid's description is cut short".into())
}

/// The pixels `clap` keeps of a `width` x `height` image, as libavif
/// reckons them (`avifCropRectFromCleanApertureBox`): the crop's size whole
/// numbers, its origin the image's centre (half its size) plus the offset
/// less half the crop, a whole number inside the image. `None` for a clean
/// aperture that is not such a crop, which libavif's apps, Android and
/// browsers show as the whole image.
pub(super) fn crop_of(clap: Clap, width: u32, height: u32) -> Option<(u32, u32, u32, u32)> {
    let whole = |(n, d): (u32, u32)| {
        let (n, d) = (i64::from(n as i32), i64::from(d as i32));
        (d > 0 && n >= 0 && n % d == 0).then(|| n / d)
    };
    let crop_width = whole(clap.width)?;
    let crop_height = whole(clap.height)?;
    // origin = size / 2 + offset - crop / 2, in halves, as a whole number.
    let origin = |size: u32, crop: i64, (n, d): (i32, u32)| -> Option<u32> {
        let d = i64::from(d as i32);
        if d <= 0 {
            return None;
        }
        let twice = i64::from(n) * 2;
        if twice % d != 0 {
            return None;
        }
        let halves = i64::from(size) + twice / d - crop;
        (halves % 2 == 0)
            .then_some(halves / 2)
            .and_then(|o| u32::try_from(o).ok())
    };
    let x = origin(width, crop_width, clap.horizontal_offset)?;
    let y = origin(height, crop_height, clap.vertical_offset)?;
    let (crop_width, crop_height) = (
        u32::try_from(crop_width).ok()?,
        u32::try_from(crop_height).ok()?,
    );
    let fits = crop_width > 0
        && crop_height > 0
        && u64::from(x) + u64::from(crop_width) <= u64::from(width)
        && u64::from(y) + u64::from(crop_height) <= u64::from(height);
    fits.then_some((x, y, crop_width, crop_height))
}
