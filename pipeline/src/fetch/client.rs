//! reqwest's client for the `http` and `https` source ([`HttpFetcher`]),
//! made from the config's timeouts, redirect rule, headers, proxy and
//! roots.
//!
//! The pipeline's own client is made at its first request, on the I/O
//! runtime's blocking thread: on Linux and the BSDs, reading the
//! platform's roots takes a few milliseconds (about 3 for a desktop's
//! `/etc/ssl/certs`), which an app's start on its UI thread need not wait
//! for, and fails where the system has none, which a pipeline of local
//! files alone never meets. The
//! config is checked when the pipeline is built all the same, and a client
//! with extra roots is made then, so that a bad certificate is a
//! [`BuildError`] at once. Lives as long as its fetcher's clones.
//!
//! [`HttpFetcher`]: super::HttpFetcher

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

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

/// Why a client could not be made: the reason, reqwest's error, and
/// when it was found to fail.
#[derive(Clone, Debug)]
pub(super) struct NotMade {
    reason: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    failed_at: Instant,
}

/// What makes a client: blocks (the platform's roots are read).
type Maker = Arc<dyn Fn() -> Result<reqwest::Client, BuildError> + Send + Sync>;

/// A reqwest client, made now or at its first use.
pub(super) enum Client {
    /// Made with its fetcher.
    Made(reqwest::Client),
    /// Made at its first use by `maker` (again, after a failure): the last
    /// making begun, if any.
    Lazy {
        making: Mutex<Option<Making>>,
        maker: Maker,
    },
}

impl std::fmt::Debug for Client {
    // Not the maker's config: its headers may hold an app's credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// The client for `config`, with `app`'s headers as defaults, made
    /// now.
    pub(super) fn now(config: &FetchConfig, app: &::http::HeaderMap) -> Result<Self, BuildError> {
        Ok(Client::Made(make(config, app)?))
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
        Ok(Self::made_by(maker(config, app)))
    }

    /// A client `maker` makes at its first use.
    fn made_by(maker: Maker) -> Self {
        Client::Lazy {
            making: Mutex::new(None),
            maker,
        }
    }

    /// The client. At its first use it is made on the runtime's blocking
    /// thread, once, whichever load asked first and whether or not that
    /// load is cancelled meanwhile; every load waits for it without a
    /// thread. One that could not be made is each load's [`Error::Tls`]
    /// for `url`, saying why, and is made again at the first load
    /// [`RETRY_AFTER`] after it failed. Must run on a tokio runtime.
    pub(super) async fn get(&self, url: &Url) -> Result<reqwest::Client, Error> {
        let (making, maker) = match self {
            Client::Made(client) => return Ok(client.clone()),
            Client::Lazy { making, maker } => (making, maker),
        };
        let making = making_now(making, maker);
        making.await.map_err(|not_made| Error::Tls {
            url: url.to_string(),
            reason: not_made.reason,
            source: not_made.source,
        })
    }
}

/// The making in `last` under way or done, or one by `maker` begun now:
/// the first, or again once the last failed [`RETRY_AFTER`] ago.
fn making_now(last: &Mutex<Option<Making>>, maker: &Maker) -> Making {
    let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(making) = last.as_ref() {
        let failed_long_ago = matches!(
            making.peek(),
            Some(Err(not_made)) if not_made.failed_at.elapsed() >= RETRY_AFTER
        );
        if !failed_long_ago {
            return making.clone();
        }
    }
    let maker = Arc::clone(maker);
    // A panic in the maker ends its task: `stopped` below.
    let build = tokio::task::spawn_blocking(move || maker());
    let making = async move {
        let (reason, source) = match build.await {
            Ok(Ok(client)) => return Ok(client),
            Ok(Err(error)) => (
                with_remedy(&error),
                Some(Arc::new(error) as Arc<dyn std::error::Error + Send + Sync>),
            ),
            Err(stopped) => (format!("making the HTTP client stopped: {stopped}"), None),
        };
        Err(NotMade {
            reason,
            source,
            failed_at: Instant::now(),
        })
    }
    .boxed()
    .shared();
    *last = Some(making.clone());
    making
}

/// What makes `config`'s client, with `app`'s headers as defaults.
fn maker(config: &FetchConfig, app: &::http::HeaderMap) -> Maker {
    let (config, app) = (config.clone(), app.clone());
    Arc::new(move || make(&config, &app))
}

/// `error`'s reason, with what to do where the system has no CA
/// certificates (the one failure of a valid config's client seen).
fn with_remedy(error: &BuildError) -> String {
    let reason = error.to_string();
    if !reason.contains("CA certificates") {
        return reason;
    }
    format!(
        "{reason} (every http or https load fails so until it is made, tried again a minute \
         after: install the system's CA certificates, such as Debian's ca-certificates, name \
         them in SSL_CERT_FILE or SSL_CERT_DIR in the app's environment, or give \
         fetch.extra_root_certificates)"
    )
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
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A client that needs no roots.
    fn plain() -> reqwest::Client {
        let builder = reqwest::Client::builder().no_proxy();
        #[cfg(any(feature = "rustls-aws-lc", feature = "rustls-ring"))]
        let builder = builder.tls_certs_only(Vec::new());
        builder.build().unwrap()
    }

    /// A client made by a maker that counts its calls and, with `gate`,
    /// waits for it to open first; it fails unless `succeeds`.
    fn counted(
        succeeds: bool,
        gate: Option<std::sync::mpsc::Receiver<()>>,
    ) -> (Client, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        let gate = Mutex::new(gate);
        let client = Client::made_by(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            if let Some(gate) = gate.lock().unwrap().as_ref() {
                gate.recv().unwrap();
            }
            if succeeds {
                Ok(plain())
            } else {
                Err(BuildError::Client(
                    "No CA certificates were loaded from the system".into(),
                ))
            }
        }));
        (client, calls)
    }

    fn url() -> Url {
        Url::parse("http://127.0.0.1:9/").unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_client_is_made_once_off_the_runtime_even_if_the_first_load_is_cancelled() {
        let (open, gate) = std::sync::mpsc::channel();
        let (client, calls) = counted(true, Some(gate));
        let Client::Lazy { making, .. } = &client else {
            panic!("made with its fetcher");
        };
        assert!(making.lock().unwrap().is_none(), "made before use");
        let url = url();
        // The first load to ask gives up while the client is being made.
        {
            let first = client.get(&url);
            futures::pin_mut!(first);
            assert!(futures::poll!(first.as_mut()).is_pending());
        }
        open.send(()).unwrap();
        let (a, b) = tokio::join!(client.get(&url), client.get(&url));
        assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_not_made_is_tried_again_a_minute_after_it_failed_and_not_before() {
        let (client, calls) = counted(false, None);
        let Err(Error::Tls { reason, source, .. }) = client.get(&url()).await else {
            panic!("made");
        };
        assert!(reason.contains("SSL_CERT_FILE"), "{reason}");
        assert!(source.is_some());
        tokio::time::advance(RETRY_AFTER - Duration::from_secs(1)).await;
        assert!(client.get(&url()).await.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1, "tried again too soon");
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(client.get(&url()).await.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 2, "not tried again");
        assert!(client.get(&url()).await.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 2, "tried at every load");
    }

    #[test]
    fn the_remedy_is_given_for_missing_certificates_alone() {
        let missing = BuildError::Client("No CA certificates were loaded from the system".into());
        assert!(with_remedy(&missing).contains("extra_root_certificates"));
        let other = BuildError::Client("invalid TLS versions".into());
        assert_eq!(with_remedy(&other), other.to_string());
    }
}
