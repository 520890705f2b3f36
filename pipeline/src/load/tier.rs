//! The thumbnail tier: the load actor's seam to decoded thumbnails kept
//! beside the fetch stage: the disk cache's (`disk/tier.rs`) for `http`
//! URLs, the desktop's shared thumbnails (`shared_thumbnails/`) for local
//! files. The actor asks it before a load's fetch and offers it every
//! thumbnail decoded; the tier decides what it keeps, and lives as long as
//! the fetch stage it sits beside.

use std::sync::Arc;

use futures::future::BoxFuture;
use url::Url;

use crate::body::Body;
use crate::error::Error;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// A tier of decoded thumbnails kept beside the fetch stage: the load
/// actor asks it before a load's fetch, and offers it every thumbnail
/// decoded, with the body it came from. The actor's seam to it; the tier
/// decides what it keeps.
pub(crate) trait ThumbnailTier: Send + Sync + 'static {
    /// Whether it may hold thumbnails of `url` for `target`: if not, it is
    /// not asked.
    fn keeps(&self, url: &Url, target: TargetSize) -> bool;

    /// The size a load of `url` for `target` is decoded at, for the tier to
    /// keep: its own size class (the actor scales the thumbnail offered
    /// down to `target`, or decodes again at `target` where that falls
    /// short). By default, `target`.
    fn widen(&self, _url: &Url, target: TargetSize) -> TargetSize {
        target
    }

    /// The load's result, if the tier has one: a thumbnail of `url` at
    /// `target`, or an error it recorded. Dropping the future abandons the
    /// lookup.
    fn lookup(
        &self,
        url: &Url,
        target: TargetSize,
    ) -> BoxFuture<'static, Option<Result<Thumbnail, Error>>>;

    /// Offers `thumbnail`, decoded from `body` (whole or cut short) for
    /// the load of `url` at `target`, at the size [`ThumbnailTier::widen`]
    /// said. Called on a decode thread; returns at once, copying what it
    /// keeps.
    fn offer(&self, url: &Url, target: TargetSize, body: &Body, thumbnail: &Thumbnail);

    /// Tells it the decoder refused all of `body`, for the load of `url`
    /// at `target`. Called on a decode thread; returns at once.
    fn failed(&self, _url: &Url, _target: TargetSize, _body: &Body) {}
}

/// Two tiers as one: each URL goes to the first that keeps it.
pub(crate) fn either(
    first: Option<Arc<dyn ThumbnailTier>>,
    second: Option<Arc<dyn ThumbnailTier>>,
) -> Option<Arc<dyn ThumbnailTier>> {
    match (first, second) {
        (Some(first), Some(second)) => Some(Arc::new(Either(first, second))),
        (first, second) => first.or(second),
    }
}

struct Either(Arc<dyn ThumbnailTier>, Arc<dyn ThumbnailTier>);

impl Either {
    fn of(&self, url: &Url, target: TargetSize) -> &dyn ThumbnailTier {
        if self.0.keeps(url, target) {
            &*self.0
        } else {
            &*self.1
        }
    }
}

impl ThumbnailTier for Either {
    fn keeps(&self, url: &Url, target: TargetSize) -> bool {
        self.0.keeps(url, target) || self.1.keeps(url, target)
    }

    fn widen(&self, url: &Url, target: TargetSize) -> TargetSize {
        self.of(url, target).widen(url, target)
    }

    fn lookup(
        &self,
        url: &Url,
        target: TargetSize,
    ) -> BoxFuture<'static, Option<Result<Thumbnail, Error>>> {
        self.of(url, target).lookup(url, target)
    }

    fn offer(&self, url: &Url, target: TargetSize, body: &Body, thumbnail: &Thumbnail) {
        self.of(url, target).offer(url, target, body, thumbnail);
    }

    fn failed(&self, url: &Url, target: TargetSize, body: &Body) {
        self.of(url, target).failed(url, target, body);
    }
}
