//! GIF's own fix: a GIF with no colour table at all, neither global nor
//! the frame's own. `image`'s decoder refuses it ("no color table
//! available"); the format leaves the colours to the decoder, and Pillow
//! (like other readers) shows the indices as greys. Found by the
//! `realworld` comparison on Pillow's `no_palette.gif`.
//!
//! Runs inside a decode, on the decode thread that called it, when the
//! full decode has refused the file; decodes it again, under the same
//! limits, and keeps nothing.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, ImageReader, Limits};

/// The logical screen descriptor's flags: bit 7 says a global colour
/// table follows, bits 0-2 its size (2^(n+1) entries).
const SCREEN_FLAGS: usize = 10;
/// Where the global colour table goes: after the header and descriptor.
const TABLE_AT: usize = 13;

/// The image of a GIF that has no global colour table and whose first
/// frame has none of its own, its indices read as greys: decoded by
/// `image` with a grey table of 256 entries put in as its global one (the
/// `gif` crate refuses any frame without a table, whatever it is asked to
/// output). `None` for a GIF that has a global table, or if it still
/// cannot be decoded; `limits` as for any decode.
pub(super) fn without_colour_table(bytes: &[u8], limits: Limits) -> Option<DynamicImage> {
    if bytes.len() < TABLE_AT || bytes[SCREEN_FLAGS] & 0x80 != 0 {
        return None;
    }
    let mut with_table = Vec::with_capacity(bytes.len() + 768);
    with_table.extend_from_slice(&bytes[..TABLE_AT]);
    with_table[SCREEN_FLAGS] |= 0x87;
    with_table.extend((0..=255u8).flat_map(|grey| [grey; 3]));
    with_table.extend_from_slice(&bytes[TABLE_AT..]);
    let mut reader = ImageReader::with_format(Cursor::new(with_table), ImageFormat::Gif);
    reader.limits(limits);
    reader.decode().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pillow's `no_palette.gif`: a 1x1 GIF87a with no colour table
    /// (HPND licence, `tests/it/corpus/pillow/README.md`).
    const NO_TABLE: &[u8] = include_bytes!("../../tests/it/corpus/pillow/no_palette.gif");

    #[test]
    fn a_gif_without_any_colour_table_reads_its_indices_as_greys() {
        assert!(
            image::load_from_memory(NO_TABLE).is_err(),
            "image reads it now"
        );
        let image = without_colour_table(NO_TABLE, Limits::default())
            .unwrap()
            .to_rgba8();
        assert_eq!(image.dimensions(), (1, 1));
        assert_eq!(image.get_pixel(0, 0).0, [0, 0, 0, 255]);
        // A GIF with a table is not this one's to read.
        let mut gif = Cursor::new(Vec::new());
        image::RgbaImage::new(4, 4)
            .write_to(&mut gif, image::ImageFormat::Gif)
            .unwrap();
        assert!(without_colour_table(gif.get_ref(), Limits::default()).is_none());
    }
}
