//! A local HTTP server of generated images, with controllable latency and
//! faults, that counts what happened to every request.
//!
//! thumbpipe's tests, demo and benchmarks load their thumbnails from it. Each
//! image carries its id twice: in large digits for people, and in a ring of
//! black and white cells that survives JPEG compression and downscaling to
//! 32x32, read back by [`decode_id`]. That is how a test tells from the pixels
//! alone which image a list row is showing.
//!
//! # Layout
//!
//! - [`config`]: what a server is asked to do ([`Config`], [`FaultKind`]).
//! - [`picture`]: how an id becomes pixels, and back ([`decode_id`]).
//! - [`photo`]: photo-sized pictures with a photo's texture and encodings,
//!   and the decode benchmarks' [`photo::corpus`].
//! - `images`: encoded images, made once on the blocking pool and kept.
//! - `faults`: the responses of the fault kinds.
//! - `stats`: counters of started, completed, aborted and cut requests, and
//!   of connections, TLS handshakes and HTTP/2.
//! - [`tls`]: the self-signed certificate and what the server offers by ALPN
//!   ([`TlsOffer`]).
//! - `server`: the accept loop, each connection and the [`FixtureServer`]
//!   handle; `routes`: the endpoints and the image handler; `image_request`:
//!   what `GET /img/{file}` asks for, read from its path and query.
//! - [`blocking_client`]: a blocking HTTP/1.1 client, for the thread-per-request
//!   baselines that thumbpipe is measured against.
//! - `measure`: [`percentile`] and [`resident_mb`], shared by the reports.
//! - [`report`]: what a scripted run of a list measured ([`RunReport`]),
//!   written by the demo and read by the report binaries.
//! - `census`: this process's threads by name and by what blocks them
//!   ([`ThreadCensus`]), for tests that count threads.
//!
//! # Endpoints
//!
//! ```text
//! GET  /img/{id}.jpg | /img/{id}.png   ?w=&h=&latency_ms=&fault=KIND
//! GET  /stats                          counters as JSON (StatsSnapshot)
//! POST /stats/reset                    zero the counters
//! ```
//!
//! Every image response waits its latency with an async sleep, so a thousand
//! waiting requests cost a thousand small futures, not a thousand threads.
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use fixture_server::{Config, FixtureServer};
//! use std::time::Duration;
//!
//! let server = FixtureServer::start(Config {
//!     latency: Duration::ZERO,
//!     ..Config::default()
//! })
//! .await?;
//! let url = format!("{}/img/42.png?w=64&h=64", server.base_url());
//! // ... fetch `url` with any HTTP client, decode it to RGBA, then:
//! // assert_eq!(fixture_server::decode_id(&rgba, 64, 64), Some(42));
//! # let _ = url;
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod blocking_client;
mod caching;
mod census;
pub mod config;
pub mod exif;
mod faults;
mod image_request;
mod images;
mod measure;
pub mod photo;
pub mod picture;
mod random;
pub mod report;
mod routes;
mod server;
mod stats;
pub mod tls;

pub use census::{CensusError, ThreadCensus};
pub use config::{Config, ConfigError, FaultKind, UnknownFault, parse_fault_spec};
pub use faults::HUGE_BYTES;
pub use images::BOMB_SIDE;
pub use measure::{peak_resident_growth, percentile, resident_mb};
pub use picture::{MAX_ID, decode_id};
pub use random::splitmix64;
pub use report::{DiskReport, FlingReport, FolderReport, RunReport};
pub use server::{DEDICATED_BLOCKING, DEDICATED_WORKERS, FixtureServer, StartError, THREAD_PREFIX};
pub use stats::StatsSnapshot;
pub use tls::{TlsOffer, UnknownTlsOffer};
