//! `thumbnail-fuzz`: files planted in the desktop's shared thumbnail cache,
//! read by a pipeline as an app reads them, a million at a time, to find
//! planted files that crash, hang, grow the process, or are shown when
//! they must not be.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin thumbnail-fuzz -- --inputs 1000000
//! ```
//!
//! A folder of `--batch` photos (garbage bytes: a thumbnail passed over
//! makes the load a decode error, at once) and a cache of its own; each
//! input is the valid thumbnail of one photo (an RGBA PNG with its
//! `Thumb::URI`, `Thumb::MTime` and `Thumb::Size`) as it is (one in eight)
//! or with one to four mutations (of its chunks, CRCs kept right, or of its bytes:
//! `thumbpipe_benches::mutate`), written where the standard puts it. One
//! input in ten is planted as something else: a link to a valid
//! thumbnail outside the cache, a FIFO, a directory, a file of another
//! user's (when run as root), or a valid thumbnail in a size class that
//! is a link. Each batch is loaded through one pipeline (`file_roots` the
//! folder, `shared_thumbnails.read` the cache, writes off), at a target of
//! 32, 64, 128 or 200 px, every load a new key. Input `i` depends only on
//! `--seed` and `i`.
//!
//! A finding: a thumbnail whose pixels do not match its size, one shown
//! from a planted link, FIFO, directory or other user's file, a panic
//! reported as an error, or a batch whose loads do not all end within 10 s.
//! The process's resident memory is sampled after each batch; it must not
//! grow with the inputs.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use md5::{Digest as _, Md5};
use thumbpipe::{Config, Error, Pipeline, Priority, TargetSize, ThumbnailStore};
use thumbpipe_benches::{ResidentTrace, Rng, machine, mutate};

#[derive(Debug, Parser)]
#[command(about = "Fuzzing of thumbpipe's reads of the shared thumbnail cache")]
struct Args {
    /// Inputs to run.
    #[arg(long, default_value_t = 1_000_000)]
    inputs: u64,
    /// Seed of the mutations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Photos, and so planted files, loaded at once.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Where the inputs that are findings are written.
    #[arg(long, default_value = "benches/results/fuzz-findings")]
    out: PathBuf,
}

/// How an input is planted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plant {
    /// The mutated bytes, as a file of the user's.
    File,
    /// A link to a valid thumbnail outside the cache.
    Link,
    Fifo,
    Directory,
    /// The mutated bytes, as a file of another user's (as root).
    Foreign,
    /// A valid thumbnail, in a size class directory that is a link.
    LinkedClass,
}

impl Plant {
    /// Whether a thumbnail shown from it is a finding.
    fn must_not_show(self) -> bool {
        self != Plant::File
    }
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("thumbnail-fuzz: {error:#}");
        std::process::exit(1);
    }
}

/// The photos, the cache, and each photo's valid thumbnail.
struct Folder {
    root: PathBuf,
    photos: Vec<PathBuf>,
    /// Each photo's valid thumbnail: the input's seed.
    valid: Vec<Vec<u8>>,
    /// Each photo's thumbnail's file name.
    names: Vec<String>,
}

impl Folder {
    fn new(photos: usize) -> anyhow::Result<Self> {
        let root = std::env::temp_dir().join(format!("thumbnail-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("photos"))?;
        std::fs::create_dir_all(root.join("elsewhere"))?;
        let (mut paths, mut valid, mut names) = (Vec::new(), Vec::new(), Vec::new());
        for n in 0..photos {
            let path = root.join("photos").join(format!("p{n}.jpg"));
            std::fs::write(&path, b"\xff\xd8\xff not a photo")?;
            let uri = format!("file://{}", path.display());
            let metadata = std::fs::metadata(&path)?;
            let mtime = metadata
                .modified()?
                .duration_since(std::time::UNIX_EPOCH)?
                .as_secs();
            valid.push(thumbnail_png(n as u32, &uri, mtime, metadata.len())?);
            names.push(format!("{:x}.png", Md5::digest(uri.as_bytes())));
            paths.push(path);
        }
        Ok(Self {
            root,
            photos: paths,
            valid,
            names,
        })
    }

    fn cache(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// Plants `bytes` for photo `n` as `plant`, in place of the last
    /// input's file.
    fn plant(&self, n: usize, plant: Plant, bytes: &[u8]) -> anyhow::Result<()> {
        use std::os::unix::fs::PermissionsExt as _;
        let normal = self.cache().join("normal");
        // The class directory as the last input of a linked class left it.
        if std::fs::symlink_metadata(&normal).is_ok_and(|m| m.is_symlink()) {
            std::fs::remove_file(&normal)?;
        }
        std::fs::create_dir_all(&normal)?;
        for dir in [&self.cache(), &normal] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let path = normal.join(&self.names[n]);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir(&path)?,
            Ok(_) => std::fs::remove_file(&path)?,
            Err(_) => {}
        }
        match plant {
            Plant::File | Plant::Foreign => {
                std::fs::write(&path, bytes)?;
                if plant == Plant::Foreign {
                    std::os::unix::fs::chown(&path, Some(65534), Some(65534))?;
                }
            }
            Plant::Link => {
                let outside = self.root.join("elsewhere").join(&self.names[n]);
                std::fs::write(&outside, &self.valid[n])?;
                std::os::unix::fs::symlink(&outside, &path)?;
            }
            Plant::Fifo => {
                let made = std::process::Command::new("mkfifo").arg(&path).status()?;
                anyhow::ensure!(made.success(), "mkfifo failed");
            }
            Plant::Directory => std::fs::create_dir(&path)?,
            Plant::LinkedClass => {
                let elsewhere = self.root.join("elsewhere").join("normal");
                std::fs::create_dir_all(&elsewhere)?;
                std::fs::write(elsewhere.join(&self.names[n]), &self.valid[n])?;
                std::fs::remove_dir_all(&normal)?;
                std::os::unix::fs::symlink(&elsewhere, &normal)?;
            }
        }
        Ok(())
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A valid 128x96 thumbnail of picture `id` for the file at `uri`, as the
/// standard writes one.
fn thumbnail_png(id: u32, uri: &str, mtime: u64, size: u64) -> anyhow::Result<Vec<u8>> {
    let picture = fixture_server::picture::render(id, 128, 96);
    let rgba: Vec<u8> = picture
        .pixels
        .chunks(3)
        .flat_map(|p| [p[0], p[1], p[2], 255])
        .collect();
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, 128, 96);
    encoder.set_color(png::ColorType::Rgba);
    for (key, value) in [
        ("Thumb::URI", uri.to_owned()),
        ("Thumb::MTime", mtime.to_string()),
        ("Thumb::Size", size.to_string()),
    ] {
        encoder.add_text_chunk(key.to_owned(), value)?;
    }
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&rgba)?;
    writer.finish()?;
    Ok(png)
}

/// Input `index`: how it is planted, its bytes, and its target's side.
fn input(
    folder: &Folder,
    seed: u64,
    index: u64,
    photo: usize,
    root: bool,
) -> (Plant, Vec<u8>, u32) {
    let mut rng = Rng::new(seed, index);
    let plant = match rng.below(48) {
        0 => Plant::Link,
        1 => Plant::Fifo,
        2 => Plant::Directory,
        3 if root => Plant::Foreign,
        4 => Plant::LinkedClass,
        _ => Plant::File,
    };
    let mut bytes = folder.valid[photo].clone();
    // One in eight as written: the path a valid thumbnail takes.
    let mutations = if rng.below(8) == 0 {
        0
    } else {
        1 + rng.below(4)
    };
    for _ in 0..mutations {
        if rng.below(2) == 0 {
            mutate::png_chunks(&mut rng, &mut bytes, &folder.valid);
        } else {
            mutate::bytes(&mut rng, &mut bytes, &folder.valid);
        }
    }
    let side = [32, 64, 128, 200][rng.below(4)];
    (plant, bytes, side)
}

/// Why an input is a finding, if it is.
fn judge(plant: Plant, result: &Result<thumbpipe::Thumbnail, Error>, side: u32) -> Option<String> {
    match result {
        Ok(thumbnail) => {
            let (w, h) = (thumbnail.width, thumbnail.height);
            if thumbnail.pixels.len() != (w as usize) * (h as usize) * 4 {
                Some(format!(
                    "{w}x{h} thumbnail with {} bytes",
                    thumbnail.pixels.len()
                ))
            } else if w == 0 || h == 0 || w > side || h > side {
                Some(format!("{w}x{h} thumbnail for a {side} px target"))
            } else if plant.must_not_show() {
                Some(format!("a thumbnail shown from a planted {plant:?}"))
            } else {
                None
            }
        }
        Err(Error::Decode { reason, .. }) if reason.contains("panicked") => Some(reason.clone()),
        Err(Error::Decode { .. } | Error::File { .. } | Error::TooLarge { .. }) => None,
        Err(other) => Some(format!("unexpected error: {other}")),
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let folder = Folder::new(args.batch)?;
    let root = runs_as_root();
    let mut config = Config::default();
    config.fetch.file_roots = vec![folder.root.join("photos")];
    config.shared_thumbnails.read = ThumbnailStore::Dir(folder.cache());
    config.shared_thumbnails.write = ThumbnailStore::Off;
    let mut pipeline = Pipeline::<usize>::new(config).context("building the pipeline")?;
    let (wake, woken) = mpsc::sync_channel::<()>(1);
    pipeline.set_waker(move || {
        let _ = wake.try_send(());
    });
    println!(
        "{} inputs in batches of {}, seed {}, {} on {}",
        args.inputs,
        args.batch,
        args.seed,
        if root {
            "as root"
        } else {
            "not as root (no foreign files)"
        },
        machine()
    );
    let started = Instant::now();
    let (mut shown, mut passed_over, mut findings) = (0u64, 0u64, Vec::new());
    let mut resident = ResidentTrace::default();
    let mut index = 0;
    while index < args.inputs {
        let batch = (args.inputs - index).min(args.batch as u64) as usize;
        let mut asked = Vec::with_capacity(batch);
        for photo in 0..batch {
            let (plant, bytes, side) = input(&folder, args.seed, index, photo, root);
            folder.plant(photo, plant, &bytes)?;
            asked.push((index, plant, bytes, side));
            index += 1;
        }
        for (row, (index, _, _, side)) in asked.iter().enumerate() {
            let url = format!("file://{}?n={index}", folder.photos[row].display());
            pipeline.request(row, &url, TargetSize::square(*side), Priority::Visible);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut done = Vec::with_capacity(batch);
        while done.len() < batch && Instant::now() < deadline {
            done.extend(pipeline.drain());
            if done.len() < batch {
                let _ = woken.recv_timeout(Duration::from_millis(100));
            }
        }
        if done.len() < batch {
            for (index, plant, bytes, _) in &asked {
                findings.push((*index, format!("a batch hung ({plant:?})"), bytes.clone()));
            }
            anyhow::bail!(
                "{} of {batch} loads did not end within 10 s",
                batch - done.len()
            );
        }
        for completion in done {
            let (index, plant, bytes, side) = &asked[completion.row];
            match judge(*plant, &completion.result, *side) {
                Some(why) => findings.push((*index, why, bytes.clone())),
                None if completion.result.is_ok() => shown += 1,
                None => passed_over += 1,
            }
            let url = format!(
                "file://{}?n={index}",
                folder.photos[completion.row].display()
            );
            pipeline.forget(&url);
        }
        pipeline.end_frame();
        resident.sample();
        if index % 100_000 < args.batch as u64 {
            println!("{index} inputs, {:.0} s", started.elapsed().as_secs_f64());
        }
    }
    let elapsed = started.elapsed();
    println!(
        "{} inputs in {:.1} s ({:.0} per second): {shown} thumbnails shown, {passed_over} \
         passed over (the photo's decode error), {} findings",
        args.inputs,
        elapsed.as_secs_f64(),
        args.inputs as f64 / elapsed.as_secs_f64(),
        findings.len()
    );
    println!("memory: {}", resident.summary());
    for (index, why, bytes) in findings.iter().take(20) {
        println!("  input {index}: {why}");
        std::fs::create_dir_all(&args.out)?;
        std::fs::write(args.out.join(format!("thumbnail-{index}.png")), bytes)?;
    }
    Ok(())
}

/// Whether this process runs as root (and so may give a file away).
fn runs_as_root() -> bool {
    let probe = std::env::temp_dir().join(format!("thumbnail-fuzz-root-{}", std::process::id()));
    let root = std::fs::write(&probe, b"")
        .and_then(|()| std::os::unix::fs::chown(&probe, Some(65534), None))
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    root
}
