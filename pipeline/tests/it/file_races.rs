//! A file under the roots swapped for a link to a file outside them, over
//! and over while it is loaded (`renameat2(RENAME_EXCHANGE)`, as an
//! attacker who may write in the folder would): no load shows the picture
//! outside, and no thumbnail of it is written to the shared cache, where
//! every program on the desktop would take it for the inside file's.
//!
//! Regression: the file was checked by its path (canonicalised, compared
//! with the roots) and then opened by the path again, and the shared cache
//! stamped it by yet another look at the path: 266 of 3,000 raced loads
//! showed the outside picture, and 9 of 250 loads wrote it as the inside
//! file's thumbnail.
//!
//! Stress tests of a few seconds each; Linux only (the swap is Linux's).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::common::{Scratch, drain_until, id_of};
use thumbpipe::{Config, Pipeline, Priority, TargetSize, ThumbnailStore};

/// The picture inside the root, and the one outside it.
const INSIDE: u32 = 11;
const OUTSIDE: u32 = 13;

fn url(path: &Path) -> String {
    url::Url::from_file_path(path).unwrap().to_string()
}

/// Swaps each of `files` with a link beside it to `outside`, in turn, as
/// fast as it can, until dropped.
struct Racer {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Racer {
    #[cfg(target_os = "linux")]
    fn start(files: &[PathBuf], outside: &Path) -> Self {
        let pairs: Vec<(PathBuf, PathBuf)> = files
            .iter()
            .map(|file| {
                let link = file.with_extension("link");
                std::os::unix::fs::symlink(outside, &link).unwrap();
                (file.clone(), link)
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let (stop_racing, counted) = (Arc::clone(&stop), Arc::clone(&swaps));
        let thread = std::thread::Builder::new()
            .name("racer".into())
            .spawn(move || {
                let (stop, swaps) = (stop_racing, counted);
                use rustix::fs::{CWD, RenameFlags, renameat_with};
                while !stop.load(Ordering::Relaxed) {
                    for (file, link) in &pairs {
                        // Twice: each name is back as it was after each
                        // round, and spent half its time as the other.
                        for _ in 0..2 {
                            renameat_with(CWD, file, CWD, link, RenameFlags::EXCHANGE).unwrap();
                            swaps.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        Self {
            stop,
            swaps,
            thread: Some(thread.unwrap()),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn start(_files: &[PathBuf], _outside: &Path) -> Self {
        unreachable!("the race tests are ignored here")
    }
}

impl Drop for Racer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

/// A root with `count` copies of the inside picture, and a picture outside.
struct Folder {
    scratch: Scratch,
    files: Vec<PathBuf>,
    outside: PathBuf,
}

impl Folder {
    fn new(name: &str, count: usize) -> Self {
        let scratch = Scratch::new(name);
        std::fs::create_dir_all(scratch.0.join("root")).unwrap();
        std::fs::create_dir_all(scratch.0.join("outside")).unwrap();
        let files = (0..count)
            .map(|n| scratch.png(&format!("root/f{n}.png"), INSIDE))
            .collect();
        let outside = scratch.png("outside/secret.png", OUTSIDE);
        Self {
            scratch,
            files,
            outside,
        }
    }

    fn config(&self, cache: Option<&Path>) -> Config {
        let mut config = Config::default();
        config.fetch.file_roots = vec![self.scratch.0.join("root")];
        let store = cache.map_or(ThumbnailStore::Off, |dir| ThumbnailStore::Dir(dir.into()));
        config.shared_thumbnails.read = store.clone();
        config.shared_thumbnails.write = store;
        config
    }
}

#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "the swap (renameat2 RENAME_EXCHANGE) is Linux's"
)]
fn a_file_swapped_for_a_link_never_loads_the_picture_outside() {
    const LOADS: usize = 3_000;
    const BATCH: usize = 100;
    let folder = Folder::new("race-load", 1);
    let mut pipeline = Pipeline::<usize>::new(folder.config(None)).unwrap();
    let racer = Racer::start(&folder.files, &folder.outside);
    let base = url(&folder.files[0]);
    let (mut inside, mut outside, mut refused) = (0, 0, 0);
    for batch in 0..LOADS / BATCH {
        // Each its own load: the query makes the key, the path the file.
        for row in 0..BATCH {
            let url = format!("{base}?n={}", batch * BATCH + row);
            pipeline.request(row, &url, TargetSize::square(32), Priority::Visible);
        }
        let done = drain_until(&mut pipeline, |all| all.len() == BATCH);
        assert_eq!(done.len(), BATCH, "every load ends");
        for completion in done {
            match completion.result.as_ref().map(id_of) {
                Ok(Some(INSIDE)) => inside += 1,
                Ok(other) => {
                    assert_eq!(other, Some(OUTSIDE), "a picture of neither file");
                    outside += 1;
                }
                Err(_) => refused += 1,
            }
        }
    }
    let swaps = racer.swaps.load(Ordering::Relaxed);
    drop(racer);
    eprintln!(
        "{LOADS} raced loads, {swaps} swaps: {inside} inside, {refused} refused, {outside} outside"
    );
    assert_eq!(outside, 0, "loads that showed the picture outside the root");
    assert!(inside > 0 && refused > 0, "the race ran both ways");
}

#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "the swap (renameat2 RENAME_EXCHANGE) is Linux's"
)]
fn a_file_swapped_for_a_link_never_writes_the_picture_outside_as_its_thumbnail() {
    const RUNS: usize = 250;
    let folder = Folder::new("race-write", 1);
    let file = &folder.files[0];
    let racer = Racer::start(&folder.files, &folder.outside);
    let (mut written, mut written_outside) = (0, 0);
    for run in 0..RUNS {
        // A fresh cache each run: the load misses it and may write.
        let cache = folder.scratch.0.join(format!("cache-{run}"));
        let mut pipeline = Pipeline::<usize>::new(folder.config(Some(&cache))).unwrap();
        pipeline.request(0, &url(file), TargetSize::square(64), Priority::Visible);
        let done = drain_until(&mut pipeline, |all| !all.is_empty());
        // What the load showed is the other test's; this one is what it
        // leaves behind for every program on the desktop.
        assert_eq!(done.len(), 1, "the load ends");
        // Dropping the pipeline lets the file threads finish its write.
        drop(pipeline);
        for thumbnail in pngs_under(&cache.join("normal")) {
            let image = image::open(&thumbnail).unwrap().into_rgba8();
            let (width, height) = image.dimensions();
            written += 1;
            match fixture_server::decode_id(image.as_raw(), width, height) {
                Some(INSIDE) => {}
                Some(OUTSIDE) => written_outside += 1,
                other => panic!("a thumbnail of neither picture: {other:?}"),
            }
        }
    }
    let swaps = racer.swaps.load(Ordering::Relaxed);
    drop(racer);
    eprintln!(
        "{RUNS} raced loads with the shared cache, {swaps} swaps: {written} thumbnails \
         written, {written_outside} of the picture outside"
    );
    assert_eq!(written_outside, 0, "thumbnails of the picture outside");
    assert!(written > 0, "the loads wrote thumbnails at all");
}

fn pngs_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "png"))
        .collect()
}
