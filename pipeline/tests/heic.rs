//! HEIC through libheif (feature `heic`, off by default: it needs the
//! system's libheif). Phones' and cameras' files give the thumbnails
//! libheif's own decode gives, a file's own thumbnail is decoded in place
//! of the photo when it covers the target, and a file past the limits, or
//! damaged, is a typed error.
//!
//! Its own binary, so that CI builds it with the feature without building
//! the `it` suite twice. The files are in `it/corpus/heic` (its README says
//! where each comes from).

#![allow(clippy::unwrap_used)]

#[cfg(feature = "heic")]
#[path = "common/mod.rs"]
mod common;

#[cfg(not(feature = "heic"))]
#[test]
#[ignore = "needs thumbpipe's `heic` feature and libheif: \
            cargo test --workspace --features thumbpipe/heic --test heic"]
fn heic_is_tested_with_its_feature() {}

#[cfg(feature = "heic")]
mod heic {
    use std::time::{Duration, Instant};

    use thumbpipe::{
        Config, DecodeConfig, Error, Pipeline, Priority, TargetSize, Thumbnail,
        thumbnail_from_bytes,
    };

    use crate::common::assert_agrees;

    macro_rules! heic {
        ($name:literal) => {
            include_bytes!(concat!("it/corpus/heic/", $name)).as_slice()
        };
    }

    fn decoded(bytes: &[u8], side: u32, config: &DecodeConfig) -> Result<Thumbnail, Error> {
        thumbnail_from_bytes("test.heic", bytes, TargetSize::square(side), config)
    }

    /// The default decode config with `set` applied.
    fn limited(set: fn(&mut DecodeConfig)) -> DecodeConfig {
        let mut config = Config::default().decode;
        set(&mut config);
        config
    }

    fn pixel(thumbnail: &Thumbnail, x: u32, y: u32) -> [u8; 4] {
        let at = ((y * thumbnail.width + x) * 4) as usize;
        thumbnail.pixels[at..at + 4].try_into().unwrap()
    }

    /// Each file gives the thumbnail pillow-heif (a later libheif) gives of
    /// its primary image: the same size within a pixel, 30 dB or more (25
    /// where the file's own thumbnail is decoded: it was coded apart, at a
    /// lower quality). A file it refuses is refused here too.
    #[test]
    fn every_heic_gives_the_thumbnail_pillow_heif_gives() {
        let files = [
            ("photo-thumb", heic!("photo-thumb.heic")),
            ("alpha", heic!("alpha.heic")),
            // pillow-heif's and CrabbyAvif's test files.
            ("blue_grid_alpha", heic!("blue_grid_alpha.heic")),
            ("L_8__128x128", heic!("L_8__128x128.heif")),
            ("RGBA_10__128x128", heic!("RGBA_10__128x128.heif")),
            ("RGB_12__29x100", heic!("RGB_12__29x100.heif")),
            ("RGB_8_chroma444", heic!("RGB_8_chroma444.heif")),
            // Three images, the primary not the first.
            ("zPug_3", heic!("zPug_3.heic")),
            // Cut short, and damaged.
            ("truncated", heic!("truncated.heic")),
            ("corrupted", heic!("corrupted.heic")),
        ];
        let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/corpus/heic/pillow/");
        let (mut compared, mut refused) = (0, 0);
        for (name, bytes) in files {
            let ours = decoded(bytes, 64, &Config::default().decode);
            // libheif 1.15 refuses an item whose data runs past the file's
            // end; later ones show what there is, as the reference does.
            if name == "truncated" && ours.is_err() {
                assert!(
                    matches!(ours, Err(Error::Decode { .. })),
                    "{name}: {ours:?}"
                );
                refused += 1;
                continue;
            }
            let Ok(theirs) = image::open(format!("{directory}{name}.png")) else {
                assert!(
                    std::path::Path::new(&format!("{directory}{name}.refused")).exists(),
                    "{name}"
                );
                assert!(
                    matches!(ours, Err(Error::Decode { .. })),
                    "{name}: {ours:?}"
                );
                refused += 1;
                continue;
            };
            let theirs = theirs.into_rgba8();
            let ours = ours.unwrap_or_else(|error| panic!("{name}: {error}"));
            let least = if name == "photo-thumb" { 25.0 } else { 30.0 };
            assert_agrees(name, &ours, &theirs, least);
            compared += 1;
        }
        assert_eq!(compared + refused, 10);
        assert!((1..=2).contains(&refused), "{refused}");
    }

    #[test]
    fn a_heic_is_told_and_made_into_its_thumbnail() {
        assert!(thumbpipe::SUPPORTED_FORMATS.contains(&"HEIC"));
        let thumbnail = decoded(heic!("photo-thumb.heic"), 256, &Config::default().decode).unwrap();
        assert_eq!((thumbnail.width, thumbnail.height), (256, 192));
        assert_eq!(thumbnail.source_size, (1024, 768));
        assert_eq!(thumbnail.pixels.len(), 256 * 192 * 4);
        // The red rectangle drawn at (50, 50)-(300, 200) of the photo.
        let [r, g, b, a] = pixel(&thumbnail, 40, 30);
        assert!(
            r > 200 && g < 60 && b < 60 && a == 255,
            "{:?}",
            [r, g, b, a]
        );
    }

    /// `green-thumbnail.heic` is `photo-thumb.heic` with its 160x120
    /// thumbnail's data swapped for a plain green one's: whichever was
    /// decoded shows.
    #[test]
    fn the_files_own_thumbnail_is_decoded_when_it_covers_the_target() {
        let bytes = heic!("green-thumbnail.heic");
        let config = Config::default().decode;
        let green = |thumbnail: &Thumbnail| {
            let [r, g, b, _] = pixel(thumbnail, thumbnail.width / 2, thumbnail.height / 2);
            r < 40 && g > 160 && b < 40
        };
        for side in [64, 128, 160] {
            let small = decoded(bytes, side, &config).unwrap();
            assert!(green(&small), "{side} px: the photo was decoded");
            assert_eq!(small.source_size, (1024, 768), "{side} px");
            assert_eq!(small.width, side);
        }
        // Larger than the thumbnail: the photo.
        let large = decoded(bytes, 256, &config).unwrap();
        assert!(!green(&large));
        assert_eq!((large.width, large.height), (256, 192));
    }

    /// The same file with its thumbnail's size given as 120x160: shaped
    /// unlike the photo, and unlike what its stream decodes to, it is not
    /// shown; the photo is.
    #[test]
    fn a_thumbnail_shaped_unlike_the_photo_is_not_used() {
        let bytes = heic!("green-turned-thumbnail.heic");
        let thumbnail = decoded(bytes, 64, &Config::default().decode).unwrap();
        assert_eq!((thumbnail.width, thumbnail.height), (64, 48));
        let [r, g, b, _] = pixel(&thumbnail, 32, 24);
        assert!(!(r < 40 && g > 160 && b < 40), "the thumbnail was decoded");
    }

    /// A folder's HEIC files through a pipeline (`file://`, under its
    /// root), each the thumbnail `thumbnail_from_bytes` gives.
    #[test]
    fn a_folders_heic_files_load_through_a_pipeline() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/corpus/heic");
        let names = [
            "photo-thumb.heic",
            "green-thumbnail.heic",
            "blue_grid_alpha.heic",
            "zPug_3.heic",
        ];
        let mut config = Config::default();
        config.fetch.file_roots = vec![root.into()];
        config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
        config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
        let mut pipeline = Pipeline::<usize>::new(config.clone()).unwrap();
        for (row, name) in names.iter().enumerate() {
            let url = url::Url::from_file_path(format!("{root}/{name}")).unwrap();
            pipeline.request(row, url.as_str(), TargetSize::square(64), Priority::Visible);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut done = Vec::new();
        while done.len() < names.len() && Instant::now() < deadline {
            done.extend(pipeline.drain());
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(done.len(), names.len());
        for completion in done {
            let name = names[completion.row];
            let loaded = completion
                .result
                .unwrap_or_else(|error| panic!("{name}: {error}"));
            let bytes = std::fs::read(format!("{root}/{name}")).unwrap();
            let direct = decoded(&bytes, 64, &config.decode).unwrap();
            assert_eq!(
                (loaded.width, loaded.height),
                (direct.width, direct.height),
                "{name}"
            );
            assert_eq!(loaded.pixels, direct.pixels, "{name}");
        }
    }

    #[test]
    fn alpha_is_kept() {
        let thumbnail = decoded(heic!("alpha.heic"), 96, &Config::default().decode).unwrap();
        let alphas: Vec<u8> = thumbnail.pixels.chunks_exact(4).map(|p| p[3]).collect();
        assert!(alphas.iter().any(|&a| a < 64), "no transparent pixel");
        assert!(alphas.iter().any(|&a| a > 192), "no opaque pixel");
    }

    #[test]
    fn a_heic_past_the_limits_is_refused_naming_the_setting() {
        let bytes = heic!("photo-thumb.heic");
        let tight = limited(|config| config.max_alloc_bytes = 4 << 20);
        for (config, setting) in [
            (
                limited(|config| config.max_dimension = 1000),
                "decode.max_dimension",
            ),
            (tight.clone(), "decode.max_alloc_bytes"),
        ] {
            match decoded(bytes, 256, &config) {
                Err(Error::TooLarge { setting: named, .. }) => assert_eq!(named, setting),
                other => panic!("{setting}: {other:?}"),
            }
        }
        // Within the memory limit when only the small thumbnail is decoded.
        assert!(decoded(bytes, 64, &tight).is_ok());
    }

    /// `small-ispe-large-stream.heic` says its image is 64x64 (`ispe`) and
    /// its HEVC stream declares 2048x2048, which is what libheif decodes
    /// and allocates for: the stream's size is held to the limits.
    #[test]
    fn a_stream_larger_than_its_image_says_is_held_to_the_limits() {
        let bytes = heic!("small-ispe-large-stream.heic");
        for (config, setting) in [
            (
                limited(|config| config.max_dimension = 1000),
                "decode.max_dimension",
            ),
            (
                limited(|config| config.max_alloc_bytes = 4 << 20),
                "decode.max_alloc_bytes",
            ),
        ] {
            match decoded(bytes, 64, &config) {
                Err(Error::TooLarge {
                    setting: named,
                    what,
                    ..
                }) => {
                    assert_eq!(named, setting);
                    assert!(what.contains("2048"), "{what}");
                }
                other => panic!("{setting}: {other:?}"),
            }
        }
    }

    /// `grid-canvas-larger.heic` is `blue_grid_alpha.heic` (a 320x240 grid)
    /// with its grid's data saying 4000x4000, which libheif allocates:
    /// reckoned by that canvas, not by the 320x240 its `ispe` says.
    #[test]
    fn a_grid_canvas_larger_than_its_image_says_is_held_to_the_limits() {
        let bytes = heic!("grid-canvas-larger.heic");
        match decoded(
            bytes,
            64,
            &limited(|config| config.max_alloc_bytes = 8 << 20),
        ) {
            Err(Error::TooLarge { setting, what, .. }) => {
                assert_eq!(setting, "decode.max_alloc_bytes");
                assert!(what.contains("4000x4000"), "{what}");
            }
            other => panic!("{other:?}"),
        }
        // The file as it was is within that limit.
        let config = limited(|config| config.max_alloc_bytes = 8 << 20);
        assert!(decoded(heic!("blue_grid_alpha.heic"), 64, &config).is_ok());
    }

    /// `grid-of-itself.heic` is `blue_grid_alpha.heic` with its grid's
    /// last tile the grid: refused before libheif reads it (libheif before
    /// 1.16 recursed until its stack ran out; Debian's patched 1.15 says
    /// "Image reference cycle").
    #[test]
    fn a_grid_that_is_its_own_tile_is_refused() {
        match decoded(heic!("grid-of-itself.heic"), 64, &Config::default().decode) {
            Err(Error::Decode { reason, .. }) => {
                assert!(reason.contains("from itself"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    /// `alpha-smaller-plane.heic` is `alpha.heic` (96x72, with an alpha
    /// plane) whose alpha stream declares 64x64 (a 32x24 picture's, which
    /// the encoder padded): libheif before 1.18 would read that plane as
    /// 96x72, past its end. Refused before libheif reads it.
    #[test]
    fn an_alpha_plane_smaller_than_its_image_is_refused() {
        match decoded(
            heic!("alpha-smaller-plane.heic"),
            64,
            &Config::default().decode,
        ) {
            Err(Error::Decode { reason, .. }) => {
                assert!(reason.contains("alpha plane"), "{reason}");
                assert!(
                    reason.contains("64x64 where its image shows 96x72"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        // The file it was made from keeps its alpha.
        assert!(decoded(heic!("alpha.heic"), 64, &Config::default().decode).is_ok());
    }

    /// A file libheif and the check of its streams could read two ways (a
    /// second `meta` box: libheif reads the last) is refused.
    #[test]
    fn a_file_with_two_meta_boxes_is_refused() {
        let bytes = heic!("photo-thumb.heic");
        let at = bytes.windows(4).position(|w| w == b"meta").unwrap() - 4;
        let size = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let mut doubled = bytes.to_vec();
        doubled.extend_from_slice(&bytes[at..at + size]);
        match decoded(&doubled, 64, &Config::default().decode) {
            Err(Error::Decode { reason, .. }) => assert!(reason.contains("two 'meta'"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    /// Every truncation, and bytes flipped through the file, give a
    /// thumbnail or a decode error: no panic, no hang.
    #[test]
    fn damaged_heic_is_an_error_never_a_panic() {
        let bytes = heic!("photo-thumb.heic");
        let config = Config::default().decode;
        let mut errors = 0;
        for end in (0..bytes.len()).step_by(bytes.len() / 97) {
            match decoded(&bytes[..end], 64, &config) {
                Ok(_) => {}
                Err(Error::Decode { reason, .. }) => {
                    assert!(reason.starts_with("HEIC:") || end < 16, "{end}: {reason}");
                    errors += 1;
                }
                Err(other) => panic!("{end}: {other:?}"),
            }
        }
        assert!(errors > 90, "{errors}");
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut damaged = bytes.to_vec();
            let at = (state % bytes.len() as u64) as usize;
            damaged[at] ^= 1 << (state >> 61);
            if let Err(error) = decoded(&damaged, 64, &config) {
                assert!(
                    matches!(error, Error::Decode { .. } | Error::TooLarge { .. }),
                    "{at}: {error:?}"
                );
            }
        }
    }
}
