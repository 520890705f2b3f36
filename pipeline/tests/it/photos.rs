//! Photos: every image of the decode corpus (`fixture_server::photo`:
//! JPEGs of 600x600 to 4000x3000, baseline and progressive, 4:2:0 and
//! 4:4:4, one tagged with EXIF orientation 6, and a 4000x3000 PNG and WebP)
//! becomes a thumbnail of the right size and content (a JPEG at every list
//! size, the others, decoded in full whatever the size, at one); a
//! JPEG decoded at a DCT scale matches `image`'s best full-size route; and
//! the tagged photo comes out upright.

use std::sync::OnceLock;

use fixture_server::photo::CorpusImage;
use image::RgbaImage;
use thumbpipe::{Config, TargetSize, Thumbnail, thumbnail_from_bytes};

/// 64 and 128 points at 1x and 2x.
const SIDES: [u32; 3] = [64, 128, 256];

fn corpus() -> &'static [CorpusImage] {
    static CORPUS: OnceLock<Vec<CorpusImage>> = OnceLock::new();
    CORPUS.get_or_init(|| fixture_server::photo::corpus().unwrap())
}

fn image(name: &str) -> &'static CorpusImage {
    corpus().iter().find(|image| image.name == name).unwrap()
}

fn thumbnail(image: &CorpusImage, side: u32) -> Thumbnail {
    thumbnail_from_bytes(
        &image.name,
        &image.bytes,
        TargetSize::square(side),
        &Config::default().decode,
    )
    .unwrap_or_else(|e| panic!("{} at {side}: {e}", image.name))
}

fn rgba(thumbnail: &Thumbnail) -> RgbaImage {
    RgbaImage::from_raw(thumbnail.width, thumbnail.height, thumbnail.pixels.to_vec()).unwrap()
}

fn reference(bytes: &[u8], width: u32, height: u32) -> RgbaImage {
    fixture_server::photo::reference_thumbnail(bytes, width, height).unwrap()
}

fn psnr(a: &RgbaImage, b: &RgbaImage) -> f64 {
    fixture_server::photo::psnr(a, b).unwrap()
}

#[test]
fn every_corpus_image_becomes_a_thumbnail_of_its_picture() {
    assert_eq!(corpus().len(), 22);
    for image in corpus() {
        let turned = image.jpeg.and_then(|options| options.orientation) == Some(6);
        // A JPEG's route depends on the size (its DCT scale); the other
        // formats decode in full for any size, and a 12 MP resize is
        // seconds in a test build.
        let sides = if image.jpeg.is_some() {
            &SIDES[..]
        } else {
            &SIDES[1..2]
        };
        for &side in sides {
            let thumbnail = thumbnail(image, side);
            let long = side;
            let short = (f64::from(side) * f64::from(image.height.min(image.width))
                / f64::from(image.width.max(image.height)))
            .round() as u32;
            let expected = match (image.width >= image.height, turned) {
                (true, false) | (false, true) => (long, short),
                _ => (short, long),
            };
            assert_eq!(
                (thumbnail.width, thumbnail.height),
                expected,
                "{} at {side}",
                image.name
            );
            assert_eq!(
                thumbnail.pixels.len(),
                (expected.0 * expected.1 * 4) as usize
            );
            if !turned {
                // The id ring reads back from the pixels: the right picture,
                // whole, with its colours.
                assert_eq!(
                    fixture_server::decode_id(&thumbnail.pixels, thumbnail.width, thumbnail.height),
                    Some(image.id),
                    "{} at {side}",
                    image.name
                );
            }
        }
    }
}

/// A JPEG decoded at 1/8, 1/4 or 1/2 and resized the rest of the way
/// gives the thumbnail `image` makes from the full decode with Lanczos3,
/// within a PSNR bound: the scaled route loses nothing a list shows.
#[test]
fn scaled_jpeg_decodes_match_the_full_decode() {
    // Measured: 33.6-52.3 dB for the JPEGs (lowest at 600x600), 53-60 for
    // the PNG
    // (benches/results/decode.md).
    const MIN_PSNR: f64 = 32.0;
    for name in [
        "600x600-baseline-420",
        "600x600-progressive-444",
        "1920x1080-baseline-444",
        "4000x3000-baseline-420",
        "4000x3000-progressive-420",
    ] {
        let image = image(name);
        for side in SIDES {
            let ours = rgba(&thumbnail(image, side));
            let theirs = reference(&image.bytes, ours.width(), ours.height());
            let db = psnr(&ours, &theirs);
            assert!(db >= MIN_PSNR, "{name} at {side}: {db:.1} dB");
        }
    }
    // The PNG, which takes no DCT scaling: only the resize differs.
    let png = image("4000x3000.png");
    let ours = rgba(&thumbnail(png, 256));
    let theirs = reference(&png.bytes, ours.width(), ours.height());
    let db = psnr(&ours, &theirs);
    assert!(db >= MIN_PSNR, "png: {db:.1} dB");
}

/// The photo tagged "rotate 90" (a phone held upright) comes out upright:
/// its thumbnail is the untagged photo's, turned a quarter clockwise,
/// pixel for pixel.
#[test]
fn the_tagged_photo_comes_out_upright() {
    let plain = image("4000x3000-baseline-420");
    let tagged = image("4000x3000-baseline-420-exif6");
    for side in SIDES {
        let upright = rgba(&thumbnail(tagged, side));
        let turned = image::imageops::rotate90(&rgba(&thumbnail(plain, side)));
        assert_eq!(upright.dimensions(), turned.dimensions(), "{side}");
        assert!(upright == turned, "{side}: the pixels differ");
    }
}
