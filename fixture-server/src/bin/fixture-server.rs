//! `fixture-server`: serve generated images with latency and faults.
//!
//! Prints `listening on http://IP:PORT` (`https://` with `--tls`) as its
//! first line of stdout, then serves until Ctrl-C (or SIGTERM).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use fixture_server::{Config, FaultKind, FixtureServer, TlsOffer, parse_fault_spec};

/// Serve deterministic generated images over HTTP, with controllable latency
/// and faults, and count what happens to every request (GET /stats).
///
/// Images: GET /img/{id}.jpg or /img/{id}.png, with ?w=&h= (1..=4096),
/// ?latency_ms=, ?fault=KIND, ?max_age=SECONDS and ?no_store=1 per request.
/// Every image has a strong ETag and Last-Modified; If-None-Match gets 304.
#[derive(Debug, Parser)]
#[command(version, about, long_about)]
struct Args {
    /// Port to listen on; 0 picks a free one (printed on the first line).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to bind. Loopback by default: this server is for tests.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// Wait before the first byte of every image response, in milliseconds.
    #[arg(long, default_value_t = 250)]
    latency_ms: u64,
    /// Add a uniformly random 0..=JITTER ms to each request's latency.
    #[arg(long, default_value_t = 0)]
    jitter_ms: u64,
    /// Apply a fault to a fraction of requests, as KIND:PROBABILITY (for
    /// example `500:0.1`); repeat for several. Kinds: 404, 500, 503, reset,
    /// truncate, garbage, wrong-type, slow, hang, bomb, huge, redirect-loop.
    #[arg(long = "fault", value_name = "KIND:PROBABILITY", value_parser = parse_fault_spec)]
    faults: Vec<(FaultKind, f64)>,
    /// Default image width and height, in pixels.
    #[arg(long, default_value_t = 600)]
    size: u32,
    /// JPEG quality, 1-100.
    #[arg(long, default_value_t = 85)]
    jpeg_quality: u8,
    /// Seed for jitter, fault choices and garbage bytes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// `Cache-Control: max-age` on every image, in seconds; without it,
    /// images carry no Cache-Control (clients revalidate them: 304 when
    /// unchanged). A request overrides it with ?max_age=; ?no_store=1 asks
    /// for `no-store`.
    #[arg(long, value_name = "SECONDS")]
    max_age: Option<u64>,
    /// Serve over TLS with the self-signed certificate in
    /// `fixture-server/src/tls/localhost.cert.der` (clients must trust it),
    /// offering HTTP/2 and HTTP/1.1 (`h2`) or HTTP/1.1 only (`h1`) by ALPN.
    #[arg(long, value_name = "h1|h2")]
    tls: Option<TlsOffer>,
    /// Runtime worker threads.
    #[arg(long, default_value_t = fixture_server::DEDICATED_WORKERS)]
    workers: usize,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("fixture-server: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let config = Config {
        addr: SocketAddr::new(args.bind, args.port),
        latency: Duration::from_millis(args.latency_ms),
        jitter: Duration::from_millis(args.jitter_ms),
        faults: args.faults,
        default_size: (args.size, args.size),
        jpeg_quality: args.jpeg_quality,
        seed: args.seed,
        max_age: args.max_age.map(Duration::from_secs),
        tls: args.tls,
        ..Config::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.workers.max(1))
        .max_blocking_threads(fixture_server::DEDICATED_BLOCKING)
        .thread_name("fixture-worker")
        .enable_all()
        .build()
        .context("could not start the runtime")?;
    runtime.block_on(async {
        let server = FixtureServer::start(config).await?;
        println!("listening on {}", server.base_url());
        wait_for_signal().await;
        server.shutdown().await;
        Ok(())
    })
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
