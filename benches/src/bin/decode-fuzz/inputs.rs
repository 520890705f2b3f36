//! The inputs: the seed files, and the mutations stacked on one to make
//! input `i` from `--seed` and `i` alone.

use std::path::Path;

use anyhow::Context as _;
use thumbpipe_benches::{Rng, mutate};

/// The seed files: the decoder's test corpus (with Pillow's files and the
/// AVIF files beside it) and a few fixture images; with `avif_only`, the
/// AVIF files alone.
pub(crate) fn seeds(avif_only: bool) -> anyhow::Result<Vec<Vec<u8>>> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pipeline/tests/it/corpus");
    let dirs = if avif_only {
        vec![corpus.join("avif")]
    } else {
        vec![corpus.clone(), corpus.join("pillow"), corpus.join("avif")]
    };
    let mut seeds = Vec::new();
    let mut names = Vec::new();
    for dir in dirs {
        names.extend(
            std::fs::read_dir(&dir)
                .with_context(|| format!("cannot read the corpus at {}", dir.display()))?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_file() && path.extension().is_some_and(|e| e != "md"))
                .filter(|path| !avif_only || path.extension().is_some_and(|e| e == "avif")),
        );
    }
    names.sort();
    for path in names {
        seeds.push(std::fs::read(&path).with_context(|| format!("{}", path.display()))?);
    }
    if avif_only {
        return Ok(seeds);
    }
    for id in [1, 77, 4242] {
        let picture = fixture_server::picture::render(id, 128, 96);
        seeds.push(picture.encode_jpeg(80).context("encoding a seed JPEG")?);
        seeds.push(picture.encode_png().context("encoding a seed PNG")?);
    }
    seeds.push(
        fixture_server::picture::render(5, 48, 48)
            .encode_animated_gif(4, 50)
            .context("encoding a seed GIF")?,
    );
    Ok(seeds)
}

/// Input `index`: a seed with one to four mutations, half of them of its
/// boxes when `boxes`.
pub(crate) fn mutate(seeds: &[Vec<u8>], seed: u64, index: u64, boxes: bool) -> Vec<u8> {
    let mut rng = Rng::new(seed, index);
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(4) {
        if boxes && rng.below(2) == 0 {
            mutate::boxes_of(&mut rng, &mut data, seeds);
        } else {
            mutate::bytes(&mut rng, &mut data, seeds);
        }
    }
    data
}
