//! PNG's own fix: the transparency of a greyscale PNG of 1, 2 or 4 bits a
//! sample whose `tRNS` chunk names one grey as transparent. The png crate
//! expands such samples to 8 bits with an alpha channel, but every pixel
//! comes out opaque (it compares the key at another bit depth, and takes
//! a key wider than the depth as no key); libpng, browsers and Pillow use
//! the key's low bits and show its pixels transparent. Found by the `realworld`
//! comparison on Pillow's `1_trns.png`.
//!
//! Runs inside a decode, on the decode thread that called it, after the
//! full decode; reads only the chunks before the image data, and keeps
//! nothing.
//!
//! And PNG's own count for the decode limit, [`DECODER_BYTES`].

use image::DynamicImage;

/// Bytes the PNG decoder holds besides the image it returns: its inflate
/// state and window, and its rows. Measured with the peak allocator
/// (`pipeline/tests/bomb.rs`) over RGB, RGBA and grey-and-alpha PNGs from
/// 30x3200 to 16000x100: at most 177 KB beyond the rest of the count,
/// whatever the image's size.
pub(super) const DECODER_BYTES: u64 = 256 * 1024;

/// The transparent grey of a greyscale PNG of fewer than 8 bits a sample,
/// expanded to 8 bits as the decoder expands its samples; `None` for any
/// other PNG.
fn grey_key(bytes: &[u8]) -> Option<u8> {
    let header = bytes.get(8..33)?;
    if &header[4..8] != b"IHDR" {
        return None;
    }
    let (bits, color_type) = (header[16], header[17]);
    if color_type != 0 || !matches!(bits, 1 | 2 | 4) {
        return None;
    }
    let mut at: usize = 33;
    while let Some(chunk) = bytes.get(at..at.checked_add(8)?) {
        let length = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) as usize;
        match &chunk[4..8] {
            b"tRNS" if length == 2 => {
                let key = bytes.get(at.checked_add(8)?..at.checked_add(10)?)?;
                let key = u16::from_be_bytes([key[0], key[1]]);
                // Only the sample's own bits count: libpng (and so
                // browsers) mask a key too wide for the depth, as Pillow's
                // `1_trns.png` (a 1-bit file keyed 255) needs.
                let max = (1u16 << bits) - 1;
                return Some((u32::from(key & max) * 255 / u32::from(max)) as u8);
            }
            b"IDAT" | b"IEND" => return None,
            _ => at = at.checked_add(length)?.checked_add(12)?,
        }
    }
    None
}

/// Makes the pixels of `image`, decoded from the PNG `bytes`, that have the
/// PNG's transparent grey transparent, and the others opaque, when it is
/// a greyscale PNG of fewer than 8 bits with such a key.
pub(super) fn restore_grey_key(bytes: &[u8], image: &mut DynamicImage) {
    let Some(key) = grey_key(bytes) else { return };
    if let DynamicImage::ImageLumaA8(pixels) = image {
        for pixel in pixels.pixels_mut() {
            pixel[1] = if pixel[0] == key { 0 } else { 255 };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4x1 1-bit greyscale PNG, black white black white, whose tRNS
    /// makes white transparent.
    fn one_bit_with_key() -> Vec<u8> {
        fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let start = out.len();
            out.extend_from_slice(kind);
            out.extend_from_slice(data);
            let crc = crc32(&out[start..]);
            out.extend_from_slice(&crc.to_be_bytes());
        }
        fn crc32(bytes: &[u8]) -> u32 {
            let mut crc = !0u32;
            for &byte in bytes {
                crc ^= u32::from(byte);
                for _ in 0..8 {
                    crc = if crc & 1 == 1 {
                        (crc >> 1) ^ 0xEDB8_8320
                    } else {
                        crc >> 1
                    };
                }
            }
            !crc
        }
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        chunk(&mut png, b"IHDR", &[0, 0, 0, 4, 0, 0, 0, 1, 1, 0, 0, 0, 0]);
        // 255: wider than one bit, as in Pillow's `1_trns.png`.
        chunk(&mut png, b"tRNS", &[0, 255]);
        // One row: filter 0, then 0101 in the top bits; stored uncompressed.
        let row = [0u8, 0b0101_0000];
        let adler = {
            let (mut a, mut b) = (1u32, 0u32);
            for &byte in &row {
                a = (a + u32::from(byte)) % 65_521;
                b = (b + a) % 65_521;
            }
            (b << 16) | a
        };
        let mut zlib = vec![0x78, 0x01, 0x01, 2, 0, !2, 0xFF];
        zlib.extend_from_slice(&row);
        zlib.extend_from_slice(&adler.to_be_bytes());
        chunk(&mut png, b"IDAT", &zlib);
        chunk(&mut png, b"IEND", &[]);
        png
    }

    #[test]
    fn a_one_bit_grey_key_makes_its_pixels_transparent() {
        let png = one_bit_with_key();
        assert_eq!(grey_key(&png), Some(255));
        let mut image = image::load_from_memory(&png).unwrap();
        restore_grey_key(&png, &mut image);
        let alpha: Vec<u8> = image.to_rgba8().pixels().map(|p| p[3]).collect();
        assert_eq!(alpha, [255, 0, 255, 0]);
        // Other PNGs are left alone.
        assert_eq!(grey_key(&png[..20]), None);
        assert_eq!(grey_key(b"not a png at all, not at all....."), None);
    }
}
