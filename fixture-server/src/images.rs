//! Encoded image bytes, made once and kept: the server's only CPU work.
//!
//! Owns the cache of encoded images. A handler asks [`ImageStore::get`];
//! the first request for a key draws and encodes the picture on the runtime's
//! blocking pool, concurrent requests for the same key wait for that one
//! result, and later ones are served from memory. The store lives as long as
//! the server's shared state; it has no task of its own.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Bytes;
use lru::LruCache;
use tokio::sync::OnceCell;

use crate::picture;

/// The encodings the server offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Format {
    Jpeg,
    Png,
    /// An animation: [`ANIMATION_FRAMES`] frames of the picture.
    Gif,
    /// A JPEG as a camera writes it (`?exif=W`): the picture with a photo's
    /// texture ([`crate::photo::render_photo`]), its EXIF embedding a
    /// thumbnail `W` pixels wide of the photo's aspect ratio (none for 0);
    /// progressive with `&progressive=1`.
    Camera {
        thumbnail_width: u32,
        progressive: bool,
    },
}

/// Frames of an animated GIF, and how long each is shown: a bar sweeps
/// across the picture's coloured field and back, its id readable in every
/// frame.
pub const ANIMATION_FRAMES: u32 = 8;
/// See [`ANIMATION_FRAMES`].
pub const ANIMATION_FRAME_MILLIS: u32 = 100;

impl Format {
    pub(crate) fn from_extension(ext: &str) -> Option<Self> {
        match ext {
            "jpg" | "jpeg" => Some(Format::Jpeg),
            "png" => Some(Format::Png),
            "gif" => Some(Format::Gif),
            _ => None,
        }
    }

    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::Jpeg | Format::Camera { .. } => "image/jpeg",
            Format::Png => "image/png",
            Format::Gif => "image/gif",
        }
    }

    pub(crate) fn extension(self) -> &'static str {
        match self {
            Format::Jpeg | Format::Camera { .. } => "jpg",
            Format::Png => "png",
            Format::Gif => "gif",
        }
    }
}

/// What to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ImageKey {
    pub(crate) id: u32,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) format: Format,
}

/// Images larger than this many pixels are drawn for each request and not
/// kept, so that a few 4096x4096 requests cannot fill the memory.
const MAX_CACHED_PIXELS: u64 = 1024 * 1024;
/// About 40 KB per 600x600 JPEG: some 80 MB when full.
const CACHE_ENTRIES: usize = 2048;

type Slot = Arc<OnceCell<Bytes>>;

/// Encoded images by key, least recently used dropped first.
pub(crate) struct ImageStore {
    // A std mutex: it is held only to find or insert a slot, never across an
    // `.await`; the slow part (encoding) happens in the slot, outside it.
    slots: Mutex<LruCache<ImageKey, Slot>>,
    jpeg_quality: u8,
}

/// Encoding failed (it should not: the encoders write to memory).
#[derive(Debug, thiserror::Error)]
#[error("could not draw image {id} at {width}x{height}: {reason}")]
pub(crate) struct DrawError {
    id: u32,
    width: u32,
    height: u32,
    reason: String,
}

impl ImageStore {
    pub(crate) fn new(jpeg_quality: u8) -> Self {
        Self {
            slots: Mutex::new(LruCache::new(
                NonZeroUsize::new(CACHE_ENTRIES).unwrap_or(NonZeroUsize::MIN),
            )),
            jpeg_quality,
        }
    }

    /// The encoded image for `key`, drawn on the blocking pool the first time.
    pub(crate) async fn get(&self, key: ImageKey) -> Result<Bytes, DrawError> {
        let quality = self.jpeg_quality;
        let draw = move || async move {
            tokio::task::spawn_blocking(move || encode(key, quality))
                .await
                .map_err(|join| DrawError {
                    id: key.id,
                    width: key.width,
                    height: key.height,
                    reason: join.to_string(),
                })?
        };
        // Camera photos are kept whatever their size: a report lists the
        // same few hundred photos again and again, and drawing one takes
        // longer than decoding it.
        let camera = matches!(key.format, Format::Camera { .. });
        if !camera && u64::from(key.width) * u64::from(key.height) > MAX_CACHED_PIXELS {
            return draw().await;
        }
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(slots.get_or_insert(key, Slot::default))
        };
        slot.get_or_try_init(draw).await.cloned()
    }
}

/// Draws and encodes one picture. CPU work: call it off the async workers.
pub(crate) fn encode(key: ImageKey, jpeg_quality: u8) -> Result<Bytes, DrawError> {
    let encoded = match key.format {
        Format::Camera {
            thumbnail_width,
            progressive,
        } => {
            let height = (u64::from(thumbnail_width) * u64::from(key.height))
                .div_ceil(u64::from(key.width).max(1))
                .clamp(1, 65_535) as u32;
            let options = crate::photo::JpegOptions {
                quality: jpeg_quality,
                progressive,
                thumbnail: (thumbnail_width > 0).then_some((thumbnail_width, height)),
                ..Default::default()
            };
            crate::photo::render_photo(key.id, key.width, key.height).encode_jpeg_with(&options)
        }
        format => {
            let picture = picture::render(key.id, key.width, key.height);
            match format {
                Format::Png => picture.encode_png(),
                Format::Gif => {
                    picture.encode_animated_gif(ANIMATION_FRAMES, ANIMATION_FRAME_MILLIS)
                }
                _ => picture.encode_jpeg(jpeg_quality),
            }
        }
    };
    encoded.map(Bytes::from).map_err(|e| DrawError {
        id: key.id,
        width: key.width,
        height: key.height,
        reason: e.to_string(),
    })
}

/// The side the `bomb` fault claims.
pub const BOMB_SIDE: u32 = 60_000;

/// A PNG whose header claims 60000x60000 8-bit greyscale pixels (3.6 GB
/// decoded). Its chunks and checksums are valid, and its pixel data holds the
/// first 16 rows, so a decoder that trusts the header allocates everything
/// before it finds the data short. About 4 KB, made once.
pub(crate) fn bomb_png() -> Bytes {
    static BOMB: OnceLock<Bytes> = OnceLock::new();
    BOMB.get_or_init(|| {
        use std::io::Write;
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = Vec::with_capacity(13);
        ihdr.extend_from_slice(&BOMB_SIDE.to_be_bytes());
        ihdr.extend_from_slice(&BOMB_SIDE.to_be_bytes());
        // Bit depth 8, colour type 0 (greyscale), deflate, filter 0, no interlace.
        ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
        push_chunk(&mut png, b"IHDR", &ihdr);
        let row_bytes = BOMB_SIDE as usize + 1;
        let mut deflate = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        // Writing into a Vec cannot fail.
        let _ = deflate.write_all(&vec![0u8; row_bytes * 16]);
        let idat = deflate.finish().unwrap_or_default();
        push_chunk(&mut png, b"IDAT", &idat);
        push_chunk(&mut png, b"IEND", &[]);
        Bytes::from(png)
    })
    .clone()
}

fn push_chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    png.extend_from_slice(&(data.len() as u32).to_be_bytes());
    png.extend_from_slice(kind);
    png.extend_from_slice(data);
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    png.extend_from_slice(&crc.finalize().to_be_bytes());
}

/// `len` pseudo-random bytes from `seed`; never starts with an image
/// signature.
pub(crate) fn garbage(seed: u64, len: usize) -> Bytes {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&crate::random::splitmix64(&mut state).to_le_bytes());
    }
    out.truncate(len);
    if let Some(first) = out.first_mut() {
        // 0xFF starts a JPEG, 0x89 a PNG, 'G' a GIF, 'R' a RIFF/WebP.
        if matches!(*first, 0xFF | 0x89 | b'G' | b'R') {
            *first = 0;
        }
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bomb_is_small_and_claims_a_huge_size() {
        let bomb = bomb_png();
        assert!(bomb.len() < 16 * 1024, "bomb is {} bytes", bomb.len());
        let reader = image::ImageReader::new(std::io::Cursor::new(&bomb[..]))
            .with_guessed_format()
            .unwrap();
        assert_eq!(reader.format(), Some(image::ImageFormat::Png));
        assert_eq!(reader.into_dimensions().unwrap(), (BOMB_SIDE, BOMB_SIDE));
    }

    #[test]
    fn garbage_is_repeatable_and_not_an_image() {
        assert_eq!(garbage(7, 1000), garbage(7, 1000));
        assert_ne!(garbage(7, 1000), garbage(8, 1000));
        assert!(image::load_from_memory(&garbage(7, 4096)).is_err());
    }

    #[test]
    fn a_gif_is_an_animation_whose_every_frame_carries_the_id() {
        use image::AnimationDecoder;
        let key = ImageKey {
            id: 12,
            width: 64,
            height: 48,
            format: Format::Gif,
        };
        let gif = encode(key, 85).unwrap();
        let decoder = image::codecs::gif::GifDecoder::new(std::io::Cursor::new(&gif[..])).unwrap();
        let frames = decoder.into_frames().collect_frames().unwrap();
        assert_eq!(frames.len(), ANIMATION_FRAMES as usize);
        for frame in &frames {
            assert_eq!(frame.delay().numer_denom_ms(), (ANIMATION_FRAME_MILLIS, 1));
            assert_eq!(crate::decode_id(frame.buffer(), 64, 48), Some(12));
        }
        assert_ne!(frames[0].buffer(), frames[1].buffer(), "the bar moves");
    }

    #[test]
    fn a_camera_jpeg_carries_its_thumbnail_and_its_id() {
        let key = ImageKey {
            id: 21,
            width: 400,
            height: 300,
            format: Format::Camera {
                thumbnail_width: 160,
                progressive: false,
            },
        };
        let jpeg = encode(key, 85).unwrap();
        assert_eq!(jpeg[2..4], [0xFF, 0xE1], "EXIF first");
        // The thumbnail: the second start of image, 160x120 by its frame.
        let at = jpeg
            .windows(2)
            .skip(2)
            .position(|w| w == [0xFF, 0xD8])
            .unwrap()
            + 2;
        let thumbnail = image::load_from_memory(&jpeg[at..]).unwrap();
        assert_eq!((thumbnail.width(), thumbnail.height()), (160, 120));
        let photo = image::load_from_memory(&jpeg).unwrap().to_rgba8();
        assert_eq!(crate::decode_id(photo.as_raw(), 400, 300), Some(21));
    }

    #[test]
    fn a_progressive_camera_jpeg_with_no_thumbnail_has_neither() {
        let key = ImageKey {
            id: 22,
            width: 400,
            height: 300,
            format: Format::Camera {
                thumbnail_width: 0,
                progressive: true,
            },
        };
        let jpeg = encode(key, 85).unwrap();
        let has = |marker: [u8; 2]| jpeg.windows(2).any(|w| w == marker);
        assert!(has([0xFF, 0xC2]), "a progressive frame");
        assert!(!has([0xFF, 0xE1]), "no EXIF");
        let photo = image::load_from_memory(&jpeg).unwrap().to_rgba8();
        assert_eq!(crate::decode_id(photo.as_raw(), 400, 300), Some(22));
    }

    #[tokio::test]
    async fn concurrent_requests_for_one_key_share_one_encoding() {
        let store = Arc::new(ImageStore::new(85));
        let key = ImageKey {
            id: 3,
            width: 64,
            height: 64,
            format: Format::Png,
        };
        let (a, b) = tokio::join!(store.get(key), store.get(key));
        let (a, b) = (a.unwrap(), b.unwrap());
        // The same allocation, not two equal encodings.
        assert_eq!(a.as_ptr(), b.as_ptr());
        assert_eq!(store.get(key).await.unwrap().as_ptr(), a.as_ptr());
    }
}
