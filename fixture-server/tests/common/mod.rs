//! Helpers shared by the integration tests: a server on loopback and a plain
//! HTTP client.

#![allow(dead_code)] // each test file uses its own subset

use std::time::{Duration, Instant};

use fixture_server::{Config, FixtureServer, StatsSnapshot};

/// A server on `127.0.0.1:0` with `latency`, other settings at defaults.
pub async fn server_with_latency(latency: Duration) -> FixtureServer {
    FixtureServer::start(Config {
        latency,
        shutdown_grace: Duration::from_millis(100),
        ..Config::default()
    })
    .await
    .expect("server starts")
}

/// A client that does not follow redirects, so that tests see them.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client builds")
}

/// Polls the server's counters until `done` holds, for at most 5 s, and
/// returns the last snapshot either way (the caller asserts on it).
pub async fn stats_when(
    server: &FixtureServer,
    done: impl Fn(&StatsSnapshot) -> bool,
) -> StatsSnapshot {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let stats = server.stats();
        if done(&stats) || Instant::now() > deadline {
            return stats;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether any error in `error`'s source chain is an I/O error of `kind`.
pub fn caused_by_io(error: &(dyn std::error::Error + 'static), kind: std::io::ErrorKind) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
        {
            return true;
        }
        next = error.source();
    }
    false
}

/// Decodes an image body to RGBA and reads its id.
pub fn id_in(body: &[u8]) -> Option<u32> {
    let rgba = image::load_from_memory(body).ok()?.to_rgba8();
    fixture_server::decode_id(rgba.as_raw(), rgba.width(), rgba.height())
}
