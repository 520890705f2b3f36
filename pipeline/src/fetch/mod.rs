//! Fetch: the bytes of a URL, asynchronously, cancellable, with a body cap.
//!
//! Owns the sources of bytes. [`Fetch`] is the stage's seam: each scheme
//! has a source (`sources.rs` routes a URL to it): the default
//! [`HttpFetcher`] for `http` and `https` (reqwest, rustls, connections
//! reused), the local files for `file` (`file.rs`), and whatever an app
//! adds; a layer in front of the router (the disk cache, `disk/`) is a
//! [`Fetch`] too. A fetch is a future on the pipeline's I/O runtime; it is
//! cancelled by dropping it, which closes its connection. The sources live
//! as long as the pipeline. What a fetch is given and answers is
//! `exchange.rs`, an `http` fetch `http.rs`, its client `client.rs`, its
//! errors `errors.rs`, the bytes bodies may hold `budget.rs`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use url::Url;

use crate::error::{BuildError, Error};
use crate::request::no_source;

mod budget;
mod client;
pub(crate) mod config;
mod errors;
mod exchange;
mod file;
mod headers;
mod http;
mod read_as_needed;
mod sources;
pub(crate) mod stop;

pub(crate) use budget::BodyBudget;
use client::Client;
pub use config::{FetchConfig, Proxy};
pub(crate) use exchange::check_status;
pub use exchange::{FetchRequest, FetchResponse};
pub(crate) use file::FileSource;
pub use headers::HeaderHook;
pub(crate) use headers::RequestHeaders;
pub(crate) use read_as_needed::read_as_needed;
pub(crate) use sources::Sources;
pub use stop::{Enough, StopRule};

/// A source of image bytes.
///
/// Implementations must be cancellable by drop: the pipeline drops the future
/// of a fetch nobody wants any more. [`Fetch::fetch`] is all a source of bytes
/// needs; a source that speaks HTTP also implements [`Fetch::fetch_response`],
/// which the pipeline calls, so that the disk cache
/// ([`DiskConfig::dir`](crate::DiskConfig::dir)) can keep what it returns and
/// revalidate it.
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

    /// The response to `request`: its body, and the status, headers and
    /// final URL that HTTP's caching rules read. The pipeline calls this
    /// one. By default it is [`Fetch::fetch`]'s body as a `200 OK` with no
    /// headers, which the disk cache never keeps; the request's headers
    /// are not sent.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use futures::future::BoxFuture;
    /// use thumbpipe::{Error, Fetch, FetchRequest, FetchResponse};
    ///
    /// /// Bytes that stay fresh for a day, so the disk cache keeps them.
    /// struct Daily(Bytes);
    ///
    /// impl Fetch for Daily {
    ///     fn fetch(&self, _url: url::Url, _max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
    ///         let bytes = self.0.clone();
    ///         Box::pin(async move { Ok(bytes) })
    ///     }
    ///
    ///     fn fetch_response(
    ///         &self,
    ///         request: FetchRequest,
    ///     ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
    ///         let mut headers = http::HeaderMap::new();
    ///         headers.insert(http::header::CACHE_CONTROL, "max-age=86400".parse().unwrap());
    ///         let response = FetchResponse::new(request.url, self.0.clone())
    ///             .with_headers(http::StatusCode::OK, headers);
    ///         Box::pin(async move { Ok(response) })
    ///     }
    /// }
    /// ```
    fn fetch_response(
        &self,
        request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        let FetchRequest { url, max_bytes, .. } = request;
        let body = self.fetch(url.clone(), max_bytes);
        Box::pin(body.map(move |body| Ok(FetchResponse::new(url, body?))))
    }
}

/// A shared fetcher fetches as the one it shares.
impl<F: Fetch + ?Sized> Fetch for Arc<F> {
    fn fetch(&self, url: Url, max_bytes: u64) -> BoxFuture<'static, Result<Bytes, Error>> {
        (**self).fetch(url, max_bytes)
    }

    fn fetch_response(
        &self,
        request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        (**self).fetch_response(request)
    }
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
/// and redirect limit from [`FetchConfig`]; TLS by rustls, checked against the
/// platform's trusted roots, and HTTP/2 with a server that offers it (ALPN),
/// where a cancelled fetch resets its stream and the connection stays. It
/// serves `http` and `https` URLs; a pipeline reads `file://` ones (under
/// [`FetchConfig::file_roots`](crate::FetchConfig::file_roots)) with a
/// source of its own.
///
/// In a pipeline, the bodies it holds, read or being read, count against the
/// pipeline's
/// [`FetchConfig::body_budget_bytes`](crate::FetchConfig::body_budget_bytes):
/// before reading a body, a fetch reserves its size (the server's
/// `Content-Length`, or the request's cap without one), waiting while the
/// budget is spent, and the body gives it back when it is dropped, after its
/// decode or at once when its load is cancelled. Called on its own
/// ([`Fetch::fetch`]), it has no such budget.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), thumbpipe::BuildError> {
/// // reqwest's client is built inside a tokio runtime.
/// let fetcher = thumbpipe::HttpFetcher::new(&thumbpipe::FetchConfig::default())?;
/// let pipeline = thumbpipe::Pipeline::<u32>::builder().fetcher(fetcher).build()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct HttpFetcher {
    client: Arc<Client>,
    limits: Arc<FetchLimits>,
}

#[derive(Debug)]
struct FetchLimits {
    connect_timeout: Duration,
    total_timeout: Duration,
    max_redirects: usize,
}

impl HttpFetcher {
    /// A client with `config`'s timeouts, redirect limit, trusted roots,
    /// headers and proxy. [`FetchConfig::header_hook`] is the pipeline's: it
    /// runs as the pipeline makes each request, not here.
    /// The client is made now, which reads the platform's CA
    /// certificates (a few milliseconds). Fails if a certificate of
    /// [`FetchConfig::extra_root_certificates`] cannot be read, if the
    /// system has no CA certificates (Linux, the BSDs) and the config
    /// names none, or if
    /// the config is not valid.
    pub fn new(config: &FetchConfig) -> Result<Self, BuildError> {
        let client = Client::now(config, &config.headers)?;
        Ok(Self::with_client(config, client))
    }

    /// The pipeline's default fetcher: [`HttpFetcher::new`] without the app's
    /// headers as the client's defaults, since the pipeline puts them (and
    /// the hook's changes to them, removals included) into every request;
    /// its client made at its first request (`client.rs`), or now when
    /// the config has extra roots.
    pub(crate) fn for_pipeline(config: &FetchConfig) -> Result<Self, BuildError> {
        let client = Client::at_first_use(config, &::http::HeaderMap::new())?;
        Ok(Self::with_client(config, client))
    }

    /// A fetcher over `client`, with `config`'s timeouts and redirect
    /// limit.
    fn with_client(config: &FetchConfig, client: Client) -> Self {
        Self {
            client: Arc::new(client),
            limits: Arc::new(FetchLimits {
                connect_timeout: config.connect_timeout,
                total_timeout: config.total_timeout,
                max_redirects: config.max_redirects,
            }),
        }
    }
}

/// [`Fetch::fetch`] for a fetcher whose work is its
/// [`Fetch::fetch_response`]: the response's body ([`body_only`]).
macro_rules! fetch_from_response {
    () => {
        fn fetch(
            &self,
            url: ::url::Url,
            max_bytes: u64,
        ) -> ::futures::future::BoxFuture<'static, Result<::bytes::Bytes, crate::error::Error>> {
            crate::fetch::body_only(self, url, max_bytes)
        }
    };
}
pub(crate) use fetch_from_response;

/// The body of `fetcher`'s response to a plain request for `url`: how a
/// fetcher that answers [`Fetch::fetch_response`] answers [`Fetch::fetch`].
pub(crate) fn body_only(
    fetcher: &dyn Fetch,
    url: Url,
    max_bytes: u64,
) -> BoxFuture<'static, Result<Bytes, Error>> {
    let response = fetcher.fetch_response(FetchRequest::new(url, max_bytes));
    Box::pin(response.map(|response| Ok(response?.body.bytes)))
}

impl Fetch for HttpFetcher {
    fetch_from_response!();

    fn fetch_response(
        &self,
        request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        match request.url.scheme() {
            "http" | "https" => Box::pin(http::fetch_http(self.clone(), request)),
            scheme => {
                let error = no_source(request.url.as_str(), scheme);
                Box::pin(std::future::ready(Err(error)))
            }
        }
    }
}
