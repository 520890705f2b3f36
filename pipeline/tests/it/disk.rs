//! The disk cache: fresh entries served without the network, stale ones
//! revalidated with a 304, `no-store` never written, the budget kept by
//! evicting the least recently used, corrupt entries fetched again, a disk
//! that cannot be written costing only the network, two pipelines on one
//! directory, and a process killed while writing.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fixture_server::{Config as ServerConfig, FixtureServer};
use thumbpipe::{Config, DiskStats, Error, Pipeline, Priority, TargetSize};

use crate::common::{Scratch, drain_until, eventually, id_of, idle};

/// A server without latency whose images say `max_age`.
pub(super) fn server(max_age: Option<Duration>) -> FixtureServer {
    FixtureServer::start_dedicated(ServerConfig {
        latency: Duration::ZERO,
        max_age,
        shutdown_grace: Duration::from_millis(100),
        ..ServerConfig::default()
    })
    .unwrap()
}

/// A pipeline with the default config and a disk cache in `dir`.
pub(super) fn pipeline(dir: &Path, budget: u64) -> Pipeline<usize> {
    let mut config = Config::default();
    config.disk.dir = Some(dir.to_path_buf());
    config.disk.max_bytes = budget;
    Pipeline::new(config).unwrap()
}

/// The same, keeping responses only (no decoded thumbnails), for the tests
/// that count entries.
pub(super) fn responses_only(dir: &Path, budget: u64) -> Pipeline<usize> {
    let mut config = Config::default();
    config.disk.dir = Some(dir.to_path_buf());
    config.disk.max_bytes = budget;
    config.disk.thumbnails = false;
    Pipeline::new(config).unwrap()
}

pub(super) fn url(server: &FixtureServer, id: u32) -> String {
    format!("{}?w=64&h=64", server.image_url(id))
}

/// Loads each URL in its own row; returns the ids read from the pixels, in
/// order.
pub(super) fn load(pipeline: &mut Pipeline<usize>, urls: &[String]) -> Vec<Result<u32, String>> {
    for (row, url) in urls.iter().enumerate() {
        pipeline.request(row, url, TargetSize::square(32), Priority::Visible);
    }
    let mut done = drain_until(pipeline, |all| all.len() == urls.len());
    assert_eq!(done.len(), urls.len());
    // Forget the rows (two frames without them), so that the next call's
    // requests are new ones.
    pipeline.end_frame();
    pipeline.end_frame();
    done.sort_by_key(|c| c.row);
    done.into_iter()
        .map(|c| {
            c.result
                .map(|t| id_of(&t).unwrap())
                .map_err(|e: Error| e.to_string())
        })
        .collect()
}

fn ids(range: std::ops::Range<u32>) -> Vec<Result<u32, String>> {
    range.map(Ok).collect()
}

/// Waits until the disk cache has written `count` responses in all.
pub(super) fn written(pipeline: &Pipeline<usize>, count: u64) -> DiskStats {
    assert!(
        eventually(|| pipeline.stats().disk.written >= count),
        "{:?}",
        pipeline.stats().disk
    );
    pipeline.stats().disk
}

#[test]
fn a_fresh_entry_is_served_without_the_network() {
    let scratch = Scratch::new("disk-fresh");
    let server = server(Some(Duration::from_secs(600)));
    let urls: Vec<String> = (0..5).map(|id| url(&server, id)).collect();
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, &urls), ids(0..5));
        let disk = written(&first, 5);
        assert_eq!((disk.misses, disk.hits), (5, 0));
    }
    server.reset_stats();
    let mut second = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, &urls), ids(0..5));
    assert_eq!(server.stats().requests_started, 0);
    let disk = second.stats().disk;
    assert_eq!((disk.hits, disk.misses, disk.revalidated), (5, 0, 0));
    // The entries found on disk are counted when the opening scan ends,
    // which a loaded machine can leave until after the loads.
    assert!(
        eventually(|| second.stats().disk.entries == 5),
        "{:?}",
        second.stats().disk
    );
    // Each was decoded again: only the responses were kept.
    assert_eq!(second.stats().decodes_started, 5);
}

#[test]
fn a_warm_start_draws_the_stored_thumbnails_without_decoding() {
    let scratch = Scratch::new("disk-thumbnails");
    let server = server(Some(Duration::from_secs(600)));
    let urls: Vec<String> = (60..66).map(|id| url(&server, id)).collect();
    {
        let mut first = pipeline(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, &urls), ids(60..66));
        // Six responses, then six thumbnails.
        let disk = written(&first, 12);
        assert_eq!((disk.entries, disk.thumbnail_hits), (12, 0));
    }
    server.reset_stats();
    let mut second = pipeline(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, &urls), ids(60..66));
    assert_eq!(server.stats().requests_started, 0);
    let stats = second.stats();
    assert_eq!(stats.decodes_started, 0);
    assert_eq!((stats.disk.thumbnail_hits, stats.disk.hits), (6, 0));
    // Another size is another thumbnail: decoded from the stored response.
    for (row, url) in urls.iter().enumerate() {
        second.request(row, url, TargetSize::square(48), Priority::Visible);
    }
    let again = drain_until(&mut second, |all| all.len() == urls.len());
    assert!(
        again
            .iter()
            .all(|c| c.result.as_ref().is_ok_and(|t| t.width == 48))
    );
    let stats = second.stats();
    assert_eq!((stats.decodes_started, stats.disk.hits), (6, 6));
    assert_eq!(server.stats().requests_started, 0);
    drop(second);
    // A stored thumbnail keeps the size of the image it was made from.
    let mut third = pipeline(&scratch.0, 1 << 20);
    third.request(0, &urls[0], TargetSize::square(32), Priority::Visible);
    let done = drain_until(&mut third, |all| !all.is_empty());
    let thumbnail = done[0].result.as_ref().expect("from the disk");
    assert_eq!((thumbnail.width, thumbnail.source_size), (32, (64, 64)));
    assert_eq!(third.stats().disk.thumbnail_hits, 1);
    // An image at its own size is not kept beside its response (megabytes
    // of pixels each): a later start decodes it again.
    let own = TargetSize::original(100, 4096);
    third.request(1, &urls[1], own, Priority::Visible);
    assert_eq!(drain_until(&mut third, |all| !all.is_empty()).len(), 1);
    drop(third);
    let mut fourth = pipeline(&scratch.0, 1 << 20);
    fourth.request(1, &urls[1], own, Priority::Visible);
    let done = drain_until(&mut fourth, |all| !all.is_empty());
    assert_eq!(done[0].result.as_ref().ok().map(|t| t.width), Some(64));
    let stats = fourth.stats();
    assert_eq!((stats.decodes_started, stats.disk.thumbnail_hits), (1, 0));
}

#[test]
fn a_stored_thumbnail_of_a_stale_response_waits_for_its_revalidation() {
    let scratch = Scratch::new("disk-thumbnails-stale");
    // Stale at once, with an ETag: kept, and asked about before each use.
    let server = server(Some(Duration::ZERO));
    let urls: Vec<String> = (70..73).map(|id| url(&server, id)).collect();
    {
        let mut first = pipeline(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, &urls), ids(70..73));
        written(&first, 6);
    }
    server.reset_stats();
    let mut second = pipeline(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, &urls), ids(70..73));
    assert_eq!(server.stats().not_modified, 3);
    let disk = second.stats().disk;
    assert_eq!((disk.thumbnail_hits, disk.revalidated), (0, 3));
}

#[test]
fn a_stale_entry_is_revalidated_and_no_image_bytes_are_sent() {
    let scratch = Scratch::new("disk-stale");
    // No Cache-Control: every reuse asks the server first.
    let server = server(None);
    let urls: Vec<String> = (10..14).map(|id| url(&server, id)).collect();
    {
        let mut first = pipeline(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, &urls), ids(10..14));
        written(&first, 4);
    }
    server.reset_stats();
    let mut second = pipeline(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, &urls), ids(10..14));
    let stats = server.stats();
    assert_eq!((stats.not_modified, stats.image_bodies), (4, 0));
    assert_eq!(stats.bytes_sent, 0);
    let disk = second.stats().disk;
    assert_eq!((disk.revalidated, disk.hits, disk.misses), (4, 0, 0));
}

#[test]
fn a_no_store_response_is_not_written() {
    let scratch = Scratch::new("disk-no-store");
    let server = server(Some(Duration::from_secs(600)));
    let kept = url(&server, 1);
    let not_kept = format!("{}&no_store=1", url(&server, 2));
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        // One after the other, so that the no-store decision is made
        // before the write that is waited for.
        assert_eq!(load(&mut first, std::slice::from_ref(&not_kept)), ids(2..3));
        assert_eq!(load(&mut first, std::slice::from_ref(&kept)), ids(1..2));
        let disk = written(&first, 1);
        assert!(eventually(|| idle(&first)));
        assert_eq!((disk.written, disk.entries), (1, 1));
    }
    server.reset_stats();
    let mut second = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, &[kept, not_kept]), vec![Ok(1), Ok(2)]);
    assert_eq!(server.stats().image_bodies, 1);
    let disk = second.stats().disk;
    assert_eq!((disk.hits, disk.misses), (1, 1));
}

#[test]
fn the_budget_evicts_the_least_recently_used_entry() {
    let scratch = Scratch::new("disk-budget");
    let server = server(Some(Duration::from_secs(600)));
    let urls: Vec<String> = (20..24).map(|id| url(&server, id)).collect();
    // What one entry costs, measured in a directory of its own.
    let one = {
        let sizing = Scratch::new("disk-budget-sizing");
        let mut pipeline = responses_only(&sizing.0, 1 << 20);
        load(&mut pipeline, &urls[..1]);
        written(&pipeline, 1);
        pipeline.stats().disk.bytes
    };
    let budget = one * 7 / 2; // room for three entries, not four
    {
        let mut first = responses_only(&scratch.0, budget);
        for (n, url) in urls[..3].iter().enumerate() {
            load(&mut first, std::slice::from_ref(url));
            written(&first, n as u64 + 1);
        }
        // Used again from disk (forgotten in memory): 20 is now the most
        // recently used, and 21 the least.
        first.forget(&urls[0]);
        load(&mut first, &urls[..1]);
        assert!(eventually(|| first.stats().disk.hits == 1));
        load(&mut first, &urls[3..]);
        let disk = written(&first, 4);
        assert!(eventually(|| first.stats().disk.evicted == 1));
        let disk_now = first.stats().disk;
        assert_eq!(disk_now.entries, 3, "{disk:?}");
        assert!(disk_now.bytes <= budget, "{disk_now:?} over {budget}");
    }
    server.reset_stats();
    let mut second = responses_only(&scratch.0, budget);
    let kept = [urls[0].clone(), urls[2].clone(), urls[3].clone()];
    assert_eq!(load(&mut second, &kept), vec![Ok(20), Ok(22), Ok(23)]);
    assert_eq!(server.stats().requests_started, 0);
    assert_eq!(load(&mut second, &urls[1..2]), ids(21..22));
    assert_eq!(server.stats().image_bodies, 1);
}

/// Every file under the directory's `content-v2`.
pub(super) fn content_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.join("content-v2")];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn a_corrupt_entry_is_removed_and_fetched_again() {
    let scratch = Scratch::new("disk-corrupt");
    let server = server(Some(Duration::from_secs(600)));
    let urls: Vec<String> = (30..32).map(|id| url(&server, id)).collect();
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, &urls), ids(30..32));
        written(&first, 2);
    }
    let files = content_files(&scratch.0);
    assert_eq!(files.len(), 2);
    // One body with a byte flipped, the other cut short.
    let mut flipped = std::fs::read(&files[0]).unwrap();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    std::fs::write(&files[0], flipped).unwrap();
    let cut = std::fs::read(&files[1]).unwrap();
    std::fs::write(&files[1], &cut[..cut.len() / 2]).unwrap();

    server.reset_stats();
    let mut second = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, &urls), ids(30..32));
    assert_eq!(server.stats().image_bodies, 2);
    let disk = written(&second, 2);
    assert_eq!((disk.corrupt, disk.misses, disk.hits), (2, 2, 0));
    // Written again whole: a third pipeline is served from disk.
    drop(second);
    server.reset_stats();
    let mut third = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut third, &urls), ids(30..32));
    assert_eq!(server.stats().requests_started, 0);
}

#[test]
fn a_directory_that_cannot_be_written_costs_only_the_network() {
    let scratch = Scratch::new("disk-unwritable");
    // A regular file where the directory should be: nothing can be created
    // under it, whoever runs the test (root included).
    let blocked = scratch.0.join("not-a-directory");
    std::fs::write(&blocked, b"a file").unwrap();
    let server = server(Some(Duration::from_secs(600)));
    let urls: Vec<String> = (40..44).map(|id| url(&server, id)).collect();
    let mut pipeline = pipeline(&blocked, 1 << 20);
    assert_eq!(load(&mut pipeline, &urls), ids(40..44));
    assert!(eventually(|| pipeline.stats().disk.errors >= 4));
    let disk = pipeline.stats().disk;
    assert_eq!((disk.written, disk.hits, disk.misses), (0, 0, 4));
    assert_eq!(server.stats().image_bodies, 4);
    // And again: still from the network, still right.
    pipeline.forget_all();
    assert_eq!(load(&mut pipeline, &urls), ids(40..44));
    assert_eq!(server.stats().image_bodies, 8);
}

#[test]
fn two_pipelines_share_one_directory() {
    let scratch = Scratch::new("disk-shared");
    let server = server(Some(Duration::from_secs(600)));
    let urls: Vec<String> = (50..90).map(|id| url(&server, id)).collect();
    let reversed: Vec<String> = urls.iter().rev().cloned().collect();
    let mut one = pipeline(&scratch.0, 1 << 22);
    let mut two = pipeline(&scratch.0, 1 << 22);
    // Both load the same 40 images at once, in opposite orders, so that
    // they write the same entries side by side.
    for (row, url) in urls.iter().enumerate() {
        one.request(row, url, TargetSize::square(32), Priority::Visible);
        two.request(
            row,
            &reversed[row],
            TargetSize::square(32),
            Priority::Visible,
        );
    }
    let (mut from_one, mut from_two) = (Vec::new(), Vec::new());
    assert!(eventually(|| {
        from_one.extend(one.drain());
        from_two.extend(two.drain());
        from_one.len() == 40 && from_two.len() == 40
    }));
    for done in [&from_one, &from_two] {
        assert!(done.iter().all(|c| c.result.is_ok()));
    }
    written(&one, 1);
    written(&two, 1);
    assert!(eventually(|| idle(&one) && idle(&two)));
    // Dropping them waits for their disk threads' last writes.
    drop((one, two));
    server.reset_stats();
    let mut third = pipeline(&scratch.0, 1 << 22);
    assert_eq!(load(&mut third, &urls), ids(50..90));
    assert_eq!(server.stats().requests_started, 0);
    let disk = third.stats().disk;
    assert_eq!(disk.hits + disk.thumbnail_hits, 40, "{disk:?}");
    assert_eq!((disk.corrupt, disk.errors), (0, 0), "{disk:?}");
}

/// Set in the child process that writes to a cache until it is killed:
/// the directory, and the server's base URL.
const WRITER_CHILD: &str = "THUMBPIPE_DISK_WRITER";

/// The images the writer loads.
const WRITER_IMAGES: u32 = 3000;

fn writer_url(base: &str, id: u32) -> String {
    format!("{base}/img/{id}.jpg?w=48&h=48")
}

/// The child's half of the test below: loads images into the cache as
/// fast as it can, never ending on its own. Ignored in a normal run (it
/// tests nothing alone); the test below runs it in a process of its own.
#[test]
#[ignore = "the child half of a_process_killed_while_writing_leaves_only_whole_entries, which runs it"]
fn writes_to_a_cache_until_killed() {
    let setting = std::env::var(WRITER_CHILD)
        .expect("run by a_process_killed_while_writing_leaves_only_whole_entries");
    let (dir, base) = setting.split_once('\n').unwrap();
    let mut pipeline = pipeline(Path::new(dir), 1 << 30);
    for batch in (0..WRITER_IMAGES).collect::<Vec<_>>().chunks(100) {
        let urls: Vec<String> = batch.iter().map(|id| writer_url(base, *id)).collect();
        load(&mut pipeline, &urls);
    }
    // Killed long before this.
    std::thread::sleep(Duration::from_secs(600));
}

#[test]
fn a_process_killed_while_writing_leaves_only_whole_entries() {
    let scratch = Scratch::new("disk-killed");
    let server = server(Some(Duration::from_secs(600)));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "disk::writes_to_a_cache_until_killed",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            WRITER_CHILD,
            format!("{}\n{}", scratch.0.display(), server.base_url()),
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed (SIGKILL) in the middle of its writes.
    let writing = eventually(|| content_files(&scratch.0).len() >= 250);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        writing,
        "the child wrote {} entries",
        content_files(&scratch.0).len()
    );

    server.reset_stats();
    let mut reopened = pipeline(&scratch.0, 1 << 30);
    let urls: Vec<String> = (0..400)
        .map(|id| writer_url(&server.base_url(), id))
        .collect();
    let loaded = load(&mut reopened, &urls);
    // Every image is the right one, from disk or fetched again.
    assert_eq!(loaded, ids(0..400));
    let disk = reopened.stats().disk;
    // About 125 images were on disk: two files each, with their thumbnails.
    assert!(disk.thumbnail_hits + disk.hits >= 100, "{disk:?}");
    assert_eq!(
        disk.thumbnail_hits + disk.hits + disk.misses,
        400,
        "{disk:?}"
    );
    assert_eq!(server.stats().image_bodies, disk.misses);
}

/// A loopback HTTP/1.1 server whose answers a test scripts: `answer` gets
/// the request's head (request line and headers, lower-cased) and the
/// number of requests before it, and returns the status line with headers
/// and the body. Each connection carries one request. Returns the base URL
/// and the heads received.
pub(super) fn scripted_server(
    answer: impl Fn(&str, usize) -> (String, Vec<u8>) + Send + 'static,
) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heads);
    std::thread::Builder::new()
        .name("scripted-server".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                let head = String::from_utf8_lossy(&head).to_lowercase();
                let count = {
                    let mut log = log.lock().unwrap();
                    log.push(head.clone());
                    log.len() - 1
                };
                let (status_and_headers, body) = answer(&head, count);
                let reply = format!(
                    "{status_and_headers}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes());
                let _ = stream.write_all(&body);
            }
        })
        .unwrap();
    (base, heads)
}

pub(super) fn png(id: u32) -> Vec<u8> {
    fixture_server::picture::render(id, 64, 64)
        .encode_png()
        .unwrap()
}

#[test]
fn a_304_that_does_not_match_the_stored_image_fetches_it_again() {
    let scratch = Scratch::new("disk-304-mismatch");
    // Stale at once; asked again, it answers 304 with another ETag (its
    // image changed), and then, asked without conditions, the new image.
    let (base, heads) = scripted_server(|head, _| {
        if head.contains("if-none-match") {
            (
                "HTTP/1.1 304 Not Modified\r\netag: \"v2\"".into(),
                Vec::new(),
            )
        } else {
            (
                "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\netag: \"v1\"\r\ncache-control: no-cache"
                    .into(),
                png(1),
            )
        }
    });
    let url = format!("{base}/img.png");
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, std::slice::from_ref(&url)), vec![Ok(1)]);
        written(&first, 1);
    }
    let mut second = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, std::slice::from_ref(&url)), vec![Ok(1)]);
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 3, "{heads:?}");
    assert!(heads[1].contains("if-none-match: \"v1\""), "{}", heads[1]);
    assert!(!heads[2].contains("if-none-match"), "{}", heads[2]);
    let disk = second.stats().disk;
    assert_eq!((disk.revalidated, disk.misses), (0, 1));
}

#[test]
fn an_image_reached_through_a_redirect_is_not_stored() {
    let scratch = Scratch::new("disk-redirect");
    let (base, heads) = scripted_server(|head, _| {
        if head.starts_with("get /avatar ") {
            (
                "HTTP/1.1 302 Found\r\nlocation: /files/abc.png".into(),
                Vec::new(),
            )
        } else {
            (
                "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncache-control: max-age=600".into(),
                png(3),
            )
        }
    });
    let url = format!("{base}/avatar");
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, std::slice::from_ref(&url)), vec![Ok(3)]);
        assert!(eventually(|| idle(&first)));
    }
    let mut second = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, std::slice::from_ref(&url)), vec![Ok(3)]);
    // Where the avatar points is asked again: it may point elsewhere now.
    let asked = heads
        .lock()
        .unwrap()
        .iter()
        .filter(|h| h.starts_with("get /avatar "))
        .count();
    assert_eq!(asked, 2);
    assert_eq!(second.stats().disk.hits, 0);
}

#[test]
fn a_changed_image_replaces_its_old_file() {
    let scratch = Scratch::new("disk-replaced");
    // Stale at once; the second time, a new image with a new ETag.
    let (base, _) = scripted_server(|_, count| {
        let (etag, id) = if count == 0 { ("v1", 4) } else { ("v2", 5) };
        (
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\netag: \"{etag}\"\r\ncache-control: max-age=0"
            ),
            png(id),
        )
    });
    let url = format!("{base}/changing.png");
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, std::slice::from_ref(&url)), vec![Ok(4)]);
        written(&first, 1);
    }
    let mut second = responses_only(&scratch.0, 1 << 20);
    assert_eq!(load(&mut second, std::slice::from_ref(&url)), vec![Ok(5)]);
    written(&second, 1);
    assert!(eventually(|| idle(&second)));
    drop(second);
    // One file: the new image's; the old one went with its entry.
    assert_eq!(content_files(&scratch.0).len(), 1);
    let third = responses_only(&scratch.0, 1 << 20);
    assert!(eventually(|| third.stats().disk.entries == 1));
}

#[test]
fn a_304_that_says_no_store_is_served_and_the_entry_removed() {
    let scratch = Scratch::new("disk-304-no-store");
    // An ETag and no Cache-Control: kept, to be revalidated. The 304 then
    // says no-store.
    let (base, heads) = scripted_server(|head, _| {
        if head.contains("if-none-match") {
            (
                "HTTP/1.1 304 Not Modified\r\netag: \"v1\"\r\ncache-control: no-store".into(),
                Vec::new(),
            )
        } else {
            (
                "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\netag: \"v1\"".into(),
                png(6),
            )
        }
    });
    let url = format!("{base}/kept-then-not.png");
    for launch in 0..3 {
        let mut pipeline = pipeline(&scratch.0, 1 << 20);
        assert_eq!(load(&mut pipeline, std::slice::from_ref(&url)), vec![Ok(6)]);
        assert!(eventually(|| idle(&pipeline)));
        if launch == 0 {
            written(&pipeline, 1);
        }
    }
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 3, "{heads:?}");
    assert!(heads[1].contains("if-none-match"), "{}", heads[1]);
    // Removed after the 304: the third launch asks without a condition.
    assert!(!heads[2].contains("if-none-match"), "{}", heads[2]);
}

#[test]
fn a_304_from_where_a_redirect_led_does_not_serve_the_stored_image() {
    let scratch = Scratch::new("disk-304-redirect");
    // First the avatar itself (kept, revalidated before each use); then it
    // redirects to a default image whose 304 happens to match its ETag.
    let (base, heads) = scripted_server(|head, count| {
        if head.starts_with("get /avatar ") && count == 0 {
            (
                "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\netag: \"v1\"\r\ncache-control: no-cache".into(),
                png(7),
            )
        } else if head.starts_with("get /avatar ") {
            (
                "HTTP/1.1 302 Found\r\nlocation: /default.png".into(),
                Vec::new(),
            )
        } else if head.contains("if-none-match") {
            (
                "HTTP/1.1 304 Not Modified\r\netag: \"v1\"".into(),
                Vec::new(),
            )
        } else {
            ("HTTP/1.1 200 OK\r\ncontent-type: image/png".into(), png(8))
        }
    });
    let url = format!("{base}/avatar");
    {
        let mut first = responses_only(&scratch.0, 1 << 20);
        assert_eq!(load(&mut first, std::slice::from_ref(&url)), vec![Ok(7)]);
        written(&first, 1);
    }
    let mut second = responses_only(&scratch.0, 1 << 20);
    // The default image, not the stored avatar.
    assert_eq!(load(&mut second, std::slice::from_ref(&url)), vec![Ok(8)]);
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 5, "{heads:?}");
    assert!(heads[2].starts_with("get /default.png") && heads[2].contains("if-none-match"));
    assert!(!heads[4].contains("if-none-match"), "{}", heads[4]);
    assert_eq!(second.stats().disk.revalidated, 0);
}
