//! Photo-sized test images: the picture for an id ([`crate::picture`]) with
//! a photo's texture over it, encoded the ways cameras and sites encode
//! photos, and the [`corpus`] the decode benchmarks and tests share.
//!
//! Plain functions with no state, no task and no I/O: the corpus is made in
//! memory, from a seed, the same on every machine (no downloads). The
//! texture (smooth shading at three scales and a fine grain, in luma and
//! chroma) is tuned so that a JPEG at quality 90 takes 2-3 bits per pixel,
//! as a 12 MP phone photo of 3-5 MB does; [`CorpusImage::bits_per_pixel`]
//! says what each one came to. The id ring survives the texture, so
//! [`crate::decode_id`] still reads a thumbnail of a photo.

use std::io::Cursor;

use crate::exif::{Exif, with_exif};
use crate::picture::{EncodeError, Rgb, render};
use crate::random::splitmix64;

/// Chroma sampling of a JPEG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chroma {
    /// 4:2:0, colour at half the resolution each way: what cameras write.
    Subsampled,
    /// 4:4:4, colour at full resolution: what some editors and sites write.
    Full,
}

/// How a photo's JPEG is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JpegOptions {
    /// Quality, 1-100.
    pub quality: u8,
    /// Progressive (many scans) rather than baseline (one scan).
    pub progressive: bool,
    /// Chroma sampling.
    pub chroma: Chroma,
    /// The EXIF orientation tag (1-8) to write, if any: 6 is a phone held
    /// upright, whose picture must be turned 90 degrees clockwise.
    pub orientation: Option<u16>,
    /// The size of an EXIF thumbnail to embed, as cameras and phones do
    /// ([`crate::exif::camera_thumbnail`]): 160x120 is the common size,
    /// 320x240 and larger are seen too.
    pub thumbnail: Option<(u32, u32)>,
}

impl Default for JpegOptions {
    /// Baseline 4:2:0 at quality 90, no EXIF.
    fn default() -> Self {
        Self {
            quality: 90,
            progressive: false,
            chroma: Chroma::Subsampled,
            orientation: None,
            thumbnail: None,
        }
    }
}

/// The picture for `id` at `width` x `height` with a photo's texture.
///
/// ```
/// let photo = fixture_server::photo::render_photo(3, 600, 400);
/// let jpeg = photo.encode_jpeg_with(&Default::default())?;
/// let bits_per_pixel = jpeg.len() as f64 * 8.0 / (600.0 * 400.0);
/// assert!((1.5..4.0).contains(&bits_per_pixel), "{bits_per_pixel}");
/// # Ok::<(), fixture_server::picture::EncodeError>(())
/// ```
pub fn render_photo(id: u32, width: u32, height: u32) -> Rgb {
    let mut picture = render(id, width, height);
    let seed = u64::from(id).wrapping_mul(0x2545_F491_4F6C_DD1D);
    let (w, h) = (width as usize, height as usize);
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f32, y as f32);
            // Shading: large, medium and small features, as light and
            // surfaces give a photo.
            let shade = 34.0 * value_noise(seed, fx / 180.0, fy / 180.0)
                + 22.0 * value_noise(seed ^ 1, fx / 23.0, fy / 23.0)
                + 14.0 * value_noise(seed ^ 2, fx / 3.5, fy / 3.5);
            let grain = hash_unit(seed ^ 3, x, y) * 9.0;
            let tint = 18.0 * value_noise(seed ^ 4, fx / 40.0, fy / 40.0);
            let at = (y * w + x) * 3;
            let pixel = &mut picture.pixels[at..at + 3];
            let luma = shade + grain;
            pixel[0] = add(pixel[0], luma + tint);
            pixel[1] = add(pixel[1], luma);
            pixel[2] = add(pixel[2], luma - tint);
        }
    }
    picture
}

fn add(value: u8, delta: f32) -> u8 {
    (f32::from(value) + delta).clamp(0.0, 255.0) as u8
}

/// A repeatable draw in `[-1, 1)` for lattice point (`x`, `y`).
fn hash_unit(seed: u64, x: usize, y: usize) -> f32 {
    let mut state = seed ^ ((x as u64) << 32 | y as u64);
    (splitmix64(&mut state) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// Smooth noise in `[-1, 1)`: lattice draws, interpolated with a smoothstep.
fn value_noise(seed: u64, x: f32, y: f32) -> f32 {
    let (x0, y0) = (x.floor(), y.floor());
    let (tx, ty) = (smooth(x - x0), smooth(y - y0));
    let (ix, iy) = (x0 as usize, y0 as usize);
    let top = lerp(hash_unit(seed, ix, iy), hash_unit(seed, ix + 1, iy), tx);
    let bottom = lerp(
        hash_unit(seed, ix, iy + 1),
        hash_unit(seed, ix + 1, iy + 1),
        tx,
    );
    lerp(top, bottom, ty)
}

fn smooth(t: f32) -> f32 {
    t * t * (3.0 - 2.0 * t)
}

fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

impl Rgb {
    /// Encodes the bitmap as a JPEG written the way `options` say.
    pub fn encode_jpeg_with(&self, options: &JpegOptions) -> Result<Vec<u8>, EncodeError> {
        let (width, height) = self.u16_size()?;
        let mut out = Vec::with_capacity(self.pixels.len() / 8);
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, options.quality.clamp(1, 100));
        encoder.set_progressive(options.progressive);
        encoder.set_sampling_factor(match options.chroma {
            Chroma::Subsampled => jpeg_encoder::SamplingFactor::F_2_2,
            Chroma::Full => jpeg_encoder::SamplingFactor::F_1_1,
        });
        encoder
            .encode(&self.pixels, width, height, jpeg_encoder::ColorType::Rgb)
            .map_err(|e| EncodeError(e.to_string()))?;
        if options.orientation.is_none() && options.thumbnail.is_none() {
            return Ok(out);
        }
        let thumbnail = match options.thumbnail {
            Some((width, height)) => Some(crate::exif::camera_thumbnail(self, width, height)?),
            None => None,
        };
        let exif = Exif {
            orientation: options.orientation,
            thumbnail: thumbnail.as_deref(),
            big_endian: false,
        };
        with_exif(&out, &exif)
    }

    /// Encodes the bitmap as a 24-bit BMP.
    pub fn encode_bmp(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        self.write_with(image::codecs::bmp::BmpEncoder::new(&mut out))?;
        Ok(out)
    }

    /// Encodes the bitmap as an LZW-compressed RGB TIFF, as scanners and
    /// image editors write it.
    pub fn encode_tiff_lzw(&self) -> Result<Vec<u8>, EncodeError> {
        use tiff::encoder::{Compression, TiffEncoder, colortype::RGB8};
        let mut out = Cursor::new(Vec::new());
        TiffEncoder::new(&mut out)
            .map_err(|e| EncodeError(e.to_string()))?
            .with_compression(Compression::Lzw)
            .write_image::<RGB8>(self.width, self.height, &self.pixels)
            .map_err(|e| EncodeError(e.to_string()))?;
        Ok(out.into_inner())
    }

    /// Encodes the bitmap as a lossless WebP (the encoder `image` has).
    pub fn encode_webp(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        self.write_with(image::codecs::webp::WebPEncoder::new_lossless(&mut out))?;
        Ok(out)
    }
}

/// `jpeg` with an EXIF segment (APP1) carrying orientation `tag` (1-8)
/// inserted after its start marker, as a camera writes it.
///
/// ```
/// let jpeg = fixture_server::picture::render(1, 16, 16).encode_jpeg(80)?;
/// let tagged = fixture_server::photo::with_exif_orientation(&jpeg, 6);
/// assert_eq!(&tagged[2..4], &[0xFF, 0xE1]);
/// # Ok::<(), fixture_server::picture::EncodeError>(())
/// ```
pub fn with_exif_orientation(jpeg: &[u8], tag: u16) -> Vec<u8> {
    let exif = Exif {
        orientation: Some(tag),
        thumbnail: None,
        big_endian: true,
    };
    // A segment without a thumbnail is 32 bytes: it always fits.
    with_exif(jpeg, &exif).unwrap_or_else(|_| jpeg.to_vec())
}

/// One image of the [`corpus`].
#[derive(Clone, Debug)]
pub struct CorpusImage {
    /// A short name for tables: `4000x3000-progressive-444`, `4000x3000.png`.
    pub name: String,
    /// The id its picture carries.
    pub id: u32,
    /// Width as stored (before any EXIF turn).
    pub width: u32,
    /// Height as stored.
    pub height: u32,
    /// `"JPEG"`, `"PNG"` or `"WebP"`.
    pub format: &'static str,
    /// The JPEG options, for JPEGs.
    pub jpeg: Option<JpegOptions>,
    /// The encoded file.
    pub bytes: Vec<u8>,
}

impl CorpusImage {
    /// Compressed bits per pixel.
    pub fn bits_per_pixel(&self) -> f64 {
        self.bytes.len() as f64 * 8.0 / (f64::from(self.width) * f64::from(self.height))
    }
}

/// The sizes of the corpus's JPEGs: a web image, a screen, a 6 MP and a
/// 12 MP photo.
pub const CORPUS_SIZES: [(u32, u32); 4] = [(600, 600), (1920, 1080), (3000, 2000), (4000, 3000)];

/// The decode corpus: photos at every [`CORPUS_SIZES`] size, baseline and
/// progressive, 4:2:0 and 4:4:4 (quality 90); a 4000x3000 baseline 4:2:0
/// photo tagged with EXIF orientation 6; the 4000x3000 photo as a PNG, a
/// (lossless) WebP, a BMP and an LZW TIFF; and an icon of entries of 256,
/// 64, 48, 32 and 16 px. Made in memory from the ids 1001 upwards: about
/// two seconds of one core when optimised.
pub fn corpus() -> Result<Vec<CorpusImage>, EncodeError> {
    let mut images = Vec::new();
    let mut id = 1000;
    for (width, height) in CORPUS_SIZES {
        id += 1;
        let photo = render_photo(id, width, height);
        for progressive in [false, true] {
            for chroma in [Chroma::Subsampled, Chroma::Full] {
                let options = JpegOptions {
                    progressive,
                    chroma,
                    ..JpegOptions::default()
                };
                images.push(corpus_jpeg(id, &photo, options, "")?);
            }
        }
        if (width, height) == (4000, 3000) {
            let options = JpegOptions {
                orientation: Some(6),
                ..JpegOptions::default()
            };
            let plain = |name: &str, format, bytes| CorpusImage {
                name: format!("{width}x{height}{name}"),
                id,
                width,
                height,
                format,
                jpeg: None,
                bytes,
            };
            images.push(corpus_jpeg(id, &photo, options, "-exif6")?);
            images.push(plain(".png", "PNG", photo.encode_png()?));
            images.push(plain(".webp", "WebP", photo.encode_webp()?));
            images.push(plain(".bmp", "BMP", photo.encode_bmp()?));
            images.push(plain("-lzw.tif", "TIFF", photo.encode_tiff_lzw()?));
        }
    }
    let sides = [256, 64, 48, 32, 16];
    images.push(CorpusImage {
        name: "icon-256-64-48-32-16.ico".into(),
        id: 1100,
        width: 256,
        height: 256,
        format: "ICO",
        jpeg: None,
        bytes: icon(1100, &sides)?,
    });
    Ok(images)
}

/// Photos as cameras and phones write them, each with an EXIF thumbnail
/// ([`JpegOptions::thumbnail`]), baseline and progressive 4:2:0 at quality
/// 90: 12 MP (4000x3000, 4:3) with a 160x120 and with a 320x240 thumbnail;
/// 24 MP (6000x4000, 3:2) with a 320x213 one, and with the 160x120 one
/// many cameras write for a 3:2 photo, letterboxed (so not the same
/// picture). Named `4000x3000-baseline-420-exif160` and so on, the
/// letterboxed one `...-exif160lb`. About three seconds of one core when
/// optimised.
pub fn camera_corpus() -> Result<Vec<CorpusImage>, EncodeError> {
    let mut images = Vec::new();
    // Each camera's id, photo size and thumbnail sizes.
    let cameras = [
        (1201, 4000, 3000, [(160, 120), (320, 240)]),
        (1202, 6000, 4000, [(160, 120), (320, 213)]),
    ];
    for (id, width, height, thumbnails) in cameras {
        let photo = render_photo(id, width, height);
        for progressive in [false, true] {
            for thumbnail in thumbnails {
                let letterboxed = crate::exif::letterboxed((width, height), thumbnail);
                // The 24 MP photo's letterboxed thumbnail: baseline only.
                if letterboxed && progressive {
                    continue;
                }
                let options = JpegOptions {
                    progressive,
                    thumbnail: Some(thumbnail),
                    ..JpegOptions::default()
                };
                let suffix = format!(
                    "-exif{}{}",
                    thumbnail.0,
                    if letterboxed { "lb" } else { "" }
                );
                images.push(corpus_jpeg(id, &photo, options, &suffix)?);
            }
        }
    }
    Ok(images)
}

/// `photo` (of picture `id`) as a JPEG written as `options` say, named
/// `{width}x{height}-{baseline|progressive}-{420|444}{suffix}`.
fn corpus_jpeg(
    id: u32,
    photo: &Rgb,
    options: JpegOptions,
    suffix: &str,
) -> Result<CorpusImage, EncodeError> {
    let scans = if options.progressive {
        "progressive"
    } else {
        "baseline"
    };
    let chroma = match options.chroma {
        Chroma::Subsampled => "420",
        Chroma::Full => "444",
    };
    Ok(CorpusImage {
        name: format!("{}x{}-{scans}-{chroma}{suffix}", photo.width, photo.height),
        id,
        width: photo.width,
        height: photo.height,
        format: "JPEG",
        jpeg: Some(options),
        bytes: photo.encode_jpeg_with(&options)?,
    })
}

/// An icon: the photo `id` drawn at each of `sides` (square, at most 256),
/// each entry an RGBA PNG, as favicons are made.
pub fn icon(id: u32, sides: &[u32]) -> Result<Vec<u8>, EncodeError> {
    let entries: Vec<Vec<u8>> = sides
        .iter()
        .map(|&side| {
            // ICO's PNG entries are RGBA (readers refuse others).
            let photo = render_photo(id, side, side);
            let rgba: Vec<u8> = photo
                .pixels
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect();
            let mut png = Vec::new();
            image::ImageEncoder::write_image(
                image::codecs::png::PngEncoder::new(&mut png),
                &rgba,
                side,
                side,
                image::ExtendedColorType::Rgba8,
            )
            .map_err(|e| EncodeError(e.to_string()))?;
            Ok(png)
        })
        .collect::<Result<_, EncodeError>>()?;
    let count = u16::try_from(sides.len()).map_err(|e| EncodeError(e.to_string()))?;
    // The directory: a 6-byte header, then 16 bytes an entry.
    let mut out = vec![0, 0, 1, 0];
    out.extend_from_slice(&count.to_le_bytes());
    let mut offset = 6 + 16 * sides.len();
    for (&side, png) in sides.iter().zip(&entries) {
        let byte = u8::try_from(side % 256).map_err(|e| EncodeError(e.to_string()))?;
        out.extend_from_slice(&[byte, byte, 0, 0, 1, 0, 32, 0]);
        for field in [png.len(), offset] {
            let field = u32::try_from(field).map_err(|e| EncodeError(e.to_string()))?;
            out.extend_from_slice(&field.to_le_bytes());
        }
        offset += png.len();
    }
    for png in entries {
        out.extend_from_slice(&png);
    }
    Ok(out)
}

/// The thumbnail the `image` crate makes at its best, to measure others
/// against: the full decode, turned as its EXIF says, resized to `width` x
/// `height` with Lanczos3.
pub fn reference_thumbnail(
    bytes: &[u8],
    width: u32,
    height: u32,
) -> image::ImageResult<image::RgbaImage> {
    use image::ImageDecoder as _;
    let mut decoder = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()?
        .into_decoder()?;
    let orientation = decoder.orientation()?;
    let mut full = image::DynamicImage::from_decoder(decoder)?;
    full.apply_orientation(orientation);
    Ok(image::imageops::resize(
        &full.into_rgba8(),
        width,
        height,
        image::imageops::FilterType::Lanczos3,
    ))
}

/// Peak signal-to-noise ratio of two RGBA images' colour channels, in dB
/// (infinite for equal images); `None` when their sizes differ.
///
/// ```
/// let a = image::RgbaImage::from_pixel(4, 4, image::Rgba([100, 100, 100, 255]));
/// let b = image::RgbaImage::from_pixel(4, 4, image::Rgba([110, 100, 100, 255]));
/// let db = fixture_server::photo::psnr(&a, &b).unwrap();
/// // One channel of three off by 10: MSE 100 / 3.
/// assert!((db - 32.9).abs() < 0.05, "{db}");
/// ```
pub fn psnr(a: &image::RgbaImage, b: &image::RgbaImage) -> Option<f64> {
    if a.dimensions() != b.dimensions() {
        return None;
    }
    let mut sum = 0.0;
    for (p, q) in a.pixels().zip(b.pixels()) {
        for c in 0..3 {
            let d = f64::from(p[c]) - f64::from(q[c]);
            sum += d * d;
        }
    }
    let mse = sum / (f64::from(a.width()) * f64::from(a.height()) * 3.0).max(1.0);
    Some(10.0 * (255.0 * 255.0 / mse).log10())
}
