//! libjpeg's route for JPEGs (cargo feature `libjpeg`): decoding at 1/8 to
//! 8/8 of the size by scaling in the DCT domain, at the smallest scale that
//! still covers the thumbnail (`layout.rs`, `scale_eighths`), through the `mozjpeg`
//! crate's libjpeg-turbo.
//!
//! Runs inside a decode, on the decode thread that called it; it starts no
//! threads and keeps nothing.

use std::panic::AssertUnwindSafe;

use mozjpeg::ColorSpace;

use crate::decode::resize::{Layout, Pixels};

/// A JPEG decoded by libjpeg at `eighths`/8 of its size, on this thread:
/// RGB, or grey for a greyscale file. `Ok(None)` for a CMYK or YCCK file,
/// which the full decode handles. A fatal libjpeg error (libjpeg reports
/// them by unwinding) is `Err` with its message; damaged data that libjpeg
/// can get past (a truncated file, a bad Huffman code) decodes, with grey
/// where the data is missing, as browsers show it.
pub(in crate::decode) fn decode_scaled(
    bytes: &[u8],
    eighths: u32,
) -> Result<Option<Pixels>, String> {
    let decode = || -> std::io::Result<Option<Pixels>> {
        let mut decompress = mozjpeg::Decompress::new_mem(bytes)?;
        decompress.scale(u8::try_from(eighths.clamp(1, 8)).unwrap_or(8));
        let (mut started, layout) = match decompress.color_space() {
            ColorSpace::JCS_GRAYSCALE => (decompress.grayscale()?, Layout::Luma),
            ColorSpace::JCS_CMYK | ColorSpace::JCS_YCCK => return Ok(None),
            _ => (decompress.rgb()?, Layout::Rgb),
        };
        let (width, height) = (started.width(), started.height());
        let data: Vec<u8> = started.read_scanlines()?;
        if data.len() != width * height * layout.channels() {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(Some(Pixels {
            width: u32::try_from(width).map_err(|_| std::io::ErrorKind::InvalidData)?,
            height: u32::try_from(height).map_err(|_| std::io::ErrorKind::InvalidData)?,
            layout,
            data,
        }))
    };
    match std::panic::catch_unwind(AssertUnwindSafe(decode)) {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(payload) => {
            Err(crate::error::panic_message(&*payload).unwrap_or_else(|| "libjpeg failed".into()))
        }
    }
}
