//! The network side of an `http` or `https` fetch: one GET and its body,
//! under the deadline, the body cap and the body budget; with the disk
//! cache on, what HTTP's caching rules decide for it (serve the stored
//! copy, revalidate it, store the new one). Runs as the fetch's future on
//! the I/O runtime; dropping it closes the connection.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_cache_semantics::{AfterResponse, BeforeRequest, CachePolicy};
use url::Url;

use super::budget::BodyBudget;
use super::errors::classify;
use super::{FetchLimits, HttpFetcher};
use crate::Error;
use crate::disk::{self, DiskCache};

/// The body at an `http` or `https` URL: from the disk cache while it is
/// fresh, from the disk cache after a `304 Not Modified` when the server
/// says it still is, or from the network. Whatever happens to the disk,
/// the load gets the network's answer.
pub(super) async fn fetch_http(
    fetcher: HttpFetcher,
    url: Url,
    max_bytes: u64,
) -> Result<Bytes, Error> {
    let HttpFetcher {
        client,
        limits,
        budget,
        disk,
        ..
    } = fetcher;
    let net = Network {
        client: &client,
        limits: &limits,
        budget: &budget,
        url: &url,
        max_bytes,
    };
    // The request the caching rules are computed for; absent when the disk
    // cache is off or the URL is not one `http` can carry.
    let Some((request, disk)) = disk.and_then(|disk| Some((disk::request_parts(&url)?, disk)))
    else {
        return net.download().await;
    };
    let cache = Cache {
        disk: &disk,
        request: &request,
    };
    if let Some(head) = disk.head(&url, max_bytes).await {
        match head.policy.before_request(&request, SystemTime::now()) {
            BeforeRequest::Fresh(_) => {
                let reservation = budget.reserve(head.size).await;
                if let Some(body) = disk.body(&head).await {
                    disk.count_hit();
                    return Ok(reservation.hold(body));
                }
            }
            BeforeRequest::Stale {
                request: revalidation,
                ..
            } => {
                // If-None-Match / If-Modified-Since, as the stored response
                // allows.
                let (response, deadline) = net.send(Some(revalidation.headers)).await?;
                if response.status() != reqwest::StatusCode::NOT_MODIFIED {
                    return net.receive(response, deadline, Some(cache)).await;
                }
                let parts = disk::response_parts(response.status(), response.headers());
                // A 304 from where a redirect led speaks for that target,
                // not for this URL.
                let redirected = response.url() != &url;
                let outcome = head
                    .policy
                    .after_response(&request, &parts, SystemTime::now());
                match outcome {
                    AfterResponse::NotModified(policy, _) if !redirected => {
                        let reservation = budget.reserve(head.size).await;
                        if let Some(body) = disk.body(&head).await {
                            disk.count_revalidated();
                            // The 304's own headers may forbid storing it
                            // now: the merged policy keeps only the headers
                            // the stored response had.
                            if forbids_storing(&request, response.headers()) {
                                disk.remove(&url);
                            } else {
                                disk.refresh(policy, &head);
                            }
                            return Ok(reservation.hold(body));
                        }
                    }
                    // A 304 that does not match the stored response (its
                    // validators changed, or it carries none), or came
                    // through a redirect: fetch the image again, without
                    // conditions.
                    _ => disk.remove(&url),
                }
            }
        }
    }
    let (response, deadline) = net.send(None).await?;
    net.receive(response, deadline, Some(cache)).await
}

/// Whether a response with `headers` may not be stored (`no-store`), by the
/// caching rules.
fn forbids_storing(request: &http::request::Parts, headers: &http::HeaderMap) -> bool {
    let parts = disk::response_parts(http::StatusCode::OK, headers);
    !CachePolicy::new_options(request, &parts, SystemTime::now(), disk::cache_options())
        .is_storable()
}

/// One fetch's network side: the client, its limits and the body budget.
struct Network<'a> {
    client: &'a reqwest::Client,
    limits: &'a FetchLimits,
    budget: &'a BodyBudget,
    url: &'a Url,
    max_bytes: u64,
}

/// Where a response is stored, when the disk cache is on.
#[derive(Clone, Copy)]
struct Cache<'a> {
    disk: &'a DiskCache,
    request: &'a http::request::Parts,
}

impl Network<'_> {
    fn timed_out(&self) -> Error {
        Error::Timeout {
            url: self.url.to_string(),
            phase: "complete response",
            limit: self.limits.total_timeout,
            setting: "total_timeout",
        }
    }

    /// Sends the GET, with `headers` added; returns the response (headers
    /// read) and the deadline for its body.
    async fn send(
        &self,
        headers: Option<http::HeaderMap>,
    ) -> Result<(reqwest::Response, tokio::time::Instant), Error> {
        let deadline = later_by(tokio::time::Instant::now(), self.limits.total_timeout);
        let mut get = self.client.get(self.url.clone());
        if let Some(headers) = headers {
            get = get.headers(headers);
        }
        let response = tokio::time::timeout_at(deadline, get.send())
            .await
            .map_err(|_| self.timed_out())?
            .map_err(|error| classify(self.url, error, self.limits))?;
        Ok((response, deadline))
    }

    /// The body, without the disk cache.
    async fn download(&self) -> Result<Bytes, Error> {
        let (response, deadline) = self.send(None).await?;
        self.receive(response, deadline, None).await
    }

    /// Checks the status and reads the body of `response` within the body
    /// budget and the cap; with `cache`, stores it as its headers allow.
    async fn receive(
        &self,
        mut response: reqwest::Response,
        mut deadline: tokio::time::Instant,
        cache: Option<Cache<'_>>,
    ) -> Result<Bytes, Error> {
        let (url, max_bytes) = (self.url, self.max_bytes);
        let status = response.status();
        if !status.is_success() {
            return Err(Error::Status {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        // What the caching rules say of it, computed before its headers go
        // with the body. A response reached through a redirect is not
        // stored: its freshness is the target's, not the URL's, which may
        // point elsewhere next time.
        let policy = cache.filter(|_| response.url() == url).map(|cache| {
            let parts = disk::response_parts(status, response.headers());
            CachePolicy::new_options(
                cache.request,
                &parts,
                SystemTime::now(),
                disk::cache_options(),
            )
        });
        let too_large = |size: String| Error::TooLarge {
            url: url.to_string(),
            what: format!("the body is {size}, over the {max_bytes}-byte limit"),
            setting: "max_body_bytes",
        };
        if let Some(length) = response.content_length().filter(|len| *len > max_bytes) {
            return Err(too_large(format!("{length} bytes")));
        }
        // Bodies waiting for a decoder are bounded: this one waits here,
        // its bytes unread, while the budget is spent. The wait is the
        // decoders' time, not the server's: the deadline moves by it.
        let waiting = tokio::time::Instant::now();
        let reservation = self
            .budget
            .reserve(response.content_length().unwrap_or(max_bytes))
            .await;
        deadline = later_by(deadline, waiting.elapsed());
        // The server's length is a claim: reserve at most 1 MiB up
        // front, and let the buffer grow with the bytes that arrive.
        let capacity = response
            .content_length()
            .unwrap_or(64 * 1024)
            .min(max_bytes)
            .min(1024 * 1024);
        let read = async {
            let mut body = Vec::with_capacity(capacity as usize);
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|error| classify(url, error, self.limits))?
            {
                if (body.len() + chunk.len()) as u64 > max_bytes {
                    return Err(too_large("larger".into()));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        };
        let body = tokio::time::timeout_at(deadline, read)
            .await
            .map_err(|_| self.timed_out())??;
        let body = reservation.hold(body);
        if let Some(cache) = cache {
            cache.disk.count_miss();
            match policy {
                // Written (or, for `no-store`, any older copy removed) on a
                // disk thread, from a copy: the body's reservation ends
                // with its decode, whatever the disk does.
                Some(policy) => cache.disk.store(url, cache.request, policy, &body),
                None => cache.disk.remove(url),
            }
        }
        Ok(body)
    }
}

/// `instant` plus `wait`; for a wait too long to add (a timeout of
/// `Duration::MAX`, meaning none), about thirty years on.
fn later_by(instant: tokio::time::Instant, wait: Duration) -> tokio::time::Instant {
    instant
        .checked_add(wait)
        .or_else(|| instant.checked_add(Duration::from_secs(30 * 365 * 24 * 3600)))
        .unwrap_or(instant)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `total_timeout = Duration::MAX` (no timeout) overflowed
    /// the deadline's `Instant`, and every fetch panicked.
    #[test]
    fn a_timeout_too_long_for_an_instant_is_a_distant_deadline() {
        let now = tokio::time::Instant::now();
        let deadline = later_by(now, Duration::MAX);
        assert!(deadline > now + Duration::from_secs(365 * 24 * 3600));
        assert_eq!(
            later_by(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(later_by(deadline, Duration::MAX) >= deadline);
    }
}
