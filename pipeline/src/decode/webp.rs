//! WebP's own counts and checks: what its decoder holds besides the
//! pixels, for the decode limit, and whether its chunks fit in the file
//! before any of their contents is read.
//!
//! Its row of the format table (`FORMAT`) names them, with its EXIF
//! reading and its frames' reader.
//!
//! Runs inside a decode, on the decode thread that called it, on the
//! file's first bytes and chunk headers; keeps nothing.

use std::io::Cursor;

use image::codecs::webp::WebPDecoder;
use image::metadata::Orientation;
use image::{AnimationDecoder, ImageDecoder, ImageFormat};

use super::fitting;
use super::formats::{Decoder, Format, FrameReader, Raster, Signature};

/// WebP's row of the format table. `image` decodes it to 8-bit RGB(A).
pub(super) const FORMAT: Format = Format {
    name: "WebP",
    media_types: &["image/webp"],
    signature: Signature::Magic(&[(0, b"RIFF"), (8, b"WEBP")]),
    decoder: Decoder::Image(Raster {
        decoder_bytes,
        orientation,
        decodes_to_rgba: true,
        frames: Some(FrameReader {
            count: frame_count,
            fit: frames_fit,
            decode: |bytes, limits| {
                let mut decoder = WebPDecoder::new(Cursor::new(bytes)).ok()?;
                decoder.set_limits(limits).ok()?;
                Some(decoder.into_frames())
            },
        }),
        ..Raster::of(ImageFormat::WebP)
    }),
};

/// How the camera held the picture. A WebP whose chunks claim more than
/// the file holds is not asked (its decoder would allocate what the EXIF
/// chunk claims). Its EXIF chunk may begin with JPEG's `Exif\0\0` before
/// its TIFF header (as Pillow and other writers put it); `image` reads the
/// TIFF header only, so such a chunk is read here, as browsers read it.
fn orientation(bytes: &[u8], header: &mut dyn ImageDecoder) -> Orientation {
    if !chunks_fit(bytes) {
        return Orientation::NoTransforms;
    }
    match fitting::orientation_of(header) {
        Orientation::NoTransforms => header
            .exif_metadata()
            .ok()
            .flatten()
            .and_then(|exif| {
                exif.strip_prefix(b"Exif\0\0")
                    .and_then(Orientation::from_exif_chunk)
            })
            .unwrap_or(Orientation::NoTransforms),
        orientation => orientation,
    }
}

/// Bytes the WebP decoder holds besides the pixels it returns, measured
/// with the peak allocator (`pipeline/tests/bomb.rs`): a lossy (VP8) frame
/// keeps its Y, U and V planes, 1.5 bytes per pixel (in 16x16 macroblocks);
/// a lossless (VP8L) one, and an extended file that may hold either, an
/// ARGB word per pixel. An extended file's frame is counted at the size its
/// own header claims when that is more: a 3.6 KB file of a 128x128 canvas
/// whose frame claimed 16383x16383 took 403 MB under the 268 MB limit
/// when only the canvas was counted (found by `decode-fuzz`).
fn decoder_bytes(bytes: &[u8], width: u32, height: u32) -> u64 {
    let (width, height) = (u64::from(width), u64::from(height));
    let planes =
        |width: u64, height: u64| width.next_multiple_of(16) * height.next_multiple_of(16) * 3 / 2;
    match bytes.get(12..16) {
        Some(b"VP8 ") => planes(width, height),
        _ => {
            let frame = match first_frame(bytes).or_else(|| first_animation_frame(bytes)) {
                Some(Frame::Lossy(w, h)) => planes(w.into(), h.into()),
                Some(Frame::Lossless(w, h)) => u64::from(w) * u64::from(h) * 4,
                None => 0,
            };
            (width * height * 4).max(frame)
        }
    }
}

/// How many frames (`ANMF` chunks) an animation holds, counting no
/// further than `up_to`; 0 for a file without them, or whose header does
/// not set the animation flag.
fn frame_count(bytes: &[u8], up_to: usize) -> usize {
    animation_frames(bytes).take(up_to).count()
}

/// Whether each of the first `up_to` frames, and the bitstream inside it
/// (whose size the decoder allocates for before comparing it with the
/// frame's), claims no more than the `screen`.
fn frames_fit(bytes: &[u8], screen: (u32, u32), up_to: usize) -> bool {
    animation_frames(bytes).take(up_to).all(|(at, size)| {
        // The decoder steps to the next frame without the padding byte of
        // an odd chunk: it would read other bytes than these.
        size % 2 == 0
            && anmf_frame(bytes, at, size)
                .is_some_and(|(width, height)| width <= screen.0 && height <= screen.1)
    })
}

/// The size an `ANMF` chunk at `at` (of `size` bytes) declares, if its
/// bitstream declares the same: X, Y, width - 1 and height - 1 in 24 bits
/// each, the duration and flags, then the bitstream.
fn anmf_frame(bytes: &[u8], at: usize, size: usize) -> Option<(u32, u32)> {
    let side = |at: usize| -> Option<u32> {
        let b = bytes.get(at..at + 3)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], 0]) + 1)
    };
    let (width, height) = (side(at + 14)?, side(at + 17)?);
    let (Frame::Lossy(w, h) | Frame::Lossless(w, h)) = anmf_bitstream(bytes, at, size)?;
    ((w, h) == (width, height)).then_some((w, h))
}

/// The size the bitstream of the `ANMF` chunk at `at` claims, read as the
/// decoder reads it: an `ALPH` chunk or none, then the bitstream, taken as
/// `VP8 ` after an `ALPH` chunk whatever its tag.
fn anmf_bitstream(bytes: &[u8], at: usize, size: usize) -> Option<Frame> {
    let frame = bytes.get(..at.checked_add(8)?.checked_add(size)?.min(bytes.len()))?;
    let mut chunk = at.checked_add(24)?;
    let mut tag = frame.get(chunk..chunk.checked_add(4)?)?;
    if tag == b"ALPH" {
        let alpha = u32::from_le_bytes(frame.get(chunk + 4..chunk + 8)?.try_into().ok()?) as usize;
        chunk = chunk
            .checked_add(8)?
            .checked_add(alpha)?
            .checked_add(alpha & 1)?;
        tag = b"VP8 ";
    }
    bitstream(tag, frame.get(chunk.checked_add(8)?..)?)
}

/// The size a bitstream of this chunk `tag` claims: `VP8 ` or `VP8L`.
fn bitstream(tag: &[u8], body: &[u8]) -> Option<Frame> {
    match tag {
        b"VP8 " => lossy_size(body).map(|(w, h)| Frame::Lossy(w, h)),
        b"VP8L" => lossless_size(body).map(|(w, h)| Frame::Lossless(w, h)),
        _ => None,
    }
}

/// A `VP8 ` key frame's 14-bit width and height: a 3-byte tag, the start
/// code, then the sizes.
fn lossy_size(body: &[u8]) -> Option<(u32, u32)> {
    if body.get(3..6) != Some(&[0x9d, 0x01, 0x2a][..]) {
        return None;
    }
    let side = |at: usize| -> Option<u32> {
        Some(u32::from(u16::from_le_bytes(body.get(at..at + 2)?.try_into().ok()?)) & 0x3fff)
    };
    Some((side(6)?, side(8)?))
}

/// A `VP8L` bitstream's width and height: the signature byte, then 14-bit
/// width - 1 and height - 1.
fn lossless_size(body: &[u8]) -> Option<(u32, u32)> {
    let bits = u32::from_le_bytes(body.get(1..5)?.try_into().ok()?);
    Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
}

/// The first frame of an animation, as the decoder reads it for a still
/// image: the size its bitstream claims, whatever its frame says.
fn first_animation_frame(bytes: &[u8]) -> Option<Frame> {
    let (at, size) = animation_frames(bytes).next()?;
    anmf_bitstream(bytes, at, size)
}

/// Where each top-level `ANMF` chunk starts and its size, in a file whose
/// `VP8X` header sets the animation flag.
fn animation_frames(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let animated =
        bytes.get(12..16) == Some(b"VP8X") && bytes.get(20).is_some_and(|flags| flags & 0x02 != 0);
    let mut at = if animated { 12usize } else { usize::MAX };
    std::iter::from_fn(move || {
        loop {
            let header = bytes.get(at..at.checked_add(8)?)?;
            let size = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
            let chunk = at;
            at = size
                .checked_add(size & 1)
                .and_then(|padded| padded.checked_add(8))
                .and_then(|step| at.checked_add(step))
                .unwrap_or(usize::MAX);
            if &header[..4] == b"ANMF" {
                return Some((chunk, size));
            }
        }
    })
}

/// A WebP frame's size as its own header declares it.
#[derive(Debug, PartialEq)]
enum Frame {
    Lossy(u32, u32),
    Lossless(u32, u32),
}

/// The first top-level `VP8 ` or `VP8L` chunk's frame size (an animation's
/// frames are inside `ANMF` chunks, not read here).
fn first_frame(bytes: &[u8]) -> Option<Frame> {
    frame_from(bytes, 12)
}

/// The size the first `VP8 ` or `VP8L` chunk from `at` on declares.
fn frame_from(bytes: &[u8], mut at: usize) -> Option<Frame> {
    loop {
        let header = bytes.get(at..at.checked_add(8)?)?;
        let size = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let body = bytes.get(at + 8..)?;
        if matches!(&header[..4], b"VP8 " | b"VP8L") {
            return bitstream(&header[..4], body);
        }
        at = at.checked_add(size)?.checked_add(8 + (size & 1))?;
    }
}

/// Whether every chunk of a RIFF WebP fits in the file: each chunk
/// header's size at most what follows it. The decoder allocates a
/// metadata chunk (EXIF) at the size it claims before reading it, so a
/// 4 KB file claiming a 4 GB EXIF chunk made it allocate 4 GB (found by
/// `decode-fuzz`). A file cut short in its image data fits; it is the
/// claims past the end that do not.
fn chunks_fit(bytes: &[u8]) -> bool {
    let mut at = 12usize;
    while let Some(header) = bytes.get(at..at + 8) {
        let size = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let remaining = bytes.len() - at - 8;
        if size > remaining {
            // The image data itself may be cut short; a metadata chunk
            // claiming more than the file holds may not.
            return matches!(&header[..4], b"VP8 " | b"VP8L" | b"ALPH" | b"ANMF");
        }
        at += 8 + size + (size & 1);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(tag: &[u8; 4], size: u32, body: &[u8]) -> Vec<u8> {
        let mut out = tag.to_vec();
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn a_metadata_chunk_claiming_more_than_the_file_does_not_fit() {
        let riff = b"RIFF\0\0\0\0WEBP".to_vec();
        let canvas = chunk(b"VP8X", 10, &[8, 0, 0, 0, 127, 0, 0, 127, 0, 0]);
        let frame = chunk(b"VP8 ", 4, &[1, 2, 3, 4]);
        let fits = [riff.clone(), canvas.clone(), frame.clone()].concat();
        assert!(chunks_fit(&fits));
        let exif_bomb = [fits.clone(), chunk(b"EXIF", u32::MAX - 8, b"Exif")].concat();
        assert!(!chunks_fit(&exif_bomb));
        // Image data cut short is the decoder's to judge.
        let cut = [riff, canvas, chunk(b"VP8 ", 5000, &[1, 2, 3])].concat();
        assert!(chunks_fit(&cut));
    }

    #[test]
    fn an_animations_frames_are_counted_and_held_to_the_screen() {
        // Pillow's `iss634.webp`: 42 frames on a 245x245 canvas (HPND
        // licence, `tests/it/corpus/pillow/README.md`).
        let animation = include_bytes!("../../tests/it/corpus/pillow/iss634.webp");
        assert_eq!(frame_count(animation, 100), 42);
        assert_eq!(frame_count(animation, 5), 5);
        assert!(frames_fit(animation, (245, 245), 42));
        assert!(!frames_fit(animation, (100, 100), 42));
        // Its bitstreams are what is read: one claiming more than its
        // frame is refused.
        let still = [
            b"RIFF\0\0\0\0WEBP".to_vec(),
            chunk(b"VP8 ", 4, &[1, 2, 3, 4]),
        ]
        .concat();
        assert_eq!(frame_count(&still, 100), 0);
        for len in 0..200 {
            let _ = frames_fit(&animation[..len], (245, 245), 42);
        }
        // A frame of 128x128 whose bitstream, after an ALPH chunk, is a
        // chunk of another tag that the decoder reads as VP8 anyway,
        // claiming 16383x16383; and the same as the first frame of a
        // file decoded as a still.
        let canvas = chunk(b"VP8X", 10, &[0x02, 0, 0, 0, 127, 0, 0, 127, 0, 0]);
        let key = [0, 0, 0, 0x9d, 0x01, 0x2a, 0xff, 0x3f, 0xff, 0x3f];
        let header = [0, 0, 0, 0, 0, 0, 127, 0, 0, 127, 0, 0, 100, 0, 0, 0];
        let body = [
            header.to_vec(),
            chunk(b"ALPH", 2, &[0, 0]),
            chunk(b"JUNK", 10, &key),
        ]
        .concat();
        let hostile = [
            b"RIFF\0\0\0\0WEBP".to_vec(),
            canvas,
            chunk(b"ANMF", body.len() as u32, &body),
        ]
        .concat();
        assert_eq!(frame_count(&hostile, 10), 1);
        assert!(!frames_fit(&hostile, (128, 128), 10));
        assert_eq!(decoder_bytes(&hostile, 128, 128), 16384 * 16384 * 3 / 2);
    }

    #[test]
    fn an_extended_files_frame_is_counted_at_the_size_it_claims() {
        let riff = b"RIFF\0\0\0\0WEBP".to_vec();
        let canvas = chunk(b"VP8X", 10, &[0, 0, 0, 0, 127, 0, 0, 127, 0, 0]);
        // A key frame claiming 16383x16383.
        let key = [0, 0, 0, 0x9d, 0x01, 0x2a, 0xff, 0x3f, 0xff, 0x3f];
        let file = [riff.clone(), canvas.clone(), chunk(b"VP8 ", 10, &key)].concat();
        assert_eq!(first_frame(&file), Some(Frame::Lossy(16383, 16383)));
        assert_eq!(decoder_bytes(&file, 128, 128), 16384 * 16384 * 3 / 2);
        // A frame of the canvas's size: the canvas's count, as before.
        let small = [0, 0, 0, 0x9d, 0x01, 0x2a, 128, 0, 128, 0];
        let file = [riff, canvas, chunk(b"VP8 ", 10, &small)].concat();
        assert_eq!(decoder_bytes(&file, 128, 128), 128 * 128 * 4);
    }
}
