//! TIFF's own count: what the TIFF decoder holds besides the pixels it
//! returns, for the decode limit. `image`'s TIFF decoder decodes the whole
//! first page into a buffer of its own (in the file's layout: four bytes a
//! pixel for CMYK) and then copies or converts it into the image it
//! returns; a TIFF is stored in chunks (strips of rows, or tiles), each
//! read compressed into a buffer before it is decoded.
//!
//! And TIFF's own check: a layout the decoder panics on is refused first.
//!
//! Runs inside a decode, on the decode thread that called it, before the
//! pixels are decoded: it reads the first page's header again with the
//! `tiff` crate (a few hundred bytes) and keeps nothing. Its row of the
//! format table (`FORMAT`) names both.

use std::io::Cursor;

use image::ImageFormat;

use super::formats::{self, Format, Raster, Signature};

/// TIFF's row of the format table: a TIFF or a BigTIFF.
pub(super) const FORMAT: Format = Format {
    name: "TIFF",
    media_types: &["image/tiff"],
    signature: Signature::Told(formats::is_tiff),
    decoder: formats::Decoder::Image(Raster {
        before_header: inspect,
        ..Raster::of(ImageFormat::Tiff)
    }),
};

use tiff::decoder::Decoder;
use tiff::tags::Tag;

/// What the TIFF decoder holds besides its output (see below), or why
/// the file is refused first: tiles with separate colour planes, a layout
/// the decoder panics on instead of refusing (found by the `realworld`
/// comparison on Pillow's `tiff_tiled_planar_*` files, an assertion in the
/// `tiff` crate). A header that does not parse counts 0: `image` then
/// refuses the file.
///
/// The count: the whole page in the file's layout, and twice the largest
/// chunk at its decoded size (its compressed bytes, which LZW or Deflate
/// may make a little larger than that, and the rows decoded from them).
/// Measured with the peak allocator (`pipeline/tests/bomb.rs`).
fn inspect(bytes: &[u8]) -> Result<u64, String> {
    let Ok(mut decoder) = Decoder::new(Cursor::new(bytes)) else {
        return Ok(0);
    };
    let mut tag = |tag| decoder.find_tag_unsigned::<u32>(tag).ok().flatten();
    if tag(Tag::PlanarConfiguration) == Some(2) && tag(Tag::TileWidth).is_some() {
        return Err(
            "TIFF: tiles with separate colour planes, a layout the TIFF decoder cannot read".into(),
        );
    }
    let (Ok((width, height)), Ok(colour)) = (decoder.dimensions(), decoder.colortype()) else {
        return Ok(0);
    };
    let bits_per_pixel = u64::from(colour.bit_depth()) * u64::from(colour.num_samples());
    let bytes_of = |width: u32, height: u32| {
        (u64::from(width) * bits_per_pixel)
            .div_ceil(8)
            .saturating_mul(u64::from(height))
    };
    let (chunk_width, chunk_height) = decoder.chunk_dimensions();
    Ok(bytes_of(width, height)
        .saturating_add(bytes_of(chunk_width, chunk_height).saturating_mul(2)))
}
