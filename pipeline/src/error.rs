//! The ways a thumbnail can fail to load, each with a message that says
//! what to do.
//!
//! Plain data: made by the fetch and decode stages, cloned to every row that
//! wanted the failed thumbnail. Cancellation is not here: a cancelled request
//! is an outcome the UI asked for, and it is counted, never delivered.

use std::sync::Arc;
use std::time::Duration;

/// Why a thumbnail could not be loaded. Every variant names the URL.
///
/// ```
/// let error = thumbpipe::Error::UnsupportedUrl {
///     url: "ftp://example.com/a.jpg".into(),
///     reason: "no source serves the scheme 'ftp'".into(),
/// };
/// assert!(error.to_string().starts_with("cannot load 'ftp://example.com/a.jpg'"));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL is not one the pipeline may load: not a URL, a scheme no
    /// source serves (see [`crate::Pipeline::schemes`]), or a `file://` URL that
    /// [`FetchConfig::file_roots`](crate::FetchConfig::file_roots) does not
    /// allow.
    #[error("cannot load '{url}': {reason}")]
    UnsupportedUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The TLS handshake failed: most often the server's certificate is not
    /// valid for its name or not signed by a root the platform trusts. Or
    /// the pipeline's HTTP client, made at its first `http` or `https`
    /// load, could not be made (most often, on Linux and the BSDs: the
    /// system has no CA certificates): every such load fails so, with the
    /// reason, until one a minute or more after the failure makes it.
    #[error("failed to fetch '{url}': TLS failed: {reason}")]
    Tls {
        /// The URL.
        url: String,
        /// What the TLS layer said.
        reason: String,
        /// The underlying error.
        #[source]
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// A `file://` URL's file could not be read.
    #[error("cannot read '{url}': {reason}")]
    File {
        /// The URL.
        url: String,
        /// What went wrong, such as "no such file".
        reason: String,
    },
    /// The server answered with an error status.
    #[error("failed to fetch '{url}': the server answered {status}")]
    Status {
        /// The URL.
        url: String,
        /// The HTTP status code.
        status: u16,
    },
    /// The connection or the whole request took too long.
    #[error(
        "failed to fetch '{url}': no {phase} within {limit:?} (raise config.{setting} if the \
         server is slow)"
    )]
    Timeout {
        /// The URL.
        url: String,
        /// What did not finish: "connection" or "complete response"; or
        /// "HTTP client", the pipeline's client made at its first load
        /// (its making held up on the I/O runtime's blocking thread).
        phase: &'static str,
        /// The limit that ran out.
        limit: Duration,
        /// The setting that sets it, as a field path of [`crate::Config`]
        /// (`fetch.total_timeout`).
        setting: &'static str,
    },
    /// The connection failed, was reset, or ended before the body was
    /// complete; or the server redirected too often.
    #[error("failed to fetch '{url}': {reason}")]
    Network {
        /// The URL.
        url: String,
        /// What happened.
        reason: String,
        /// The underlying error.
        #[source]
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// The body or the image is bigger than the configured limits.
    #[error("refused '{url}': {what} (raise config.{setting} to allow it)")]
    TooLarge {
        /// The URL.
        url: String,
        /// What was too large, with the numbers.
        what: String,
        /// The setting that sets the limit, as a field path of
        /// [`crate::Config`] (`decode.max_dimension`), or of
        /// `thumbpipe::egui::EguiConfig` for its textures.
        setting: &'static str,
    },
    /// The bytes are not an image the pipeline can decode.
    #[error("failed to decode '{url}': {reason}")]
    Decode {
        /// The URL.
        url: String,
        /// What the decoder said.
        reason: String,
    },
    /// A custom [`Fetch`](crate::Fetch) panicked. The load ends with this
    /// error and the fetch's slot is free again.
    #[error("failed to fetch '{url}': the fetcher panicked ({reason})")]
    FetcherPanicked {
        /// The URL.
        url: String,
        /// The panic's message, if it had one.
        reason: String,
    },
    /// The pipeline was shut down before the thumbnail was ready, or its
    /// I/O runtime (one passed to
    /// [`PipelineBuilder::runtime`](crate::PipelineBuilder::runtime)) was
    /// shut down while the pipeline was still in use.
    #[error("cannot load '{url}': the pipeline has shut down")]
    Shutdown {
        /// The URL.
        url: String,
    },
    /// An `https` URL redirected to a plain `http` one, which was not followed:
    /// the image would have travelled unencrypted.
    /// [`FetchConfig::allow_https_to_http_redirects`](crate::FetchConfig::allow_https_to_http_redirects)
    /// follows such redirects.
    #[error(
        "cannot load '{url}': it redirects from https to plain http ({to}); \
         set config.fetch.allow_https_to_http_redirects to follow it"
    )]
    InsecureRedirect {
        /// The URL.
        url: String,
        /// Where it redirected to.
        to: String,
    },
    /// The request was refused:
    /// [`Config::max_pending_requests`](crate::Config::max_pending_requests)
    /// requests were already waiting to be drained. A UI that never calls
    /// [`Pipeline::drain`](crate::Pipeline::drain) meets this; drain, and
    /// request again.
    #[error(
        "cannot load '{url}': {limit} requests are waiting to be drained \
         (call drain every frame, or raise max_pending_requests)"
    )]
    TooManyPending {
        /// The URL.
        url: String,
        /// The limit reached.
        limit: usize,
    },
}

impl Error {
    /// The URL the error is about.
    pub fn url(&self) -> &str {
        match self {
            Error::UnsupportedUrl { url, .. }
            | Error::Tls { url, .. }
            | Error::File { url, .. }
            | Error::Status { url, .. }
            | Error::Timeout { url, .. }
            | Error::Network { url, .. }
            | Error::TooLarge { url, .. }
            | Error::Decode { url, .. }
            | Error::FetcherPanicked { url, .. }
            | Error::Shutdown { url }
            | Error::InsecureRedirect { url, .. }
            | Error::TooManyPending { url, .. } => url,
        }
    }
}

/// The pipeline could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A configuration value is out of range.
    #[error("invalid thumbpipe config: {0}")]
    Config(String),
    /// A runtime or a thread could not be started.
    #[error("could not start thumbpipe's threads: {0}")]
    Threads(#[from] std::io::Error),
    /// The HTTP client could not be built: by [`crate::HttpFetcher::new`],
    /// or for a pipeline with
    /// [`FetchConfig::extra_root_certificates`](crate::FetchConfig::extra_root_certificates).
    /// A pipeline's own client without them is made at its first `http`
    /// or `https` load, and one that cannot be made (no CA certificates on
    /// a Linux or BSD system) fails each such load with [`Error::Tls`] instead.
    #[error("could not build the HTTP client: {0}")]
    Client(String),
    /// `thumbpipe::egui::install` (cargo feature `egui`) was called a
    /// second time for one egui context.
    #[error(
        "thumbpipe's loaders are already installed on this egui context (keep the Loader that \
         the first install returned, or uninstall it first)"
    )]
    AlreadyInstalled,
}

/// A panic's message, when it has one (a `&str` or a `String` payload).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}

/// A [`BuildError::Config`] for the first of `settings` (named as a user
/// writes them, `fetch.max_per_host`) that is 0.
pub(crate) fn at_least_one(settings: &[(&str, u64)]) -> Result<(), BuildError> {
    match settings.iter().find(|(_, value)| *value == 0) {
        Some((name, _)) => Err(BuildError::Config(format!("{name} must be at least 1"))),
        None => Ok(()),
    }
}
