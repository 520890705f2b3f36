//! RAWs with no JPEG preview, shown from an uncompressed RGB one: a DNG
//! made here as Adobe's converter writes one with JPEG XL tiles.

use std::sync::Arc;

use super::*;

/// A DNG as Adobe's converter writes one with JPEG XL tiles: no JPEG
/// preview; IFD0 an uncompressed RGB thumbnail of picture 4 (240x160,
/// stored turned a quarter: orientation 6), its sub-IFD the sensor data in
/// a codec not read here, `sensor` bytes of it.
fn dng_with_rgb_thumbnail(sensor: usize) -> Vec<u8> {
    let stored = fixture_server::picture::render(4, 240, 160);
    let mut turned = image::RgbImage::from_raw(240, 160, stored.pixels).unwrap();
    turned = image::imageops::rotate270(&turned);
    let (width, height) = turned.dimensions();
    tiff_file(
        b"II*\0\0\0\0\0",
        &[turned.as_raw(), &vec![0u8; sensor]],
        &[
            (
                vec![
                    (0x00FE, LONG, V::N(1)),
                    (0x0100, LONG, V::N(width)),
                    (0x0101, LONG, V::N(height)),
                    (0x0102, SHORT, V::N(8)),
                    (0x0103, SHORT, V::N(1)),
                    (0x0106, SHORT, V::N(2)),
                    (0x0111, LONG, V::At(0)),
                    (0x0112, SHORT, V::N(6)),
                    (0x0115, SHORT, V::N(3)),
                    (0x0117, LONG, V::Len(0)),
                    (0x014A, LONG, V::Ifd(1)),
                    (0xC612, LONG, V::N(0x0001_0701)),
                ],
                None,
            ),
            (
                vec![
                    (0x0103, SHORT, V::N(52546)),
                    (0x0106, SHORT, V::N(32803)),
                    (0x0111, LONG, V::At(1)),
                    (0x0117, LONG, V::Len(1)),
                ],
                None,
            ),
        ],
    )
}

#[test]
fn a_raw_without_a_jpeg_preview_is_shown_from_its_rgb_one_and_read_no_further() {
    let file = dng_with_rgb_thumbnail(2 * 1024 * 1024);
    assert_eq!(formats::media_type(&file), Some("image/x-dcraw"));
    // Upright, at the preview's own size at most.
    let small = decoded(&file, 64).unwrap();
    assert_eq!(
        (small.width, small.height, small.source_size),
        (64, 43, (240, 160))
    );
    assert_eq!(picture_of(&small), Some(4));
    let whole = decoded(&file, 512).unwrap();
    assert_eq!((whole.width, whole.height), (240, 160));
    // A fetch stops once the preview is read.
    let body = fetched(&file, TargetSize::square(128), 4096);
    assert!(
        !body.complete && body.len() * 10 < file.len(),
        "{} of {}",
        body.len(),
        file.len()
    );
    let url: Arc<str> = "file:///photo.dng".into();
    let thumbnail = route::decode_body(&url, &body, TargetSize::square(128), LIMITS).unwrap();
    assert_eq!(picture_of(&thumbnail), Some(4));
    // Its samples cut short, or its size claiming more than its strip
    // holds: an error, never a panic.
    assert!(decoded(&file[..file.len() / 40], 64).is_err());
    // An RGB preview wider than any thumbnail needs is never chosen.
    let wide = vec![0u8; 1100 * 2 * 3];
    let too_wide = tiff_file(
        b"II*\0\0\0\0\0",
        &[&wide],
        &[(
            vec![
                (0x0100, LONG, V::N(1100)),
                (0x0101, LONG, V::N(2)),
                (0x0102, SHORT, V::N(8)),
                (0x0103, SHORT, V::N(1)),
                (0x0106, SHORT, V::N(2)),
                (0x0111, LONG, V::At(0)),
                (0x0115, SHORT, V::N(3)),
                (0x0117, LONG, V::Len(0)),
                (0xC612, LONG, V::N(0x0001_0701)),
            ],
            None,
        )],
    );
    assert!(tiff::read(&too_wide).unwrap().previews.rgb.is_empty());
    assert_eq!(tiff::read(&file).unwrap().previews.rgb.len(), 1);
    let mut lying = file.clone();
    let width_at = lying
        .windows(4)
        .position(|w| w == [0x00, 0x01, 0x04, 0x00])
        .unwrap();
    lying[width_at + 6..width_at + 10].copy_from_slice(&4000u32.to_le_bytes());
    assert!(decoded(&lying, 64).is_err());
}
