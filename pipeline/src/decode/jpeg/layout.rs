//! JPEG's own checks: the file's layout read from its markers before any
//! decoder runs (to refuse a file with more scans than any real photo has,
//! and to count what the decoder will allocate), and the DCT scale that
//! still covers the thumbnail, which `libjpeg.rs` decodes at.
//!
//! Runs inside a decode, on the decode thread that called it; it starts no
//! threads and keeps nothing.

use std::ops::Range;

use image::metadata::Orientation;

use super::markers::FrameHeader;

/// Most scans a JPEG may have. A progressive photo has about ten (libjpeg's
/// default script has 10, mozjpeg's a dozen or so); a file with thousands
/// of tiny scans, each of which makes the decoder walk every block of the
/// image again, can keep a decoder busy for minutes. zune-jpeg, which the
/// full decode uses, stops at 100 too.
pub(super) const MAX_SCANS: usize = 100;

/// What a JPEG's markers say about it, read without decoding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(in crate::decode) struct JpegLayout {
    pub(in crate::decode) progressive: bool,
    /// Each component's horizontal and vertical sampling factors.
    pub(in crate::decode) sampling: Vec<(u8, u8)>,
    pub(in crate::decode) width: u32,
    pub(in crate::decode) height: u32,
    /// Scans counted, up to `MAX_SCANS + 1`.
    pub(in crate::decode) scans: usize,
    /// Frame headers (SOF markers) found. A JPEG has one; libjpeg sizes
    /// its buffers by the first and fails only at a second, after it has
    /// allocated (and zeroed) for the first, so a file with two is refused
    /// before any decoder sees it.
    pub(in crate::decode) frames: usize,
    /// The orientation the image's EXIF gives, if any.
    pub(in crate::decode) orientation: Option<Orientation>,
    /// The image's EXIF: where the TIFF structure of its first APP1
    /// segment that holds EXIF lies in the file.
    pub(in crate::decode) exif: Option<Range<usize>>,
    /// The JPEG thumbnail that EXIF points at (IFD1), if its frame header
    /// reads: the walk over its markers to it is the image's walk's.
    pub(in crate::decode) thumbnail: Option<ThumbnailAt>,
    /// Where the first scan's data starts: every header before it read.
    pub(in crate::decode) headers_end: Option<usize>,
    /// Stretches of bytes where a marker should have been, skipped.
    pub(in crate::decode) broken: usize,
}

/// Where a JPEG's embedded thumbnail lies in its file, and its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::decode) struct ThumbnailAt {
    pub(in crate::decode) bytes: Range<usize>,
    pub(in crate::decode) width: u32,
    pub(in crate::decode) height: u32,
}

impl JpegLayout {
    /// Refuses a layout no decoder should be given: more scans than
    /// [`MAX_SCANS`], more than one frame header, or a frame whose size is
    /// not the `width` x `height` the header reader found (the limits were
    /// checked against that size, and libjpeg allocates by the frame's).
    pub(in crate::decode) fn check(&self, width: u32, height: u32) -> Result<(), String> {
        if self.scans > MAX_SCANS {
            return Err(format!(
                "the JPEG has more than {MAX_SCANS} scans (a photo has about ten): decoding it \
                 could take minutes"
            ));
        }
        if self.frames > 1 {
            return Err("the JPEG has two frame headers (SOF markers); a JPEG has one".into());
        }
        if (self.width, self.height) != (width, height) {
            return Err(format!(
                "the JPEG's frame header says {}x{}, its header {width}x{height}",
                self.width, self.height
            ));
        }
        Ok(())
    }

    /// Takes the image's frame header: its size and sampling.
    pub(super) fn read_frame(&mut self, header: &FrameHeader) {
        (self.width, self.height) = (header.width, header.height);
        let factor = |f: usize| u8::try_from(f.max(1)).unwrap_or(u8::MAX);
        self.sampling = header
            .components
            .iter()
            .map(|c| (factor(c.h), factor(c.v)))
            .collect();
    }

    /// Bytes a decoder holds for this image at its full size, besides the
    /// RGBA the caller counts: one 8-bit plane per component, and for a
    /// progressive file, every component's DCT coefficients (two bytes
    /// each), which must all be kept until the last scan. Components are
    /// padded to whole blocks of the largest sampling factor, as decoders
    /// allocate them.
    pub(in crate::decode) fn decoder_bytes(&self) -> u64 {
        let per_sample = if self.progressive { 1 + 2 } else { 1 };
        self.samples().saturating_mul(per_sample)
    }

    /// Samples of all components at full size, padded to whole blocks.
    fn samples(&self) -> u64 {
        let h_max = u64::from(self.sampling.iter().map(|s| s.0).max().unwrap_or(1));
        let v_max = u64::from(self.sampling.iter().map(|s| s.1).max().unwrap_or(1));
        let mcus_across = u64::from(self.width).div_ceil(8 * h_max);
        let mcus_down = u64::from(self.height).div_ceil(8 * v_max);
        self.sampling
            .iter()
            .map(|&(h, v)| mcus_across * u64::from(h) * 8 * mcus_down * u64::from(v) * 8)
            .sum()
    }
}

/// The DCT scale, in eighths (1 to 8), at which a `width` x `height` JPEG
/// decodes to the smallest size that still covers `want_width` x
/// `want_height`: libjpeg scales by any M/8 while decoding, and the IDCT of
/// a scaled block is a smaller one, so a 4000x3000 photo bound for 256 px
/// decodes at 1/8 (500x375) and is resized the rest of the way.
pub(in crate::decode) fn scale_eighths(
    width: u32,
    height: u32,
    want_width: u32,
    want_height: u32,
) -> u32 {
    (1..8)
        .find(|&m| scaled_side(width, m) >= want_width && scaled_side(height, m) >= want_height)
        .unwrap_or(8)
}

/// A side of `side` pixels decoded at `eighths`/8, as libjpeg rounds it.
pub(in crate::decode) fn scaled_side(side: u32, eighths: u32) -> u32 {
    (u64::from(side) * u64::from(eighths)).div_ceil(8) as u32
}

impl JpegLayout {
    /// Bytes libjpeg allocates to decode this image at `eighths`/8, besides
    /// the output the caller counts: the sample planes at the scaled size,
    /// and for a file of several scans (progressive), every DCT coefficient
    /// of the full image (two bytes a sample), which it keeps until the
    /// last scan whatever the scale.
    pub(in crate::decode) fn scaled_decoder_bytes(&self, eighths: u32) -> u64 {
        let samples = self.samples();
        let planes = (samples * u64::from(eighths * eighths)).div_ceil(64);
        let coefficients = if self.progressive || self.scans > 1 {
            samples.saturating_mul(2)
        } else {
            0
        };
        planes.saturating_add(coefficients)
    }

    /// Bytes the DC-scan decoder (`dc_scans.rs`) allocates for this image,
    /// besides the output the caller counts: each block's DC (two bytes),
    /// and a plane at 1/8 of the image's size for each component.
    pub(in crate::decode) fn dc_decoder_bytes(&self) -> u64 {
        let plane = u64::from(self.width.div_ceil(8)) * u64::from(self.height.div_ceil(8));
        (self.samples().div_ceil(64).saturating_mul(2))
            .saturating_add(plane.saturating_mul(self.sampling.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    #[cfg(feature = "libjpeg")]
    use super::super::libjpeg::decode_scaled;
    use super::super::walk::layout_of;
    use super::*;
    #[cfg(feature = "libjpeg")]
    use crate::decode::resize::Layout;
    use crate::decode::{decode_thumbnail, route::tests::LIMITS};
    use crate::request::TargetSize;

    /// A JPEG is decoded at the smallest DCT scale that covers the
    /// thumbnail, and the thumbnail has the size and content of the full
    /// decode's.
    #[test]
    #[cfg(feature = "libjpeg")]
    fn jpegs_are_decoded_at_the_smallest_scale_that_covers_the_thumbnail() {
        assert_eq!(scale_eighths(4000, 3000, 256, 192), 1); // 500x375
        assert_eq!(scale_eighths(600, 600, 128, 128), 2); // 150x150
        assert_eq!(scale_eighths(600, 600, 256, 256), 4); // 300x300
        assert_eq!(scale_eighths(600, 600, 600, 600), 8);
        assert_eq!(scale_eighths(1920, 1080, 256, 144), 2); // 480x270
        assert_eq!(scale_eighths(3, 3, 1, 1), 1);
        assert_eq!(scaled_side(4001, 1), 501);
        let jpeg = fixture_server::picture::render(4242, 600, 600)
            .encode_jpeg(85)
            .unwrap();
        for (eighths, side) in [(1, 75), (3, 225), (8, 600)] {
            let pixels = decode_scaled(&jpeg, eighths).unwrap().unwrap();
            assert_eq!((pixels.width, pixels.height), (side, side));
            assert_eq!(pixels.layout, Layout::Rgb);
            assert_eq!(pixels.data.len(), (side * side * 3) as usize);
        }
        let url: Arc<str> = "http://x/a.jpg".into();
        for side in [32, 64, 128, 256, 600] {
            let thumb = decode_thumbnail(&url, &jpeg, TargetSize::square(side), LIMITS).unwrap();
            assert_eq!((thumb.width, thumb.height), (side, side));
            assert_eq!(
                fixture_server::decode_id(&thumb.pixels, side, side),
                Some(4242),
                "{side}"
            );
        }
    }

    /// libjpeg reports a fatal error by unwinding; it becomes an `Err`
    /// with libjpeg's message, and the thread goes on.
    #[test]
    #[cfg(feature = "libjpeg")]
    fn a_fatal_libjpeg_error_is_an_error_with_its_message() {
        let jpeg = fixture_server::picture::render(1, 64, 64)
            .encode_jpeg(85)
            .unwrap();
        // A frame header claiming 0 components.
        let frame = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        let mut broken = jpeg.clone();
        broken[frame + 9] = 0;
        let error = decode_scaled(&broken, 1).unwrap_err();
        assert!(error.contains("libjpeg"), "{error}");
        // Not a JPEG at all.
        assert!(decode_scaled(b"GIF89a", 1).is_err());
    }

    fn encode(
        pixels: &[u8],
        (width, height): (u16, u16),
        color: jpeg_encoder::ColorType,
        sampling: jpeg_encoder::SamplingFactor,
        progressive: bool,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, 85);
        encoder.set_sampling_factor(sampling);
        encoder.set_progressive(progressive);
        encoder.encode(pixels, width, height, color).unwrap();
        out
    }

    #[test]
    fn the_layout_is_read_from_the_markers() {
        use jpeg_encoder::{ColorType, SamplingFactor};
        let rgb = fixture_server::picture::render(7, 333, 222).pixels;
        let baseline = encode(
            &rgb,
            (333, 222),
            ColorType::Rgb,
            SamplingFactor::F_2_2,
            false,
        );
        let layout = layout_of(&baseline);
        assert_eq!(
            layout,
            JpegLayout {
                progressive: false,
                sampling: vec![(2, 2), (1, 1), (1, 1)],
                width: 333,
                height: 222,
                scans: 1,
                frames: 1,
                orientation: None,
                exif: None,
                thumbnail: None,
                headers_end: layout.headers_end,
                broken: 0,
            }
        );
        assert!(layout.headers_end.is_some_and(|end| end < baseline.len()));
        // 4:2:0 pads to 16x16 blocks: 336x224 luma, 168x112 per chroma.
        assert_eq!(layout.decoder_bytes(), 336 * 224 + 2 * 168 * 112);
        let progressive = encode(
            &rgb,
            (333, 222),
            ColorType::Rgb,
            SamplingFactor::F_1_1,
            true,
        );
        let layout = layout_of(&progressive);
        assert!(layout.progressive && layout.scans > 1, "{layout:?}");
        assert_eq!(layout.sampling, vec![(1, 1); 3]);
        // Every component at full size: a plane and its coefficients.
        assert_eq!(layout.decoder_bytes(), 336 * 224 * 3 * 3);
        // Truncated anywhere, it is read as far as it goes.
        for cut in [0, 1, 2, 100, progressive.len() / 2] {
            let _ = layout_of(&progressive[..cut]);
        }
    }

    /// A progressive JPEG of a 1024x1024 grey square followed by `copies`
    /// AC scans of 4 bytes of data each: a Huffman table whose one code is
    /// an end-of-band run of 16,384 blocks, every block of the image, so
    /// each scan makes the decoder walk the whole image for 12 bytes of file.
    fn scan_bomb(copies: usize) -> Vec<u8> {
        let grey = vec![128u8; 1024 * 1024];
        let jpeg = encode(
            &grey,
            (1024, 1024),
            jpeg_encoder::ColorType::Luma,
            jpeg_encoder::SamplingFactor::F_1_1,
            true,
        );
        let frame = jpeg.windows(2).position(|w| w == [0xFF, 0xC2]).unwrap();
        let component = jpeg[frame + 10];
        let end = jpeg.len() - 2;
        let mut bomb = jpeg[..end].to_vec();
        // AC table 1: one symbol, 0xE0 (a run of 2^14 blocks plus 14 extra
        // bits), with the one-bit code 0.
        bomb.extend_from_slice(&[0xFF, 0xC4, 0, 20, 0x11, 1]);
        bomb.extend_from_slice(&[0; 15]);
        bomb.push(0xE0);
        for _ in 0..copies {
            // Component `component`, DC table 0, AC table 1, band 1..=63.
            bomb.extend_from_slice(&[0xFF, 0xDA, 0, 8, 1, component, 0x01, 1, 63, 0]);
            // The code and 14 zero bits, then padding ones.
            bomb.extend_from_slice(&[0x00, 0x01]);
        }
        bomb.extend_from_slice(&[0xFF, 0xD9]);
        bomb
    }

    /// Regression: a stuffed byte (`FF 00`) where a marker should be was
    /// read as a marker whose length was the next two bytes: before a
    /// scan's `FF DA`, a jump of 65,498 bytes, past every scan of a bomb
    /// (and past the end), which the count then missed. Decoders skip
    /// such bytes; so does the walk.
    #[test]
    fn a_stuffed_byte_between_segments_hides_no_scan() {
        let bomb = scan_bomb(3_000);
        let first_scan_of_the_bomb = bomb
            .windows(10)
            .position(|w| w[..4] == [0xFF, 0xDA, 0, 8] && w[6..] == [0x01, 1, 63, 0])
            .unwrap();
        let mut hidden = bomb.clone();
        hidden.splice(first_scan_of_the_bomb..first_scan_of_the_bomb, [0xFF, 0x00]);
        assert_eq!(layout_of(&hidden).scans, MAX_SCANS + 1);
        let url: Arc<str> = "http://x/hidden.jpg".into();
        let error = decode_thumbnail(&url, &hidden, TargetSize::square(256), LIMITS).unwrap_err();
        assert!(error.to_string().contains("scans"), "{error}");
    }

    /// Regression: the DCT-scaled path (jpeg-decoder) had no cap on scans,
    /// and every scan walks every block: 100,000 scans in 1.2 MB kept a
    /// decode thread busy for tens of seconds.
    #[test]
    fn a_jpeg_with_thousands_of_scans_is_refused_at_once() {
        let bomb = scan_bomb(100_000);
        assert!(bomb.len() < 16 * 1024 * 1024, "{}", bomb.len());
        assert_eq!(layout_of(&bomb).scans, MAX_SCANS + 1);
        let url: Arc<str> = "http://x/scans.jpg".into();
        let started = std::time::Instant::now();
        // 64 px decodes at 1/8, 256 at 2/8: the cap holds at every scale.
        for side in [64, 256] {
            let error =
                decode_thumbnail(&url, &bomb, TargetSize::square(side), LIMITS).unwrap_err();
            assert!(error.to_string().contains("scans"), "{error}");
        }
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(2), "{took:?}");
        // Within the cap, it decodes.
        let thumb = decode_thumbnail(&url, &scan_bomb(20), TargetSize::square(64), LIMITS).unwrap();
        assert_eq!((thumb.width, thumb.height), (64, 64));
    }
}
