//! GIF's own fix: a GIF with no colour table at all, neither global nor
//! the frame's own. `image`'s decoder refuses it ("no color table
//! available"); the format leaves the colours to the decoder, and Pillow
//! (like other readers) shows the indices as greys. Found by the
//! `realworld` comparison on Pillow's `no_palette.gif`.
//!
//! And GIF's own count for the decode limit: its first frame may be larger
//! than its logical screen, and the decoder allocates for the frame.
//!
//! Its row of the format table (`FORMAT`) names them, and its frames'
//! reader.
//!
//! Runs inside a decode, on the decode thread that called it: the count
//! before decoding, the fix when the full decode has refused the file
//! (decoding it again, under the same limits). Keeps nothing.

use std::io::Cursor;

use image::codecs::gif::GifDecoder;
use image::{AnimationDecoder, DynamicImage, ImageDecoder as _, ImageFormat, ImageReader, Limits};

use super::formats::{Decoder, Format, FrameReader, Raster, Signature};

/// GIF's row of the format table.
pub(super) const FORMAT: Format = Format {
    name: "GIF",
    media_types: &["image/gif"],
    // The two versions there are, as `image` tells them.
    signature: Signature::Told(|bytes| {
        bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a")
    }),
    decoder: Decoder::Image(Raster {
        decoder_bytes: |bytes, _, _| decoder_bytes(bytes),
        recover: without_colour_table,
        frames: Some(FRAMES),
        ..Raster::of(ImageFormat::Gif)
    }),
};

/// A GIF's frames: its image descriptors counted and checked, then
/// decoded by `image`.
pub(super) const FRAMES: FrameReader = FrameReader {
    count: frame_count,
    fit: |bytes, screen, up_to| {
        frame_sizes(bytes)
            .take(up_to)
            .all(|(width, height)| width <= screen.0 && height <= screen.1)
    },
    decode: |bytes, limits| {
        let mut decoder = GifDecoder::new(Cursor::new(bytes)).ok()?;
        decoder.set_limits(limits).ok()?;
        Some(decoder.into_frames())
    },
};

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

/// Bytes the GIF decoder holds besides the screen-sized image it
/// returns: its first frame's colour indices (a byte a pixel) and the
/// frame in RGBA, which it then places on the screen (measured with the
/// peak allocator, `pipeline/tests/bomb.rs`: a 1500x1000 GIF peaks at 8.3
/// bytes a pixel with its output). The frame may be larger than the
/// screen: a 20 KB GIF of a 1x1 screen whose frame claims 5163x11787 took
/// 304 MB under the 268 MB limit when only the screen was counted (found
/// by `decode-fuzz`). Its LZW tables and buffers add a few tens of KB:
/// counted as 64 KB. 0 when no frame is found: the decoder refuses the
/// file.
pub(super) fn decoder_bytes(bytes: &[u8]) -> u64 {
    first_frame_size(bytes).map_or(0, |(width, height)| {
        (u64::from(width) * u64::from(height))
            .saturating_mul(5)
            .saturating_add(64 * 1024)
    })
}

/// How many images the file holds, counting no further than `up_to`.
pub(super) fn frame_count(bytes: &[u8], up_to: usize) -> usize {
    frame_sizes(bytes).take(up_to).count()
}

/// The size its first image descriptor declares, past the colour table
/// and any extensions.
fn first_frame_size(bytes: &[u8]) -> Option<(u32, u32)> {
    frame_sizes(bytes).next()
}

/// The sizes its image descriptors declare, in order, read past colour
/// tables, extensions and each image's data; it stops at the trailer or
/// at anything it cannot read.
pub(super) fn frame_sizes(bytes: &[u8]) -> impl Iterator<Item = (u32, u32)> + '_ {
    let mut at = match bytes.get(SCREEN_FLAGS) {
        Some(&flags) => TABLE_AT + table_bytes(flags),
        None => usize::MAX,
    };
    std::iter::from_fn(move || {
        loop {
            match *bytes.get(at)? {
                // An extension: its label, then sub-blocks up to an empty one.
                0x21 => at = after_sub_blocks(bytes, at + 2)?,
                0x2C => {
                    let side = |at: usize| -> Option<u32> {
                        Some(u32::from(u16::from_le_bytes(
                            bytes.get(at..at + 2)?.try_into().ok()?,
                        )))
                    };
                    let size = (side(at + 5)?, side(at + 7)?);
                    // Its own colour table, the LZW code size, then the
                    // data's sub-blocks; a file cut short ends the walk
                    // after this image.
                    let data = bytes
                        .get(at + 9)
                        .map_or(usize::MAX, |&flags| at + 10 + table_bytes(flags) + 1);
                    at = after_sub_blocks(bytes, data).unwrap_or(usize::MAX);
                    return Some(size);
                }
                _ => return None,
            }
        }
    })
}

/// Bytes of the colour table that the descriptor `flags` announce.
fn table_bytes(flags: u8) -> usize {
    if flags & 0x80 != 0 {
        3 << ((flags & 7) + 1)
    } else {
        0
    }
}

/// Where the sub-blocks starting at `at` end: past the empty one.
fn after_sub_blocks(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let length = usize::from(*bytes.get(at)?);
        at += 1 + length;
        if length == 0 {
            return Some(at);
        }
    }
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

    #[test]
    fn the_first_frames_size_is_read_past_tables_and_extensions() {
        let mut gif = Cursor::new(Vec::new());
        image::RgbaImage::new(30, 20)
            .write_to(&mut gif, image::ImageFormat::Gif)
            .unwrap();
        assert_eq!(first_frame_size(gif.get_ref()), Some((30, 20)));
        assert_eq!(decoder_bytes(gif.get_ref()), 3000 + 64 * 1024);
        assert_eq!(first_frame_size(NO_TABLE), Some((1, 1)));
        assert_eq!(first_frame_size(&NO_TABLE[..14]), None);
        assert_eq!(frame_count(gif.get_ref(), 10), 1);
    }

    #[test]
    fn an_animations_images_are_counted() {
        use image::codecs::gif::GifEncoder;
        let frame = |shade| {
            image::Frame::new(image::RgbaImage::from_pixel(
                20,
                10,
                image::Rgba([shade; 4]),
            ))
        };
        let mut gif = Vec::new();
        GifEncoder::new(&mut gif)
            .encode_frames([frame(0), frame(255)])
            .unwrap();
        assert_eq!(frame_count(&gif, 10), 2);
        assert_eq!(frame_count(&gif, 1), 1);
        assert_eq!(frame_sizes(&gif).collect::<Vec<_>>(), [(20, 10), (20, 10)]);
        // Cut anywhere: read as far as it goes, without a panic.
        for len in 0..gif.len() {
            assert!(frame_count(&gif[..len], 10) <= 2);
        }
        assert_eq!(frame_count(&gif[..20], 10), 0);
    }
}
