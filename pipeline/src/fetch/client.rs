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

use tokio::sync::OnceCell;
use url::Url;

use super::config::{FetchConfig, Proxy};
use super::errors::{causes, redirect_policy};
use super::headers;
use crate::error::{BuildError, Error};

/// A reqwest client, made now or at its first use.
#[derive(Debug)]
pub(super) struct Client {
    made: OnceCell<Result<reqwest::Client, String>>,
    /// What to make it from, for a client made at its first use: the
    /// config, and the app's headers as the client's defaults.
    recipe: Option<(FetchConfig, ::http::HeaderMap)>,
}

impl Client {
    /// The client for `config`, with `app`'s headers as defaults, made
    /// now.
    pub(super) fn now(config: &FetchConfig, app: &::http::HeaderMap) -> Result<Self, BuildError> {
        let client = make(config, app)?;
        Ok(Self {
            made: OnceCell::new_with(Some(Ok(client))),
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
            made: OnceCell::new(),
            recipe: Some((config.clone(), app.clone())),
        })
    }

    /// The client, made on the runtime's blocking thread if this is its
    /// first use (a request asking at the same time waits for it without
    /// a thread). A client that could not be made is
    /// [`Error::Tls`] for `url`, the reason the platform's roots or TLS
    /// gave, each time.
    pub(super) async fn get(&self, url: &Url) -> Result<&reqwest::Client, Error> {
        let made = self
            .made
            .get_or_init(|| async {
                let Some((config, app)) = self.recipe.clone() else {
                    return Err("no client and nothing to make one from".to_owned());
                };
                tokio::task::spawn_blocking(move || make(&config, &app).map_err(|e| e.to_string()))
                    .await
                    .unwrap_or_else(|e| Err(format!("making the HTTP client stopped: {e}")))
            })
            .await;
        made.as_ref().map_err(|reason| Error::Tls {
            url: url.to_string(),
            reason: reason.clone(),
            source: None,
        })
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
