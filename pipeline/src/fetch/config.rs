//! The fetch stage's settings: connections, timeouts, body limits, TLS
//! roots, the headers and proxy of requests, and the `file://` roots. Plain
//! data, read when the pipeline is built (by [`crate::HttpFetcher::new`],
//! the builder's file source, the load actor's scheduler and its body
//! budget); validated with the rest of [`crate::Config`].

use std::path::PathBuf;
use std::time::Duration;

use super::HeaderHook;
use crate::error::BuildError;

/// Settings of the fetch stage: [`Config::fetch`](crate::Config::fetch).
///
/// ```
/// use std::time::Duration;
///
/// let mut config = thumbpipe::Config::default();
/// config.fetch.max_per_host = 4;
/// config.fetch.total_timeout = Duration::from_secs(10);
/// let pipeline = thumbpipe::Pipeline::<usize>::new(config)?;
/// # Ok::<(), thumbpipe::BuildError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FetchConfig {
    /// Fetches in flight at once to one host; the rest wait in the queue,
    /// costing no thread. Default: 16, so that a screenful of list rows
    /// loads in one round trip: with 6 (what browsers allow per host over
    /// HTTP/1.1) the 13 rows in view when a scroll stops wait for three,
    /// 750 ms at 250 ms latency. Lower it for a server that must not see
    /// more connections from one client. Over HTTP/2 they are streams on
    /// one connection, once the first handshake has said HTTP/2 (a cold
    /// burst opens up to this many); more of them did not settle a
    /// refreshing list any sooner.
    pub max_per_host: usize,
    /// Fetches in flight at once over every host together; the rest wait in
    /// the queue. Without it, a list of images from many hosts (one per
    /// user's avatar, say) would open `max_per_host` sockets to
    /// each of them. Default: 24, a screenful from one host and room for a
    /// few others.
    pub max_in_flight: usize,
    /// Time to establish a connection. Default: 5 s.
    pub connect_timeout: Duration,
    /// Time for a whole response, headers and body. Time a fetch spends
    /// waiting for [`FetchConfig::body_budget_bytes`], its body unread
    /// while the decoders catch up, does not count. Default: 30 s.
    pub total_timeout: Duration,
    /// Largest response body; a larger one is aborted while streaming.
    /// A body read only as far as its thumbnail needs (a JPEG's EXIF
    /// thumbnail or DC scans, a camera RAW's preview) may come from a
    /// larger file or response: the limit is on the bytes read, and it is
    /// [`Error::TooLarge`](crate::Error::TooLarge) only when its start
    /// does not make the thumbnail. Default: 16 MiB.
    pub max_body_bytes: u64,
    /// Bytes of response bodies held between the network and the decoders:
    /// bodies being read and bodies waiting for (or in) a decode. Past it,
    /// no new fetch starts and no new body is read (by an
    /// [`crate::HttpFetcher`], a `file://` read or the disk cache) until
    /// decodes catch up; a cancelled load's body is freed at once.
    /// Without it, a slow decoder and a fast server would pile up bodies:
    /// 200 rows of 16 MiB images are 3.2 GB. A body larger than the whole
    /// budget still loads, alone. Default: 64 MiB (four bodies at
    /// [`FetchConfig::max_body_bytes`], hundreds of typical thumbnails).
    pub body_budget_bytes: u64,
    /// Redirects followed before giving up. Default: 5.
    pub max_redirects: usize,
    /// Whether a redirect from an `https` URL to a plain `http` one is
    /// followed. Default: `false`: it is [`crate::Error::InsecureRedirect`],
    /// as the image would travel unencrypted, open to being read or
    /// replaced on the way.
    pub allow_https_to_http_redirects: bool,
    /// Certificates (DER) trusted for `https` besides the platform's own
    /// roots: a company's certificate authority, or a test server's
    /// self-signed certificate. A certificate that cannot be read fails
    /// [`crate::Pipeline::new`]. Default: none.
    pub extra_root_certificates: Vec<Vec<u8>>,
    /// The directories `file://` URLs may read from. Default: none, which
    /// refuses every `file://` URL. A file loads only if its path, with
    /// symbolic links resolved, lies under one of them, and only as it
    /// is opened: on Unix the file is opened beneath its root (Linux's
    /// `openat2` with `RESOLVE_BENEATH`, elsewhere one `O_NOFOLLOW`
    /// component at a time) and its type and stamp are read from the open
    /// handle, so a link swapped in for it while it is checked can never
    /// make a read leave the roots. It is read under
    /// [`FetchConfig::max_body_bytes`] on the file threads
    /// ([`FetchConfig::file_readers`], started only with a root), so that
    /// a slow disk never holds up the network, nor the network a folder.
    /// A JPEG is read only as far as its thumbnail needs (its embedded
    /// EXIF thumbnail, or a progressive photo's first scans), as over
    /// HTTP.
    ///
    /// A desktop app that shows "the user's files" (a photo manager, a
    /// file dialog's previews) allows the folders the user opens, or the
    /// user's home directory and the mount points of removable media; an
    /// app that shows its own files (a cache of covers, an import folder)
    /// allows that directory alone. A URL is written as egui writes it:
    /// `file:///home/ana/a.jpg`, and on Windows `file:///C:/Users/ana/a.jpg`
    /// or, for a share, `file://server/share/a.jpg`.
    ///
    /// ```
    /// let mut config = thumbpipe::Config::default();
    /// config.fetch.file_roots.push(std::env::temp_dir());
    /// let pipeline = thumbpipe::Pipeline::<usize>::new(config)?;
    /// # Ok::<(), thumbpipe::BuildError>(())
    /// ```
    pub file_roots: Vec<PathBuf>,
    /// Threads that read local files (`thumbpipe-file-N`), and look up
    /// and write the desktop's shared thumbnails of them: reads wait for
    /// one in the order the rows want them, and a read whose row left
    /// before a thread reached it is skipped. Default: 4. Measured on a
    /// folder of camera photos (docs/local-files.md), on 2 cores: 1, 2, 4
    /// and 8 load a first screen never seen in the same time on a local
    /// SSD (the photos' decodes bound it) and on a disk throttled to 20
    /// MB/s (the disk does); a screen whose shared thumbnails are on disk
    /// but not in memory (the first launch after a restart) waits on the
    /// disk for each, and 144 of them take 40 ms with 2 threads, 31 with 3
    /// and 28 with 4 or 6; with them in memory, 23 ms with 2 and 22 with
    /// 4. More than one also keeps a read that hangs (a sleeping disk, a
    /// network share) from holding up every other.
    pub file_readers: usize,
    /// Headers sent with every request: an API token, a cookie, your app's
    /// `User-Agent`. A `User-Agent` or `Accept` here replaces thumbpipe's
    /// (`thumbpipe/VERSION`, and the media types of
    /// [`SUPPORTED_FORMATS`](crate::SUPPORTED_FORMATS), so that a server that
    /// picks a format by `Accept` never sends one the decoder refuses).
    /// A request with `Authorization` or `Cookie` is kept in the disk cache
    /// only when its response may be shared (see
    /// [`DiskConfig::dir`](crate::DiskConfig::dir)). Default: none.
    ///
    /// ```
    /// use thumbpipe::http::{HeaderValue, header};
    ///
    /// let mut config = thumbpipe::Config::default();
    /// config
    ///     .fetch
    ///     .headers
    ///     .insert(header::USER_AGENT, HeaderValue::from_static("gallery/2.0"));
    /// config
    ///     .fetch
    ///     .headers
    ///     .insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer 5e3cr3t"));
    /// ```
    pub headers: http::HeaderMap,
    /// Called as each request starts, to add or change its headers: a
    /// token that rotates, a signature over the URL (see [`HeaderHook`]).
    /// It sees [`FetchConfig::headers`] already in place. A fetcher of the
    /// app's own gets the result in
    /// [`FetchRequest::headers`](crate::FetchRequest::headers). Default:
    /// none.
    pub header_hook: Option<HeaderHook>,
    /// The proxy requests go through. Default: [`Proxy::FromEnvironment`].
    pub proxy: Proxy,
}

/// How requests reach their servers: [`FetchConfig::proxy`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Proxy {
    /// Through the proxy the environment names, as curl reads it:
    /// `HTTPS_PROXY` for `https` URLs, `HTTP_PROXY` for `http` ones,
    /// `ALL_PROXY` for both, and none for the hosts of `NO_PROXY`; directly
    /// when none is set. Read when the HTTP client is made: a pipeline's
    /// at its first `http` or `https` load (with
    /// [`FetchConfig::extra_root_certificates`], when it is built).
    #[default]
    FromEnvironment,
    /// Directly, whatever the environment says.
    Direct,
    /// Through the proxy at this URL (`http://` or `https://`, with
    /// `user:password@` if it asks for them), for `http` and `https` URLs
    /// alike. A URL that is not a proxy's fails [`crate::Pipeline::new`]
    /// with [`BuildError::Config`](crate::BuildError::Config).
    Url(String),
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            max_per_host: 16,
            max_in_flight: 24,
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(30),
            max_body_bytes: 16 * 1024 * 1024,
            body_budget_bytes: 64 * 1024 * 1024,
            max_redirects: 5,
            allow_https_to_http_redirects: false,
            extra_root_certificates: Vec::new(),
            file_roots: Vec::new(),
            file_readers: 4,
            headers: http::HeaderMap::new(),
            header_hook: None,
            proxy: Proxy::FromEnvironment,
        }
    }
}

impl FetchConfig {
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        let at_least_one = [
            ("fetch.max_per_host", self.max_per_host as u64),
            ("fetch.max_in_flight", self.max_in_flight as u64),
            ("fetch.max_body_bytes", self.max_body_bytes),
            ("fetch.body_budget_bytes", self.body_budget_bytes),
            ("fetch.file_readers", self.file_readers as u64),
        ];
        #[cfg(not(any(feature = "rustls-aws-lc", feature = "rustls-ring")))]
        if !self.extra_root_certificates.is_empty() {
            return Err(BuildError::Config(
                "fetch.extra_root_certificates are set, but thumbpipe was built without TLS: \
                 enable its `rustls-aws-lc` or `rustls-ring` feature"
                    .into(),
            ));
        }
        crate::error::at_least_one(&at_least_one)
    }
}
