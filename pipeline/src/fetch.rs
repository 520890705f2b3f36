//! Fetch: the bytes of a URL, asynchronously, cancellable, with a body cap.
//!
//! Owns the HTTP client. [`Fetch`] is the stage's seam: the default
//! [`HttpFetcher`] uses reqwest (rustls, connections reused), and tests or
//! benchmarks plug in anything else. A fetch is a future on the pipeline's
//! I/O runtime; it is cancelled by dropping it, which closes its connection.
//! The client lives as long as the pipeline.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use url::Url;

use crate::{BuildError, Config, Error};

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

/// The default fetcher: one reqwest client, connections reused, timeouts
/// and redirect limit from [`Config`].
#[derive(Clone, Debug)]
pub struct HttpFetcher {
    client: reqwest::Client,
    limits: Arc<FetchLimits>,
}

#[derive(Debug)]
struct FetchLimits {
    connect_timeout: Duration,
    total_timeout: Duration,
    max_redirects: usize,
}

impl HttpFetcher {
    /// A client with `config`'s timeouts and redirect limit.
    pub fn new(config: &Config) -> Result<Self, BuildError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.total_timeout)
            .redirect(reqwest::redirect::Policy::limited(config.max_redirects))
            .pool_max_idle_per_host(config.max_concurrent_fetches)
            .user_agent(concat!("thumbpipe/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| BuildError::Client(e.to_string()))?;
        Ok(Self {
            client,
            limits: Arc::new(FetchLimits {
                connect_timeout: config.connect_timeout,
                total_timeout: config.total_timeout,
                max_redirects: config.max_redirects,
            }),
        })
    }
}

impl Fetch for HttpFetcher {
    fn fetch(&self, url: Url, max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        let client = self.client.clone();
        let limits = Arc::clone(&self.limits);
        Box::pin(async move {
            let fail = |error: reqwest::Error| classify(&url, error, &limits);
            let mut response = client.get(url.clone()).send().await.map_err(fail)?;
            let status = response.status();
            if !status.is_success() {
                return Err(Error::Status {
                    url: url.to_string(),
                    status: status.as_u16(),
                });
            }
            let too_large = |size: String| Error::TooLarge {
                url: url.to_string(),
                what: format!("the body is {size}, over the {max_bytes}-byte limit"),
                setting: "max_body_bytes",
            };
            if let Some(length) = response.content_length().filter(|len| *len > max_bytes) {
                return Err(too_large(format!("{length} bytes")));
            }
            let capacity = response
                .content_length()
                .unwrap_or(64 * 1024)
                .min(max_bytes);
            let mut body = Vec::with_capacity(capacity as usize);
            while let Some(chunk) = response.chunk().await.map_err(fail)? {
                if (body.len() + chunk.len()) as u64 > max_bytes {
                    return Err(too_large("larger".into()));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Bytes::from(body))
        })
    }
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

/// Checks that `url` is an absolute `http` or `https` URL.
pub(crate) fn parse_url(url: &str) -> Result<Url, Error> {
    let unsupported = |reason: String| Error::UnsupportedUrl {
        url: url.to_owned(),
        reason,
    };
    let parsed = Url::parse(url).map_err(|e| unsupported(format!("not a URL ({e})")))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some() => Ok(parsed),
        "http" | "https" => Err(unsupported("the URL has no host".into())),
        scheme => Err(unsupported(format!(
            "scheme '{scheme}' is not http or https"
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
        assert!(parse_url("http://127.0.0.1:8080/a.jpg").is_ok());
        assert!(parse_url("https://example.com/a.jpg").is_ok());
        for bad in [
            "ftp://example.com/a.jpg",
            "file:///etc/passwd",
            "a.jpg",
            "",
            "http://",
        ] {
            assert!(
                matches!(parse_url(bad), Err(Error::UnsupportedUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn hosts_include_the_port() {
        let a = parse_url("http://h:1/x").unwrap();
        let b = parse_url("http://h:2/x").unwrap();
        assert_ne!(host_key(&a), host_key(&b));
        assert_eq!(host_key(&parse_url("https://h/x").unwrap()), "h:443");
    }
}
