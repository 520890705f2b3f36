//! Photos read in part over HTTP: a camera photo only as far as the EXIF
//! thumbnail that serves the load, a progressive photo only as far as its
//! DC scans when the thumbnail is at most 1/8 of it; one whose thumbnail
//! does not decode is read again whole; with the disk cache on, bodies are
//! read and kept whole, so a larger size later is made from the photo.

use thumbpipe::{Config, Pipeline, Priority, TargetSize, Thumbnail, thumbnail_from_bytes};

use crate::common::{Scratch, drain_until};
use crate::disk::{responses_only, scripted_server, written};

/// A 2000x1500 photo (about 1 MB) whose EXIF embeds a 160x120 thumbnail.
pub(crate) fn camera_photo() -> Vec<u8> {
    let options = fixture_server::photo::JpegOptions {
        thumbnail: Some((160, 120)),
        ..Default::default()
    };
    fixture_server::photo::render_photo(7, 2000, 1500)
        .encode_jpeg_with(&options)
        .unwrap()
}

/// Serves `body` as a JPEG at every request; returns its URL and the heads
/// of the requests received.
fn serve(body: Vec<u8>) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let (base, heads) = scripted_server(move |_, _| {
        (
            "HTTP/1.1 200 OK\r\ncontent-type: image/jpeg\r\ncache-control: max-age=3600".into(),
            body.clone(),
        )
    });
    (format!("{base}/photo.jpg"), heads)
}

fn load_one(pipeline: &mut Pipeline<usize>, url: &str, side: u32) -> Thumbnail {
    pipeline.request(0, url, TargetSize::square(side), Priority::Visible);
    let mut done = drain_until(pipeline, |all| !all.is_empty());
    let thumbnail = done.remove(0).result.unwrap();
    pipeline.end_frame();
    pipeline.end_frame();
    thumbnail
}

/// The thumbnail of `photo` at `side`, from bytes in memory, with embedded
/// thumbnails on or off.
fn expected(photo: &[u8], side: u32, embedded: bool) -> Thumbnail {
    let mut config = Config::default();
    config.decode.embedded_thumbnails = embedded;
    thumbnail_from_bytes("photo.jpg", photo, TargetSize::square(side), &config.decode).unwrap()
}

/// Loads `photo` (2000x1500) at 64 px, which reads less than a quarter
/// of it, then at 256 px, which reads it whole.
fn read_in_part_then_whole(photo: &[u8]) {
    let (url, heads) = serve(photo.to_vec());
    let mut pipeline = Pipeline::new(Config::default()).unwrap();
    let thumbnail = load_one(&mut pipeline, &url, 64);
    assert_eq!((thumbnail.width, thumbnail.height), (64, 48));
    assert_eq!(thumbnail.source_size, (2000, 1500));
    assert_eq!(thumbnail.pixels, expected(photo, 64, true).pixels);
    let read = pipeline.stats().bytes_fetched;
    assert!(
        read * 4 < photo.len() as u64,
        "read {read} of {} bytes",
        photo.len()
    );
    let thumbnail = load_one(&mut pipeline, &url, 256);
    assert_eq!((thumbnail.width, thumbnail.height), (256, 192));
    assert_eq!(thumbnail.pixels, expected(photo, 256, true).pixels);
    assert_eq!(pipeline.stats().bytes_fetched, read + photo.len() as u64);
    assert_eq!(heads.lock().unwrap().len(), 2);
}

/// 256 px is larger than the 160x120 embedded thumbnail.
#[test]
fn a_camera_photo_is_read_only_as_far_as_its_embedded_thumbnail() {
    read_in_part_then_whole(&camera_photo());
}

/// A progressive photo with no EXIF thumbnail: its DC scans make a
/// thumbnail of up to 1/8 of it (250x188), not 256 px.
#[test]
fn a_progressive_photo_is_read_only_as_far_as_its_dc_scans() {
    let options = fixture_server::photo::JpegOptions {
        progressive: true,
        ..Default::default()
    };
    let photo = fixture_server::photo::render_photo(7, 2000, 1500)
        .encode_jpeg_with(&options)
        .unwrap();
    read_in_part_then_whole(&photo);
}

#[test]
fn a_photo_cut_short_whose_thumbnail_does_not_decode_is_read_again_whole() {
    // The embedded thumbnail's Huffman table counts 255 codes of each
    // length: no decoder takes it.
    let mut photo = camera_photo();
    let thumbnail_at = photo
        .windows(2)
        .skip(2)
        .position(|w| w == [0xFF, 0xD8])
        .unwrap()
        + 2;
    let dht = thumbnail_at
        + photo[thumbnail_at..]
            .windows(2)
            .position(|w| w == [0xFF, 0xC4])
            .unwrap();
    photo[dht + 5..dht + 21].fill(0xFF);
    let (url, heads) = serve(photo.clone());
    let mut pipeline = Pipeline::new(Config::default()).unwrap();
    let thumbnail = load_one(&mut pipeline, &url, 64);
    assert_eq!((thumbnail.width, thumbnail.height), (64, 48));
    assert_eq!(thumbnail.pixels, expected(&photo, 64, false).pixels);
    assert_eq!(heads.lock().unwrap().len(), 2, "read again, whole");
    assert!(pipeline.stats().bytes_fetched > photo.len() as u64);
}

#[test]
fn with_the_disk_cache_a_photo_is_read_and_kept_whole() {
    let scratch = Scratch::new("embedded-disk");
    let photo = camera_photo();
    let (url, heads) = serve(photo.clone());
    let mut pipeline = responses_only(&scratch.0, 64 << 20);
    let thumbnail = load_one(&mut pipeline, &url, 64);
    assert_eq!(thumbnail.pixels, expected(&photo, 64, true).pixels);
    assert_eq!(pipeline.stats().bytes_fetched, photo.len() as u64);
    written(&pipeline, 1);
    // A larger size is made from the photo kept on disk, not a part of it.
    let thumbnail = load_one(&mut pipeline, &url, 256);
    assert_eq!(thumbnail.pixels, expected(&photo, 256, true).pixels);
    assert_eq!(heads.lock().unwrap().len(), 1);
}
