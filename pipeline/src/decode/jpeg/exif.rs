//! EXIF's embedded thumbnail: the small JPEG a camera or phone writes into
//! its photo's APP1 segment (IFD1's `JPEGInterchangeFormat`), typically
//! 160x120 and sometimes larger, in the first few KB of the file. When it
//! is the same picture as the photo (the same aspect ratio, within a pixel
//! of rounding: some cameras letterbox it) and large enough that the
//! thumbnail asked for comes out the same size from it as from the photo,
//! the route decodes it instead of the photo.
//!
//! The JPEG's walk (`walk.rs`) finds the thumbnail, with [`ifd1_jpeg`],
//! as it takes the EXIF segment; this judges whether it serves. Runs on
//! the thread that asks (a decode thread, or the fetch task for its watch);
//! allocates nothing and keeps nothing.

use std::ops::Range;

use super::layout::{JpegLayout, ThumbnailAt};
use crate::decode::fitting::{self, Fitting};
use crate::decode::ifd::Tiff;
use crate::request::TargetSize;

/// Whether the embedded `thumbnail` of a `photo_size` photo shows the same
/// picture and `target` (already turned as the photo's orientation turns
/// it) comes out from it the size it would from the photo: never scaled
/// up, never cropped differently.
pub(in crate::decode) fn covers(
    photo_size: (u32, u32),
    thumbnail: &ThumbnailAt,
    target: TargetSize,
) -> bool {
    let (width, height) = (u64::from(photo_size.0), u64::from(photo_size.1));
    let (thumb_width, thumb_height) = (u64::from(thumbnail.width), u64::from(thumbnail.height));
    // Same aspect ratio: one side is the other scaled, give or take the
    // pixel its rounding may cost.
    let difference = (thumb_width * height).abs_diff(thumb_height * width);
    if difference > width.max(height) {
        return false;
    }
    let from_photo = Fitting::new(photo_size.0, photo_size.1, target).size;
    let from_embedded = Fitting::new(thumbnail.width, thumbnail.height, target).size;
    from_photo == from_embedded
}

/// Whether the photo whose headers (every segment up to its first scan's)
/// `layout` holds has an embedded thumbnail that [`covers`] `target`: what
/// the fetch's watch asks once the walk is past the first scan's header.
pub(super) fn serves(layout: &JpegLayout, target: TargetSize) -> bool {
    let Some(thumbnail) = &layout.thumbnail else {
        return false;
    };
    let (width, height) = (layout.width, layout.height);
    if layout.frames != 1 || width == 0 || height == 0 {
        return false;
    }
    let turned = layout.orientation.is_some_and(fitting::quarter_turn);
    let target = if turned {
        fitting::swapped(target)
    } else {
        target
    };
    covers((width, height), thumbnail, target)
}

/// Where in an EXIF segment's TIFF structure `tiff` the bytes IFD1's
/// `JPEGInterchangeFormat` (0x0201) and `JPEGInterchangeFormatLength`
/// (0x0202) point at lie, if they are inside it and start a JPEG.
pub(super) fn ifd1_jpeg(tiff: &[u8]) -> Option<Range<usize>> {
    let reader = Tiff::new(tiff).filter(|reader| reader.u16_at(2) == Some(42))?;
    let ifd1 = reader.next_ifd(reader.first_ifd()?)?;
    let value = |tag| reader.number_of(ifd1, tag);
    let (offset, length) = (value(0x0201)? as usize, value(0x0202)? as usize);
    let range = offset..offset.checked_add(length)?;
    tiff.get(range.clone())?
        .starts_with(&[0xFF, super::markers::SOI])
        .then_some(range)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fixture_server::exif::{Exif, with_exif};

    use super::*;
    use crate::decode::jpeg::walk::{JpegWalk, layout_of};
    use crate::decode::route::{decode_thumbnail, tests::LIMITS};
    use crate::fetch::stop::Enough;

    /// The thumbnail embedded in `jpeg`'s EXIF, as its walk finds it.
    fn embedded_in(jpeg: &[u8]) -> Option<ThumbnailAt> {
        layout_of(jpeg).thumbnail
    }

    /// The thumbnail embedded in `photo`, if it [`covers`] `target` for a
    /// photo of `size`.
    fn covering_of(photo: &[u8], size: (u32, u32), target: TargetSize) -> Option<ThumbnailAt> {
        embedded_in(photo).filter(|thumbnail| covers(size, thumbnail, target))
    }

    /// What the fetch's watch makes of `prefix` for the embedded thumbnail
    /// alone: the walk to the first scan's header, then [`serves`].
    fn prefix_serves(prefix: &[u8], target: TargetSize) -> Enough {
        let mut walk = JpegWalk::default();
        walk.walk_on(prefix, |_, _, layout| match layout.headers_end {
            Some(_) => std::ops::ControlFlow::Break(()),
            None => std::ops::ControlFlow::Continue(()),
        });
        match walk.layout().headers_end {
            Some(_) if serves(walk.layout(), target) => Enough::Yes,
            Some(_) => Enough::Never,
            None if walk.ended() => Enough::Never,
            None => Enough::NotYet,
        }
    }

    /// A `width` x `height` baseline JPEG of one colour.
    fn plain_jpeg(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
        let image = image::RgbImage::from_pixel(width, height, image::Rgb(rgb));
        let mut out = std::io::Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
        out.into_inner()
    }

    const RED: [u8; 3] = [230, 20, 20];
    const BLUE: [u8; 3] = [20, 20, 230];

    /// A red `photo` JPEG whose EXIF embeds a blue `thumbnail`-sized one,
    /// so a thumbnail's colour says which it was made from.
    fn camera(photo: (u32, u32), thumbnail: (u32, u32), orientation: Option<u16>) -> Vec<u8> {
        camera_with(
            photo,
            &plain_jpeg(thumbnail.0, thumbnail.1, BLUE),
            orientation,
        )
    }

    fn camera_with(photo: (u32, u32), thumbnail: &[u8], orientation: Option<u16>) -> Vec<u8> {
        let exif = Exif {
            orientation,
            thumbnail: Some(thumbnail),
            big_endian: false,
        };
        with_exif(&plain_jpeg(photo.0, photo.1, RED), &exif).unwrap()
    }

    fn blue(thumbnail: &crate::thumbnail::Thumbnail) -> bool {
        thumbnail.pixels[2] > thumbnail.pixels[0]
    }

    #[test]
    fn the_embedded_thumbnail_is_found_in_either_byte_order() {
        let small = plain_jpeg(16, 12, BLUE);
        for big_endian in [false, true] {
            let exif = Exif {
                orientation: Some(3),
                thumbnail: Some(&small),
                big_endian,
            };
            let photo = with_exif(&plain_jpeg(64, 48, RED), &exif).unwrap();
            let found = embedded_in(&photo).unwrap();
            assert_eq!(&photo[found.bytes], &small[..], "big endian: {big_endian}");
            assert_eq!((found.width, found.height), (16, 12));
        }
        // No EXIF, EXIF without IFD1, and not a JPEG: none.
        assert!(embedded_in(&plain_jpeg(64, 48, RED)).is_none());
        let orientation_only = fixture_server::photo::with_exif_orientation(&small, 6);
        assert!(embedded_in(&orientation_only).is_none());
        assert!(embedded_in(b"GIF89a").is_none());
    }

    #[test]
    fn a_thumbnail_serves_only_when_it_is_the_same_picture_and_covers_the_target() {
        let jpeg = camera((64, 48), (160, 120), None);
        let serves =
            |photo: (u32, u32), target: TargetSize| covering_of(&jpeg, photo, target).is_some();
        // A 12 MP photo's 160x120: at 64 and 128 px, not at 256 (it would
        // come out 160 wide).
        assert!(serves((4000, 3000), TargetSize::square(64)));
        assert!(serves((4000, 3000), TargetSize::square(128)));
        assert!(serves((4000, 3000), TargetSize::new(160, 160)));
        assert!(!serves((4000, 3000), TargetSize::square(256)));
        // A cover crops the short side: 120 px tall covers 96, not 128.
        assert!(serves((4000, 3000), TargetSize::cover(96, 96)));
        assert!(!serves((4000, 3000), TargetSize::cover(128, 128)));
        // A 3:2 photo's 4:3 thumbnail is letterboxed: another picture.
        assert!(!serves((6000, 4000), TargetSize::square(64)));
        // A pixel of rounding is the same picture: 6000x4000 as 320x213.
        let rounded = camera((64, 48), (320, 213), None);
        assert!(covering_of(&rounded, (6000, 4000), TargetSize::square(128)).is_some());
        // A photo smaller than its thumbnail comes out at its own size.
        assert!(!serves((100, 75), TargetSize::square(128)));
    }

    #[test]
    fn a_covering_thumbnail_is_decoded_in_the_photos_place_and_turned_as_it() {
        let url: Arc<str> = "camera.jpg".into();
        // Orientation 6: the 4:3 photo is shown upright as 3:4.
        let jpeg = camera((1600, 1200), (160, 120), Some(6));
        let thumbnail = decode_thumbnail(&url, &jpeg, TargetSize::square(64), LIMITS).unwrap();
        assert!(blue(&thumbnail), "made from the embedded thumbnail");
        assert_eq!((thumbnail.width, thumbnail.height), (48, 64));
        assert_eq!(thumbnail.source_size, (1200, 1600));
        // Larger than the thumbnail: the photo.
        let thumbnail = decode_thumbnail(&url, &jpeg, TargetSize::square(256), LIMITS).unwrap();
        assert!(!blue(&thumbnail), "made from the photo");
        assert_eq!((thumbnail.width, thumbnail.height), (192, 256));
        // Switched off: the photo.
        let off = crate::decode::DecodeLimits {
            embedded_thumbnails: false,
            ..LIMITS
        };
        let thumbnail = decode_thumbnail(&url, &jpeg, TargetSize::square(64), off).unwrap();
        assert!(!blue(&thumbnail));
        assert_eq!((thumbnail.width, thumbnail.height), (48, 64));
    }

    #[test]
    fn a_thumbnail_that_does_not_decode_leaves_the_photo_to_be_decoded() {
        // Huffman table counts of 255 each: a table no decoder takes.
        let mut broken = plain_jpeg(160, 120, BLUE);
        let dht = broken.windows(2).position(|w| w == [0xFF, 0xC4]).unwrap();
        broken[dht + 5..dht + 21].fill(0xFF);
        let jpeg = camera_with((1600, 1200), &broken, None);
        assert!(covering_of(&jpeg, (1600, 1200), TargetSize::square(64)).is_some());
        let url: Arc<str> = "camera.jpg".into();
        let thumbnail = decode_thumbnail(&url, &jpeg, TargetSize::square(64), LIMITS).unwrap();
        assert!(!blue(&thumbnail), "made from the photo");
        assert_eq!((thumbnail.width, thumbnail.height), (64, 48));
    }

    #[test]
    fn a_prefix_is_enough_once_it_holds_the_headers_and_a_thumbnail_that_serves() {
        let jpeg = camera((320, 240), (160, 120), None);
        let target = TargetSize::square(64);
        let verdicts: Vec<Enough> = (0..=jpeg.len())
            .map(|end| prefix_serves(&jpeg[..end], target))
            .collect();
        // More, then Enough from the end of the first scan's header on.
        let enough = verdicts.iter().position(|v| *v == Enough::Yes).unwrap();
        assert!(verdicts[..enough].iter().all(|v| *v == Enough::NotYet));
        assert!(verdicts[enough..].iter().all(|v| *v == Enough::Yes));
        assert_eq!(
            jpeg[enough - 14..enough - 12],
            [0xFF, 0xDA],
            "SOS with 3 components"
        );
        // What it is enough for: the thumbnail the whole file gives.
        let url: Arc<str> = "camera.jpg".into();
        let from_prefix = crate::decode::route::decode_thumbnail_from_prefix(
            &url,
            &jpeg[..enough],
            target,
            LIMITS,
        )
        .unwrap();
        let whole = decode_thumbnail(&url, &jpeg, target, LIMITS).unwrap();
        assert_eq!(from_prefix.pixels, whole.pixels);
        assert!(blue(&from_prefix));
        // Never: a size the thumbnail does not serve, a letterboxed one,
        // no EXIF, not a JPEG.
        let never = |bytes: &[u8], target| prefix_serves(bytes, target) == Enough::Never;
        assert!(never(&jpeg, TargetSize::square(256)));
        assert!(never(&camera((300, 200), (160, 120), None), target));
        assert!(never(&plain_jpeg(320, 240, RED), target));
        assert!(never(b"\x89PNG\r\n", target));
    }

    #[test]
    fn a_prefix_turns_the_target_as_the_photo_is_turned() {
        // Upright, the photo is 1200x1600 and its thumbnail 120x160: in a
        // 200x150 box both come out 113x150. Not turned, the photo would
        // fill the box and the thumbnail not.
        let jpeg = camera((1600, 1200), (160, 120), Some(6));
        assert_eq!(prefix_serves(&jpeg, TargetSize::new(200, 150)), Enough::Yes);
        let unturned = camera((1600, 1200), (160, 120), None);
        assert_eq!(
            prefix_serves(&unturned, TargetSize::new(200, 150)),
            Enough::Never
        );
    }

    /// Every byte of the EXIF segment and the thumbnail's headers set to
    /// values that break lengths, offsets and markers: an answer, never a
    /// panic.
    #[test]
    fn damaged_exif_never_panics() {
        let jpeg = camera((64, 48), (16, 12), Some(6));
        let mut answered = 0;
        for at in 2..jpeg.len().min(600) {
            for value in [0x00, 0x01, 0x7F, 0xD8, 0xDA, 0xFF] {
                let mut damaged = jpeg.clone();
                damaged[at] = value;
                let _ = embedded_in(&damaged);
                let _ = covering_of(&damaged, (64, 48), TargetSize::square(8));
                let _ = prefix_serves(&damaged, TargetSize::square(8));
                answered += 1;
            }
        }
        assert!(answered > 1000);
    }
}
