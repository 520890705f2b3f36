//! `abort-check`: thumbpipe's decoder over hostile JPEGs and the decoder's
//! test corpus in a binary built the way many apps ship their release
//! builds, with `panic = "abort"`, where nothing can unwind:
//!
//! ```text
//! cargo run --profile abort -p abort-check
//! ```
//!
//! Every input must give a thumbnail or a typed error; the process must exit 0.
//! A decoder that reports an error by unwinding (libjpeg through the `mozjpeg`
//! crate does) would end it with SIGABRT instead, which is why such a build
//! decodes JPEGs in pure Rust (`DecodeConfig::jpeg_dct_scaling`). Built in any
//! other profile it runs the same inputs with unwinding, as a comparison.

use std::path::Path;

use thumbpipe::{Config, Error, TargetSize};

/// The decoder's test corpus, beside this crate.
const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../pipeline/tests/it/corpus");

fn main() {
    let strategy = if cfg!(panic = "abort") {
        "abort"
    } else {
        "unwind"
    };
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(CORPUS)
        .map(|dir| dir.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    names.sort();
    for path in &names {
        add_file(&mut inputs, path);
    }
    if inputs.is_empty() {
        eprintln!("abort-check: no corpus at {CORPUS}");
        std::process::exit(2);
    }
    let jpeg = inputs
        .iter()
        .find(|(name, _)| name == "baseline.jpg")
        .map(|(_, bytes)| bytes.clone())
        .unwrap_or_default();
    add_broken_jpegs(&mut inputs, &jpeg);
    let config = Config::default();
    let (mut thumbnails, mut errors) = (0, 0);
    for (name, bytes) in &inputs {
        match thumbpipe::thumbnail_from_bytes(name, bytes, TargetSize::square(32), &config.decode) {
            Ok(thumbnail)
                if thumbnail.pixels.len() == (thumbnail.width * thumbnail.height * 4) as usize =>
            {
                thumbnails += 1
            }
            Ok(_) => fail(name, "a thumbnail whose pixels do not match its size"),
            Err(Error::Decode { reason, .. }) if reason.contains("panicked") => fail(name, &reason),
            Err(Error::Decode { .. } | Error::TooLarge { .. }) => errors += 1,
            Err(other) => fail(name, &other.to_string()),
        }
    }
    println!(
        "abort-check (panic = \"{strategy}\"): {} inputs, {thumbnails} thumbnails, {errors} typed \
         errors",
        inputs.len()
    );
}

fn fail(name: &str, what: &str) {
    eprintln!("abort-check: {name}: {what}");
    std::process::exit(1);
}

/// A file, and the file cut at 40 points.
fn add_file(inputs: &mut Vec<(String, Vec<u8>)>, path: &Path) {
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let step = (bytes.len() / 40).max(1);
    for cut in (0..bytes.len()).step_by(step) {
        inputs.push((format!("{name} cut at {cut}"), bytes[..cut].to_vec()));
    }
    inputs.push((name, bytes));
}

/// JPEGs that make libjpeg fail with a fatal error: a frame header with no
/// components, a second frame header, a scan naming a component the frame
/// has not, and bytes flipped throughout.
fn add_broken_jpegs(inputs: &mut Vec<(String, Vec<u8>)>, jpeg: &[u8]) {
    let Some(frame) = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]) else {
        return;
    };
    let mut no_components = jpeg.to_vec();
    no_components[frame + 9] = 0;
    inputs.push(("a frame of 0 components".into(), no_components));
    let mut two_frames = jpeg[..jpeg.len() - 2].to_vec();
    two_frames.extend_from_slice(&jpeg[frame..frame + 19]);
    two_frames.extend_from_slice(&[0xFF, 0xD9]);
    inputs.push(("two frame headers".into(), two_frames));
    if let Some(scan) = jpeg.windows(2).position(|w| w == [0xFF, 0xDA]) {
        let mut stranger = jpeg.to_vec();
        stranger[scan + 5] = 0x7F;
        inputs.push(("a scan of an unknown component".into(), stranger));
    }
    for i in 0..200 {
        let mut flipped = jpeg.to_vec();
        let at = (i * 37 + 11) % flipped.len();
        flipped[at] ^= 1 << (i % 8);
        inputs.push((format!("baseline.jpg, byte {at} flipped"), flipped));
    }
}
