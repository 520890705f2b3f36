//! Fetch: the bytes of a URL, asynchronously, cancellable, with a body cap.
//!
//! Owns the HTTP client, and the file root that `file://` URLs may read
//! under. [`Fetch`] is the stage's seam: the default
//! [`HttpFetcher`] uses reqwest (rustls, connections reused), and tests or
//! benchmarks plug in anything else. A fetch is a future on the pipeline's
//! I/O runtime; it is cancelled by dropping it, which closes its connection.
//! The client lives as long as the pipeline.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::future::BoxFuture;
use http_cache_semantics::{AfterResponse, BeforeRequest, CachePolicy};
use url::Url;

use crate::disk::{self, DiskCache};
use crate::{BuildError, Config, DiskStats, Error};

mod budget;
mod file;

use budget::BodyBudget;
use file::{FileReader, files_off};

/// A source of image bytes.
///
/// Implementations must be cancellable by drop: the pipeline drops the
/// future of a fetch nobody wants any more.
///
/// ```
/// use bytes::Bytes;
/// use futures::future::BoxFuture;
/// use thumbpipe::{Error, Fetch};
///
/// /// Serves the same bytes for every URL.
/// struct Fixed(Bytes);
///
/// impl Fetch for Fixed {
///     fn fetch(&self, _url: url::Url, _max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
///         let bytes = self.0.clone();
///         Box::pin(async move { Ok(bytes) })
///     }
/// }
/// ```
pub trait Fetch: Send + Sync + 'static {
    /// The body at `url`, refusing with [`Error::TooLarge`] past `max_bytes`.
    fn fetch(&self, url: Url, max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>>;
}

/// A [`Fetch`] made from a function of the URL and the body cap, for bytes
/// that do not come over HTTP: a test's fixtures, an archive, a database.
/// Made by [`fetch_fn`].
#[derive(Clone, Debug)]
pub struct FetchFn<F>(F);

/// A [`Fetch`] that calls `fetch` for every URL; the future it returns is
/// dropped if the load is cancelled.
///
/// `fetch` itself is called on the load actor's task, which every request
/// goes through: it must return at once and do its work in the future,
/// which runs on a task of its own.
///
/// ```
/// use bytes::Bytes;
///
/// static PNG: &[u8] = &[0x89, b'P', b'N', b'G'];
/// let pipeline = thumbpipe::Pipeline::<u32>::builder()
///     .fetcher(thumbpipe::fetch_fn(|_url, _max_bytes| async {
///         Ok(Bytes::from_static(PNG))
///     }))
///     .build()?;
/// # Ok::<(), thumbpipe::BuildError>(())
/// ```
pub fn fetch_fn<F, Fut>(fetch: F) -> FetchFn<F>
where
    F: Fn(Url, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Bytes, Error>> + Send + 'static,
{
    FetchFn(fetch)
}

impl<F, Fut> Fetch for FetchFn<F>
where
    F: Fn(Url, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Bytes, Error>> + Send + 'static,
{
    fn fetch(&self, url: Url, max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        Box::pin((self.0)(url, max_bytes))
    }
}

/// The default fetcher: one reqwest client, connections reused, timeouts
/// and redirect limit from [`Config`]; TLS by rustls, checked against the
/// platform's trusted roots. Reads `file://` URLs under
/// [`Config::file_root`] when it is set.
///
/// The bodies it holds, read or being read, never add up to more than
/// [`Config::max_bytes_awaiting_decode`] (plus one body when a single one
/// is larger): before reading a body, a fetch reserves its size (the
/// server's `Content-Length`, or [`Config::max_body_bytes`] without one),
/// waiting while the budget is spent, and the body gives it back when it
/// is dropped, after its decode or at once when its load is cancelled. The
/// budget is per fetcher (its clones share it).
///
/// With [`Config::disk_cache_dir`] set, it keeps the responses it fetches
/// on disk and follows HTTP's caching rules (see the setting).
#[derive(Clone, Debug)]
pub struct HttpFetcher {
    client: reqwest::Client,
    limits: Arc<FetchLimits>,
    budget: Arc<BodyBudget>,
    /// Reads the files under `Config::file_root`, when it is set.
    files: Option<Arc<FileReader>>,
    /// The HTTP cache on disk, when `Config::disk_cache_dir` is set.
    disk: Option<Arc<DiskCache>>,
}

#[derive(Debug)]
struct FetchLimits {
    connect_timeout: Duration,
    total_timeout: Duration,
    max_redirects: usize,
}

impl HttpFetcher {
    /// A client with `config`'s timeouts and redirect limit. Fails if
    /// [`Config::file_root`] is set but is not a directory.
    pub fn new(config: &Config) -> Result<Self, BuildError> {
        let files = config
            .file_root
            .as_deref()
            .map(FileReader::start)
            .transpose()?
            .map(Arc::new);
        let roots = config
            .extra_root_certificates
            .iter()
            .map(|der| reqwest::Certificate::from_der(der))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| BuildError::Config(format!("extra_root_certificates: {e}")))?;
        let mut client = reqwest::Client::builder()
            // The total timeout is the fetch's own deadline, which does not
            // count time spent waiting for the body budget.
            .connect_timeout(config.connect_timeout)
            .redirect(redirect_policy(
                config.max_redirects,
                config.allow_https_to_http_redirects,
            ))
            .pool_max_idle_per_host(config.max_concurrent_fetches)
            .user_agent(concat!("thumbpipe/", env!("CARGO_PKG_VERSION")));
        let extra_roots = !roots.is_empty();
        if extra_roots {
            client = client.tls_certs_merge(roots);
        }
        let client = client.build().map_err(|e| {
            let mut reason = causes(&e);
            if extra_roots {
                reason.push_str(" (is each of extra_root_certificates one DER certificate?)");
            }
            BuildError::Client(reason)
        })?;
        Ok(Self {
            client,
            limits: Arc::new(FetchLimits {
                connect_timeout: config.connect_timeout,
                total_timeout: config.total_timeout,
                max_redirects: config.max_redirects,
            }),
            budget: Arc::new(BodyBudget::new(config.max_bytes_awaiting_decode)),
            files,
            disk: config
                .disk_cache_dir
                .clone()
                .map(|dir| {
                    DiskCache::open(
                        dir,
                        config.disk_cache_bytes,
                        config.disk_threads,
                        config.disk_read_timeout,
                    )
                })
                .transpose()?
                .map(Arc::new),
        })
    }

    /// The disk cache's counters, if [`Config::disk_cache_dir`] is set.
    /// A pipeline with this fetcher reports them in [`crate::Stats::disk`].
    pub fn disk_stats(&self) -> Option<DiskStats> {
        self.disk.as_ref().map(|disk| disk.counters().snapshot())
    }

    /// The disk cache, for the load actor to keep decoded thumbnails in.
    pub(crate) fn disk_cache(&self) -> Option<Arc<DiskCache>> {
        self.disk.clone()
    }
}

/// Follows at most `max` redirects, and none from `https` to `http` unless
/// `downgrades` allows it: the image would travel unencrypted, open to be
/// read or replaced on the way.
fn redirect_policy(max: usize, downgrades: bool) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        // The first URL is the one requested, not a redirect.
        if attempt.previous().len() > max {
            return attempt.error(TooManyRedirects);
        }
        let from_https = attempt
            .previous()
            .last()
            .is_some_and(|from| from.scheme() == "https");
        if from_https && attempt.url().scheme() == "http" && !downgrades {
            let to = attempt.url().to_string();
            return attempt.error(Downgrade(to));
        }
        attempt.follow()
    })
}

/// Why a redirect was not followed: more than the limit.
#[derive(Debug, thiserror::Error)]
#[error("too many redirects")]
struct TooManyRedirects;

/// Why a redirect was not followed: from `https` to this `http` URL.
#[derive(Debug, thiserror::Error)]
#[error("redirected from https to plain http ({0})")]
struct Downgrade(String);

impl Fetch for HttpFetcher {
    fn fetch(&self, url: Url, max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        if url.scheme() == "file" {
            return match &self.files {
                Some(files) => {
                    let (files, budget) = (Arc::clone(files), Arc::clone(&self.budget));
                    Box::pin(async move {
                        // The file's size is known only once it is open:
                        // the cap is reserved, and the rest given back.
                        let reservation = budget.reserve(max_bytes).await;
                        Ok(reservation.hold(files.read(url, max_bytes).await?))
                    })
                }
                None => Box::pin(std::future::ready(Err(files_off(url.as_str())))),
            };
        }
        Box::pin(fetch_http(self.clone(), url, max_bytes))
    }
}

/// The body at an `http` or `https` URL: from the disk cache while it is
/// fresh, from the disk cache after a `304 Not Modified` when the server
/// says it still is, or from the network. Whatever happens to the disk,
/// the load gets the network's answer.
async fn fetch_http(fetcher: HttpFetcher, url: Url, max_bytes: u64) -> Result<Bytes, Error> {
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

/// Turns a reqwest error into the pipeline's, naming the phase and the
/// setting that applies.
fn classify(url: &Url, error: reqwest::Error, limits: &FetchLimits) -> Error {
    let url_text = url.to_string();
    if error.is_timeout() {
        let connect = error.is_connect();
        return Error::Timeout {
            url: url_text,
            phase: if connect {
                "connection"
            } else {
                "complete response"
            },
            limit: if connect {
                limits.connect_timeout
            } else {
                limits.total_timeout
            },
            setting: if connect {
                "connect_timeout"
            } else {
                "total_timeout"
            },
        };
    }
    if let Some(tls) = find_cause::<rustls::Error>(&error) {
        return Error::Tls {
            url: url_text,
            reason: tls.to_string(),
            source: Some(Arc::new(error)),
        };
    }
    if let Some(Downgrade(to)) = find_cause::<Downgrade>(&error) {
        return Error::InsecureRedirect {
            url: url_text,
            to: to.clone(),
        };
    }
    let reason = if error.is_redirect() {
        format!("redirected more than {} times", limits.max_redirects)
    } else if error.is_connect() {
        format!("could not connect: {}", causes(&error))
    } else if error.is_body() || error.is_decode() {
        format!("the response body broke off: {}", causes(&error))
    } else {
        causes(&error)
    };
    Error::Network {
        url: url_text,
        reason,
        source: Some(Arc::new(error)),
    }
}

/// An error and its sources, joined with ": ".
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        next = cause.source();
    }
    text
}

/// The first error of type `E` in `error`'s chain of causes, looking
/// inside I/O errors too (hyper and rustls wrap theirs in them).
fn find_cause<'e, E: std::error::Error + 'static>(
    error: &'e (dyn std::error::Error + 'static),
) -> Option<&'e E> {
    let mut next = Some(error);
    while let Some(cause) = next {
        if let Some(found) = cause.downcast_ref::<E>() {
            return Some(found);
        }
        next = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => cause.source(),
        };
    }
    None
}

/// Checks that `url` is an absolute `http` or `https` URL, or a `file` URL
/// when `files` is on. Whether a file lies under the root is checked when
/// it is read, off the UI thread.
pub(crate) fn parse_url(url: &str, files: bool) -> Result<Url, Error> {
    let unsupported = |reason: String| Error::UnsupportedUrl {
        url: url.to_owned(),
        reason,
    };
    let parsed = Url::parse(url).map_err(|e| unsupported(format!("not a URL ({e})")))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some() => Ok(parsed),
        "http" | "https" => Err(unsupported("the URL has no host".into())),
        "file" if !files => Err(files_off(url)),
        "file" if parsed.to_file_path().is_err() => {
            Err(unsupported("not a local file path".into()))
        }
        "file" => Ok(parsed),
        scheme => Err(unsupported(format!(
            "scheme '{scheme}' is not supported; use http or https"
        ))),
    }
}

/// The host (and port) a URL's fetch counts against.
pub(crate) fn host_key(url: &Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_and_https_urls_are_accepted() {
        assert!(parse_url("http://127.0.0.1:8080/a.jpg", false).is_ok());
        assert!(parse_url("https://example.com/a.jpg", false).is_ok());
        assert!(parse_url("file:///srv/a.jpg", true).is_ok());
        assert!(parse_url("file://host/a.jpg", true).is_err());
        for bad in [
            "ftp://example.com/a.jpg",
            "file:///etc/passwd",
            "a.jpg",
            "",
            "http://",
        ] {
            assert!(
                matches!(parse_url(bad, false), Err(Error::UnsupportedUrl { .. })),
                "{bad}"
            );
        }
    }

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

    #[test]
    fn hosts_include_the_port() {
        let a = parse_url("http://h:1/x", false).unwrap();
        let b = parse_url("http://h:2/x", false).unwrap();
        assert_ne!(host_key(&a), host_key(&b));
        assert_eq!(host_key(&parse_url("https://h/x", false).unwrap()), "h:443");
    }
}
