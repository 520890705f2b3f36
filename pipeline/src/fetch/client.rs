//! reqwest's client for the `http` and `https` source ([`HttpFetcher`]),
//! made from the config's timeouts, redirect rule, headers, proxy and
//! roots.
//!
//! The pipeline's own client is made at its first request, on the I/O
//! runtime's blocking thread: reading the platform's roots takes a few
//! milliseconds (about 3 on a desktop's `/etc/ssl/certs`), which an app's
//! start on its UI thread need not wait for; a pipeline of local files
//! alone never makes one, nor fails where the system has no roots. The
//! config is checked when the pipeline is built all the same, and a client
//! with extra roots is made then, so that a bad certificate is a
//! [`BuildError`] at once. Lives as long as its fetcher's clones.
//!
//! [`HttpFetcher`]: super::HttpFetcher

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use url::Url;

use super::config::{FetchConfig, Proxy};
use super::errors::{causes, redirect_policy};
use super::headers;
use crate::error::{BuildError, Error};

/// How long a client that could not be made is not tried again: the
/// system's certificates installed meanwhile are found at the next load
/// after it.
const RETRY_AFTER: Duration = Duration::from_secs(60);

/// The making of a client, awaited by every load that needs it: the
/// client, or why it could not be made.
type Making = Shared<BoxFuture<'static, Result<reqwest::Client, NotMade>>>;

/// Why a client could not be made: the reason, and reqwest's error.
#[derive(Clone, Debug)]
struct NotMade {
    reason: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

/// A reqwest client, made now or at its first use.
pub(super) struct Client {
    /// The client's making, once begun, and when.
    making: Mutex<Option<(Making, Instant)>>,
    /// What to make it from, for a client made at its first use: the
    /// config, and the app's headers as the client's defaults.
    recipe: Option<(FetchConfig, ::http::HeaderMap)>,
}

impl std::fmt::Debug for Client {
    // Not the recipe: its headers may hold an app's credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// The client for `config`, with `app`'s headers as defaults, made
    /// now.
    pub(super) fn now(config: &FetchConfig, app: &::http::HeaderMap) -> Result<Self, BuildError> {
        let client = make(config, app)?;
        let made = futures::future::ready(Ok(client)).boxed().shared();
        Ok(Self {
            making: Mutex::new(Some((made, Instant::now()))),
            recipe: None,
        })
    }

    /// The same, made at the first [`Client::get`] unless `config` has
    /// extra roots; `config` is checked now either way.
    pub(super) fn at_first_use(
        config: &FetchConfig,
        app: &::http::HeaderMap,
    ) -> Result<Self, BuildError> {
        if !config.extra_root_certificates.is_empty() {
            return Self::now(config, app);
        }
        // What can be wrong with the config, found now; the build is left.
        builder(config, app).map(drop)?;
        Ok(Self {
            making: Mutex::new(None),
            recipe: Some((config.clone(), app.clone())),
        })
    }

    /// The client. At its first use it is made on the runtime's blocking
    /// thread, once, whichever load asked first and whether or not that
    /// load is cancelled meanwhile; every load waits for it without a
    /// thread. One that could not be made is each load's [`Error::Tls`]
    /// for `url`, saying why, and is tried again at the first load
    /// [`RETRY_AFTER`] later. Must run on a tokio runtime.
    pub(super) async fn get(&self, url: &Url) -> Result<reqwest::Client, Error> {
        let making = self.making();
        making.await.map_err(|not_made| Error::Tls {
            url: url.to_string(),
            reason: not_made.reason,
            source: not_made.source,
        })
    }

    /// The making under way or done, or one begun now: the first, or
    /// again after one that failed [`RETRY_AFTER`] ago.
    fn making(&self) -> Making {
        let mut making = self.making.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((under_way, begun)) = making.as_ref() {
            let failed = matches!(under_way.peek(), Some(Err(_)));
            if !failed || begun.elapsed() < RETRY_AFTER || self.recipe.is_none() {
                return under_way.clone();
            }
        }
        let recipe = self.recipe.clone();
        let build = tokio::task::spawn_blocking(move || {
            let Some((config, app)) = recipe else {
                return Err(BuildError::Client("nothing to make the client from".into()));
            };
            make(&config, &app)
        });
        let begun = async move {
            match build.await {
                Ok(Ok(client)) => Ok(client),
                Ok(Err(error)) => Err(NotMade {
                    reason: format!(
                        "{error} (no http or https load until it is: where the system has \
                         no CA certificates, install them, such as Debian's \
                         ca-certificates, or name them in SSL_CERT_FILE or SSL_CERT_DIR)"
                    ),
                    source: Some(Arc::new(error)),
                }),
                Err(stopped) => Err(NotMade {
                    reason: format!("making the HTTP client stopped: {stopped}"),
                    source: None,
                }),
            }
        }
        .boxed()
        .shared();
        *making = Some((begun.clone(), Instant::now()));
        begun
    }
}

/// The client `config` describes, with `app`'s headers as defaults.
/// Blocks while the platform's roots are read.
fn make(config: &FetchConfig, app: &::http::HeaderMap) -> Result<reqwest::Client, BuildError> {
    let extra_roots = !config.extra_root_certificates.is_empty();
    builder(config, app)?.build().map_err(|e| {
        let mut reason = causes(&e);
        if extra_roots {
            reason.push_str(" (is each of fetch.extra_root_certificates one DER certificate?)");
        }
        BuildError::Client(reason)
    })
}

/// reqwest's builder for `config`, with `app`'s headers as defaults; fails
/// on what is wrong with the config itself. Cheap: nothing is read.
fn builder(
    config: &FetchConfig,
    app: &::http::HeaderMap,
) -> Result<reqwest::ClientBuilder, BuildError> {
    config.validate()?;
    let client = reqwest::Client::builder()
        // The total timeout is the fetch's own deadline, which does not
        // count time spent waiting for the body budget.
        .connect_timeout(config.connect_timeout)
        .redirect(redirect_policy(
            config.max_redirects,
            config.allow_https_to_http_redirects,
        ))
        .pool_max_idle_per_host(config.max_per_host)
        .default_headers(headers::client_defaults(app, accept_images()));
    let client = match &config.proxy {
        Proxy::FromEnvironment => client,
        Proxy::Direct => client.no_proxy(),
        Proxy::Url(url) => {
            let proxy = reqwest::Proxy::all(url.as_str())
                .map_err(|e| BuildError::Config(format!("fetch.proxy: {}", causes(&e))))?;
            client.proxy(proxy)
        }
    };
    tls(client, &config.extra_root_certificates)
}

/// `client` with rustls, trusting `roots` besides the platform's. With
/// ring, ring becomes rustls' process-wide provider unless the app has
/// installed one (reqwest builds its TLS with the process's provider).
#[cfg(any(feature = "rustls-aws-lc", feature = "rustls-ring"))]
fn tls(
    client: reqwest::ClientBuilder,
    roots: &[Vec<u8>],
) -> Result<reqwest::ClientBuilder, BuildError> {
    #[cfg(not(feature = "rustls-aws-lc"))]
    {
        // Err: a provider is installed already, which reqwest will use.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let roots = roots
        .iter()
        .map(|der| reqwest::Certificate::from_der(der))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BuildError::Config(format!("fetch.extra_root_certificates: {e}")))?;
    Ok(if roots.is_empty() {
        client
    } else {
        client.tls_certs_merge(roots)
    })
}

/// Without a TLS feature there is no `https`, and no roots to add: a config
/// with extra roots was refused by its validation.
#[cfg(not(any(feature = "rustls-aws-lc", feature = "rustls-ring")))]
fn tls(
    client: reqwest::ClientBuilder,
    _roots: &[Vec<u8>],
) -> Result<reqwest::ClientBuilder, BuildError> {
    Ok(client)
}

/// The media types of the formats the default decoder reads in this build
/// (the format table, `decode/formats.rs`): the `Accept` header of every
/// request unless the app sets its own, so that a server that picks a
/// format by it never sends one the decoder refuses.
fn accept_images() -> ::http::HeaderValue {
    ::http::HeaderValue::try_from(crate::decode::formats::accept_header())
        .unwrap_or(::http::HeaderValue::from_static("image/*"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_client_is_made_once_at_first_use_even_if_the_first_load_is_cancelled() {
        let config = FetchConfig::default();
        let client = Client::at_first_use(&config, &::http::HeaderMap::new()).unwrap();
        let begun = || client.making.lock().unwrap().as_ref().map(|m| m.0.clone());
        assert!(begun().is_none(), "made when the pipeline was built");
        let url = Url::parse("http://127.0.0.1:9/").unwrap();
        // The first load to ask is dropped after asking once.
        {
            let first = client.get(&url);
            futures::pin_mut!(first);
            let _ = futures::poll!(first.as_mut());
        }
        let first = begun().expect("begun by the first load");
        let (a, b) = tokio::join!(client.get(&url), client.get(&url));
        assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
        assert!(first.ptr_eq(&begun().unwrap()), "made again");
    }
}
