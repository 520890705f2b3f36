//! Sources by scheme: an app's own scheme is fetched by its own source and
//! nothing else, a scheme with no source is a typed error that names it,
//! and an app's fetcher for the network leaves `file://` URLs to the
//! pipeline's file source.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use thumbpipe::{BuildError, Config, Error, Fetch, Pipeline, Priority, TargetSize};

use crate::common::{Scratch, drain_until, id_of};

/// A source that serves picture `id` for a URL whose path ends in `/{id}`,
/// and counts its calls.
fn pictures(calls: &Arc<AtomicUsize>) -> impl Fetch {
    let calls = Arc::clone(calls);
    thumbpipe::fetch_fn(move |url, _max_bytes| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            let id: u32 = url
                .path()
                .rsplit('/')
                .next()
                .and_then(|last| last.parse().ok())
                .ok_or_else(|| Error::Status {
                    url: url.to_string(),
                    status: 404,
                })?;
            let png = fixture_server::picture::render(id, 48, 48)
                .encode_png()
                .expect("encodes");
            Ok(Bytes::from(png))
        }
    })
}

#[test]
fn each_scheme_is_fetched_by_its_own_source() {
    let (web, covers, archive) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let mut pipeline = Pipeline::<u32>::builder()
        .fetcher(pictures(&web))
        .source("covers", pictures(&covers))
        .source("Zip+Archive", pictures(&archive))
        .build()
        .unwrap();
    assert_eq!(
        pipeline.schemes().collect::<Vec<_>>(),
        ["covers", "http", "https", "zip+archive"]
    );
    for (row, url) in [
        (1, "https://cdn.test/1"),
        (2, "covers://shelf/2"),
        (3, "COVERS://shelf/3"),
        (4, "zip+archive:photos.zip/4"),
    ] {
        pipeline.request(row, url, TargetSize::square(32), Priority::Visible);
    }
    let done = drain_until(&mut pipeline, |all| all.len() == 4);
    let mut shown: Vec<(u32, Option<u32>)> = done
        .iter()
        .map(|c| (c.row, c.result.as_ref().ok().and_then(id_of)))
        .collect();
    shown.sort_unstable();
    assert_eq!(
        shown,
        [(1, Some(1)), (2, Some(2)), (3, Some(3)), (4, Some(4))]
    );
    let calls = |n: &AtomicUsize| n.load(Ordering::SeqCst);
    assert_eq!((calls(&web), calls(&covers), calls(&archive)), (1, 2, 1));
}

#[test]
fn a_scheme_with_no_source_is_refused_by_name_and_fetches_nothing() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut pipeline = Pipeline::<u32>::builder()
        .fetcher(pictures(&calls))
        .source("covers", pictures(&calls))
        .build()
        .unwrap();
    pipeline.request(
        1,
        "s3://bucket/1",
        TargetSize::square(32),
        Priority::Visible,
    );
    pipeline.request(
        2,
        "file:///tmp/2",
        TargetSize::square(32),
        Priority::Visible,
    );
    let done = drain_until(&mut pipeline, |all| all.len() == 2);
    let reason = |row: u32| match &done.iter().find(|c| c.row == row).unwrap().result {
        Err(Error::UnsupportedUrl { reason, .. }) => reason.clone(),
        other => panic!("row {row}: {other:?}"),
    };
    assert!(reason(1).contains("'s3'"), "{}", reason(1));
    assert!(
        reason(1).contains("PipelineBuilder::source"),
        "{}",
        reason(1)
    );
    assert!(reason(2).contains("file_roots"), "{}", reason(2));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn a_name_that_is_not_a_scheme_fails_the_build() {
    for bad in ["", "my app", "3d", "covers://"] {
        let built = Pipeline::<u32>::builder()
            .source(bad, pictures(&Arc::default()))
            .build();
        match built {
            Err(BuildError::Config(reason)) => {
                assert!(reason.contains("PipelineBuilder::source"), "{reason}");
            }
            Err(other) => panic!("{bad:?}: {other}"),
            Ok(_) => panic!("{bad:?} was taken as a scheme"),
        }
    }
}

#[test]
fn an_apps_network_fetcher_leaves_files_to_the_file_source() {
    let dir = Scratch::new("sources");
    let path = dir.png("9.png", 9);
    let calls = Arc::new(AtomicUsize::new(0));
    let mut config = Config::default();
    config.fetch.file_roots.push(dir.0.clone());
    // Hermetic: not the desktop's thumbnails of this machine.
    config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
    config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
    let mut pipeline = Pipeline::<u32>::builder()
        .config(config)
        .fetcher(pictures(&calls))
        .build()
        .unwrap();
    assert_eq!(
        pipeline.schemes().collect::<Vec<_>>(),
        ["file", "http", "https"]
    );
    let url = url::Url::from_file_path(path).unwrap();
    pipeline.request(1, url.as_str(), TargetSize::square(32), Priority::Visible);
    let done = drain_until(&mut pipeline, |all| all.len() == 1);
    let thumbnail = done[0].result.as_ref().expect("the file is shown");
    assert_eq!(id_of(thumbnail), Some(9));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the app's fetcher is http's"
    );
    assert!(pipeline.stats().file_bytes_read > 0);
}
