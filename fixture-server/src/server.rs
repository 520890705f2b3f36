//! The HTTP side: the accept loop, each connection and the handle (the
//! routes are `routes.rs`).
//!
//! Owns the listening socket and one task per connection: the TLS handshake
//! when [`Config::tls`] asks for one, then HTTP/1.1 or HTTP/2 as the client
//! speaks (over TLS: as ALPN agreed). The accept loop runs on the runtime
//! that called [`FixtureServer::start`] (or on the server's own runtime,
//! from [`FixtureServer::start_dedicated`]) until the handle's
//! [`FixtureServer::shutdown`] or drop: then it stops accepting, lets
//! in-flight requests finish for [`Config::shutdown_grace`], and closes what
//! is left.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::Version;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::faults::ResetSwitch;
use crate::images::ImageStore;
use crate::random::Draws;
use crate::routes::router;
use crate::stats::Stats;
use crate::tls::{self, Agreed};
use crate::{Config, ConfigError, StatsSnapshot};

/// State shared by every connection and the handle.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) stats: Arc<Stats>,
    pub(crate) images: ImageStore,
    pub(crate) draws: Draws,
    /// Every image's `Last-Modified`.
    pub(crate) started: SystemTime,
    /// Present when [`Config::tls`] is set.
    tls: Option<TlsAcceptor>,
}

/// A running fixture server.
///
/// Start it on your runtime with [`FixtureServer::start`], or on a runtime of
/// its own with [`FixtureServer::start_dedicated`]. It serves until
/// [`FixtureServer::shutdown`] or until the handle is dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fixture_server::StartError> {
/// use fixture_server::{Config, FixtureServer};
/// use std::time::Duration;
///
/// let server = FixtureServer::start(Config {
///     latency: Duration::from_millis(10),
///     ..Config::default()
/// })
/// .await?;
/// assert!(server.image_url(7).ends_with("/img/7.jpg"));
/// assert_eq!(server.stats().requests_started, 0);
/// server.shutdown().await;
/// # Ok(())
/// # }
/// ```
pub struct FixtureServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
    accept_loop: Option<JoinHandle<()>>,
    /// Present when the server runs on its own runtime.
    runtime: Option<Runtime>,
}

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The configuration is invalid.
    #[error("invalid fixture server configuration: {0}")]
    Config(#[from] ConfigError),
    /// The address could not be bound.
    #[error("could not listen on {addr}: {source} (is the port in use? try port 0)")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The dedicated runtime could not be built.
    #[error("could not start the fixture server's runtime: {0}")]
    Runtime(std::io::Error),
    /// rustls refused the server's TLS settings.
    #[error("could not set up TLS: {0}")]
    Tls(#[from] rustls::Error),
}

/// Worker threads of a dedicated runtime.
pub const DEDICATED_WORKERS: usize = 2;
/// Blocking threads (image encoding) of a dedicated runtime.
pub const DEDICATED_BLOCKING: usize = 2;
/// The prefix of the dedicated runtime's thread names.
pub const THREAD_PREFIX: &str = "fixture-";
/// Pending connections the kernel queues before `accept` (it may lower it).
const LISTEN_BACKLOG: u32 = 8192;

impl FixtureServer {
    /// Binds and starts serving on the current tokio runtime.
    pub async fn start(config: Config) -> Result<Self, StartError> {
        config.validate()?;
        let listener = bind(config.addr).map_err(|source| StartError::Bind {
            addr: config.addr,
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: config.addr,
            source,
        })?;
        let tls = match config.tls {
            Some(offer) => Some(TlsAcceptor::from(Arc::new(tls::server_config(offer)?))),
            None => None,
        };
        let shared = Arc::new(Shared {
            stats: Arc::new(Stats::default()),
            images: ImageStore::new(config.jpeg_quality),
            draws: Draws::new(config.seed),
            started: SystemTime::now(),
            tls,
            config,
        });
        let stop = CancellationToken::new();
        let accept_loop = tokio::spawn(accept_loop(listener, Arc::clone(&shared), stop.clone()));
        Ok(Self {
            addr,
            shared,
            stop,
            accept_loop: Some(accept_loop),
            runtime: None,
        })
    }

    /// Starts on a runtime of its own: [`DEDICATED_WORKERS`] workers and at
    /// most [`DEDICATED_BLOCKING`] encoding threads, all named `fixture-*`, so
    /// a process that embeds the server can tell its threads from its own.
    /// Call it from outside any async context (a GUI's `main`, a test thread).
    ///
    /// ```
    /// use fixture_server::{Config, FixtureServer};
    ///
    /// let server = FixtureServer::start_dedicated(Config::default())?;
    /// println!("serving on {}", server.base_url());
    /// drop(server); // stops it and joins its threads
    /// # Ok::<(), fixture_server::StartError>(())
    /// ```
    pub fn start_dedicated(config: Config) -> Result<Self, StartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(DEDICATED_WORKERS)
            .max_blocking_threads(DEDICATED_BLOCKING)
            .thread_name_fn(|| {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static NEXT: AtomicUsize = AtomicUsize::new(0);
                format!("{THREAD_PREFIX}{}", NEXT.fetch_add(1, Ordering::Relaxed))
            })
            .enable_all()
            .build()
            .map_err(StartError::Runtime)?;
        let mut server = runtime.block_on(Self::start(config))?;
        server.runtime = Some(runtime);
        Ok(server)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT`, or `https://IP:PORT` with [`Config::tls`], without
    /// a trailing slash.
    pub fn base_url(&self) -> String {
        let scheme = if self.shared.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The URL of image `id` as a JPEG at the default size.
    pub fn image_url(&self, id: u32) -> String {
        format!("{}/img/{id}.jpg", self.base_url())
    }

    /// The counters, as `GET /stats` would return them.
    pub fn stats(&self) -> StatsSnapshot {
        self.shared.stats.snapshot()
    }

    /// The file names of the image requests received since the last reset
    /// (`7.jpg` for `/img/7.jpg?size=64`), in the order they arrived; the
    /// last 10,000 at most.
    ///
    /// ```
    /// # fn f(server: &fixture_server::FixtureServer) {
    /// for file in server.requested_files() {
    ///     println!("asked for {file}");
    /// }
    /// # }
    /// ```
    pub fn requested_files(&self) -> Vec<String> {
        self.shared.stats.requested_files()
    }

    /// Zeroes the counters, as `POST /stats/reset` does.
    pub fn reset_stats(&self) {
        self.shared.stats.reset();
    }

    /// Stops accepting, lets in-flight requests finish for
    /// [`Config::shutdown_grace`], closes the rest and returns when every
    /// connection is closed.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(accept_loop) = self.accept_loop.take() {
            let _ = accept_loop.await;
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for FixtureServer {
    /// Stops the server. A dedicated runtime is shut down too; outside an
    /// async context this waits (up to the grace period and a second) for its
    /// threads to end.
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(runtime) = self.runtime.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                runtime.shutdown_background();
            } else {
                if let Some(accept_loop) = self.accept_loop.take() {
                    let _ = runtime.block_on(accept_loop);
                }
                runtime.shutdown_timeout(Duration::from_secs(1));
            }
        }
    }
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Accepts connections until `stop`, then drains them.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    let router = router(Arc::clone(&shared));
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(error) => {
                // Out of file descriptors or a connection that died in the
                // queue: not fatal, but do not spin on it.
                eprintln!("fixture-server: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        shared.stats.count_connection();
        connections.spawn(serve_connection(
            stream,
            router.clone(),
            Arc::clone(&shared),
            stop.clone(),
            connections.clone(),
        ));
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// A connection's byte stream: TCP, or TLS over TCP.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// The longest a client may take over its TLS handshake before the
/// connection is dropped (one that never sends its hello would otherwise
/// hold a task and a socket until shutdown).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves one connection until the client closes it or the server stops:
/// the TLS handshake first if the server has TLS, then the protocol ALPN
/// agreed (HTTP/2 or HTTP/1.1), or over plain TCP whichever the client
/// speaks. HTTP/2 streams run as tasks of `connections`, so that shutdown
/// waits for them too.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    shared: Arc<Shared>,
    stop: CancellationToken,
    connections: TaskTracker,
) {
    let switch = ResetSwitch::default();
    let stream = ResettableStream {
        stream,
        switch: switch.clone(),
    };
    let mut builder = hyper_util::server::conn::auto::Builder::new(TrackedExecutor(connections));
    builder.http1().timer(TokioTimer::new());
    builder.http2().timer(TokioTimer::new());
    let stream: Box<dyn Stream> = match &shared.tls {
        None => Box::new(stream),
        Some(acceptor) => {
            let handshake = tokio::select! {
                handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => handshake,
                _ = stop.cancelled() => return,
            };
            // A client that does not trust the certificate hangs up here.
            let Ok(Ok(stream)) = handshake else { return };
            let agreed = Agreed::of(stream.get_ref().1);
            shared.stats.count_handshake(agreed);
            builder = if agreed.http2 {
                builder.http2_only()
            } else {
                builder.http1_only()
            };
            Box::new(stream)
        }
    };
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        // The `reset` fault resets the TCP connection: an HTTP/1.1
        // request's own. Over HTTP/2 the connection carries other requests'
        // streams, so the fault ends its stream alone (hyper resets it when
        // the body fails) and the switch stays unarmed.
        let own = if request.version() < Version::HTTP_2 {
            switch.clone()
        } else {
            ResetSwitch::default()
        };
        request.extensions_mut().insert(own);
        router.clone().oneshot(request.map(Body::new))
    });
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = stop.cancelled() => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(shared.config.shutdown_grace, connection).await;
}

/// Runs hyper's HTTP/2 stream tasks on the server's task tracker.
#[derive(Clone)]
struct TrackedExecutor(TaskTracker);

impl<F> hyper::rt::Executor<F> for TrackedExecutor
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        self.0.spawn(future);
    }
}

/// A TCP stream that resets instead of closing when its switch is armed.
struct ResettableStream {
    stream: TcpStream,
    switch: ResetSwitch,
}

impl Drop for ResettableStream {
    fn drop(&mut self) {
        if self.switch.is_armed() {
            // Linger 0: close() sends RST and drops unsent data.
            let _ = socket2::SockRef::from(&self.stream).set_linger(Some(Duration::ZERO));
        }
    }
}

impl tokio::io::AsyncRead for ResettableStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for ResettableStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
