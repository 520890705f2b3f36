//! Bodies cut short and who gets them: reading a JPEG only as far as its
//! thumbnail needs is a layer in front of any fetcher, so a `file://` photo
//! is read in part as an HTTP one is; an app's decoder gets whole bodies
//! unless it says it takes bodies cut short; a body cut short that the
//! decoder cannot take is read again whole, once.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::BoxFuture;
use thumbpipe::{
    Body, Config, Decode, Enough, Error, Fetch, FetchRequest, FetchResponse, Pipeline, Priority,
    TargetSize, Thumbnail,
};

use crate::common::{Scratch, drain_until};
use crate::embedded::camera_photo;

/// Serves `photo` at every URL, as much of it as the request's stop rule
/// wants (in 4 KiB chunks), counting the requests and whether each asked
/// for a body cut short.
#[derive(Clone)]
struct Photo {
    bytes: Bytes,
    /// The requests' `cut_short_for`, in order.
    asked: Arc<Mutex<Vec<Option<TargetSize>>>>,
    /// Cut the body short at 4 KiB whatever the request says.
    unasked_cut: bool,
}

impl Photo {
    fn new(unasked_cut: bool) -> Self {
        Self {
            bytes: Bytes::from(camera_photo()),
            asked: Arc::default(),
            unasked_cut,
        }
    }

    fn requests(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

impl Fetch for Photo {
    fn fetch(&self, _: url::Url, _: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        let bytes = self.bytes.clone();
        Box::pin(async move { Ok(bytes) })
    }

    fn fetch_response(
        &self,
        request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        self.asked.lock().unwrap().push(request.cut_short_for);
        let mut body = Body::whole(self.bytes.clone());
        if self.unasked_cut && self.requests() == 1 {
            body = Body::cut_short(self.bytes.slice(..4096));
        } else if let Some(rule) = &request.stop_rule {
            let mut watch = rule.watch();
            for end in (4096..self.bytes.len()).step_by(4096) {
                if watch(&self.bytes[..end]) == Enough::Yes {
                    body = Body::cut_short(self.bytes.slice(..end));
                    break;
                }
            }
        }
        Box::pin(std::future::ready(Ok(FetchResponse::new(
            request.url,
            body,
        ))))
    }
}

/// Records the bodies it is given; a grey pixel for each.
#[derive(Clone, Default)]
struct Recording {
    /// Each body's length and whether it was whole.
    bodies: Arc<Mutex<Vec<(usize, bool)>>>,
    takes_cut_short: bool,
}

impl Decode for Recording {
    fn decode(&self, url: &Arc<str>, body: &Body, _: TargetSize) -> Result<Thumbnail, Error> {
        self.bodies
            .lock()
            .unwrap()
            .push((body.len(), body.complete));
        Ok(Thumbnail {
            url: Arc::clone(url),
            width: 1,
            height: 1,
            pixels: Arc::from([128u8, 128, 128, 255]),
            source_size: (1, 1),
            animation: None,
        })
    }

    fn takes_cut_short_bodies(&self) -> bool {
        self.takes_cut_short
    }
}

fn load(fetcher: Photo, decoder: impl Decode) -> Result<Thumbnail, Error> {
    let mut pipeline = Pipeline::<u8>::builder()
        .fetcher(fetcher)
        .decoder(decoder)
        .build()
        .unwrap();
    pipeline.request(
        0,
        "http://photos/1.jpg",
        TargetSize::square(64),
        Priority::Visible,
    );
    let mut done = drain_until(&mut pipeline, |all| !all.is_empty());
    done.remove(0).result
}

#[test]
fn an_apps_decoder_gets_whole_bodies_unless_it_takes_bodies_cut_short() {
    let photo = Photo::new(false);
    let whole = Recording::default();
    load(photo.clone(), whole.clone()).unwrap();
    assert_eq!(*photo.asked.lock().unwrap(), [None]);
    assert_eq!(*whole.bodies.lock().unwrap(), [(photo.bytes.len(), true)]);

    let photo = Photo::new(false);
    let cut = Recording {
        takes_cut_short: true,
        ..Recording::default()
    };
    load(photo.clone(), cut.clone()).unwrap();
    assert_eq!(*photo.asked.lock().unwrap(), [Some(TargetSize::square(64))]);
    let bodies = cut.bodies.lock().unwrap();
    assert_eq!(bodies.len(), 1);
    let (read, complete) = bodies[0];
    assert!(!complete);
    assert!(read * 4 < photo.bytes.len(), "read {read} bytes");
}

/// A fetcher of the app's own that cuts a body short unasked: the decoder,
/// which takes whole bodies, never sees it, and the body is read again
/// whole, once.
#[test]
fn a_body_cut_short_for_a_decoder_of_whole_bodies_is_read_again_whole() {
    let photo = Photo::new(true);
    let whole = Recording::default();
    load(photo.clone(), whole.clone()).unwrap();
    assert_eq!(*photo.asked.lock().unwrap(), [None, None]);
    assert_eq!(*whole.bodies.lock().unwrap(), [(photo.bytes.len(), true)]);
}

/// The default decoder: its body cut short by the layer at the embedded
/// thumbnail, through a fetcher that honours the stop rule.
#[test]
fn the_default_decoder_takes_a_body_cut_short_by_an_apps_fetcher() {
    let photo = Photo::new(false);
    let thumbnail = load(
        photo.clone(),
        thumbpipe::ImageDecoder::new(&Default::default()),
    )
    .unwrap();
    assert_eq!((thumbnail.width, thumbnail.height), (64, 48));
    assert_eq!(photo.requests(), 1);
}

/// `file://` photos are read by the same layer: only as far as the
/// embedded thumbnail.
#[test]
fn a_local_photo_is_read_only_as_far_as_its_embedded_thumbnail() {
    let scratch = Scratch::new("cut-short-file");
    let bytes = camera_photo();
    let path = scratch.0.join("photo.jpg");
    std::fs::write(&path, &bytes).unwrap();
    let mut config = Config::default();
    config.fetch.file_roots = vec![scratch.0.clone()];
    // Hermetic: not the desktop's thumbnails of this machine.
    config.shared_thumbnails.read = thumbpipe::ThumbnailStore::Off;
    config.shared_thumbnails.write = thumbpipe::ThumbnailStore::Off;
    let mut pipeline = Pipeline::<u8>::new(config).unwrap();
    let url = url::Url::from_file_path(&path).unwrap();
    pipeline.request(0, url.as_str(), TargetSize::square(64), Priority::Visible);
    let mut done = drain_until(&mut pipeline, |all| !all.is_empty());
    let thumbnail = done.remove(0).result.unwrap();
    assert_eq!((thumbnail.width, thumbnail.height), (64, 48));
    let read = pipeline.stats().bytes_fetched;
    assert!(
        read * 4 < bytes.len() as u64,
        "read {read} of {}",
        bytes.len()
    );
}
