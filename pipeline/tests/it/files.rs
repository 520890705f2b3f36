//! `file://` URLs: refused unless `FetchConfig::file_roots` has a directory, and then
//! read only under that root, symbolic links resolved.

use std::path::Path;

use crate::common::{Scratch, drain_until, id_of};
use thumbpipe::{BuildError, Config, Error, Pipeline, Priority, TargetSize};
use url::Url;

fn url(path: &Path) -> String {
    Url::from_file_path(path).unwrap().to_string()
}

/// Loads each URL in its own row and returns the results in order.
fn load(pipeline: &mut Pipeline<usize>, urls: &[String]) -> Vec<Result<u32, Error>> {
    for (row, url) in urls.iter().enumerate() {
        pipeline.request(row, url, TargetSize::square(32), Priority::Visible);
    }
    let mut done = drain_until(pipeline, |all| all.len() == urls.len());
    assert_eq!(done.len(), urls.len());
    done.sort_by_key(|c| c.row);
    done.into_iter()
        .map(|c| c.result.map(|t| id_of(&t).unwrap()))
        .collect()
}

/// A config reading files under `root`, hermetic: not the desktop's
/// thumbnails of this machine.
fn files_under(root: &Path) -> Config {
    let mut config = Config::default();
    config.fetch.file_roots = vec![root.to_path_buf()];
    config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
    config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
    config
}

#[test]
fn file_urls_are_refused_by_default() {
    let scratch = Scratch::new("off");
    let image = scratch.png("a.png", 5);
    let mut pipeline = Pipeline::<usize>::new(Config::default()).unwrap();
    let results = load(&mut pipeline, &[url(&image)]);
    match &results[0] {
        Err(Error::UnsupportedUrl { reason, .. }) => assert!(reason.contains("file_root")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn file_urls_load_only_under_the_root() {
    let root = Scratch::new("root");
    let outside = Scratch::new("outside");
    let inside = root.png("in.png", 11);
    std::fs::create_dir(root.0.join("sub")).unwrap();
    let nested = root.png("sub/nested.png", 12);
    let secret = outside.png("secret.png", 13);
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, root.0.join("link.png")).unwrap();

    let mut config = Config::default();
    config.fetch.file_roots = vec![root.0.clone()];
    // Hermetic: not the desktop's thumbnails of this machine.
    config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
    config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
    let mut pipeline = Pipeline::<usize>::new(config).unwrap();
    let urls = [
        url(&inside),
        url(&nested),
        url(&secret),
        // `..` is resolved by the URL parser, then checked like any path.
        format!(
            "{}/../{}/secret.png",
            url(&root.0),
            outside.0.file_name().unwrap().to_str().unwrap()
        ),
        url(&root.0.join("link.png")),
        url(&root.0.join("missing.png")),
        url(&root.0.join("sub")),
    ];
    let results = load(&mut pipeline, &urls);
    assert_eq!(results[0].as_ref().unwrap(), &11);
    assert_eq!(results[1].as_ref().unwrap(), &12);
    for (result, what) in results[2..5].iter().zip(["outside", "dot-dot", "symlink"]) {
        match result {
            Err(Error::UnsupportedUrl { reason, .. }) => {
                assert!(
                    reason.contains("outside config.fetch.file_root"),
                    "{what}: {reason}"
                )
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    match &results[5] {
        Err(Error::File { reason, .. }) => assert_eq!(reason, "no such file"),
        other => panic!("{other:?}"),
    }
    match &results[6] {
        Err(Error::File { reason, .. }) => assert_eq!(reason, "not a regular file"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn files_load_as_thumbnails_and_the_cap_applies() {
    let root = Scratch::new("cap");
    let image = root.png("pic.png", 21);
    let size = std::fs::metadata(&image).unwrap().len();
    let config = |max_body_bytes| {
        let mut config = files_under(&root.0);
        config.fetch.max_body_bytes = max_body_bytes;
        config
    };
    let mut roomy = Pipeline::<usize>::new(config(size)).unwrap();
    assert_eq!(load(&mut roomy, &[url(&image)])[0].as_ref().unwrap(), &21);
    let mut tight = Pipeline::<usize>::new(config(size - 1)).unwrap();
    match &load(&mut tight, &[url(&image)])[0] {
        Err(Error::TooLarge { setting, .. }) => assert_eq!(*setting, "fetch.max_body_bytes"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_root_that_is_not_a_directory_is_a_build_error() {
    let root = Scratch::new("bad-root");
    let file = root.png("file.png", 1);
    for bad in [root.0.join("missing"), file] {
        let mut config = Config::default();
        config.fetch.file_roots = vec![bad.clone()];
        // Hermetic: not the desktop's thumbnails of this machine.
        config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
        config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
        match Pipeline::<usize>::new(config) {
            Err(BuildError::Config(message)) => assert!(message.contains("file_root"), "{message}"),
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("{} accepted as a root", bad.display()),
        }
    }
}

/// Regression: opening a FIFO under the root blocked the runtime's one
/// blocking thread until a writer came, which never did: the row waited
/// forever, and so did every file read and host-name lookup after it.
#[cfg(unix)]
#[test]
fn a_fifo_under_the_root_is_refused_without_blocking_other_loads() {
    let root = Scratch::new("fifo");
    let fifo = root.0.join("pipe.png");
    // mkfifo is POSIX's, in every Unix's base system.
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success(), "mkfifo failed");
    let image = root.png("after.png", 21);
    let server = crate::common::server(0);
    // By name, so that the load needs a host-name lookup on the blocking
    // pool too.
    let by_name = server.image_url(22).replace("127.0.0.1", "localhost");
    let mut config = Config::default();
    config.fetch.file_roots = vec![root.0.clone()];
    // Hermetic: not the desktop's thumbnails of this machine.
    config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
    config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
    let mut pipeline = Pipeline::<usize>::new(config).unwrap();
    let results = load(&mut pipeline, &[url(&fifo), url(&image), by_name]);
    match &results[0] {
        Err(Error::File { reason, .. }) => {
            assert!(reason.contains("not a regular file"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(results[1].as_ref().ok(), Some(&21));
    assert_eq!(results[2].as_ref().ok(), Some(&22));
}

/// Regression: each open started from the root's path, following links: a
/// root swapped for a link to a directory outside (by a user who may write
/// where the root lies) read that directory's files as the root's.
#[cfg(unix)]
#[test]
fn a_root_swapped_for_a_link_after_the_build_is_not_followed() {
    let scratch = Scratch::new("root-swap");
    let root = scratch.0.join("root");
    std::fs::create_dir(&root).unwrap();
    scratch.png("root/mine.png", 31);
    let outside = scratch.0.join("outside");
    std::fs::create_dir(&outside).unwrap();
    scratch.png("outside/secret.png", 32);
    let mut config = Config::default();
    config.fetch.file_roots = vec![root.clone()];
    config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
    config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
    let mut pipeline = Pipeline::<usize>::new(config).unwrap();
    std::fs::rename(&root, scratch.0.join("was-root")).unwrap();
    std::os::unix::fs::symlink(&outside, &root).unwrap();
    let results = load(&mut pipeline, &[url(&root.join("secret.png"))]);
    match &results[0] {
        Err(Error::File { reason, .. }) => assert!(reason.contains("changed"), "{reason}"),
        other => panic!("the swapped root was followed: {other:?}"),
    }
}

/// A path no root names, and that leads into none, is refused as outside
/// the roots whether or not a file is there: a URL cannot ask what exists
/// outside them.
#[test]
fn a_path_outside_the_roots_is_refused_alike_whether_or_not_it_exists() {
    let root = Scratch::new("oracle-root");
    let outside = Scratch::new("oracle-outside");
    let there = outside.png("there.png", 41);
    let mut pipeline = Pipeline::<usize>::new(files_under(&root.0)).unwrap();
    let results = load(
        &mut pipeline,
        &[url(&there), url(&outside.0.join("missing.png"))],
    );
    for result in &results {
        match result {
            Err(Error::UnsupportedUrl { reason, .. }) => {
                assert!(
                    reason.contains("outside config.fetch.file_roots"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A Fujifilm RAF holding the fixture's picture `id` as its JPEG, `before`
/// bytes of sensor data ahead of it and `after` behind.
fn raf(id: u32, before: usize, after: usize) -> Vec<u8> {
    let jpeg = fixture_server::picture::render(id, 240, 160)
        .encode_jpeg(90)
        .unwrap();
    let mut file = b"FUJIFILMCCD-RAW ".to_vec();
    file.resize(100 + before, 0);
    file[84..88].copy_from_slice(&((100 + before) as u32).to_be_bytes());
    file[88..92].copy_from_slice(&(jpeg.len() as u32).to_be_bytes());
    file.extend_from_slice(&jpeg);
    file.resize(file.len() + after, 0);
    file
}

#[test]
fn a_raw_over_the_cap_is_shown_when_its_preview_lies_within_it() {
    let root = Scratch::new("raw-cap");
    let early = root.0.join("early.raf");
    std::fs::write(&early, raf(31, 0, 512 * 1024)).unwrap();
    let late = root.0.join("late.raf");
    std::fs::write(&late, raf(32, 256 * 1024, 512 * 1024)).unwrap();
    let mut config = Config::default();
    config.fetch.file_roots = vec![root.0.clone()];
    config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
    config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
    config.fetch.max_body_bytes = 128 * 1024;
    let mut pipeline = Pipeline::<usize>::new(config).unwrap();
    let results = load(&mut pipeline, &[url(&early), url(&late)]);
    assert_eq!(results[0].as_ref().unwrap(), &31);
    match &results[1] {
        Err(Error::TooLarge { what, setting, .. }) => {
            assert_eq!(*setting, "fetch.max_body_bytes");
            assert!(
                what.contains("its start did not make the thumbnail"),
                "{what}"
            );
        }
        other => panic!("{other:?}"),
    }
    // The early one's file was read no further than the cap.
    assert!(
        pipeline.stats().file_bytes_read <= 2 * 128 * 1024,
        "{:?}",
        pipeline.stats()
    );
}

/// The environment of [`local_files_load_where_the_system_has_no_roots`]'s
/// child: no CA certificates for rustls-native-certs to find.
#[cfg(all(
    target_os = "linux",
    any(feature = "rustls-aws-lc", feature = "rustls-ring")
))]
const NO_ROOTS: &str = "THUMBPIPE_TEST_NO_ROOTS";

/// A pipeline of local files builds and loads them where the system has
/// no CA certificates (a bare container, a sandbox), and an `http` load
/// there is a typed TLS error. In a child process of this test binary,
/// since the roots are found through the environment, which every test
/// of the process shares. Linux only (macOS's and Windows' verifiers ask
/// the system, not the environment), with TLS built in (without it the
/// client needs no roots).
#[cfg(all(
    target_os = "linux",
    any(feature = "rustls-aws-lc", feature = "rustls-ring")
))]
#[test]
fn local_files_load_where_the_system_has_no_roots() {
    let empty = Scratch::new("no-roots");
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "files::without_roots",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(NO_ROOTS, "1")
        .env("SSL_CERT_FILE", empty.0.join("none.pem"))
        .env("SSL_CERT_DIR", &empty.0)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    let err = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{out}\n{err}");
    assert!(out.contains("1 passed"), "{out}");
}

#[cfg(all(
    target_os = "linux",
    any(feature = "rustls-aws-lc", feature = "rustls-ring")
))]
#[test]
#[ignore = "run by local_files_load_where_the_system_has_no_roots, in a process without roots"]
fn without_roots() {
    assert!(
        std::env::var_os(NO_ROOTS).is_some(),
        "run by local_files_load_where_the_system_has_no_roots, which sets its environment"
    );
    let root = Scratch::new("no-roots-files");
    let image = root.png("pic.png", 8);
    let mut pipeline = Pipeline::<usize>::new(files_under(&root.0)).unwrap();
    let results = load(
        &mut pipeline,
        &[url(&image), "http://127.0.0.1:9/a.png".into()],
    );
    assert_eq!(results[0].as_ref().unwrap(), &8);
    match &results[1] {
        Err(error @ Error::Tls { reason, .. }) => {
            assert!(reason.contains("No CA certificates"), "{reason}");
            assert!(reason.contains("SSL_CERT_FILE"), "what to do: {reason}");
            assert!(std::error::Error::source(error).is_some());
        }
        other => panic!("{other:?}"),
    }
    // Each http load is told so, not only the first.
    let again = load(&mut pipeline, &["http://127.0.0.1:9/b.png".into()]);
    assert!(matches!(again[0], Err(Error::Tls { .. })), "{again:?}");
}
