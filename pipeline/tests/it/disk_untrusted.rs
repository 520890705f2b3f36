//! The disk cache trusts nothing it reads: a header that would overflow the
//! caching rules, a policy stored by an older release, a `tmp` that is a link,
//! content files and index buckets that are links to `/dev/zero` or FIFOs, a
//! thumbnail entry that claims another size, an index line that claims a size
//! not its file's, a directory that belongs to another user. Each costs at most
//! a refetch: no panic, no hang, no file of anyone else's removed.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use thumbpipe::{BuildError, Config, Pipeline};

use super::disk::{
    content_files, load, png, responses_only, scripted_server, server, url, written,
};
use crate::common::{Scratch, eventually, idle};

const AGE_PAST_ANY_DURATION: &str = "18446744073709551615";

/// Sets `path`'s modification time `by` into the past.
fn make_old(path: &Path, by: Duration) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - by).unwrap();
}

/// Every file below `dir`'s index directory.
fn bucket_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.join("index-v5")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    files
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Regression: `Cache-Control: max-age=60` with an `ETag` and an `Age` of
/// `u64::MAX` was stored, and once a second had passed every use of its
/// policy overflowed a `Duration` inside http-cache-semantics: every load
/// of the URL failed with "the fetcher panicked", on every launch, until
/// the entry was evicted. Now an `Age` past 2^31 seconds is read as 2^31
/// (RFC 9111): the entry is stale at once and revalidated.
#[test]
fn an_age_past_any_duration_never_fails_its_url() {
    let scratch = Scratch::new("disk-huge-age");
    let (base, heads) = scripted_server(|head, _| {
        let headers =
            format!("etag: \"v1\"\r\ncache-control: max-age=60\r\nage: {AGE_PAST_ANY_DURATION}");
        if head.contains("if-none-match") {
            (
                format!("HTTP/1.1 304 Not Modified\r\n{headers}"),
                Vec::new(),
            )
        } else {
            (
                format!("HTTP/1.1 200 OK\r\ncontent-type: image/png\r\n{headers}"),
                png(11),
            )
        }
    });
    let url = format!("{base}/aged.png");
    for launch in 0..3 {
        let mut pipeline = responses_only(&scratch.0, 1 << 20);
        assert_eq!(
            load(&mut pipeline, std::slice::from_ref(&url)),
            vec![Ok(11)],
            "launch {launch}"
        );
        assert!(eventually(|| idle(&pipeline)));
        if launch == 0 {
            written(&pipeline, 1);
            // The overflow needs a second of the entry's own age.
            std::thread::sleep(Duration::from_millis(1100));
        } else {
            assert_eq!(pipeline.stats().disk.revalidated, 1, "launch {launch}");
        }
    }
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 3, "{heads:?}");
    assert!(heads[1].contains("if-none-match") && heads[2].contains("if-none-match"));
}

/// A policy already on disk with such an `Age` (stored by a release before
/// the fix, or planted) is removed when read, and the image fetched again.
#[test]
fn a_stored_policy_that_cannot_be_used_is_removed_and_fetched_again() {
    let scratch = Scratch::new("disk-planted-age");
    let server = server(Some(Duration::from_secs(600)));
    let image = url(&server, 12);
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, std::slice::from_ref(&image)), vec![Ok(12)]);
        written(&first, 1);
    }
    let key = url::Url::parse(&image).unwrap().to_string();
    let entry = cacache::metadata_sync(&scratch.0, &key).unwrap().unwrap();
    let mut metadata = entry.metadata.clone();
    // Named as the policy's loader would not check it if only `age` were
    // looked for: it lowercases names.
    metadata["policy"]["res"]["AGE"] = serde_json::json!(AGE_PAST_ANY_DURATION);
    let planted = cacache::WriteOpts::new()
        .integrity(entry.integrity.clone())
        .size(entry.size)
        .metadata(metadata);
    cacache::index::insert(&scratch.0, &key, planted).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    server.reset_stats();
    {
        let mut second = responses_only(&scratch.0, 1 << 20);
        assert_eq!(
            load(&mut second, std::slice::from_ref(&image)),
            vec![Ok(12)]
        );
        assert!(eventually(|| idle(&second)));
        let disk = written(&second, 1);
        assert_eq!((disk.corrupt, disk.misses), (1, 1));
        assert_eq!(server.stats().image_bodies, 1);
    }
    // Written again as it should be: served from disk.
    server.reset_stats();
    let mut third = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut third, std::slice::from_ref(&image)), vec![Ok(12)]);
    assert_eq!(server.stats().requests_started, 0);
}

/// Regression: the opening scan counted each entry at the size its index
/// line claims, so a line claiming a terabyte made the scan evict every
/// entry written before it to make room. Now an entry whose content file
/// is not the size claimed is corrupt: it alone is removed.
#[test]
fn an_index_line_claiming_a_size_not_its_files_evicts_nothing_else() {
    let scratch = Scratch::new("disk-claimed-size");
    let server = server(Some(Duration::from_secs(600)));
    let urls: Vec<String> = (20..23).map(|id| url(&server, id)).collect();
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, &urls), vec![Ok(20), Ok(21), Ok(22)]);
        written(&first, 3);
    }
    let key = url::Url::parse(&urls[2]).unwrap().to_string();
    let entry = cacache::metadata_sync(&scratch.0, &key).unwrap().unwrap();
    let planted = cacache::WriteOpts::new()
        .integrity(entry.integrity.clone())
        .size(1 << 40)
        .metadata(entry.metadata.clone());
    cacache::index::insert(&scratch.0, &key, planted).unwrap();
    server.reset_stats();
    let mut second = responses_only(&scratch.0, 1 << 20);
    // The scan is done once it has dealt with the planted line, one way
    // or the other, and has counted the two other entries, kept or
    // evicted (the planted line is removed before they are counted).
    assert!(eventually(|| {
        let disk = second.stats().disk;
        disk.corrupt + disk.evicted > 0 && disk.entries + disk.evicted >= 2
    }));
    assert!(eventually(|| idle(&second)));
    let disk = second.stats().disk;
    assert_eq!(
        (disk.corrupt, disk.evicted, disk.entries),
        (1, 0, 2),
        "{disk:?}"
    );
    assert_eq!(load(&mut second, &urls[..2]), vec![Ok(20), Ok(21)]);
    assert_eq!(server.stats().requests_started, 0);
}

/// Regression: the opening scan removed every regular file older than a
/// minute in the cache's `tmp`, following a link: with `tmp` a link to a
/// folder of three files two hours old, one load through a fresh cache
/// deleted all three. Now a link is never followed, and only files named
/// as cacache names its temporary files are removed.
#[test]
fn a_tmp_link_never_leads_the_cache_to_delete_files() {
    let scratch = Scratch::new("disk-tmp-link");
    let documents = scratch.0.join("documents");
    std::fs::create_dir_all(&documents).unwrap();
    let names = ["letter.txt", "photo.jpg", ".tmpAb12Cd"];
    for name in names {
        std::fs::write(documents.join(name), b"mine").unwrap();
        make_old(&documents.join(name), Duration::from_secs(7200));
    }
    let cache = scratch.0.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::os::unix::fs::symlink(&documents, cache.join("tmp")).unwrap();
    let server = server(Some(Duration::from_secs(600)));
    {
        let mut pipeline = responses_only(&cache, 1 << 20);
        assert_eq!(load(&mut pipeline, &[url(&server, 13)]), vec![Ok(13)]);
        written(&pipeline, 1);
    }
    for name in names {
        assert_eq!(
            std::fs::read(documents.join(name)).unwrap(),
            b"mine",
            "{name}"
        );
    }
}

#[test]
fn only_the_caches_own_abandoned_temporary_files_are_removed() {
    let scratch = Scratch::new("disk-tmp-names");
    let tmp = scratch.0.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let old = Duration::from_secs(7200);
    for (name, age) in [
        (".tmpAb12Cd", old),
        (".tmpXy34Zw", Duration::ZERO),
        ("notes.txt", old),
    ] {
        std::fs::write(tmp.join(name), b"x").unwrap();
        make_old(&tmp.join(name), age);
    }
    let server = server(Some(Duration::from_secs(600)));
    let mut pipeline = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut pipeline, &[url(&server, 14)]), vec![Ok(14)]);
    // A write lands only after the scan.
    written(&pipeline, 1);
    assert!(!tmp.join(".tmpAb12Cd").exists());
    assert!(tmp.join(".tmpXy34Zw").exists());
    assert!(tmp.join("notes.txt").exists());
}

/// Two images written to a cache in a new scratch `name`; then the first
/// of the files `files_of` lists replaced by a link to `/dev/zero` and the
/// second by a FIFO, and both images loaded again by a second pipeline.
/// Returns the files and the second pipeline's disk counters.
fn loaded_over_a_link_and_a_fifo(
    name: &str,
    files_of: fn(&Path) -> Vec<PathBuf>,
) -> (Vec<PathBuf>, thumbpipe::DiskStats) {
    let scratch = Scratch::new(name);
    let server = server(Some(Duration::from_secs(600)));
    let urls: Vec<String> = (15..17).map(|id| url(&server, id)).collect();
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, &urls), vec![Ok(15), Ok(16)]);
        written(&first, 2);
    }
    let files = files_of(&scratch.0);
    assert_eq!(files.len(), 2);
    std::fs::remove_file(&files[0]).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &files[0]).unwrap();
    std::fs::remove_file(&files[1]).unwrap();
    mkfifo(&files[1]);
    server.reset_stats();
    let mut second = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, &urls), vec![Ok(15), Ok(16)]);
    let disk = written(&second, 2);
    assert_eq!(server.stats().image_bodies, 2);
    (files, disk)
}

/// Regression: a content file was read to its end whatever its entry
/// said, so one replaced by a link to `/dev/zero` was read until memory
/// ran out, and one replaced by a FIFO blocked a disk thread for good.
/// Now neither is opened through (a link is not followed, a FIFO is
/// refused without blocking), nothing is read past the entry's size, and
/// both entries are removed and their images fetched again.
#[test]
fn content_files_that_are_links_or_fifos_are_read_no_further_than_their_size() {
    let (_, disk) = loaded_over_a_link_and_a_fifo("disk-content-links", content_files);
    assert_eq!((disk.corrupt, disk.hits, disk.misses), (2, 0, 2));
}

/// An index bucket that is a link to `/dev/zero`, or a FIFO, is neither
/// followed nor waited on: the scan removes it, and its image is fetched.
#[test]
fn index_buckets_that_are_links_or_fifos_are_removed() {
    let (buckets, disk) = loaded_over_a_link_and_a_fifo("disk-bucket-links", bucket_files);
    // Found by the scan, or by a read that came first (then by both).
    assert!(disk.corrupt >= 2, "{disk:?}");
    assert_eq!((disk.hits, disk.misses), (0, 2));
    // The link and the FIFO are gone: each bucket is a regular file again
    // (rewritten) or absent.
    for bucket in &buckets {
        assert!(
            std::fs::symlink_metadata(bucket).map_or(true, |m| m.is_file()),
            "{}",
            bucket.display()
        );
    }
}

/// A thumbnail entry whose envelope claims a size other than the request's
/// (here 64x16 for a 32x32 request: the same bytes of pixels) is removed,
/// not drawn.
#[test]
fn a_stored_thumbnail_of_another_size_is_not_served() {
    a_planted_thumbnail_is_removed_not_served("disk-thumbnail-size", |metadata| {
        assert_eq!(
            (metadata["width"].as_u64(), metadata["height"].as_u64()),
            (Some(32), Some(32))
        );
        metadata["width"] = serde_json::json!(64);
        metadata["height"] = serde_json::json!(16);
    });
}

/// So is one that says its image had no pixels.
#[test]
fn a_stored_thumbnail_of_an_empty_image_is_not_served() {
    a_planted_thumbnail_is_removed_not_served("disk-thumbnail-source", |metadata| {
        assert_eq!(metadata["source_size"], serde_json::json!([64, 64]));
        metadata["source_size"] = serde_json::json!([0, 64]);
    });
}

/// Or one whose image had another shape than its thumbnail.
#[test]
fn a_stored_thumbnail_of_another_shape_is_not_served() {
    a_planted_thumbnail_is_removed_not_served("disk-thumbnail-shape", |metadata| {
        metadata["source_size"] = serde_json::json!([4000, 3000]);
    });
}

/// Stores a thumbnail, changes its envelope with `edit`, and checks that a
/// new pipeline removes it and decodes the stored response again.
fn a_planted_thumbnail_is_removed_not_served(
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) {
    let scratch = Scratch::new(name);
    let server = server(Some(Duration::from_secs(600)));
    let image = url(&server, 19);
    {
        let mut first = super::disk::pipeline(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, std::slice::from_ref(&image)), vec![Ok(19)]);
        written(&first, 2);
    }
    let thumbnail = cacache::list_sync(&scratch.0)
        .map(Result::unwrap)
        .find(|entry| entry.key.starts_with("thumbnail/"))
        .unwrap();
    let mut metadata = thumbnail.metadata.clone();
    edit(&mut metadata);
    let planted = cacache::WriteOpts::new()
        .integrity(thumbnail.integrity.clone())
        .size(thumbnail.size)
        .metadata(metadata);
    cacache::index::insert(&scratch.0, &thumbnail.key, planted).unwrap();
    let mut second = super::disk::pipeline(&scratch.0, 1 << 20);
    assert_eq!(
        load(&mut second, std::slice::from_ref(&image)),
        vec![Ok(19)]
    );
    // Counted when the removal runs: after the opening scan, if the read
    // came while it ran.
    assert!(
        eventually(|| second.stats().disk.corrupt == 1),
        "{:?}",
        second.stats().disk
    );
    let stats = second.stats();
    assert_eq!(stats.disk.thumbnail_hits, 0);
    // Decoded again from the stored response.
    assert_eq!((stats.decodes_started, stats.disk.hits), (1, 1));
}

/// A directory the cache creates is this user's alone, and one of this
/// user's that others could write to is made so.
#[test]
fn a_new_cache_directory_is_private() {
    let open = Scratch::new("disk-open");
    std::fs::set_permissions(&open.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    drop(responses_only(&open.0, 1 << 20));
    let mode = std::fs::metadata(&open.0).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let scratch = Scratch::new("disk-private");
    let dir = scratch.0.join("app").join("thumbnails");
    let server = server(Some(Duration::from_secs(600)));
    let mut pipeline = responses_only(&dir, 1 << 20);
    assert_eq!(load(&mut pipeline, &[url(&server, 20)]), vec![Ok(20)]);
    written(&pipeline, 1);
    for made in [&dir, &dir.parent().unwrap().to_path_buf()] {
        let mode = std::fs::metadata(made).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", made.display());
    }
}

/// A cache directory that exists and belongs to another user (one made
/// first in a shared folder, say) is refused with an error that says so.
#[test]
fn a_cache_directory_of_another_user_is_refused() {
    use std::os::unix::fs::MetadataExt as _;
    let scratch = Scratch::new("disk-theirs");
    let mut dir = scratch.0.join("theirs");
    std::fs::create_dir_all(&dir).unwrap();
    // 0755: not writable by this user once it is another's.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Given to uid 54321, which needs root; without root, this user is not
    // root, and the root directory is another user's.
    if std::os::unix::fs::chown(&dir, Some(54_321), None).is_err() {
        dir = PathBuf::from("/");
        let me = std::fs::metadata(&scratch.0).unwrap().uid();
        assert_ne!(std::fs::metadata(&dir).unwrap().uid(), me);
    }
    let mut config = Config::default();
    config.disk.dir = Some(dir.clone());
    match Pipeline::<usize>::new(config) {
        Err(BuildError::Config(message)) => {
            assert!(message.contains("belongs to another user"), "{message}");
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("another user's directory, {}, was used", dir.display()),
    }
    // Nothing was left in it.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}
