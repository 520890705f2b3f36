//! EXIF segments as cameras write them: an APP1 segment after the JPEG's
//! start marker holding a TIFF structure, whose first directory (IFD0) may
//! carry the orientation and whose second (IFD1) may point at a small JPEG
//! of the same picture, the embedded thumbnail file managers show.
//!
//! Plain functions with no state and no I/O.

use crate::picture::{EncodeError, Rgb};

/// What an EXIF segment carries.
#[derive(Clone, Copy, Debug, Default)]
pub struct Exif<'a> {
    /// The orientation tag (1-8), in IFD0.
    pub orientation: Option<u16>,
    /// A JPEG thumbnail, pointed at by IFD1.
    pub thumbnail: Option<&'a [u8]>,
    /// Motorola byte order (`MM`, as Nikon writes), rather than Intel's
    /// (`II`, as Canon, Sony and most phones write).
    pub big_endian: bool,
}

/// `jpeg` with an EXIF segment (APP1) carrying `exif` inserted after its
/// start marker, as a camera writes it. Fails if the segment would pass
/// the 65,533 bytes a JPEG segment holds (a thumbnail of more than about
/// 64 KB).
///
/// ```
/// use fixture_server::exif::{Exif, with_exif};
/// let photo = fixture_server::picture::render(1, 64, 48).encode_jpeg(80)?;
/// let thumbnail = fixture_server::picture::render(1, 16, 12).encode_jpeg(80)?;
/// let exif = Exif { orientation: Some(6), thumbnail: Some(&thumbnail), big_endian: false };
/// let camera = with_exif(&photo, &exif)?;
/// assert_eq!(&camera[2..4], &[0xFF, 0xE1]);
/// assert_eq!(camera.len(), photo.len() + 4 + 6 + 8 + 18 + 42 + thumbnail.len());
/// # Ok::<(), fixture_server::picture::EncodeError>(())
/// ```
pub fn with_exif(jpeg: &[u8], exif: &Exif<'_>) -> Result<Vec<u8>, EncodeError> {
    let mut tiff = Tiff {
        bytes: Vec::new(),
        big_endian: exif.big_endian,
    };
    tiff.bytes
        .extend_from_slice(if exif.big_endian { b"MM" } else { b"II" });
    tiff.u16(42);
    tiff.u32(8);
    // IFD0: the orientation, then where IFD1 starts (0: none).
    let ifd0_entries = u16::from(exif.orientation.is_some());
    tiff.u16(ifd0_entries);
    if let Some(tag) = exif.orientation {
        tiff.entry(0x0112, 3, u32::from(tag));
    }
    let ifd1_at = 8 + 2 + 12 * u32::from(ifd0_entries) + 4;
    match exif.thumbnail {
        None => tiff.u32(0),
        Some(thumbnail) => {
            tiff.u32(ifd1_at);
            // IFD1: JPEG compression, where the thumbnail is and its length.
            let thumbnail_at = ifd1_at + 2 + 12 * 3 + 4;
            tiff.u16(3);
            tiff.entry(0x0103, 3, 6);
            tiff.entry(0x0201, 4, thumbnail_at);
            tiff.entry(0x0202, 4, thumbnail.len() as u32);
            tiff.u32(0);
            tiff.bytes.extend_from_slice(thumbnail);
        }
    }
    let length = u16::try_from(2 + 6 + tiff.bytes.len()).map_err(|_| {
        EncodeError(format!(
            "an EXIF segment of {} bytes is over a JPEG segment's 65,533",
            6 + tiff.bytes.len()
        ))
    })?;
    let split = jpeg.len().min(2);
    let mut tagged = Vec::with_capacity(jpeg.len() + 4 + usize::from(length));
    tagged.extend_from_slice(&jpeg[..split]);
    tagged.extend_from_slice(&[0xFF, 0xE1]);
    tagged.extend_from_slice(&length.to_be_bytes());
    tagged.extend_from_slice(b"Exif\0\0");
    tagged.extend_from_slice(&tiff.bytes);
    tagged.extend_from_slice(&jpeg[split..]);
    Ok(tagged)
}

/// The thumbnail a camera embeds: `photo` resized (Lanczos3) to fit
/// `width` x `height`, centred on black bars if its aspect ratio is not
/// the box's ([`letterboxed`]), and written as a baseline 4:2:0 JPEG at
/// quality 85.
///
/// ```
/// let photo = fixture_server::photo::render_photo(2, 400, 300);
/// let thumbnail = fixture_server::exif::camera_thumbnail(&photo, 160, 120)?;
/// assert!(thumbnail.len() < 64 * 1024);
/// # Ok::<(), fixture_server::picture::EncodeError>(())
/// ```
pub fn camera_thumbnail(photo: &Rgb, width: u32, height: u32) -> Result<Vec<u8>, EncodeError> {
    let full = image::RgbImage::from_raw(photo.width, photo.height, photo.pixels.clone())
        .ok_or_else(|| EncodeError("the photo's pixels do not fill its size".into()))?;
    let (fit_width, fit_height) = if letterboxed((photo.width, photo.height), (width, height)) {
        let scale = f64::min(
            f64::from(width) / f64::from(photo.width),
            f64::from(height) / f64::from(photo.height),
        );
        let side = |s: u32, most: u32| ((f64::from(s) * scale).round() as u32).clamp(1, most);
        (side(photo.width, width), side(photo.height, height))
    } else {
        (width, height)
    };
    let small = image::imageops::resize(
        &full,
        fit_width,
        fit_height,
        image::imageops::FilterType::Lanczos3,
    );
    let mut boxed = image::RgbImage::new(width, height);
    image::imageops::replace(
        &mut boxed,
        &small,
        i64::from((width - fit_width) / 2),
        i64::from((height - fit_height) / 2),
    );
    Rgb {
        width,
        height,
        pixels: boxed.into_raw(),
    }
    .encode_jpeg(85)
}

/// Whether a `thumbnail`-sized box shows a `photo`-sized picture only with
/// bars: its aspect ratio differs by more than a pixel's rounding.
pub fn letterboxed(photo: (u32, u32), thumbnail: (u32, u32)) -> bool {
    let (width, height) = (u64::from(photo.0), u64::from(photo.1));
    let difference = (u64::from(thumbnail.0) * height).abs_diff(u64::from(thumbnail.1) * width);
    difference > width.max(height)
}

/// A TIFF structure being written in its byte order.
struct Tiff {
    bytes: Vec<u8>,
    big_endian: bool,
}

impl Tiff {
    fn u16(&mut self, value: u16) {
        let bytes = if self.big_endian {
            value.to_be_bytes()
        } else {
            value.to_le_bytes()
        };
        self.bytes.extend_from_slice(&bytes);
    }

    fn u32(&mut self, value: u32) {
        let bytes = if self.big_endian {
            value.to_be_bytes()
        } else {
            value.to_le_bytes()
        };
        self.bytes.extend_from_slice(&bytes);
    }

    /// A directory entry of one value: a SHORT (type 3) sits in the first
    /// two bytes of the value field, a LONG (type 4) fills it.
    fn entry(&mut self, tag: u16, kind: u16, value: u32) {
        self.u16(tag);
        self.u16(kind);
        self.u32(1);
        if kind == 3 {
            self.u16(value as u16);
            self.u16(0);
        } else {
            self.u32(value);
        }
    }
}
