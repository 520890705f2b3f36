//! TIFF's own count: what the TIFF decoder holds besides the pixels it
//! returns, for the decode limit. `image`'s TIFF decoder decodes the whole
//! first page into a buffer of its own (in the file's layout: four bytes a
//! pixel for CMYK) and then copies or converts it into the image it
//! returns; a TIFF is stored in chunks (strips of rows, or tiles), each
//! read compressed into a buffer before it is decoded.
//!
//! Runs inside a decode, on the decode thread that called it, before the
//! pixels are decoded: it reads the first page's header again with the
//! `tiff` crate (a few hundred bytes) and keeps nothing.

use std::io::Cursor;

use tiff::decoder::Decoder;

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
