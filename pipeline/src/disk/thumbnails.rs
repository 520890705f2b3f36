//! Thumbnails on disk: the decoded thumbnails kept beside the responses they
//! were made from ([`DiskConfig::thumbnails`](crate::DiskConfig::thumbnails)).
//!
//! A thumbnail is served only while its response is on disk, unchanged
//! (the thumbnail names the response's hash) and fresh; one whose
//! response changed or went is removed when read. Written in the lane of
//! its response's URL, after the response's own write; one made while the
//! opening scan runs waits for it, behind that write (`deferred.rs`). Run
//! on the disk threads.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use http_cache_semantics::BeforeRequest;
use url::Url;

use super::entry::{
    THUMBNAIL_VERSION, ThumbnailEnvelope, entry_cost, frame, frame_len, stored_policy,
    thumbnail_key, unframe,
};
use super::layout::{self, Unreadable};
use super::request_parts;
use super::store::{Deferred, Store};
use super::unlink::Which;
use crate::request::{Fit, TargetSize};
use crate::thumbnail::Thumbnail;

impl Store {
    /// The thumbnail of `url` for `target` made from the response stored
    /// for `url`, if that response is still fresh and unchanged. A
    /// thumbnail whose response has changed or gone is removed.
    pub(super) fn read_thumbnail(&self, url: &Url, target: TargetSize) -> Option<Thumbnail> {
        self.wait_while_hung();
        let key = thumbnail_key(url.as_str(), target);
        let entry = self.entry(&key)?;
        // Removals below are of this entry only: a thread may have
        // written a newer one meanwhile.
        let this = || Which::entry(&entry);
        let made = serde_json::from_value::<ThumbnailEnvelope>(entry.metadata.clone())
            .ok()
            .filter(|made| made.version == THUMBNAIL_VERSION);
        let Some(made) = made else {
            self.discard_corrupt(&key, this());
            return None;
        };
        // A thumbnail has the size a decode of the target gives: within
        // the target, at least a pixel.
        let fits = (1..=target.width).contains(&made.width)
            && (1..=target.height).contains(&made.height)
            && source_fits(&made, target);
        let expected = u64::from(made.width)
            .checked_mul(u64::from(made.height))
            .and_then(|pixels| pixels.checked_mul(4))
            .and_then(|bytes| bytes.checked_add(frame_len(&key) as u64));
        if !fits || expected != Some(entry.size as u64) {
            self.discard_corrupt(&key, this());
            return None;
        }
        let original = match layout::find(&self.dir, url.as_str()) {
            Ok(Some(original)) => original,
            Ok(None) | Err(Unreadable::Missing | Unreadable::Corrupt) => {
                self.forget_entry(&key, this(), false);
                return None;
            }
            Err(Unreadable::Failed) => {
                self.failed();
                return None;
            }
        };
        if original.integrity.to_string() != made.original {
            self.forget_entry(&key, this(), false);
            return None;
        }
        let original_cost = entry_cost(&original);
        let original_line = Which::entry(&original);
        // A policy that cannot be used is the response's to remove, when
        // it is read.
        let fresh = stored_policy(url.as_str(), original.metadata)
            .zip(request_parts(url))
            .is_some_and(|(policy, request)| {
                matches!(
                    policy.before_request(&request, SystemTime::now()),
                    BeforeRequest::Fresh(_)
                )
            });
        if !fresh {
            return None;
        }
        let pixels = layout::read_content(&self.dir, &entry.integrity, entry.size as u64)
            .map(|framed| unframe(&key, framed));
        match pixels {
            Ok(Some(pixels)) => {
                // The response too: the thumbnail is no use without it.
                self.touch(url.as_str(), &original_line, original_cost);
                self.touch(&key, &this(), entry_cost(&entry));
                Some(Thumbnail {
                    url: Arc::from(url.as_str()),
                    width: made.width,
                    height: made.height,
                    pixels: Arc::from(pixels),
                    source_size: made.source_size,
                    animation: None,
                })
            }
            Err(Unreadable::Failed) => {
                self.failed();
                None
            }
            _ => {
                self.discard_corrupt(&key, this());
                None
            }
        }
    }

    /// Writes `thumbnail`, made from `body`, if `body` is the response
    /// stored under `url` now and the same thumbnail is not there yet.
    /// While the cache is being scanned, it waits for the scan to end,
    /// behind the response's write.
    pub(super) fn write_thumbnail(
        &self,
        url: String,
        target: TargetSize,
        body: Bytes,
        thumbnail: Thumbnail,
    ) {
        self.run_or_defer(Deferred::Thumbnail {
            url,
            target,
            body,
            thumbnail: Box::new(thumbnail),
        });
    }

    /// [`Store::write_thumbnail`], now.
    pub(super) fn write_thumbnail_now(
        &self,
        url: &str,
        target: TargetSize,
        body: &[u8],
        thumbnail: &Thumbnail,
    ) {
        let Ok(Some(original)) = layout::find(&self.dir, url) else {
            return;
        };
        if original.integrity.check(frame(url, body)).is_err() {
            return;
        }
        let key = thumbnail_key(url, target);
        let original_integrity = original.integrity.to_string();
        // Already there (a stale response revalidated and decoded again).
        let kept = layout::find(&self.dir, &key)
            .ok()
            .flatten()
            .and_then(|entry| serde_json::from_value::<ThumbnailEnvelope>(entry.metadata).ok())
            .is_some_and(|made| {
                made.version == THUMBNAIL_VERSION
                    && made.original == original_integrity
                    && (made.width, made.height) == (thumbnail.width, thumbnail.height)
                    && made.source_size == thumbnail.source_size
            });
        if kept {
            return;
        }
        let made = ThumbnailEnvelope {
            version: THUMBNAIL_VERSION,
            width: thumbnail.width,
            height: thumbnail.height,
            source_size: thumbnail.source_size,
            original: original_integrity,
        };
        match serde_json::to_value(&made) {
            Ok(metadata) => self.put(&key, metadata, &thumbnail.pixels),
            Err(_) => self.failed(),
        }
    }
}

/// The largest side an image's own size may claim: past what any decoder
/// accepts, and still a whole number of points to egui.
const MAX_SOURCE_SIDE: u32 = 1 << 24;

/// Whether the image's own size an envelope claims can be the one its
/// thumbnail was made from: sides within `1..=MAX_SOURCE_SIDE`, and, for
/// a thumbnail of the whole image, its shape (each side rounded, or
/// raised to 1).
fn source_fits(made: &ThumbnailEnvelope, target: TargetSize) -> bool {
    let (width, height) = made.source_size;
    let sides = (1..=MAX_SOURCE_SIDE).contains(&width) && (1..=MAX_SOURCE_SIDE).contains(&height);
    let shape = match target.fit {
        Fit::Cover => true,
        Fit::Inside | Fit::Original { .. } => {
            let (width, height, made_width, made_height) = (
                u64::from(width),
                u64::from(height),
                u64::from(made.width),
                u64::from(made.height),
            );
            (made_width * height).abs_diff(made_height * width)
                <= width + height + made_width + made_height
        }
    };
    sides && shape
}
