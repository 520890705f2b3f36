//! The thumbnail files: a PNG's size and its text chunks (`Thumb::URI`,
//! `Thumb::MTime`, ...), read by walking its chunks; and a thumbnail
//! written as the standard's PNG with them. Plain functions on bytes;
//! keep nothing.

use std::collections::HashMap;

const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// What a thumbnail file says of itself, before its pixels are decoded.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct PngInfo {
    pub(super) width: u32,
    pub(super) height: u32,
    /// Its uncompressed text chunks (`tEXt`, and `iTXt` without
    /// compression), by keyword; the first of a keyword wins.
    pub(super) text: HashMap<String, String>,
}

impl PngInfo {
    /// A text chunk's value parsed as a whole number.
    pub(super) fn number(&self, key: &str) -> Option<u64> {
        self.text.get(key)?.trim().parse().ok()
    }
}

/// The size and text chunks of the PNG `bytes`, or `None` if they are not
/// a PNG's chunks: no signature, no header, or a chunk running past the
/// end.
pub(super) fn read_info(bytes: &[u8]) -> Option<PngInfo> {
    let mut rest = bytes.strip_prefix(SIGNATURE)?;
    let mut info = PngInfo::default();
    let mut header = false;
    while rest.len() >= 12 {
        let length = u32::from_be_bytes(rest[..4].try_into().ok()?) as usize;
        let kind = &rest[4..8];
        let data = rest.get(8..8usize.checked_add(length)?)?;
        match kind {
            b"IHDR" if data.len() >= 8 => {
                info.width = u32::from_be_bytes(data[..4].try_into().ok()?);
                info.height = u32::from_be_bytes(data[4..8].try_into().ok()?);
                header = true;
            }
            b"tEXt" => {
                if let Some((key, value)) = split_at_nul(data) {
                    // Latin-1: each byte is the code point.
                    let value = value.iter().map(|&b| char::from(b)).collect();
                    add_text(&mut info, key, value);
                }
            }
            b"iTXt" => {
                if let Some((key, value)) = international_text(data) {
                    add_text(&mut info, key, value);
                }
            }
            b"IEND" => break,
            _ => {}
        }
        // The chunk, and its CRC.
        rest = rest.get(12 + length..)?;
    }
    header.then_some(info)
}

fn add_text(info: &mut PngInfo, key: &[u8], value: String) {
    let key = key.iter().map(|&b| char::from(b)).collect();
    info.text.entry(key).or_insert(value);
}

fn split_at_nul(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let nul = memchr::memchr(0, data)?;
    Some((&data[..nul], &data[nul + 1..]))
}

/// An `iTXt` chunk's keyword and text, if it is not compressed: keyword,
/// NUL, compression flag and method, language, NUL, translated keyword,
/// NUL, UTF-8 text.
fn international_text(data: &[u8]) -> Option<(&[u8], String)> {
    let (key, rest) = split_at_nul(data)?;
    let (&compressed, rest) = rest.split_first()?;
    if compressed != 0 {
        return None;
    }
    let rest = rest.get(1..)?;
    let (_language, rest) = split_at_nul(rest)?;
    let (_translated, text) = split_at_nul(rest)?;
    Some((key, String::from_utf8(text.to_vec()).ok()?))
}

/// The standard's thumbnail file: an 8-bit PNG of `width` x `height` RGBA
/// `pixels`, written as RGB when every pixel is opaque (the standard asks
/// for alpha; GNOME's and KDE's thumbnailers write photos as RGB), with `text` as
/// `tEXt` chunks (Latin-1: values outside it are written as `iTXt`) before
/// its pixels; deflated if `compressed`, otherwise stored (zlib's blocks
/// without compression, unfiltered), which any PNG reader reads.
///
/// Measured on 200 thumbnails of camera-like photos at 128 px (the png
/// crate's decoder): deflated at `Compression::Fast`, 27.7 KB and 100 us
/// to decode; its `Fastest`, 31.1 KB and 69 us; stored, 37.4 KB and 5 us.
/// On 59 camera photos, `Fast` gave RGB 21.4 KB (RGBA 24.3 KB), its
/// `Balanced` or `High` under 1% less at 10-20 times the encode, Pillow's
/// zlib level 6 20.1 KB: a photo's thumbnail is about 20 KB losslessly,
/// whatever the level.
pub(super) fn encode(
    width: u32,
    height: u32,
    pixels: &[u8],
    text: &[(&str, String)],
    compressed: bool,
) -> Result<Vec<u8>, png::EncodingError> {
    let mut bytes = Vec::with_capacity(pixels.len() / 2 + 1024);
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    let opaque = pixels.chunks_exact(4).all(|pixel| pixel[3] == u8::MAX);
    encoder.set_color(if opaque {
        png::ColorType::Rgb
    } else {
        png::ColorType::Rgba
    });
    encoder.set_depth(png::BitDepth::Eight);
    if compressed {
        encoder.set_compression(png::Compression::Fast);
    } else {
        encoder.set_compression(png::Compression::NoCompression);
        // What png 0.18 writes with no compression anyway; said, so that
        // no other version filters rows that nothing will pack.
        encoder.set_filter(png::Filter::NoFilter);
    }
    for (key, value) in text {
        if value.chars().all(|c| u32::from(c) < 256) {
            encoder.add_text_chunk((*key).to_owned(), value.clone())?;
        } else {
            encoder.add_itxt_chunk((*key).to_owned(), value.clone())?;
        }
    }
    let mut writer = encoder.write_header()?;
    if opaque {
        let rgb: Vec<u8> = pixels
            .chunks_exact(4)
            .flat_map(|pixel| [pixel[0], pixel[1], pixel[2]])
            .collect();
        writer.write_image_data(&rgb)?;
    } else {
        writer.write_image_data(pixels)?;
    }
    writer.finish()?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_written_is_read_back() {
        let text = [
            ("Thumb::URI", "file:///a%20b.jpg".to_owned()),
            ("Thumb::MTime", "1700000000".to_owned()),
            ("Software", "th\u{fc}mbpipe \u{1f4f7}".to_owned()),
        ];
        let png = encode(2, 1, &[1, 2, 3, 4, 5, 6, 7, 8], &text, true).unwrap();
        let info = read_info(&png).unwrap();
        assert_eq!((info.width, info.height), (2, 1));
        assert_eq!(info.text["Thumb::URI"], "file:///a%20b.jpg");
        assert_eq!(info.number("Thumb::MTime"), Some(1_700_000_000));
        assert_eq!(info.text["Software"], "th\u{fc}mbpipe \u{1f4f7}");
        // And the pixels are a PNG's that `image` reads.
        let decoded = image::load_from_memory(&png).unwrap().into_rgba8();
        assert_eq!(decoded.into_raw(), [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn an_opaque_thumbnail_is_written_as_rgb_and_one_with_alpha_as_rgba() {
        let opaque = encode(2, 1, &[1, 2, 3, 255, 5, 6, 7, 255], &[], false).unwrap();
        let see_through = encode(2, 1, &[1, 2, 3, 255, 5, 6, 7, 8], &[], true).unwrap();
        // The IHDR's colour type: 2 is RGB, 6 RGBA.
        assert_eq!((opaque[25], see_through[25]), (2, 6));
        let rgba = |png: &[u8]| {
            image::load_from_memory(png)
                .unwrap()
                .into_rgba8()
                .into_raw()
        };
        assert_eq!(rgba(&opaque), [1, 2, 3, 255, 5, 6, 7, 255]);
        assert_eq!(rgba(&see_through), [1, 2, 3, 255, 5, 6, 7, 8]);
    }

    #[test]
    fn a_stored_thumbnail_holds_its_pixels_as_they_are_and_a_deflated_one_packs_them() {
        // A flat grey 32x32: 3 KB of RGB, which deflate packs to a few bytes.
        let pixels = [128, 128, 128, 255].repeat(32 * 32);
        let stored = encode(32, 32, &pixels, &[], false).unwrap();
        let deflated = encode(32, 32, &pixels, &[], true).unwrap();
        let rgb_bytes = 32 * (1 + 32 * 3);
        assert!(stored.len() > rgb_bytes, "stored: {} bytes", stored.len());
        assert!(
            deflated.len() < rgb_bytes / 10,
            "deflated: {} bytes",
            deflated.len()
        );
        // Stored blocks: the IDAT's zlib stream's first block has BTYPE 00,
        // and every row is unfiltered (filter type 0).
        let idat = stored.windows(4).position(|w| w == b"IDAT").unwrap() + 4;
        assert_eq!((stored[idat + 2] >> 1) & 0b11, 0, "BTYPE");
        assert_eq!(stored[idat + 2 + 5], 0, "the first row's filter");
        for png in [&stored, &deflated] {
            let decoded = image::load_from_memory(png).unwrap().into_rgba8();
            assert_eq!(decoded.into_raw(), pixels);
        }
    }

    #[test]
    fn what_is_not_a_png_has_no_info() {
        let png = encode(1, 1, &[0; 4], &[], true).unwrap();
        assert!(read_info(&png[..20]).is_none(), "cut inside IHDR");
        assert!(read_info(b"GIF89a").is_none());
        assert!(read_info(&[]).is_none());
        // A chunk that claims 4 GB ends the walk, not the process.
        let mut huge = png.clone();
        huge[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(read_info(&huge).is_none());
    }
}
