//! Animation: an animated image (a GIF, a WebP: a format whose row has a
//! [`FrameReader`]) as every one of its frames at the thumbnail's size, when the decode stage animates
//! ([`crate::DecodeConfig::animation`]).
//!
//! Runs inside a decode, on its thread, after the route has read the
//! header and held the image to the limits; keeps nothing. The frames are
//! counted from the file's structure before any is decoded, so an
//! animation over the frame or byte limit costs no more than its first
//! frame. `image`'s decoders compose each frame on the canvas; each is
//! then fitted as a still image is. A frame the decoder refuses after the
//! first ends the animation there, as browsers show what they could read.

use std::sync::Arc;
use std::time::Duration;

use image::{DynamicImage, Limits, RgbaImage};

use super::AnimationLimits;
use super::formats;
use super::formats::{Decoder, FrameReader};
use super::resize::Pixels;
use crate::thumbnail::AnimationFrame;

/// Bytes the frame decoders hold beyond a still decode of the same
/// image: the canvas the frames are composed on and the composed frame
/// handed out, each the whole screen in RGBA.
pub(super) fn canvas_bytes(width: u32, height: u32) -> u64 {
    u64::from(width) * u64::from(height) * 4 * 2
}

/// Every frame of the animation in `bytes`, a `screen` of width x height
/// pixels, each composed and passed through `fit` (crop, resize, turn),
/// with its delay. `None` when it is not to be played: over `limits`
/// (counted before decoding: the frames, the bytes of the fitted frames
/// with `frame_bytes` one's, the pixels decoded), a frame that claims more
/// than the screen (the decoder would allocate for it), fewer than two
/// frames read, or a decoder that refuses the file; the route then decodes
/// its first frame as a still image.
pub(super) fn frames(
    bytes: &[u8],
    reader: &FrameReader,
    screen: (u32, u32),
    frame_bytes: u64,
    limits: AnimationLimits,
    image_limits: Limits,
    fit: impl Fn(Pixels) -> Result<RgbaImage, String>,
) -> Option<Vec<AnimationFrame>> {
    let max_frames = limits.max_frames as usize;
    let counted = (reader.count)(bytes, max_frames + 1);
    let screen_pixels = u64::from(screen.0) * u64::from(screen.1);
    if counted < 2
        || counted > max_frames
        || (counted as u64).saturating_mul(frame_bytes) > limits.max_bytes
        || (counted as u64).saturating_mul(screen_pixels) > limits.max_pixels
        || !(reader.fit)(bytes, screen, counted)
    {
        return None;
    }
    let decoded = (reader.decode)(bytes, image_limits)?;
    let mut frames = Vec::with_capacity(counted);
    // `counted` bounds the work even if the decoder finds more frames
    // than the walk did.
    for frame in decoded.take(counted) {
        let Ok(frame) = frame else { break };
        let delay = Duration::from(frame.delay());
        let pixels = Pixels::from_image(DynamicImage::ImageRgba8(frame.into_buffer()));
        let Ok(fitted) = fit(pixels) else { break };
        frames.push(AnimationFrame {
            pixels: Arc::from(fitted.into_raw()),
            delay,
        });
    }
    (frames.len() >= 2).then_some(frames)
}

/// How many frames of `bytes` a decode that plays animations of at most
/// `max_frames` decodes: 1 for a still image or an animation it will not
/// play. What the decode pool weighs a job by.
pub(crate) fn frames_decoded(bytes: &[u8], max_frames: u32) -> u64 {
    let reader = match formats::detect(bytes).map(|format| &format.decoder) {
        Some(Decoder::Image(raster)) => raster.frames.as_ref(),
        _ => None,
    };
    let Some(reader) = reader else {
        return 1;
    };
    match (reader.count)(bytes, max_frames as usize + 1) as u64 {
        count if count > u64::from(max_frames) => 1,
        count => count.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::gif;
    use image::codecs::gif::GifEncoder;
    use image::{Delay, Frame, Rgba};

    /// A `frames`-frame GIF of 40x20, frame `i` all grey level `i * 40`,
    /// each shown `delay_ms`.
    pub(crate) fn gif(frames: u8, delay_ms: u32) -> Vec<u8> {
        let mut out = Vec::new();
        GifEncoder::new(&mut out)
            .encode_frames((0..frames).map(|i| {
                let shade = i.wrapping_mul(40);
                Frame::from_parts(
                    RgbaImage::from_pixel(40, 20, Rgba([shade, shade, shade, 255])),
                    0,
                    0,
                    Delay::from_numer_denom_ms(delay_ms, 1),
                )
            }))
            .unwrap();
        out
    }

    const LIMITS: AnimationLimits = AnimationLimits {
        max_frames: 10,
        max_bytes: 1024 * 1024,
        max_pixels: 1024 * 1024,
    };

    fn halve(pixels: Pixels) -> Result<RgbaImage, String> {
        let crop = (0.0, 0.0, f64::from(pixels.width), f64::from(pixels.height));
        pixels.into_rgba(crop, 20, 10)
    }

    #[test]
    fn every_frame_is_fitted_with_its_delay() {
        let frames = frames(
            &gif(3, 70),
            &gif::FRAMES,
            (40, 20),
            800,
            LIMITS,
            Limits::default(),
            halve,
        )
        .unwrap();
        assert_eq!(frames.len(), 3);
        for (i, frame) in frames.iter().enumerate() {
            assert_eq!(frame.pixels.len(), 20 * 10 * 4);
            assert_eq!(frame.pixels[0], (i * 40) as u8, "frame {i}'s own picture");
            assert_eq!(frame.delay, Duration::from_millis(70));
        }
    }

    #[test]
    fn over_a_limit_or_a_single_frame_is_not_played() {
        let decode = |bytes: &[u8], frame_bytes, limits| {
            frames(
                bytes,
                &gif::FRAMES,
                (40, 20),
                frame_bytes,
                limits,
                Limits::default(),
                halve,
            )
        };
        let eleven = gif(11, 50);
        assert_eq!((gif::FRAMES.count)(&eleven, 100), 11);
        assert!(
            decode(&eleven, 800, LIMITS).is_none(),
            "11 frames, 10 allowed"
        );
        let ten = gif(10, 50);
        assert_eq!(decode(&ten, 800, LIMITS).map(|f| f.len()), Some(10));
        let bytes = AnimationLimits {
            max_bytes: 10 * 800 - 1,
            ..LIMITS
        };
        assert!(decode(&ten, 800, bytes).is_none(), "one byte over");
        let pixels = AnimationLimits {
            max_pixels: 10 * 40 * 20 - 1,
            ..LIMITS
        };
        assert!(decode(&ten, 800, pixels).is_none(), "one pixel over");
        assert!(decode(&gif(1, 50), 800, LIMITS).is_none());
        assert_eq!(frames_decoded(&ten, 10), 10);
        assert_eq!(frames_decoded(&eleven, 10), 1, "not played");
        assert_eq!(frames_decoded(b"\x89PNG", 10), 1);
    }

    #[test]
    fn a_frame_larger_than_the_screen_is_not_played() {
        // A 40x20 screen and two images, their pixel data a stub: only
        // the descriptors are read.
        let image = |width: u16, height: u16| {
            let mut descriptor = vec![0x2C, 0, 0, 0, 0];
            descriptor.extend_from_slice(&width.to_le_bytes());
            descriptor.extend_from_slice(&height.to_le_bytes());
            descriptor.extend_from_slice(&[0x00, 0x02, 0x02, 0x4C, 0x01, 0x00]);
            descriptor
        };
        let file = |second: Vec<u8>| {
            [
                b"GIF89a".to_vec(),
                vec![40, 0, 20, 0, 0x00, 0, 0],
                image(40, 20),
                second,
                vec![0x3B],
            ]
            .concat()
        };
        let fits = file(image(40, 20));
        assert!((gif::FRAMES.fit)(&fits, (40, 20), 2));
        let claims = file(image(4000, 4000));
        assert_eq!(
            gif::frame_sizes(&claims).collect::<Vec<_>>(),
            [(40, 20), (4000, 4000)]
        );
        assert!(!(gif::FRAMES.fit)(&claims, (40, 20), 2));
    }
}
