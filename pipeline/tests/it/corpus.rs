//! The nastiest inputs the decoder has met, each of which must give a
//! thumbnail or a typed error, never a panic: unusual but valid encodings,
//! headers claiming huge sizes, and every file cut short.
//!
//! The files in `tests/it/corpus` were made with ImageMagick from a 96x72
//! plasma (`icon.ico`: the plasma squeezed to 64, 48, 32 and 16 px); the
//! `huge-dims` ones are valid files with their size fields rewritten; the
//! SVGs were written by hand.

use thumbpipe::thumbnail_from_bytes;
use thumbpipe::{Config, Error, TargetSize};

enum Expect {
    /// A thumbnail of this size, fitted into 32x32.
    Thumbnail(u32, u32),
    /// Refused from the header by this setting.
    TooLarge(&'static str),
}

macro_rules! corpus {
    ($( $name:literal => $expect:expr ),* $(,)?) => {
        vec![$( ($name, include_bytes!(concat!("corpus/", $name)).as_slice(), $expect) ),*]
    };
}

fn corpus() -> Vec<(&'static str, &'static [u8], Expect)> {
    use Expect::*;
    let mut files = corpus! {
        "baseline.jpg" => Thumbnail(32, 24),
        "progressive.jpg" => Thumbnail(32, 24),
        "cmyk.jpg" => Thumbnail(32, 24),
        "gray.jpg" => Thumbnail(32, 24),
        "wide.jpg" => Thumbnail(32, 1),
        "rgb16.png" => Thumbnail(32, 24),
        "rgba16.png" => Thumbnail(32, 24),
        "interlaced.png" => Thumbnail(32, 24),
        "palette.png" => Thumbnail(32, 24),
        "gray-alpha.png" => Thumbnail(32, 24),
        "tiny.png" => Thumbnail(1, 1),
        "lossy.webp" => Thumbnail(32, 24),
        "lossless.webp" => Thumbnail(32, 24),
        "animated.gif" => Thumbnail(32, 24),
        "huge-dims.png" => TooLarge("decode.max_dimension"),
        "huge-dims.jpg" => TooLarge("decode.max_dimension"),
        "huge-dims.gif" => TooLarge("decode.max_dimension"),
        // 16383 x 16383 is under the dimension limit; its pixels are not
        // under the allocation limit.
        "huge-dims.webp" => TooLarge("decode.max_alloc_bytes"),
    };
    #[cfg(feature = "bmp")]
    files.extend(corpus! {
        "rgb24.bmp" => Thumbnail(32, 24),
        "palette8.bmp" => Thumbnail(32, 24),
        "rgba32.bmp" => Thumbnail(32, 24),
        "huge-dims.bmp" => TooLarge("decode.max_dimension"),
    });
    // Drawn at the box's size: 32x16.
    #[cfg(feature = "svg")]
    files.extend(corpus! {
        "logo.svg" => Thumbnail(32, 16),
        // Patterns, a mask, a clip, a filter's image and markers, each a
        // bit flip away from a loop: the fuzzer's seed for references.
        "references.svg" => Thumbnail(32, 16),
    });
    // The entry of 32 px, not the 64 scaled down.
    #[cfg(feature = "ico")]
    files.extend(corpus! { "icon.ico" => Thumbnail(32, 32) });
    #[cfg(feature = "tiff")]
    files.extend(corpus! {
        "plain.tif" => Thumbnail(32, 24),
        "lzw.tif" => Thumbnail(32, 24),
        "deflate.tif" => Thumbnail(32, 24),
        "packbits.tif" => Thumbnail(32, 24),
        "jpeg.tif" => Thumbnail(32, 24),
        "rgb16.tif" => Thumbnail(32, 24),
        "gray.tif" => Thumbnail(32, 24),
        "huge-dims.tif" => TooLarge("decode.max_dimension"),
    });
    files
}

/// A decode error that is the decoder's considered answer, not a panic.
fn assert_clean_error(name: &str, error: &Error) {
    match error {
        Error::Decode { reason, .. } => {
            assert!(!reason.contains("panicked"), "{name}: {reason}")
        }
        Error::TooLarge { .. } => {}
        other => panic!("{name}: {other:?}"),
    }
}

/// The two JPEG routes: libjpeg's DCT scaling, and the pure-Rust full
/// decode that a binary built with `panic = "abort"` takes.
fn both_jpeg_routes() -> [Config; 2] {
    let mut pure_rust = Config::default();
    pure_rust.decode.jpeg_dct_scaling = false;
    [Config::default(), pure_rust]
}

#[test]
fn each_file_gives_its_thumbnail_or_its_typed_error() {
    for config in both_jpeg_routes() {
        each_file_gives_its_thumbnail_or_its_typed_error_with(&config);
    }
}

fn each_file_gives_its_thumbnail_or_its_typed_error_with(config: &Config) {
    for (name, bytes, expect) in corpus() {
        let result = thumbnail_from_bytes(name, bytes, TargetSize::square(32), &config.decode);
        match (expect, result) {
            (Expect::Thumbnail(width, height), Ok(thumbnail)) => {
                assert_eq!(
                    (thumbnail.width, thumbnail.height),
                    (width, height),
                    "{name}"
                );
                assert_eq!(
                    thumbnail.pixels.len(),
                    (width * height * 4) as usize,
                    "{name}"
                );
            }
            (Expect::TooLarge(setting), Err(Error::TooLarge { setting: got, .. })) => {
                assert_eq!(got, setting, "{name}")
            }
            (_, result) => panic!("{name}: {result:?}"),
        }
    }
}

#[test]
fn an_empty_body_is_a_decode_error() {
    let result = thumbnail_from_bytes(
        "empty",
        b"",
        TargetSize::square(32),
        &Config::default().decode,
    );
    match result {
        Err(Error::Decode { reason, .. }) => assert!(reason.contains("empty"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// Every file cut at every length up to 64 bytes and at 40 points after:
/// each piece decodes or is refused cleanly.
#[test]
fn every_truncation_gives_a_thumbnail_or_a_typed_error() {
    for config in both_jpeg_routes() {
        every_truncation_gives_a_thumbnail_or_a_typed_error_with(&config);
    }
}

fn every_truncation_gives_a_thumbnail_or_a_typed_error_with(config: &Config) {
    let mut pieces = 0;
    let mut thumbnails = 0;
    for (name, bytes, _) in corpus() {
        let step = (bytes.len() / 40).max(1);
        let lengths = (0..bytes.len().min(64)).chain((64..bytes.len()).step_by(step));
        for length in lengths {
            let piece = &bytes[..length];
            let label = format!("{name} cut at {length}");
            match thumbnail_from_bytes(&label, piece, TargetSize::square(32), &config.decode) {
                Ok(thumbnail) => {
                    thumbnails += 1;
                    assert_eq!(
                        thumbnail.pixels.len(),
                        (thumbnail.width * thumbnail.height * 4) as usize
                    );
                }
                Err(error) => assert_clean_error(&label, &error),
            }
            pieces += 1;
        }
    }
    assert!(pieces > 1500, "{pieces}");
    eprintln!("{pieces} truncated inputs: {thumbnails} thumbnails, the rest typed errors");
}

/// Regression: a WebP whose EXIF chunk begins with `Exif\0\0` (as Pillow
/// writes it, and browsers read it) kept its stored orientation: `image`
/// reads a chunk that starts with the TIFF header only. Found by the
/// `realworld` comparison with Pillow. (Files: Pillow's test images, see
/// `corpus/pillow/README.md`.)
#[test]
fn a_webp_with_an_exif_orientation_comes_out_upright() {
    let upright = include_bytes!("corpus/pillow/hopper.webp");
    let turned = include_bytes!("corpus/pillow/hopper_orientation_6.webp");
    let config = Config::default();
    let target = TargetSize::square(64);
    let want = thumbnail_from_bytes("hopper.webp", upright, target, &config.decode).unwrap();
    let got =
        thumbnail_from_bytes("hopper_orientation_6.webp", turned, target, &config.decode).unwrap();
    assert_eq!((got.width, got.height), (want.width, want.height));
    let (mut sum, mut count) = (0.0f64, 0.0f64);
    for (a, b) in got.pixels.iter().zip(want.pixels.iter()) {
        sum += (f64::from(*a) - f64::from(*b)).powi(2);
        count += 1.0;
    }
    let psnr = 10.0 * (255.0f64.powi(2) / (sum / count)).log10();
    eprintln!("orientation 6 against upright: {psnr:.1} dB");
    assert!(psnr > 25.0, "{psnr:.1} dB: not turned upright");
}

/// Regression: a JPEG whose APP14 segment is too short for its kind was
/// refused by the pure-Rust header reader before libjpeg, which decodes it
/// (as browsers and Pillow show it), ever saw it. Now libjpeg's route
/// takes its size from the frame header; the pure-Rust route still refuses
/// it, with a typed error.
#[test]
fn a_jpeg_the_header_reader_refuses_is_decoded_by_libjpeg() {
    let jpeg = include_bytes!("corpus/pillow/truncated_app14.jpg");
    let [libjpeg, pure_rust] = both_jpeg_routes();
    let target = TargetSize::square(64);
    let thumbnail =
        thumbnail_from_bytes("truncated_app14.jpg", jpeg, target, &libjpeg.decode).unwrap();
    assert!(thumbnail.width > 0 && thumbnail.height > 0);
    assert_eq!(
        thumbnail.pixels.len(),
        (thumbnail.width * thumbnail.height * 4) as usize
    );
    // A later zune-jpeg may read it; until then, a clean refusal.
    if let Err(error) = thumbnail_from_bytes("truncated_app14.jpg", jpeg, target, &pure_rust.decode)
    {
        assert_clean_error("truncated_app14.jpg", &error);
    }
}

/// Regression: a JPEG whose size came from its frame header (the header
/// reader refused it) was shown as stored, its EXIF orientation lost: a
/// phone photo lay on its side. Now the orientation comes from the same
/// walk of the markers.
#[test]
fn a_jpeg_sized_by_its_frame_header_keeps_its_orientation() {
    let jpeg = fixture_server::picture::render(1, 120, 60)
        .encode_jpeg(85)
        .unwrap();
    // An Adobe segment (APP14) too short for its kind, as in Pillow's
    // `truncated_app14.jpg`, right after the start of the image.
    let mut short_app14 = jpeg[..2].to_vec();
    short_app14.extend_from_slice(b"\xFF\xEE\x00\x07Adobe");
    short_app14.extend_from_slice(&jpeg[2..]);
    let turned = fixture_server::photo::with_exif_orientation(&short_app14, 6);
    let [libjpeg, pure_rust] = both_jpeg_routes();
    let target = TargetSize::square(64);
    assert!(
        thumbnail_from_bytes("turned.jpg", &turned, target, &pure_rust.decode).is_err(),
        "the header reader reads it: the frame header is not needed"
    );
    let thumbnail = thumbnail_from_bytes("turned.jpg", &turned, target, &libjpeg.decode).unwrap();
    assert_eq!((thumbnail.width, thumbnail.height), (32, 64));
}

/// Regression: found by the `realworld` comparison on Pillow's TIFFs. A
/// BigTIFF was "not one of" the formats (`image` does not know its first
/// bytes); a tiled TIFF with separate colour planes made the `tiff` crate
/// panic, which ends an app built with `panic = "abort"`. Now the first is
/// decoded and the second refused before the decoder sees it.
#[cfg(feature = "tiff")]
#[test]
fn a_bigtiff_is_decoded_and_a_planar_tiled_tiff_refused_without_a_panic() {
    let config = Config::default();
    let big = include_bytes!("corpus/pillow/hopper_bigtiff.tif");
    let thumbnail = thumbnail_from_bytes(
        "hopper_bigtiff.tif",
        big,
        TargetSize::square(64),
        &config.decode,
    )
    .unwrap();
    assert_eq!((thumbnail.width, thumbnail.height), (64, 64));
    let planar = include_bytes!("corpus/pillow/tiff_tiled_planar_lzw.tiff");
    match thumbnail_from_bytes(
        "planar.tiff",
        planar,
        TargetSize::square(64),
        &config.decode,
    ) {
        Err(Error::Decode { reason, .. }) => {
            assert!(reason.contains("separate colour planes"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}
