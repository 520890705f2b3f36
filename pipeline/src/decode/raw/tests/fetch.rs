//! A RAW read by a fetch no further than its chosen preview: the watch
//! stops at it, before the sensor data, and waits for a larger preview
//! that lies after a smaller one.

use super::*;

#[test]
fn a_fetch_reads_a_raw_no_further_than_its_chosen_preview() {
    let file = cr2(1, 4 * 1024 * 1024);
    for (side, picture) in [(64, 2), (256, 1)] {
        let target = TargetSize::square(side);
        let body = fetched(&file, target, 4096);
        assert!(!body.complete, "{side}");
        assert!(
            body.len() * 20 < file.len(),
            "{side}: {} of {}",
            body.len(),
            file.len()
        );
        let url: Arc<str> = "file:///photo.cr2".into();
        let thumbnail = route::decode_body(&url, &body, target, LIMITS).unwrap();
        assert_eq!(picture_of(&thumbnail), Some(picture), "{side}");
    }
}

#[test]
fn a_fetch_stops_before_a_cr2_s_sensor_data_told_by_its_slices() {
    // As Canon lays it out: the previews, a small RGB image, then the
    // sensor data's directory (IFD3, with its slices) pointing a tenth
    // into the file. Its header is never waited for.
    let (preview, thumbnail) = (jpeg(1, 600, 400), jpeg(2, 160, 107));
    let (rgb, sensor) = (vec![0u8; 512 * 1024], vec![0u8; 4 * 1024 * 1024]);
    let mut head = b"II*\0\0\0\0\0CR\x02\0".to_vec();
    head.resize(16, 0);
    let file = tiff_file(
        &head,
        &[&preview, &thumbnail, &rgb, &sensor],
        &[
            (
                vec![
                    (0x0103, SHORT, V::N(6)),
                    (0x0111, LONG, V::At(0)),
                    (0x0117, LONG, V::Len(0)),
                ],
                Some(1),
            ),
            (
                vec![(0x0201, LONG, V::At(1)), (0x0202, LONG, V::Len(1))],
                Some(2),
            ),
            (
                vec![
                    (0x0103, SHORT, V::N(6)),
                    (0x0111, LONG, V::At(3)),
                    (0x0117, LONG, V::Len(3)),
                    (0xC640, SHORT, V::N(1)),
                ],
                None,
            ),
        ],
    );
    let sensor_at = file.len() - sensor.len();
    for (side, picture) in [(64, 2), (256, 1)] {
        let target = TargetSize::square(side);
        let body = fetched(&file, target, 4096);
        assert!(
            !body.complete && body.len() < sensor_at,
            "{side}: {} of {}",
            body.len(),
            file.len()
        );
        let url: Arc<str> = "file:///photo.cr2".into();
        let thumbnail = route::decode_body(&url, &body, target, LIMITS).unwrap();
        assert_eq!(picture_of(&thumbnail), Some(picture), "{side}");
    }
}

#[test]
fn a_fetch_waits_for_a_larger_preview_that_lies_after_a_smaller_one() {
    // EXIF's thumbnail (picture 2) first in the file, the full preview
    // (picture 1) 256 KiB after it, then sensor data.
    let (preview, thumbnail) = (jpeg(1, 600, 400), jpeg(2, 160, 107));
    let (gap, sensor) = (vec![0u8; 256 * 1024], vec![0u8; 2 * 1024 * 1024]);
    let mut head = b"II*\0\0\0\0\0CR\x02\0".to_vec();
    head.resize(16, 0);
    let file = tiff_file(
        &head,
        &[&thumbnail, &gap, &preview, &sensor],
        &[
            (
                vec![
                    (0x0103, SHORT, V::N(6)),
                    (0x0111, LONG, V::At(2)),
                    (0x0117, LONG, V::Len(2)),
                ],
                Some(1),
            ),
            (
                vec![(0x0201, LONG, V::At(0)), (0x0202, LONG, V::Len(0))],
                None,
            ),
        ],
    );
    let target = TargetSize::square(256);
    let body = fetched(&file, target, 1024);
    assert!(
        !body.complete && body.len() < file.len() / 4,
        "{} of {}",
        body.len(),
        file.len()
    );
    let url: Arc<str> = "file:///photo.cr2".into();
    let thumbnail = route::decode_body(&url, &body, target, LIMITS).unwrap();
    assert_eq!(picture_of(&thumbnail), Some(1));
    assert_eq!(thumbnail.source_size, (600, 400));
}
