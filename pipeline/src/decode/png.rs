//! PNG's own fixes, each from the chunks before the image data (walked by
//! [`chunks_before_pixels`], never inflated):
//!
//! - the transparency of a greyscale PNG of 1, 2 or 4 bits a sample whose
//!   `tRNS` chunk names one grey as transparent. The png crate expands such
//!   samples to 8 bits with an alpha channel, but every pixel comes out
//!   opaque (it compares the key at another bit depth, and takes a key
//!   wider than the depth as no key); libpng, browsers and Pillow use the
//!   key's low bits and show its pixels transparent. Found by the
//!   `realworld` comparison on Pillow's `1_trns.png`;
//! - a large colour profile (`iCCP`) left out before the header is read:
//!   the png crate inflates it whole as it reads the header (a 1 MB PNG's
//!   profile can inflate to a gigabyte), and no thumbnail uses it.
//!
//! And PNG's own count for the decode limit, [`decoder_bytes`]. Its row of
//! the format table (`FORMAT`) names them. Runs inside a decode, on the
//! decode thread that called it; keeps nothing.

use image::{DynamicImage, ImageFormat};

use super::formats::{Decoder, Format, Prepared, Raster, Signature};

/// PNG's row of the format table.
pub(super) const FORMAT: Format = Format {
    name: "PNG",
    media_types: &["image/png"],
    signature: Signature::Magic(&[(0, b"\x89PNG\r\n\x1a\n")]),
    decoder: Decoder::Image(Raster {
        prepare: |bytes, _| {
            without_large_profile(bytes).map(|bytes| Prepared {
                bytes,
                source_size: None,
            })
        },
        decoder_bytes: |bytes, _, _| decoder_bytes(bytes),
        after_decode: restore_grey_key,
        ..Raster::of(ImageFormat::Png)
    }),
};

/// Bytes the PNG decoder holds besides the image it returns: its inflate
/// state and window, and its rows. Measured with the peak allocator
/// (`pipeline/tests/bomb.rs`) over RGB, RGBA and grey-and-alpha PNGs from
/// 30x3200 to 16000x100: at most 177 KB beyond the rest of the count,
/// whatever the image's size.
const DECODER_BYTES: u64 = 256 * 1024;

/// The largest colour profile, compressed, that is read with the header:
/// deflate inflates at most 1032 times, so it is at most 4 MiB inflated.
/// Real profiles are smaller (sRGB's is 2.6 KB compressed, Display P3's
/// half a kilobyte); a larger one is left out.
const MAX_PROFILE_BYTES: usize = 4 * 1024;

/// The most deflate inflates one byte to.
const INFLATE_RATIO: u64 = 1032;

/// The chunks of the PNG `bytes` before its image data, each its type and
/// its data; ends at the first `IDAT` or `IEND`, or where the chunks stop
/// making sense.
pub(super) fn chunks_before_pixels(bytes: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    let mut at: usize = 8;
    std::iter::from_fn(move || {
        let header = bytes.get(at..at.checked_add(8)?)?;
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = [header[4], header[5], header[6], header[7]];
        if &kind == b"IDAT" || &kind == b"IEND" {
            return None;
        }
        let data_start = at + 8;
        let data = bytes.get(data_start..data_start.checked_add(length)?)?;
        at = data_start.checked_add(length)?.checked_add(4)?;
        Some((kind, data))
    })
}

/// The PNG `bytes` without their colour profiles, if one is larger than
/// [`MAX_PROFILE_BYTES`] or there are several (the png crate reads the
/// next when the first is left out): a copy with every `iCCP` chunk
/// before the image data left out. `None` when they can be read as they
/// are.
pub(super) fn without_large_profile(bytes: &[u8]) -> Option<Vec<u8>> {
    let profiles: Vec<&[u8]> = chunks_before_pixels(bytes)
        .filter(|(kind, _)| kind == b"iCCP")
        .map(|(_, data)| data)
        .collect();
    if profiles.len() < 2 && profiles.iter().all(|data| data.len() <= MAX_PROFILE_BYTES) {
        return None;
    }
    let mut copy = Vec::with_capacity(bytes.len());
    let mut from = 0;
    for data in profiles {
        // The chunk: its length and type before the data, its CRC after.
        let start = data.as_ptr() as usize - bytes.as_ptr() as usize - 8;
        copy.extend_from_slice(&bytes[from..start]);
        from = start + 8 + data.len() + 4;
    }
    copy.extend_from_slice(&bytes[from..]);
    Some(copy)
}

/// What the PNG decoder holds of `bytes` besides its output: its buffers,
/// and its colour profile inflated (one of at most [`MAX_PROFILE_BYTES`],
/// once larger ones or others are left out).
pub(super) fn decoder_bytes(bytes: &[u8]) -> u64 {
    let profile = chunks_before_pixels(bytes)
        .find(|(kind, _)| kind == b"iCCP")
        .map_or(0, |(_, data)| data.len().min(MAX_PROFILE_BYTES) as u64);
    DECODER_BYTES + profile * INFLATE_RATIO
}

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
    let (_, key) = chunks_before_pixels(bytes).find(|(kind, _)| kind == b"tRNS")?;
    let key: [u8; 2] = key.try_into().ok()?;
    let key = u16::from_be_bytes(key);
    // Only the sample's own bits count: libpng (and so browsers) mask a key
    // too wide for the depth, as Pillow's `1_trns.png` (a 1-bit file keyed
    // 255) needs.
    let max = (1u16 << bits) - 1;
    Some((u32::from(key & max) * 255 / u32::from(max)) as u8)
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

    /// Appends a PNG chunk of `kind` with `data`, and its CRC.
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

    /// A 4x1 1-bit greyscale PNG, black white black white, whose tRNS
    /// makes white transparent.
    fn one_bit_with_key() -> Vec<u8> {
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

    /// `png` with an `iCCP` chunk of `size` bytes of data after its
    /// header (a profile's name and compression, then filler: only its
    /// length is read before it is left out).
    fn with_profile(png: &[u8], size: usize) -> Vec<u8> {
        let mut data = b"p\0\0".to_vec();
        data.resize(size, 0x55);
        let header_end = 8 + 8 + 13 + 4;
        let mut out = png[..header_end].to_vec();
        chunk(&mut out, b"iCCP", &data);
        out.extend_from_slice(&png[header_end..]);
        out
    }

    #[test]
    fn only_a_large_colour_profile_is_left_out_and_counted_at_most_its_bound() {
        let plain = one_bit_with_key();
        assert_eq!(without_large_profile(&plain), None);
        assert_eq!(decoder_bytes(&plain), DECODER_BYTES);
        let small = with_profile(&plain, MAX_PROFILE_BYTES);
        assert_eq!(without_large_profile(&small), None);
        assert_eq!(
            decoder_bytes(&small),
            DECODER_BYTES + MAX_PROFILE_BYTES as u64 * INFLATE_RATIO
        );
        let large = with_profile(&plain, MAX_PROFILE_BYTES + 1);
        let left_out = without_large_profile(&large).unwrap();
        assert_eq!(left_out, plain, "the PNG as it was without the chunk");
        // Two, however small: both left out, or the png crate would read
        // the second once the first is gone.
        let two = with_profile(&with_profile(&plain, 100), MAX_PROFILE_BYTES + 1);
        assert_eq!(without_large_profile(&two).unwrap(), plain);
        // A chunk that claims more than the file holds ends the walk.
        let mut cut = large.clone();
        cut.truncate(40);
        assert_eq!(without_large_profile(&cut), None);
    }
}
