//! The disk tier: a [`Fetch`] in front of any other, owning every decision
//! HTTP's caching rules make about a load's bytes: serve the stored copy
//! while it is fresh, revalidate a stale one with the copy's validators,
//! keep what the inner fetcher returns when its headers allow, forget what
//! they forbid. It also serves and keeps the decoded thumbnails beside
//! their responses, as the load actor's [`ThumbnailTier`] (`DiskThumbnails`).
//!
//! Made by the pipeline's builder when
//! [`DiskConfig::dir`](crate::DiskConfig::dir) is set, around the default
//! fetcher or the app's own; the load actor sees one [`Fetch`]. Its futures run
//! on the I/O runtime, the disk work on the cache's threads (`mod.rs`); it ends
//! with the pipeline, and its threads with it.

use std::sync::Arc;
use std::time::SystemTime;

use futures::future::BoxFuture;
use http_cache_semantics::{AfterResponse, BeforeRequest, CachePolicy};
use url::Url;

use super::policy::{carries_credentials, may_be_shared};
use super::{DiskCache, DiskStats, cache_options, request_parts, response_parts};
use crate::body::Body;
use crate::disk::DiskConfig;
use crate::error::{BuildError, Error};
use crate::fetch::{Fetch, FetchRequest, FetchResponse, check_status, fetch_from_response};
use crate::load::tier::ThumbnailTier;
use crate::request::{Fit, TargetSize};
use crate::thumbnail::Thumbnail;

/// An HTTP cache on disk in front of `inner`.
pub(crate) struct DiskTier {
    inner: Arc<dyn Fetch>,
    disk: Arc<DiskCache>,
    /// Whether decoded thumbnails are kept beside their responses
    /// ([`DiskConfig::thumbnails`](crate::DiskConfig::thumbnails)).
    thumbnails: bool,
}

impl std::fmt::Debug for DiskTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskTier")
            .field("disk", &self.disk)
            .field("thumbnails", &self.thumbnails)
            .finish_non_exhaustive()
    }
}

impl DiskTier {
    /// Opens the cache in `dir` with `config`'s budget, threads and read
    /// deadline, in front of `inner`; fails as [`DiskCache::open`] does.
    pub(crate) fn open(
        inner: Arc<dyn Fetch>,
        dir: std::path::PathBuf,
        config: &DiskConfig,
    ) -> Result<Self, BuildError> {
        let disk = DiskCache::open(dir, config.max_bytes, config.threads, config.read_timeout)?;
        Ok(Self {
            inner,
            disk: Arc::new(disk),
            thumbnails: config.thumbnails,
        })
    }

    /// Its counters, read whenever the pipeline's stats are.
    pub(crate) fn stats(&self) -> impl Fn() -> DiskStats + Send + Sync + 'static {
        let counters = self.disk.counters();
        move || counters.snapshot()
    }

    /// Its decoded thumbnails, as the load actor's tier, if it keeps
    /// them ([`DiskConfig::thumbnails`]).
    pub(crate) fn thumbnails(&self) -> Option<Arc<dyn ThumbnailTier>> {
        self.thumbnails
            .then(|| Arc::new(DiskThumbnails(Arc::clone(&self.disk))) as Arc<dyn ThumbnailTier>)
    }

    /// Tests: the cache itself.
    #[cfg(test)]
    pub(crate) fn disk(&self) -> &Arc<DiskCache> {
        &self.disk
    }
}

impl Fetch for DiskTier {
    fetch_from_response!();

    fn fetch_response(
        &self,
        request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        // The request the caching rules are computed for; a URL `http`
        // cannot carry, or one not fetched over HTTP, is not cached.
        let parts = is_http(&request.url)
            .then(|| request_parts(&request.url))
            .flatten();
        let Some(parts) = parts else {
            return self.inner.fetch_response(request);
        };
        Box::pin(load(
            Arc::clone(&self.inner),
            Arc::clone(&self.disk),
            request,
            parts,
        ))
    }
}

/// The decoded thumbnails beside the responses: the load actor's
/// [`ThumbnailTier`]. It holds the cache alone, not the fetcher behind the
/// layer, so a decode job that offers it a thumbnail keeps nothing else
/// alive.
#[derive(Debug)]
struct DiskThumbnails(Arc<DiskCache>);

impl ThumbnailTier for DiskThumbnails {
    /// Not an image at its own size: megabytes of pixels each, that the
    /// stored response decodes again.
    fn keeps(&self, url: &Url, target: TargetSize) -> bool {
        is_http(url) && !matches!(target.fit, Fit::Original { .. })
    }

    fn lookup(
        &self,
        url: &Url,
        target: TargetSize,
    ) -> BoxFuture<'static, Option<Result<Thumbnail, Error>>> {
        let found = self.0.lookup_thumbnail(url, target);
        Box::pin(async move { found.await.map(Ok) })
    }

    /// Kept beside the response only if it was decoded from all of it.
    fn offer(&self, url: &Url, target: TargetSize, body: &Body, thumbnail: &Thumbnail) {
        if body.complete {
            self.0
                .store_thumbnail(url, target, &body.bytes, thumbnail.clone());
        }
    }
}

/// Whether `url` is one the disk cache may hold (`http` or `https`).
fn is_http(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

/// The response for `request`: from the disk while it is fresh, from the
/// disk after a `304 Not Modified` when the server says it still is, or
/// from `inner`, kept as its headers allow. Whatever happens to the disk,
/// the load gets the inner fetcher's answer.
async fn load(
    inner: Arc<dyn Fetch>,
    disk: Arc<DiskCache>,
    mut request: FetchRequest,
    parts: http::request::Parts,
) -> Result<FetchResponse, Error> {
    // Bodies are kept whole, to serve any size later: none is cut short,
    // nor may a layer behind this one cut it.
    request.stop_rule = None;
    request.cut_short_for = None;
    let url = request.url.clone();
    let kept = Kept {
        disk: &disk,
        url: &url,
        parts: &parts,
        credentials: carries_credentials(&request.headers),
    };
    let Some(head) = disk.head(&url, request.max_bytes).await else {
        return kept.fetched(inner.fetch_response(request).await?);
    };
    match head.policy.before_request(&parts, SystemTime::now()) {
        BeforeRequest::Fresh(stored) => {
            let reservation = request.reserve(head.size).await;
            if let Some(body) = disk.body(&head).await {
                disk.count_hit();
                return Ok(FetchResponse::new(url, reservation.hold(body))
                    .with_headers(http::StatusCode::OK, stored.headers));
            }
        }
        BeforeRequest::Stale {
            request: revalidation,
            ..
        } => {
            // If-None-Match / If-Modified-Since, as the stored response
            // allows.
            let mut conditional = request.clone();
            conditional.headers.extend(revalidation.headers);
            let response = inner.fetch_response(conditional).await?;
            if response.status != http::StatusCode::NOT_MODIFIED {
                return kept.fetched(response);
            }
            // A 304 from where a redirect led speaks for that target, not
            // for this URL.
            let redirected = response.url != url;
            let outcome = head.policy.after_response(
                &parts,
                &response_parts(response.status, &response.headers),
                SystemTime::now(),
            );
            match outcome {
                AfterResponse::NotModified(policy, stored) if !redirected => {
                    let reservation = request.reserve(head.size).await;
                    if let Some(body) = disk.body(&head).await {
                        disk.count_revalidated();
                        // The 304's own headers may forbid storing it now:
                        // the merged policy keeps only the headers the
                        // stored response had.
                        if forbids_storing(&parts, &response.headers) {
                            disk.remove(&url);
                        } else {
                            disk.refresh(policy, &head);
                        }
                        return Ok(FetchResponse::new(url, reservation.hold(body))
                            .with_headers(http::StatusCode::OK, stored.headers));
                    }
                }
                // A 304 that does not match the stored response (its
                // validators changed, or it carries none), or came through
                // a redirect: fetch the image again, without conditions.
                _ => disk.remove(&url),
            }
        }
    }
    kept.fetched(inner.fetch_response(request).await?)
}

/// Where a fetched response is kept: the cache, its key, the request the
/// caching rules are computed for, and whether that request carried
/// credentials.
struct Kept<'a> {
    disk: &'a DiskCache,
    url: &'a Url,
    parts: &'a http::request::Parts,
    credentials: bool,
}

impl Kept<'_> {
    /// `response`, after storing it as its headers allow (or, for
    /// `no-store`, removing any older copy). A `304` to a request without
    /// conditions is an error, as any other status outside `2xx`. A
    /// response cut short (its body not [`complete`](crate::Body::complete))
    /// is not stored, nor is a
    /// response reached through a redirect: its freshness is
    /// the target's, not the URL's, which may point elsewhere next time.
    /// Nor is a response to a request with credentials that does not say
    /// it may be shared: entries are keyed by URL alone.
    fn fetched(&self, response: FetchResponse) -> Result<FetchResponse, Error> {
        let (disk, url) = (self.disk, self.url);
        check_status(url, response.status)?;
        disk.count_miss();
        if !response.body.complete
            || response.url != *url
            || (self.credentials && !may_be_shared(&response.headers))
        {
            disk.remove(url);
            return Ok(response);
        }
        // Aged from when its headers arrived, not from now: its body took
        // time to read, and perhaps to be given a share of the body budget.
        let policy = CachePolicy::new_options(
            self.parts,
            &response_parts(response.status, &response.headers),
            response.received_at,
            cache_options(),
        );
        // Written on a disk thread, from a copy: the body's reservation ends
        // with its decode, whatever the disk does.
        disk.store(url, self.parts, policy, &response.body.bytes);
        Ok(response)
    }
}

/// Whether a response with `headers` may not be stored (`no-store`), by the
/// caching rules.
fn forbids_storing(request: &http::request::Parts, headers: &http::HeaderMap) -> bool {
    let parts = response_parts(http::StatusCode::OK, headers);
    !CachePolicy::new_options(request, &parts, SystemTime::now(), cache_options()).is_storable()
}
