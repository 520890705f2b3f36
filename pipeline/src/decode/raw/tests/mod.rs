//! Camera RAWs made here from JPEGs of the fixture's pictures: each
//! container's previews found and chosen, turned as the RAW says, and
//! hostile structures refused with an error; read by a fetch no further
//! than the chosen one in `fetch.rs`. (Files no one here made: `benches`'
//! RAW corpus report.)

use std::sync::Arc;

use super::*;
use crate::decode::formats;
use crate::decode::route::tests::LIMITS;
use crate::decode::watch::tests::fetched;

mod fetch;
mod rgb;

/// A JPEG of the fixture's picture `id`.
fn jpeg(id: u32, width: u32, height: u32) -> Vec<u8> {
    fixture_server::picture::render(id, width, height)
        .encode_jpeg(90)
        .unwrap()
}

/// A value in a directory entry of [`tiff_file`].
#[derive(Clone, Copy)]
enum V {
    N(u32),
    /// Where blob `i` lies, and its length.
    At(usize),
    Len(usize),
    /// Where directory `i` lies.
    Ifd(usize),
}

/// A directory of [`tiff_file`]: its entries (tag, type, value), and the
/// directory it chains to.
type Ifd = (Vec<(u16, u16, V)>, Option<usize>);

const SHORT: u16 = 3;
const LONG: u16 = 4;

/// A little-endian TIFF-structured file laid out as cameras lay theirs:
/// `head` (its first 8 bytes, the first directory's offset filled in, and
/// any more), then `ifds` in order, each with its entries (tag, type,
/// value) and the directory it chains to, then `blobs`.
fn tiff_file(head: &[u8], blobs: &[&[u8]], ifds: &[Ifd]) -> Vec<u8> {
    let mut ifd_at = Vec::new();
    let mut at = head.len() as u32;
    for (entries, _) in ifds {
        ifd_at.push(at);
        at += 2 + 12 * entries.len() as u32 + 4;
    }
    let mut blob_at = Vec::new();
    for blob in blobs {
        blob_at.push(at);
        at += blob.len() as u32;
    }
    let value = |v: V| match v {
        V::N(n) => n,
        V::At(i) => blob_at[i],
        V::Len(i) => blobs[i].len() as u32,
        V::Ifd(i) => ifd_at[i],
    };
    let mut bytes = head.to_vec();
    bytes[4..8].copy_from_slice(&ifd_at[0].to_le_bytes());
    for (entries, next) in ifds {
        bytes.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        for &(tag, kind, v) in entries {
            bytes.extend_from_slice(&tag.to_le_bytes());
            bytes.extend_from_slice(&kind.to_le_bytes());
            bytes.extend_from_slice(&1u32.to_le_bytes());
            let v = value(v);
            match kind {
                SHORT => bytes.extend_from_slice(&[v as u8, (v >> 8) as u8, 0, 0]),
                _ => bytes.extend_from_slice(&v.to_le_bytes()),
            }
        }
        bytes.extend_from_slice(&next.map_or(0, |i| ifd_at[i]).to_le_bytes());
    }
    for blob in blobs {
        bytes.extend_from_slice(blob);
    }
    bytes
}

/// A CR2 as Canon lays it out: IFD0 a full-size JPEG preview (picture 1,
/// 600x400) turned by `orientation`, IFD1 EXIF's 160x107 thumbnail
/// (picture 2), IFD3 the sensor data (a lossless JPEG), then `sensor`
/// bytes of it.
fn cr2(orientation: u32, sensor: usize) -> Vec<u8> {
    let preview = jpeg(1, 600, 400);
    let thumbnail = jpeg(2, 160, 107);
    let mut lossless = jpeg(3, 64, 64);
    let sof = lossless.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    lossless[sof + 1] = 0xC3;
    lossless.resize(sensor.max(lossless.len()), 0);
    let mut head = b"II*\0\0\0\0\0CR\x02\0".to_vec();
    head.resize(16, 0);
    tiff_file(
        &head,
        &[&preview, &thumbnail, &lossless],
        &[
            (
                vec![
                    (0x0103, SHORT, V::N(6)),
                    (0x0111, LONG, V::At(0)),
                    (0x0112, SHORT, V::N(orientation)),
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
                    (0x0111, LONG, V::At(2)),
                    (0x0117, LONG, V::Len(2)),
                ],
                None,
            ),
        ],
    )
}

fn decoded(bytes: &[u8], side: u32) -> Result<Thumbnail, Error> {
    let url: Arc<str> = "file:///photo.raw".into();
    route::decode_thumbnail(&url, bytes, TargetSize::square(side), LIMITS)
}

fn picture_of(thumbnail: &Thumbnail) -> Option<u32> {
    fixture_server::decode_id(&thumbnail.pixels, thumbnail.width, thumbnail.height)
}

#[test]
fn a_cr2_is_told_and_shown_from_the_smallest_preview_that_serves() {
    let file = cr2(1, 0);
    assert_eq!(formats::media_type(&file), Some("image/x-dcraw"));
    // 64 px: EXIF's thumbnail makes it as the full preview would.
    let small = decoded(&file, 64).unwrap();
    assert_eq!(
        (small.width, small.height, small.source_size),
        (64, 43, (600, 400))
    );
    assert_eq!(picture_of(&small), Some(2));
    // 256 px: only the full preview has the pixels.
    let large = decoded(&file, 256).unwrap();
    assert_eq!((large.width, large.height), (256, 171));
    assert_eq!(picture_of(&large), Some(1));
}

#[test]
fn a_raw_is_turned_as_it_says_and_reports_its_upright_size() {
    let thumbnail = decoded(&cr2(6, 0), 256).unwrap();
    assert_eq!((thumbnail.width, thumbnail.height), (171, 256));
    assert_eq!(thumbnail.source_size, (400, 600));
}

#[test]
fn a_plain_tiff_raw_is_told_by_its_sensor_data_and_a_plain_tiff_is_not() {
    // NEF-like: IFD0 a small RGB image, sub-IFDs a JPEG preview and CFA data.
    let preview = jpeg(4, 480, 320);
    let nef = tiff_file(
        b"II*\0\0\0\0\0",
        &[&preview],
        &[
            (
                vec![(0x00FE, LONG, V::N(1)), (0x014A, LONG, V::Ifd(1))],
                None,
            ),
            (
                vec![(0x0201, LONG, V::At(0)), (0x0202, LONG, V::Len(0))],
                Some(2),
            ),
            (vec![(0x0106, SHORT, V::N(32803))], None),
        ],
    );
    assert_eq!(formats::media_type(&nef), Some("image/x-dcraw"));
    assert_eq!(picture_of(&decoded(&nef, 128).unwrap()), Some(4));
    // Without the sensor data, the TIFF's row reads it as ever.
    let plain = tiff_file(
        b"II*\0\0\0\0\0",
        &[],
        &[(vec![(0x0106, SHORT, V::N(2))], None)],
    );
    assert_eq!(formats::media_type(&plain), Some("image/tiff"));
}

/// An ISO-BMFF box of `kind` holding `body`.
fn boxed(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut bytes = ((body.len() + 8) as u32).to_be_bytes().to_vec();
    bytes.extend_from_slice(kind);
    bytes.extend_from_slice(body);
    bytes
}

/// A CR3 as Canon lays it out: `CMT1` saying `orientation`, `THMB`
/// (picture 5, 160x107) and `PRVW` (picture 6, 600x400) before `mdat`.
fn cr3(orientation: u32) -> Vec<u8> {
    let cmt1 = tiff_file(
        b"II*\0\0\0\0\0",
        &[],
        &[(vec![(0x0112, SHORT, V::N(orientation))], None)],
    );
    let thmb = [&[0u8; 16][..], &jpeg(5, 160, 107)].concat();
    let canon = [
        &super::cr3::CANON_UUID[..],
        &boxed(b"CMT1", &cmt1),
        &boxed(b"THMB", &thmb),
    ]
    .concat();
    let prvw = [&[0u8; 12][..], &jpeg(6, 600, 400)].concat();
    let preview = [
        &super::cr3::PREVIEW_UUID[..],
        &[0u8; 8],
        &boxed(b"PRVW", &prvw),
    ]
    .concat();
    [
        boxed(b"ftyp", b"crx \0\0\0\x01crx isom"),
        boxed(b"moov", &boxed(b"uuid", &canon)),
        boxed(b"uuid", &preview),
        boxed(b"mdat", &[0; 64]),
    ]
    .concat()
}

#[test]
fn a_cr3_is_shown_from_prvw_or_thmb_turned_as_cmt1_says() {
    let file = cr3(1);
    assert_eq!(formats::media_type(&file), Some("image/x-dcraw"));
    assert_eq!(picture_of(&decoded(&file, 64).unwrap()), Some(5));
    assert_eq!(picture_of(&decoded(&file, 256).unwrap()), Some(6));
    let turned = decoded(&cr3(8), 256).unwrap();
    assert_eq!(
        (turned.width, turned.height, turned.source_size),
        (171, 256, (400, 600))
    );
}

#[test]
fn the_first_cmt1_that_says_a_turn_counts() {
    let cmt1 = |entries| tiff_file(b"II*\0\0\0\0\0", &[], &[(entries, None)]);
    let turned = cmt1(vec![(0x0112, SHORT, V::N(8))]);
    let silent = cmt1(vec![(0x0100, SHORT, V::N(1))]);
    let thmb = [&[0u8; 16][..], &jpeg(5, 160, 107)].concat();
    let canon = [
        &super::cr3::CANON_UUID[..],
        &boxed(b"CMT1", &turned),
        &boxed(b"CMT1", &silent),
        &boxed(b"THMB", &thmb),
    ]
    .concat();
    let file = [
        boxed(b"ftyp", b"crx \0\0\0\x01crx isom"),
        boxed(b"moov", &boxed(b"uuid", &canon)),
        boxed(b"mdat", &[0; 64]),
    ]
    .concat();
    let read = cr3::read(&file);
    assert_eq!(read.orientation, Orientation::from_exif(8));
    assert_eq!(read.jpegs.len(), 1);
}

#[test]
fn a_raf_is_shown_from_its_jpeg_turned_as_its_jpegs_exif_says() {
    let photo = fixture_server::exif::with_exif(
        &jpeg(7, 600, 400),
        &fixture_server::exif::Exif {
            orientation: Some(6),
            thumbnail: None,
            big_endian: false,
        },
    )
    .unwrap();
    let mut file = raf::MAGIC.to_vec();
    file.resize(100, 0);
    file[84..88].copy_from_slice(&100u32.to_be_bytes());
    file[88..92].copy_from_slice(&(photo.len() as u32).to_be_bytes());
    file.extend_from_slice(&photo);
    // Upright: the picture is no longer where its id is read.
    let thumbnail = decoded(&file, 128).unwrap();
    assert_eq!((thumbnail.width, thumbnail.height), (85, 128));
    assert_eq!(thumbnail.source_size, (400, 600));
}

#[test]
fn hostile_structures_are_an_error_never_a_panic_or_a_hang() {
    let file = cr2(1, 0);
    // A directory that chains to itself, offsets past the end, a preview
    // past the end, every truncation.
    let looping = tiff_file(
        b"II*\0\0\0\0\0CR\x02\0\0\0\0\0",
        &[],
        &[(
            vec![
                (0x0201, LONG, V::N(u32::MAX)),
                (0x0202, LONG, V::N(u32::MAX)),
            ],
            Some(0),
        )],
    );
    let error = decoded(&looping, 64).unwrap_err();
    assert!(
        error.to_string().contains("no preview thumbpipe reads"),
        "{error}"
    );
    for cut in (0..file.len()).step_by(97) {
        let _ = decoded(&file[..cut], 64);
    }
    let mut flipped = file.clone();
    for at in (8..600).step_by(7) {
        flipped[at] ^= 0xA5;
        let _ = decoded(&flipped, 64);
    }
}

/// A start of a file that ends inside its structure (a directory's
/// entries, the boxes before `mdat`) is never taken for all there is: a
/// preview may lie in what is not read yet.
#[test]
fn a_structure_cut_short_is_never_complete() {
    let file = cr2(1, 0);
    // The three directories lie between the 16-byte head and the first JPEG.
    let directories_end = 16 + (2 + 4 * 12 + 4) + (2 + 2 * 12 + 4) + (2 + 3 * 12 + 4);
    assert!(
        tiff::read(&file[..directories_end])
            .unwrap()
            .previews
            .complete
    );
    for cut in 8..directories_end {
        let read = tiff::read(&file[..cut]);
        assert!(read.is_none_or(|read| !read.previews.complete), "{cut}");
    }
    let file = cr3(1);
    let mdat = file.len() - 72;
    assert_eq!(&file[mdat + 4..mdat + 8], b"mdat");
    assert!(cr3::read(&file[..mdat + 8]).complete);
    for cut in 0..mdat + 8 {
        assert!(!cr3::read(&file[..cut]).complete, "{cut}");
    }
    // Boxes past as many as are looked at are never read: with those all
    // there, nothing more is waited for.
    let many = [
        boxed(b"ftyp", b"crx \0\0\0\x01crx isom"),
        boxed(b"free", &[0; 8]).repeat(80),
    ]
    .concat();
    assert!(cr3::read(&many).complete);
    assert!(!cr3::read(&many[..many.len() / 2]).complete);
}
