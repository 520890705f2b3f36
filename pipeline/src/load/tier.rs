//! The thumbnail tier: the load actor's seam to decoded thumbnails kept
//! beside the fetch stage (the disk cache's, `disk/tier.rs`). The actor
//! asks it before a load's fetch and offers it every thumbnail decoded from
//! a whole body; the tier decides what it keeps, and lives as long as the
//! fetch stage it sits beside.

use bytes::Bytes;
use futures::future::BoxFuture;
use url::Url;

use crate::Thumbnail;
use crate::request::TargetSize;

/// A tier of decoded thumbnails kept beside the fetch stage (the disk
/// cache's): the load actor asks it before a load's fetch, and offers it
/// every thumbnail decoded, with the body it came from. The actor's seam to
/// it; the tier decides what it keeps.
pub(crate) trait ThumbnailTier: Send + Sync + 'static {
    /// Whether it may hold thumbnails of `url` for `target`: if not, it is
    /// not asked.
    fn keeps(&self, url: &Url, target: TargetSize) -> bool;

    /// The thumbnail of `url` at `target`, if it has one. Dropping the
    /// future abandons the lookup.
    fn lookup(&self, url: &Url, target: TargetSize) -> BoxFuture<'static, Option<Thumbnail>>;

    /// Offers `thumbnail`, decoded from `body`, for `url` and `target`.
    /// Called on a decode thread; returns at once, copying what it keeps.
    fn offer(&self, url: &Url, target: TargetSize, body: &Bytes, thumbnail: &Thumbnail);
}
