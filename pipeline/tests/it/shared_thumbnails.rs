//! The desktop's shared thumbnails (freedesktop.org Thumbnail Managing
//! Standard): written as the standard says, used by the next launch with
//! no read or decode of the photo, used when another implementation wrote
//! them (`tests/data/freedesktop_thumbnailer.py`, stdlib Python), passed
//! over when stale or planted, and failure entries for files that do not
//! decode. GLib's own check of what thumbpipe writes is the ignored test at
//! the end, which `.ci/run` runs with `gio` installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Scratch, drain_until, eventually, id_of};
use thumbpipe::{Config, Error, Pipeline, Priority, Stats, TargetSize, Thumbnail, ThumbnailStore};

/// A folder of photos and a thumbnail cache of its own.
pub(super) struct Folder {
    pub(super) scratch: Scratch,
}

impl Folder {
    pub(super) fn new(name: &str) -> Self {
        let scratch = Scratch::new(name);
        std::fs::create_dir_all(scratch.0.join("photos")).unwrap();
        Self { scratch }
    }

    pub(super) fn cache(&self) -> PathBuf {
        self.scratch.0.join("cache").join("thumbnails")
    }

    /// Writes a 600x400 JPEG of picture `id` as `photos/name`.
    pub(super) fn photo(&self, name: &str, id: u32) -> PathBuf {
        let path = self.scratch.0.join("photos").join(name);
        let jpeg = fixture_server::picture::render(id, 600, 400)
            .encode_jpeg(90)
            .unwrap();
        std::fs::write(&path, jpeg).unwrap();
        path
    }

    /// A pipeline over `photos/`, reading and writing the cache.
    pub(super) fn pipeline(&self) -> Pipeline<usize> {
        Pipeline::new(self.config()).unwrap()
    }

    /// The config of [`Folder::pipeline`].
    pub(super) fn config(&self) -> Config {
        let mut config = Config::default();
        config.fetch.file_roots = vec![self.scratch.0.join("photos")];
        config.shared_thumbnails.read = ThumbnailStore::Dir(self.cache());
        config.shared_thumbnails.write = ThumbnailStore::Dir(self.cache());
        config
    }
}

pub(super) fn url(path: &Path) -> String {
    url::Url::from_file_path(path).unwrap().to_string()
}

/// The result of loading `path` at `target`, and the pipeline's stats once
/// the shared cache's writes (if any) are done.
pub(super) fn load(
    pipeline: &mut Pipeline<usize>,
    path: &Path,
    target: TargetSize,
) -> Result<Thumbnail, Error> {
    pipeline.request(0, &url(path), target, Priority::Visible);
    let mut done = drain_until(pipeline, |all| !all.is_empty());
    done.remove(0).result
}

pub(super) fn stats_when(pipeline: &Pipeline<usize>, done: impl Fn(&Stats) -> bool) -> Stats {
    assert!(
        eventually(|| done(&pipeline.stats())),
        "{:?}",
        pipeline.stats()
    );
    pipeline.stats()
}

/// The canonical URI of `photo` and the standard's name of its
/// thumbnails, as Python computes them.
fn uri_and_name(photo: &Path) -> (String, String) {
    let output = python(&[
        "-c",
        "import hashlib, os, sys, urllib.parse\n\
         uri = 'file://' + urllib.parse.quote(os.fsencode(sys.argv[1]), safe=\"!$&'()*+,=:@/~\")\n\
         print(uri)\n\
         print(hashlib.md5(uri.encode()).hexdigest() + '.png')",
        photo.to_str().unwrap(),
    ]);
    let mut lines = output.lines().map(str::to_owned);
    (lines.next().unwrap(), lines.next().unwrap())
}

pub(super) fn thumbnail_path(cache: &Path, class: &str, photo: &Path) -> PathBuf {
    cache.join(class).join(uri_and_name(photo).1)
}

fn python(args: &[&str]) -> String {
    let output = Command::new("python3")
        .args(args)
        .output()
        .expect("these tests need python3 (the standard's independent writer)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The independent writer's thumbnails of `photos` in `cache`; the paths
/// it wrote, a line each.
pub(super) fn other_writer(cache: &Path, extra: &[&str], photos: &[&Path]) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/freedesktop_thumbnailer.py"
    );
    let cache = cache.to_str().unwrap();
    let mut args = vec![script, "--cache", cache];
    args.extend(extra);
    args.extend(photos.iter().map(|p| p.to_str().unwrap()));
    python(&args)
}

/// The text chunks of a PNG, by keyword.
fn png_text(path: &Path) -> std::collections::HashMap<String, String> {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let reader = decoder.read_info().unwrap();
    reader
        .info()
        .uncompressed_latin1_text
        .iter()
        .map(|chunk| (chunk.keyword.clone(), chunk.text.clone()))
        .collect()
}

fn mtime(path: &Path) -> u64 {
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    modified
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn a_decoded_photo_is_written_as_the_standard_says_and_the_next_launch_reads_nothing_else() {
    let folder = Folder::new("shared-write");
    let photo = folder.photo("a b;#é.jpg", 7);
    let mut first = folder.pipeline();
    let thumbnail = load(&mut first, &photo, TargetSize::square(64)).unwrap();
    assert_eq!((thumbnail.width, thumbnail.height), (64, 43));
    assert_eq!(id_of(&thumbnail), Some(7));
    let stats = stats_when(&first, |s| s.shared_thumbnails_written == 1);
    assert_eq!(
        (stats.decodes_started, stats.shared_thumbnails_used),
        (1, 0)
    );
    drop(first);

    let written = thumbnail_path(&folder.cache(), "normal", &photo);
    let image = image::open(&written).unwrap();
    assert_eq!((image.width(), image.height()), (128, 85));
    // A photo is opaque: RGB, a quarter smaller than RGBA.
    assert_eq!(image.color(), image::ColorType::Rgb8);
    // Not deflated: the file holds its rows as they are (a filter byte
    // and 128 RGB pixels each).
    let rows_bytes = 85 * (1 + 128 * 3);
    assert!(std::fs::metadata(&written).unwrap().len() > rows_bytes);
    let text = png_text(&written);
    let uri = uri_and_name(&photo).0;
    assert!(uri.ends_with("/a%20b%3B%23%C3%A9.jpg"), "{uri}");
    assert_eq!(text["Thumb::URI"], uri);
    assert_eq!(text["Thumb::MTime"], mtime(&photo).to_string());
    assert_eq!(
        text["Thumb::Size"],
        std::fs::metadata(&photo).unwrap().len().to_string()
    );
    assert_eq!(text["Thumb::Mimetype"], "image/jpeg");
    assert_eq!(
        (
            text["Thumb::Image::Width"].as_str(),
            text["Thumb::Image::Height"].as_str()
        ),
        ("600", "400")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&written), 0o600);
        assert_eq!(mode(written.parent().unwrap()), 0o700);
    }
    // No temporary file left beside it.
    assert_eq!(
        std::fs::read_dir(written.parent().unwrap())
            .unwrap()
            .count(),
        1
    );

    // The next launch: the thumbnail, no read of the photo, no decode.
    let mut second = folder.pipeline();
    let again = load(&mut second, &photo, TargetSize::square(64)).unwrap();
    assert_eq!((again.width, again.height), (64, 43));
    assert_eq!(again.source_size, (600, 400));
    assert_eq!(id_of(&again), Some(7));
    let stats = second.stats();
    assert_eq!(stats.shared_thumbnails_used, 1);
    assert_eq!((stats.decodes_started, stats.file_bytes_read), (0, 0));
}

/// A 600x400 photo loaded at `target` by a pipeline over a new folder
/// `name`, with `compress_writes`: the thumbnail, and the file written in
/// the size class `class` once the write is done.
fn written(
    name: &str,
    target: TargetSize,
    class: &str,
    compress_writes: bool,
) -> (Thumbnail, Vec<u8>) {
    let folder = Folder::new(name);
    let photo = folder.photo("a.jpg", 3);
    let mut config = folder.config();
    config.shared_thumbnails.compress_writes = compress_writes;
    let mut pipeline = Pipeline::new(config).unwrap();
    let thumbnail = load(&mut pipeline, &photo, target).unwrap();
    stats_when(&pipeline, |s| s.shared_thumbnails_written == 1);
    let file = std::fs::read(thumbnail_path(&folder.cache(), class, &photo)).unwrap();
    (thumbnail, file)
}

#[test]
fn compress_writes_deflates_the_same_pixels() {
    let (_, stored) = written("shared-stored", TargetSize::square(64), "normal", false);
    let (_, deflated) = written("shared-deflated", TargetSize::square(64), "normal", true);
    let rows_bytes = 85 * (1 + 128 * 3);
    assert!(stored.len() > rows_bytes, "stored: {} bytes", stored.len());
    assert!(
        deflated.len() < rows_bytes,
        "deflated: {} bytes",
        deflated.len()
    );
    let pixels = |png: &[u8]| image::load_from_memory(png).unwrap().into_rgb8();
    assert_eq!(pixels(&stored), pixels(&deflated));
}

#[test]
fn a_256_px_thumbnail_is_stored_by_default() {
    let (_, file) = written("shared-large", TargetSize::square(200), "large", false);
    let rows_bytes = 171 * (1 + 256 * 3);
    assert!(file.len() > rows_bytes, "large: {} bytes", file.len());
}

#[test]
fn a_thumbnail_above_256_px_is_deflated_by_default() {
    let (thumbnail, file) = written("shared-x-large", TargetSize::square(300), "x-large", false);
    assert_eq!((thumbnail.width, thumbnail.height), (300, 200));
    let image = image::load_from_memory(&file).unwrap();
    assert_eq!((image.width(), image.height()), (512, 341));
    let rows_bytes = 341 * (1 + 512 * 3);
    assert!(file.len() < rows_bytes, "x-large: {} bytes", file.len());
}

#[test]
fn another_implementations_thumbnails_are_used_and_stale_ones_passed_over() {
    let folder = Folder::new("shared-other");
    let fresh = folder.photo("fresh.jpg", 3);
    let stale = folder.photo("stale.jpg", 4);
    // Magenta, which no decode of the photos gives.
    other_writer(&folder.cache(), &["--source-size", "600x400"], &[&fresh]);
    other_writer(&folder.cache(), &["--mtime-offset", "5"], &[&stale]);
    let mut pipeline = folder.pipeline();
    let used = load(&mut pipeline, &fresh, TargetSize::square(64)).unwrap();
    assert_eq!((used.width, used.height), (64, 48));
    assert_eq!(used.pixels[..4], [255, 0, 255, 255]);
    assert_eq!(used.source_size, (600, 400));
    let stats = pipeline.stats();
    assert_eq!(
        (
            stats.shared_thumbnails_used,
            stats.decodes_started,
            stats.file_bytes_read
        ),
        (1, 0, 0)
    );

    let decoded = load(&mut pipeline, &stale, TargetSize::square(64)).unwrap();
    assert_eq!(id_of(&decoded), Some(4));
    let stats = stats_when(&pipeline, |s| s.shared_thumbnails_written == 1);
    assert_eq!(
        (stats.shared_thumbnails_used, stats.decodes_started),
        (1, 1)
    );
    // Replaced by a valid one.
    let text = png_text(&thumbnail_path(&folder.cache(), "normal", &stale));
    assert_eq!(text["Thumb::MTime"], mtime(&stale).to_string());
}

#[test]
fn a_thumbnail_too_small_for_the_target_is_passed_over_for_a_larger_class() {
    let folder = Folder::new("shared-classes");
    let photo = folder.photo("p.jpg", 5);
    other_writer(&folder.cache(), &["--size", "normal"], &[&photo]);
    other_writer(
        &folder.cache(),
        &["--size", "large", "--rgba", "0,255,0,255"],
        &[&photo],
    );
    let mut pipeline = folder.pipeline();
    let small = load(&mut pipeline, &photo, TargetSize::square(100)).unwrap();
    assert_eq!(small.pixels[..4], [255, 0, 255, 255], "normal covers 100");
    let large = load(&mut pipeline, &photo, TargetSize::cover(200, 150)).unwrap();
    assert_eq!((large.width, large.height), (200, 150));
    assert_eq!(
        large.pixels[..4],
        [0, 255, 0, 255],
        "only large covers 200x150"
    );
    assert_eq!(pipeline.stats().decodes_started, 0);
}

#[test]
fn a_cover_crop_of_a_panorama_comes_out_at_its_full_size() {
    let folder = Folder::new("shared-panorama");
    let path = folder.scratch.0.join("photos").join("wide.jpg");
    let jpeg = fixture_server::picture::render(6, 1200, 300)
        .encode_jpeg(90)
        .unwrap();
    std::fs::write(&path, jpeg).unwrap();
    let mut pipeline = folder.pipeline();
    // Widened to 128 inside a square, the panorama is 128x32: too small
    // for a 64x64 crop, so it is decoded again at the target.
    let thumbnail = load(&mut pipeline, &path, TargetSize::cover(64, 64)).unwrap();
    assert_eq!((thumbnail.width, thumbnail.height), (64, 64));
    let stats = stats_when(&pipeline, |s| s.shared_thumbnails_written == 1);
    assert_eq!(stats.decodes_started, 1);
    let written = image::open(thumbnail_path(&folder.cache(), "normal", &path)).unwrap();
    assert_eq!((written.width(), written.height()), (128, 32));
}

#[cfg(unix)]
#[test]
fn nothing_is_written_where_others_may_write_or_through_a_link() {
    use std::os::unix::fs::PermissionsExt as _;
    let folder = Folder::new("shared-unsafe");
    let photo = folder.photo("p.jpg", 8);
    // A cache others may write to, and one whose `normal` is a link.
    std::fs::create_dir_all(folder.cache()).unwrap();
    std::fs::set_permissions(folder.cache(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut pipeline = folder.pipeline();
    assert_eq!(
        id_of(&load(&mut pipeline, &photo, TargetSize::square(64)).unwrap()),
        Some(8)
    );
    drop(pipeline);
    assert!(!folder.cache().join("normal").exists());

    std::fs::set_permissions(folder.cache(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let elsewhere = folder.scratch.0.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, folder.cache().join("normal")).unwrap();
    let mut pipeline = folder.pipeline();
    assert_eq!(
        id_of(&load(&mut pipeline, &photo, TargetSize::square(64)).unwrap()),
        Some(8)
    );
    drop(pipeline);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn planted_thumbnails_cost_a_decode_and_nothing_else() {
    let folder = Folder::new("shared-planted");
    let photos: Vec<PathBuf> = (0..4)
        .map(|n| folder.photo(&format!("{n}.jpg"), 10 + n))
        .collect();
    other_writer(&folder.cache(), &[], &[&photos[0]]);
    let outside = folder.scratch.0.join("outside.txt");
    std::fs::write(&outside, "not a thumbnail").unwrap();
    let planted: Vec<PathBuf> = photos
        .iter()
        .map(|p| thumbnail_path(&folder.cache(), "normal", p))
        .collect();
    // Truncated, a link out of the cache, huge (sparse), and a FIFO.
    let whole = std::fs::read(&planted[0]).unwrap();
    std::fs::write(&planted[0], &whole[..whole.len() / 2]).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, &planted[1]).unwrap();
    std::fs::File::create(&planted[2])
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    #[cfg(unix)]
    assert!(
        Command::new("mkfifo")
            .arg(&planted[3])
            .status()
            .unwrap()
            .success()
    );
    let mut pipeline = folder.pipeline();
    for (n, photo) in (10..).zip(&photos) {
        let thumbnail = load(&mut pipeline, photo, TargetSize::square(64)).unwrap();
        assert_eq!(id_of(&thumbnail), Some(n));
    }
    assert_eq!(pipeline.stats().decodes_started, 4);
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "not a thumbnail"
    );
}

#[test]
fn a_file_that_does_not_decode_gets_a_failure_entry_until_it_changes() {
    let folder = Folder::new("shared-fail");
    let broken = folder.scratch.0.join("photos").join("broken.jpg");
    std::fs::write(&broken, b"\xff\xd8\xff not a JPEG after all").unwrap();
    let mut first = folder.pipeline();
    assert!(matches!(
        load(&mut first, &broken, TargetSize::square(64)),
        Err(Error::Decode { .. })
    ));
    stats_when(&first, |s| s.shared_thumbnails_written == 1);
    drop(first);
    let version = env!("CARGO_PKG_VERSION");
    let fail_dir = folder
        .cache()
        .join("fail")
        .join(format!("thumbpipe-{version}"));
    assert_eq!(std::fs::read_dir(&fail_dir).unwrap().count(), 1);

    let mut second = folder.pipeline();
    match load(&mut second, &broken, TargetSize::square(64)) {
        Err(Error::Decode { reason, .. }) => assert!(reason.contains("failure entry"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        (
            second.stats().decodes_started,
            second.stats().file_bytes_read
        ),
        (0, 0)
    );
    // A thumbnail of it from another program, valid for this modification
    // time, is shown before the failure entry is read.
    other_writer(&folder.cache(), &[], &[&broken]);
    let mut third = folder.pipeline();
    let theirs = load(&mut third, &broken, TargetSize::square(64)).unwrap();
    assert_eq!(theirs.pixels[..4], [255, 0, 255, 255]);
    assert_eq!(third.stats().shared_thumbnails_used, 1);
    drop(third);
    std::fs::remove_file(thumbnail_path(&folder.cache(), "normal", &broken)).unwrap();

    // Mended: a new modification time, decoded again.
    let jpeg = fixture_server::picture::render(9, 300, 200)
        .encode_jpeg(90)
        .unwrap();
    std::fs::write(&broken, jpeg).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    std::fs::File::options()
        .write(true)
        .open(&broken)
        .unwrap()
        .set_modified(later)
        .unwrap();
    second.forget(&url(&broken));
    let mended = load(&mut second, &broken, TargetSize::square(64)).unwrap();
    assert_eq!(id_of(&mended), Some(9));
}

/// GLib's GIO, which GNOME's apps and file managers use, reports the
/// thumbnails thumbpipe writes valid.
#[test]
#[ignore = "needs GLib's `gio` (Debian: libglib2.0-bin); .ci/run installs it and runs this with --ignored"]
fn gio_reports_thumbpipes_thumbnails_valid() {
    let folder = Folder::new("shared-gio");
    let photos = [folder.photo("plain.jpg", 1), folder.photo("a b;#é%.jpg", 2)];
    let mut pipeline = folder.pipeline();
    for photo in &photos {
        load(&mut pipeline, photo, TargetSize::square(64)).unwrap();
    }
    stats_when(&pipeline, |s| s.shared_thumbnails_written == 2);
    for photo in &photos {
        let output = Command::new("gio")
            .args(["info", "-a", "thumbnail::*"])
            .arg(photo)
            .env("XDG_CACHE_HOME", folder.cache().parent().unwrap())
            .output()
            .expect("gio (Debian: libglib2.0-bin) runs");
        let output = String::from_utf8_lossy(&output.stdout);
        let expected = thumbnail_path(&folder.cache(), "normal", photo);
        assert!(
            output.contains(&format!("thumbnail::path: {}", expected.display())),
            "{output}"
        );
        assert!(output.contains("thumbnail::is-valid: TRUE"), "{output}");
    }
}
