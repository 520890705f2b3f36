//! The id ring survives what a loader does to an image: JPEG compression at
//! the server's quality, decoding, and a downscale to a 32x32 thumbnail.

use fixture_server::{Config, decode_id};
use image::imageops::FilterType;

/// Draws `id` as the server does, encodes it, decodes it, downscales it and
/// reads the id back.
fn round_trip(id: u32, size: (u32, u32), thumb: (u32, u32), filter: FilterType) -> Option<u32> {
    let picture = fixture_server::picture::render(id, size.0, size.1);
    let jpeg = picture.encode_jpeg(Config::default().jpeg_quality).unwrap();
    let decoded = image::load_from_memory(&jpeg).unwrap().to_rgba8();
    let thumbnail = image::imageops::resize(&decoded, thumb.0, thumb.1, filter);
    decode_id(thumbnail.as_raw(), thumb.0, thumb.1)
}

/// Every id of a list of up to 512 rows (every pattern of the ring's low
/// nine bits), and every 37th id from there to 10,000. (All 10,000 took
/// 47 s of a 2-core CI run, the first 2,048 and every 13th 14 s; the
/// sample keeps every bit pattern of the low bits and a spread of the high
/// ones.)
#[test]
fn every_id_of_a_512_row_list_and_a_spread_to_10000_survive_jpeg_and_a_32x32_downscale() {
    let ids: Vec<u32> = (0..512).chain((512..10_000).step_by(37)).collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let failures: Vec<(u32, Option<u32>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|worker| {
                let ids = &ids;
                scope.spawn(move || {
                    ids.iter()
                        .copied()
                        .skip(worker)
                        .step_by(threads)
                        .filter_map(|id| {
                            let read = round_trip(id, (600, 600), (32, 32), FilterType::Triangle);
                            (read != Some(id)).then_some((id, read))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "ids misread (id, read): {failures:?}");
}

#[test]
fn ids_survive_other_filters_sizes_and_aspect_ratios() {
    let cases = [
        ((600, 600), (64, 64), FilterType::CatmullRom),
        ((600, 600), (32, 32), FilterType::Lanczos3),
        ((600, 600), (32, 32), FilterType::Nearest),
        ((600, 600), (128, 128), FilterType::Gaussian),
        ((600, 600), (16, 16), FilterType::Triangle),
        ((800, 450), (64, 36), FilterType::Triangle),
        ((120, 120), (32, 32), FilterType::Triangle),
    ];
    for (size, thumb, filter) in cases {
        for id in [0, 1, 42, 4095, 65_535, 500_000, fixture_server::MAX_ID] {
            assert_eq!(
                round_trip(id, size, thumb, filter),
                Some(id),
                "id {id}, {size:?} -> {thumb:?} with {filter:?}"
            );
        }
    }
}

#[test]
fn a_different_picture_is_not_read_as_an_id() {
    // A smooth gradient, like a photo without our ring.
    let (w, h) = (32u32, 32u32);
    let gradient: Vec<u8> = (0..w * h)
        .flat_map(|i| {
            let (x, y) = (i % w, i / w);
            [(x * 8) as u8, (y * 8) as u8, 128, 255]
        })
        .collect();
    assert_eq!(decode_id(&gradient, w, h), None);
}
