//! AVIF against libavif: every AVIF in `corpus/avif` gives the thumbnail
//! Pillow's libavif gives (the same size within a pixel, 30 dB or more),
//! and a header claiming too much is refused before anything is decoded.
//!
//! The files (`corpus/avif/README.md` says where each comes from and its
//! licence): libavif's test images (grids, alpha, `clap`/`irot`/`imir`,
//! 10- and 12-bit, `idat`, a sequence) and the corpus's plasma encoded by
//! Pillow in each layout; the references in `corpus/avif/pillow` were
//! made by `benches/scripts/avif_corpus.py`.

use std::time::{Duration, Instant};

use thumbpipe::{Config, Error, TargetSize, thumbnail_from_bytes};

use crate::common::{assert_agrees, psnr};

macro_rules! avif {
    ($name:literal) => {
        (
            $name,
            include_bytes!(concat!("corpus/avif/", $name, ".avif")).as_slice(),
        )
    };
}

/// Each file, and what Pillow made of it: its thumbnail, or why it
/// refused (a file that libavif refuses and browsers' rules allow).
fn files() -> Vec<(&'static str, &'static [u8], Option<image::RgbaImage>)> {
    let files = [
        avif!("white_1x1"),
        avif!("extended_pixi"),
        avif!("draw_points_idat"),
        avif!("color_grid_alpha_nogrid"),
        avif!("colors-animated-8bpc"),
        avif!("abc_color_irot_alpha_irot"),
        avif!("sofa_grid1x5_420"),
        avif!("weld_sato_12B_8B_q0"),
        avif!("cosmos1650_yuv444_10bpc_p3pq"),
        avif!("plasma-420"),
        avif!("plasma-422-limited"),
        avif!("plasma-444"),
        avif!("plasma-400"),
        avif!("plasma-alpha"),
        avif!("plasma-alpha-premultiplied"),
        avif!("plasma-orientation-2"),
        avif!("plasma-orientation-4"),
        avif!("plasma-orientation-5"),
        avif!("plasma-orientation-6"),
        avif!("plasma-animated"),
        avif!("kimono.mirror-vertical.rotate270.crop"),
        // Refused by libavif 1.4's strict checks, which browsers do not
        // make, and shown here: a crop, turn and mirror not marked
        // essential; alpha without a size; a tile that the colour and alpha
        // grids share.
        avif!("clap_irot_imir_non_essential"),
        avif!("alpha_noispe"),
        avif!("color_grid_alpha_grid_tile_shared_in_dimg"),
    ];
    let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/corpus/avif/pillow/");
    files
        .into_iter()
        .map(|(name, bytes)| {
            let reference = image::open(format!("{directory}{name}.png"))
                .ok()
                .map(|image| image.into_rgba8());
            if reference.is_none() {
                assert!(
                    std::path::Path::new(&format!("{directory}{name}.refused")).exists(),
                    "{name}: no reference"
                );
            }
            (name, bytes, reference)
        })
        .collect()
}

#[test]
fn every_avif_gives_the_thumbnail_libavif_gives() {
    let config = Config::default();
    let mut compared = 0;
    for (name, bytes, reference) in files() {
        let ours = thumbnail_from_bytes(name, bytes, TargetSize::square(64), &config.decode);
        let ours = ours.unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(
            ours.pixels.len(),
            (ours.width * ours.height * 4) as usize,
            "{name}"
        );
        let Some(theirs) = reference else {
            continue;
        };
        assert_agrees(name, &ours, &theirs, 30.0);
        compared += 1;
    }
    assert_eq!(compared, 21);
}

/// Regression: a file whose configuration box (`av1C`) says another
/// chroma layout than its AV1 sequence header (every 4:2:2 file of
/// Link-U's set says 4:4:4) was refused; libavif and browsers decode what
/// the sequence header says, and so does thumbpipe, counting its memory by
/// it too.
#[test]
fn an_image_whose_av1c_says_another_layout_is_decoded_as_its_sequence_header_says() {
    let (name, bytes) = avif!("plasma-422-limited");
    let mut bytes = bytes.to_vec();
    let at = bytes.windows(4).position(|w| w == b"av1C").unwrap() + 4;
    // Subsampling x and y cleared: "4:4:4".
    bytes[at + 2] &= !0b1100;
    let reference = files()
        .into_iter()
        .find(|(n, _, _)| *n == name)
        .and_then(|(_, _, reference)| reference)
        .unwrap();
    let ours = thumbnail_from_bytes(
        name,
        &bytes,
        TargetSize::square(64),
        &Config::default().decode,
    )
    .unwrap();
    let db = psnr(&ours, &reference);
    assert!(db >= 30.0, "{db:.1} dB");
}

/// A clean aperture that is not a crop of the image (its origin half a
/// pixel off, here) shows the whole image, as libavif's apps, Android and
/// browsers show it; it used to refuse the file.
#[test]
fn a_clean_aperture_that_is_no_crop_shows_the_whole_image() {
    let (_, bytes) = avif!("clap_irot_imir_non_essential");
    let mut bytes = bytes.to_vec();
    let at = bytes.windows(4).position(|w| w == b"clap").unwrap() + 4;
    // The horizontal offset, 2, over 4: its origin at 2.5.
    bytes[at + 20..at + 24].copy_from_slice(&4u32.to_be_bytes());
    let thumbnail = thumbnail_from_bytes(
        "clap",
        &bytes,
        TargetSize::square(64),
        &Config::default().decode,
    )
    .unwrap();
    // 12x34, turned a quarter.
    assert_eq!((thumbnail.width, thumbnail.height), (34, 12));
}

#[test]
fn the_crop_turn_and_mirror_are_applied_in_the_specs_order() {
    // libavif's TransformTest.ClapIrotImir: 12x34 pixels, of which `clap`
    // keeps 8x10 (x 4, y 6), turned a quarter (10x8), then mirrored.
    let (_, bytes) = avif!("clap_irot_imir_non_essential");
    let thumbnail = thumbnail_from_bytes(
        "clap",
        bytes,
        TargetSize::square(64),
        &Config::default().decode,
    )
    .unwrap();
    assert_eq!((thumbnail.width, thumbnail.height), (10, 8));
    // The turn swaps the source size too: it is the image as shown.
    assert_eq!(thumbnail.source_size, (10, 8));
}

/// `white_1x1.avif` with its `ispe` rewritten to `width` x `height`.
fn claiming(width: u32, height: u32) -> Vec<u8> {
    let (_, bytes) = avif!("white_1x1");
    let mut bytes = bytes.to_vec();
    let at = bytes
        .windows(4)
        .position(|window| window == b"ispe")
        .expect("an ispe box")
        + 8;
    bytes[at..at + 4].copy_from_slice(&width.to_be_bytes());
    bytes[at + 4..at + 8].copy_from_slice(&height.to_be_bytes());
    bytes
}

#[test]
fn a_header_claiming_too_much_is_refused_before_decoding() {
    let config = Config::default();
    let cases = [
        (claiming(65_536, 65_536), "decode.max_dimension"),
        (claiming(16_000, 16_000), "decode.max_alloc_bytes"),
    ];
    for (bytes, setting) in cases {
        let started = Instant::now();
        match thumbnail_from_bytes("huge", &bytes, TargetSize::square(64), &config.decode) {
            Err(Error::TooLarge { setting: got, .. }) => assert_eq!(got, setting),
            other => panic!("{setting}: {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_millis(50));
    }
}

#[test]
fn an_av1_frame_that_is_not_the_size_the_file_says_is_refused() {
    // The frame is 1x1; the file says 2x2, then 1x2.
    for (width, height) in [(2, 2), (1, 2)] {
        let bytes = claiming(width, height);
        match thumbnail_from_bytes(
            "liar",
            &bytes,
            TargetSize::square(64),
            &Config::default().decode,
        ) {
            Err(Error::Decode { reason, .. }) => {
                assert!(reason.contains("AV1 image is 1x1"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn every_truncation_of_an_avif_is_a_typed_error_or_a_thumbnail() {
    let config = Config::default();
    let mut errors = 0;
    for (name, bytes, _) in files() {
        let step = (bytes.len() / 60).max(1);
        for length in (0..bytes.len()).step_by(step) {
            match thumbnail_from_bytes(
                name,
                &bytes[..length],
                TargetSize::square(32),
                &config.decode,
            ) {
                Ok(thumbnail) => assert_eq!(
                    thumbnail.pixels.len(),
                    (thumbnail.width * thumbnail.height * 4) as usize
                ),
                Err(Error::Decode { reason, .. }) => {
                    assert!(!reason.contains("panicked"), "{name} at {length}: {reason}");
                    errors += 1;
                }
                Err(other) => panic!("{name} at {length}: {other:?}"),
            }
        }
    }
    assert!(errors > 500, "{errors}");
}
