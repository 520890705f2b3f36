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
//! `tiff` crate (a few hundred bytes) and keeps nothing.

use std::io::Cursor;

use tiff::decoder::Decoder;
use tiff::tags::Tag;

/// Refuses the layouts the TIFF decoder cannot read and would panic on
/// instead of saying so: tiles with separate colour planes (found by the
/// `realworld` comparison on Pillow's `tiff_tiled_planar_*` files, an
/// assertion in the `tiff` crate). Other files, and headers that do not
/// parse, are left to the decoder to judge.
pub(super) fn check_layout(bytes: &[u8]) -> Result<(), String> {
    let Ok(mut decoder) = Decoder::new(Cursor::new(bytes)) else {
        return Ok(());
    };
    let tag = |decoder: &mut Decoder<_>, tag| decoder.find_tag_unsigned::<u32>(tag).ok().flatten();
    let planar = tag(&mut decoder, Tag::PlanarConfiguration) == Some(2);
    let tiled = tag(&mut decoder, Tag::TileWidth).is_some();
    if planar && tiled {
        return Err(
            "TIFF: tiles with separate colour planes, a layout the TIFF decoder cannot read".into(),
        );
    }
    Ok(())
}

/// Bytes the decoder holds besides its output: the whole page in the
/// file's layout, and twice the largest chunk at its decoded size (its
/// compressed bytes, which LZW or Deflate may make a little larger than
/// that, and the rows decoded from them). Measured with the peak
/// allocator (`pipeline/tests/bomb.rs`). 0 when the header does not
/// parse: `image` then refuses the file.
pub(super) fn decoder_bytes(bytes: &[u8]) -> u64 {
    let Ok(mut decoder) = Decoder::new(Cursor::new(bytes)) else {
        return 0;
    };
    let (Ok((width, height)), Ok(colour)) = (decoder.dimensions(), decoder.colortype()) else {
        return 0;
    };
    let bits_per_pixel = u64::from(colour.bit_depth()) * u64::from(colour.num_samples());
    let bytes_of = |width: u32, height: u32| {
        (u64::from(width) * bits_per_pixel)
            .div_ceil(8)
            .saturating_mul(u64::from(height))
    };
    let (chunk_width, chunk_height) = decoder.chunk_dimensions();
    bytes_of(width, height).saturating_add(bytes_of(chunk_width, chunk_height).saturating_mul(2))
}
