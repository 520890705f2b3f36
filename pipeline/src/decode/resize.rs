//! Resize: a decoded image, in whatever 8-bit layout its decoder gave
//! (grey, grey and alpha, RGB, RGBA), to the thumbnail's size in RGBA, with
//! fast_image_resize's SIMD convolution (SSE4.1, AVX2 or NEON, chosen at
//! run time). The image is resized in its own layout and only the small
//! result is widened to RGBA, so a 12 MP RGB image is never copied to RGBA
//! at full size.
//!
//! An 8-bit image `image` decodes is decoded into the room its thread
//! keeps for pixels (`room.rs`), and that room is given back once the
//! image is resized or widened (or, at the thumbnail's size already, once
//! the thumbnail holds a copy: `header::still`).
//!
//! Runs inside a decode, on the decode thread that called it; it starts no
//! threads and keeps nothing but that room.

use fast_image_resize::images::Image;
use fast_image_resize::{Filter, FilterType, MulDiv, PixelType, ResizeAlg, ResizeOptions, Resizer};
use image::error::{LimitError, LimitErrorKind, ParameterError, ParameterErrorKind};
use image::{
    ColorType, DynamicImage, ImageBuffer, ImageDecoder, ImageError, ImageFormat, ImageReader,
    ImageResult, Limits, RgbaImage,
};
use std::io::Cursor;
use std::sync::LazyLock;

use crate::room::Room;

/// The filter: Lanczos3, which does not alias however far an image is
/// scaled down (its support grows with the ratio), and is what the `image`
/// crate's best resize uses. The PSNR of a thumbnail against `image`'s
/// Lanczos3 of the full decode is in `benches/README.md` ("Decode").
///
/// Its kernel is read from a table ([`lanczos3`]): fast_image_resize works
/// out every tap's weight with two `sin`s, for every resize again, which
/// was about 30 us of the 48 us a 128x96 thumbnail takes to 64 px.
pub(super) fn filter() -> FilterType {
    Filter::new("Lanczos3", lanczos3, 3.0).map_or(FilterType::Lanczos3, FilterType::Custom)
}

/// Table entries per pixel of the Lanczos3 kernel's support.
const LANCZOS_STEPS: usize = 4096;

/// The Lanczos3 kernel at `x`, interpolated in a table of it made once:
/// within 1e-6 of its formula (`sinc(x) * sinc(x / 3)`), far below the
/// 14-bit precision fast_image_resize turns the weights into.
fn lanczos3(x: f64) -> f64 {
    static TABLE: LazyLock<Vec<f64>> = LazyLock::new(lanczos3_table);
    let x = x.abs();
    // Past the support, and NaN.
    if x.is_nan() || x >= 3.0 {
        return 0.0;
    }
    let at = x * LANCZOS_STEPS as f64;
    let step = at as usize;
    match (TABLE.get(step), TABLE.get(step + 1)) {
        (Some(&here), Some(&next)) => here + (next - here) * (at - step as f64),
        _ => lanczos3_exact(x),
    }
}

/// The Lanczos3 kernel at every table step, its two sines stepped by a
/// rotation rather than each taken anew: the table is made at a process's
/// first resize, while the other threads' first resizes wait for it, in
/// about 60 us rather than 0.3-0.4 ms (24,578 `sin`s), and within 1e-14 of
/// the formula.
fn lanczos3_table() -> Vec<f64> {
    let step_of = |steps: usize| (std::f64::consts::PI / steps as f64).sin_cos();
    let ((sin_a, cos_a), (sin_b, cos_b)) = (step_of(LANCZOS_STEPS), step_of(3 * LANCZOS_STEPS));
    // sin(pi x) and sin(pi x / 3), with their cosines, at x = step / STEPS.
    let (mut sin_x, mut cos_x, mut sin_third, mut cos_third) = (0.0, 1.0, 0.0, 1.0);
    let mut table = Vec::with_capacity(3 * LANCZOS_STEPS + 1);
    for step in 0..=3 * LANCZOS_STEPS {
        let px = std::f64::consts::PI * step as f64 / LANCZOS_STEPS as f64;
        table.push(match step {
            0 => 1.0,
            _ => 3.0 * sin_x * sin_third / (px * px),
        });
        (sin_x, cos_x) = (sin_x * cos_a + cos_x * sin_a, cos_x * cos_a - sin_x * sin_a);
        (sin_third, cos_third) = (
            sin_third * cos_b + cos_third * sin_b,
            cos_third * cos_b - sin_third * sin_b,
        );
    }
    table
}

fn lanczos3_exact(x: f64) -> f64 {
    if x == 0.0 {
        return 1.0;
    }
    let px = std::f64::consts::PI * x;
    3.0 * px.sin() * (px / 3.0).sin() / (px * px)
}

/// How a decoded image's bytes are laid out: 8 bits per channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    Luma,
    LumaAlpha,
    Rgb,
    Rgba,
}

impl Layout {
    #[cfg(feature = "libjpeg")]
    pub(super) fn channels(self) -> usize {
        match self {
            Layout::Luma => 1,
            Layout::LumaAlpha => 2,
            Layout::Rgb => 3,
            Layout::Rgba => 4,
        }
    }

    fn pixel_type(self) -> PixelType {
        match self {
            Layout::Luma => PixelType::U8,
            Layout::LumaAlpha => PixelType::U8x2,
            Layout::Rgb => PixelType::U8x3,
            Layout::Rgba => PixelType::U8x4,
        }
    }

    fn has_alpha(self) -> bool {
        matches!(self, Layout::LumaAlpha | Layout::Rgba)
    }
}

/// Bytes a resize of a `decoded` image (width, height) to `thumbnail`
/// holds at its peak, for the decode limit: its pass between its two
/// (thumbnail width x decoded height), its output, the RGBA and its copy in
/// the Thumbnail, and its filter weights: small beside a full decode, most
/// of a scaled one. Lanczos3 weighs about six source pixels for each one a
/// side shrinks by, in f64 and again in i16 (60 bytes a source pixel a
/// side), with a few allocations per output pixel: 64 bytes a pixel of
/// either side of both images.
pub(super) fn working_bytes(decoded: (u32, u32), thumbnail: (u32, u32)) -> u64 {
    let (decoded_width, decoded_height) = (u64::from(decoded.0), u64::from(decoded.1));
    let (thumb_width, thumb_height) = (u64::from(thumbnail.0), u64::from(thumbnail.1));
    thumb_width * decoded_height * 4
        + thumb_width * thumb_height * 4 * 3
        + (decoded_width + decoded_height + thumb_width + thumb_height) * 64
}

/// Undoes premultiplication: each colour divided by its alpha.
#[cfg(any(feature = "avif", feature = "heic"))]
pub(super) fn unpremultiply(rgba: &mut [u8]) {
    for pixel in rgba.chunks_exact_mut(4) {
        let alpha = u32::from(pixel[3]);
        if alpha == 0 || alpha == 255 {
            continue;
        }
        for channel in &mut pixel[..3] {
            *channel = ((u32::from(*channel) * 255 + alpha / 2) / alpha).min(255) as u8;
        }
    }
}

/// `image`'s decode of `bytes` in `format`, as [`ImageReader::decode`]
/// makes it (the pixels counted against `limits` before they are
/// allocated), but an 8-bit image's pixels are decoded into this thread's
/// kept room ([`Room::Pixels`]).
pub(super) fn decode_image(
    bytes: &[u8],
    format: ImageFormat,
    limits: &Limits,
) -> ImageResult<DynamicImage> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits.clone());
    let mut decoder = reader.into_decoder()?;
    let mut left = limits.clone();
    left.reserve(decoder.total_bytes())?;
    decoder.set_limits(left)?;
    let (width, height) = decoder.dimensions();
    let color_type = decoder.color_type();
    if !matches!(
        color_type,
        ColorType::L8 | ColorType::La8 | ColorType::Rgb8 | ColorType::Rgba8
    ) {
        return DynamicImage::from_decoder(decoder);
    }
    let too_large =
        || ImageError::Limits(LimitError::from_kind(LimitErrorKind::InsufficientMemory));
    let len = usize::try_from(decoder.total_bytes())
        .ok()
        .filter(|&len| len <= isize::MAX as usize)
        .ok_or_else(too_large)?;
    let mut pixels = Room::Pixels.take_zeroed(len);
    if let Err(error) = decoder.read_image(&mut pixels) {
        Room::Pixels.give_back(pixels);
        return Err(error);
    }
    let image = match color_type {
        ColorType::L8 => ImageBuffer::from_raw(width, height, pixels).map(DynamicImage::ImageLuma8),
        ColorType::La8 => {
            ImageBuffer::from_raw(width, height, pixels).map(DynamicImage::ImageLumaA8)
        }
        ColorType::Rgb8 => {
            ImageBuffer::from_raw(width, height, pixels).map(DynamicImage::ImageRgb8)
        }
        _ => ImageBuffer::from_raw(width, height, pixels).map(DynamicImage::ImageRgba8),
    };
    image.ok_or_else(|| {
        ImageError::Parameter(ParameterError::from_kind(
            ParameterErrorKind::DimensionMismatch,
        ))
    })
}

/// A decoded image.
#[derive(Debug)]
pub(super) struct Pixels {
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) layout: Layout,
    /// `width * height * layout.channels()` bytes, row-major.
    pub(super) data: Vec<u8>,
}

impl Pixels {
    /// The image `image` decoded to: 8-bit layouts as they are; 16-bit and
    /// float images as RGBA8.
    pub(super) fn from_image(image: DynamicImage) -> Self {
        let (width, height) = (image.width(), image.height());
        let (layout, data) = match image {
            DynamicImage::ImageLuma8(image) => (Layout::Luma, image.into_raw()),
            DynamicImage::ImageLumaA8(image) => (Layout::LumaAlpha, image.into_raw()),
            DynamicImage::ImageRgb8(image) => (Layout::Rgb, image.into_raw()),
            DynamicImage::ImageRgba8(image) => (Layout::Rgba, image.into_raw()),
            other => (Layout::Rgba, other.into_rgba8().into_raw()),
        };
        Self {
            width,
            height,
            layout,
            data,
        }
    }

    /// The part `crop` (left, top, width, height, in this image's pixels)
    /// of this image at `width` x `height` in RGBA: resized with
    /// [`filter`] unless it is the whole image at that size already.
    pub(super) fn into_rgba(
        self,
        crop: (f64, f64, f64, f64),
        width: u32,
        height: u32,
    ) -> Result<RgbaImage, String> {
        let whole = (0.0, 0.0, f64::from(self.width), f64::from(self.height));
        let small = if (width, height) == (self.width, self.height) && crop == whole {
            self.data
        } else {
            let failed = |e: &dyn std::fmt::Display| format!("resizing: {e}");
            let pixel_type = self.layout.pixel_type();
            let alpha = self.layout.has_alpha();
            let mut source = Image::from_vec_u8(self.width, self.height, self.data, pixel_type)
                .map_err(|e| failed(&e))?;
            let (left, top, crop_width, crop_height) = crop;
            // A crop of whole pixels at the output's size is copied, not
            // filtered (fast_image_resize's own test): its pixels stay as
            // they are, since weighting and unweighting them would lose
            // the colours of the nearly transparent ones.
            let copied = [left, top, crop_width, crop_height]
                .iter()
                .all(|side| side.fract() == 0.0)
                && (crop_width, crop_height) == (f64::from(width), f64::from(height));
            // Colours weighted by alpha before the filter and unweighted
            // after it, as fast_image_resize's `use_alpha` does, but in the
            // decoded image itself: `use_alpha` weights them into a copy of
            // the whole image, which the decode limit does not count. (A
            // copy keeps `use_alpha`, which a copy never reaches.)
            let weigh_here = alpha && !copied;
            let weights = MulDiv::new();
            if weigh_here {
                weights
                    .multiply_alpha_inplace(&mut source)
                    .map_err(|e| failed(&e))?;
            }
            let mut target = Image::new(width, height, pixel_type);
            let options = ResizeOptions::new()
                .resize_alg(ResizeAlg::Convolution(filter()))
                .use_alpha(alpha && !weigh_here)
                .crop(left, top, crop_width, crop_height);
            Resizer::new()
                .resize(&source, &mut target, &options)
                .map_err(|e| failed(&e))?;
            Room::Pixels.give_back(source.into_vec());
            if weigh_here {
                weights
                    .divide_alpha_inplace(&mut target)
                    .map_err(|e| failed(&e))?;
            }
            target.into_vec()
        };
        let rgba: Vec<u8> = match self.layout {
            Layout::Rgba => small,
            Layout::Rgb => widened(small, |p| [p[0], p[1], p[2], 255], 3),
            Layout::Luma => widened(small, |p| [p[0], p[0], p[0], 255], 1),
            Layout::LumaAlpha => widened(small, |p| [p[0], p[0], p[0], p[1]], 2),
        };
        RgbaImage::from_raw(width, height, rgba).ok_or_else(|| "resizing: short buffer".into())
    }
}

/// `pixels` of `channels` bytes each in RGBA, by `rgba`; their buffer is
/// given back to the thread's room.
fn widened(pixels: Vec<u8>, rgba: impl Fn(&[u8]) -> [u8; 4], channels: usize) -> Vec<u8> {
    let wide = pixels.chunks_exact(channels).flat_map(rgba).collect();
    Room::Pixels.give_back(pixels);
    wide
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fast_image_resize's own resize with `use_alpha`, which weights the
    /// colours in a copy of the source.
    fn with_use_alpha(pixels: &Pixels, width: u32, height: u32) -> Vec<u8> {
        let pixel_type = pixels.layout.pixel_type();
        let source = fast_image_resize::images::ImageRef::new(
            pixels.width,
            pixels.height,
            &pixels.data,
            pixel_type,
        )
        .unwrap();
        let mut target = Image::new(width, height, pixel_type);
        let options = ResizeOptions::new()
            .resize_alg(ResizeAlg::Convolution(filter()))
            .use_alpha(true);
        Resizer::new()
            .resize(&source, &mut target, &options)
            .unwrap();
        target.into_vec()
    }

    fn decoded(bytes: &[u8], limits: &Limits) -> ImageResult<DynamicImage> {
        decode_image(bytes, ImageFormat::Png, limits)
    }

    fn png(image: DynamicImage) -> Vec<u8> {
        let mut bytes = Cursor::new(Vec::new());
        image.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
        bytes.into_inner()
    }

    /// A thread's next decode goes into the room its last was resized (or
    /// widened) out of, with its own pixels only; one larger than the
    /// room a thread keeps gets its own; and the limit counts the pixels
    /// before any room is taken.
    #[test]
    fn a_threads_decodes_reuse_the_room_of_its_last_one_and_the_limit_still_holds() {
        let limits = Limits::default();
        let grey = png(DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
            120,
            90,
            image::Rgb([200, 200, 200]),
        )));
        let red = png(DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
            40,
            30,
            image::Rgba([255, 0, 0, 128]),
        )));
        let first = Pixels::from_image(decoded(&grey, &limits).unwrap());
        let room = first.data.as_ptr();
        // Not resized, only widened to RGBA: the room is given back too.
        first.into_rgba((0.0, 0.0, 120.0, 90.0), 120, 90).unwrap();
        let second = Pixels::from_image(decoded(&red, &limits).unwrap());
        assert_eq!(second.data.as_ptr(), room);
        assert_eq!(second.data.len(), 40 * 30 * 4);
        assert!(second.data.chunks(4).all(|pixel| pixel == [255, 0, 0, 128]));
        second.into_rgba((0.0, 0.0, 40.0, 30.0), 20, 15).unwrap();
        let third = Pixels::from_image(decoded(&grey, &limits).unwrap());
        assert_eq!(third.data.as_ptr(), room);
        let large = png(DynamicImage::ImageRgb8(image::RgbImage::new(400, 300)));
        assert_ne!(
            Pixels::from_image(decoded(&large, &limits).unwrap())
                .data
                .as_ptr(),
            room
        );
        let mut tight = Limits::default();
        tight.max_alloc = Some(120 * 90 * 3 - 1);
        assert!(matches!(decoded(&grey, &tight), Err(ImageError::Limits(_))));
    }

    /// The tabulated kernel is Lanczos3's: within 1e-6 at every point, and
    /// resizes by it differ from fast_image_resize's own Lanczos3 by at
    /// most a level, in a few pixels, over ratios from 1.3 to 12.
    #[test]
    fn the_tabulated_kernel_resizes_as_lanczos3_does() {
        let table = lanczos3_table();
        assert_eq!(table.len(), 3 * LANCZOS_STEPS + 1);
        for (step, &entry) in table.iter().enumerate() {
            let x = step as f64 / LANCZOS_STEPS as f64;
            assert!((entry - lanczos3_exact(x)).abs() < 1e-12, "{x}");
        }
        for i in 0..=30_000 {
            let x = f64::from(i) / 10_000.0;
            assert!((lanczos3(x) - lanczos3_exact(x)).abs() < 1e-6, "{x}");
            assert_eq!(lanczos3(-x), lanczos3(x));
        }
        assert_eq!((lanczos3(3.0), lanczos3(f64::NAN)), (0.0, 0.0));
        let (width, height): (u32, u32) = (640, 480);
        let data: Vec<u8> = (0..width * height * 3)
            .map(|i: u32| ((i / 3 % width) ^ (i / 3 / width) ^ (i % 3 * 85)) as u8)
            .collect();
        let source = Image::from_vec_u8(width, height, data, PixelType::U8x3).unwrap();
        for (out_width, out_height) in [(491, 368), (160, 120), (64, 48), (53, 40)] {
            let resized = |filter| {
                let mut target = Image::new(out_width, out_height, PixelType::U8x3);
                let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(filter));
                Resizer::new()
                    .resize(&source, &mut target, &options)
                    .unwrap();
                target.into_vec()
            };
            let (ours, theirs) = (resized(filter()), resized(FilterType::Lanczos3));
            let differ = ours.iter().zip(&theirs).filter(|(a, b)| a != b).count();
            let most = ours.iter().zip(&theirs).map(|(a, b)| a.abs_diff(*b)).max();
            assert!(most <= Some(1), "{out_width}: {most:?}");
            assert!(
                differ * 100 <= ours.len(),
                "{out_width}: {differ} of {}",
                ours.len()
            );
        }
    }

    /// A crop of whole pixels at its own size (a small image fitted to
    /// cover a box) keeps its pixels exactly, nearly transparent ones
    /// included.
    #[test]
    fn a_crop_at_its_own_size_keeps_its_pixels() {
        let (width, height): (u32, u32) = (100, 50);
        let data: Vec<u8> = (0..width * height)
            .flat_map(|i| [200, (i % 251) as u8, 7, (i % 5) as u8])
            .collect();
        let expected: Vec<u8> = (0..height)
            .flat_map(|y| {
                let row = (y * width + 25) as usize * 4;
                data[row..row + 50 * 4].to_vec()
            })
            .collect();
        let pixels = Pixels {
            width,
            height,
            layout: Layout::Rgba,
            data,
        };
        let rgba = pixels.into_rgba((25.0, 0.0, 50.0, 50.0), 50, 50).unwrap();
        assert_eq!(rgba.into_raw(), expected);
    }

    /// Weighting by alpha in the image itself gives the same bytes as
    /// `use_alpha`, for RGBA and for grey and alpha.
    #[test]
    fn weighting_in_place_matches_use_alpha() {
        let (width, height): (u32, u32) = (97, 61);
        for layout in [Layout::Rgba, Layout::LumaAlpha] {
            let channels = if layout == Layout::Rgba { 4 } else { 2 };
            let data: Vec<u8> = (0..width * height * channels as u32)
                .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect();
            let pixels = Pixels {
                width,
                height,
                layout,
                data,
            };
            let expected = with_use_alpha(&pixels, 23, 17);
            let whole = (0.0, 0.0, f64::from(width), f64::from(height));
            let rgba = pixels.into_rgba(whole, 23, 17).unwrap().into_raw();
            let widened: Vec<u8> = match layout {
                Layout::Rgba => expected,
                _ => expected
                    .chunks_exact(2)
                    .flat_map(|p| [p[0], p[0], p[0], p[1]])
                    .collect(),
            };
            assert_eq!(rgba, widened, "{layout:?}");
        }
    }
}
