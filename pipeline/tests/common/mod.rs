//! Helpers for the integration tests: a fixture server on loopback, and a
//! loop that drains a pipeline the way a UI's frames would.

#![allow(dead_code)] // each test file uses its own subset

use std::time::{Duration, Instant};

use fixture_server::{Config as ServerConfig, FixtureServer};
use thumbpipe::{Completion, Pipeline, Thumbnail};

/// A fixture server on its own runtime (threads `fixture-*`).
pub fn server(latency_ms: u64) -> FixtureServer {
    FixtureServer::start_dedicated(ServerConfig {
        latency: Duration::from_millis(latency_ms),
        shutdown_grace: Duration::from_millis(100),
        ..ServerConfig::default()
    })
    .expect("fixture server starts")
}

/// Drains `pipeline` every 2 ms until `done` says so or 20 s pass; returns
/// everything drained.
pub fn drain_until<K: std::hash::Hash + Eq + Clone>(
    pipeline: &mut Pipeline<K>,
    mut done: impl FnMut(&[Completion<K>]) -> bool,
) -> Vec<Completion<K>> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut all = Vec::new();
    loop {
        all.extend(pipeline.drain());
        if done(&all) || Instant::now() > deadline {
            return all;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits until `check` holds or 10 s pass; returns whether it held.
pub fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    check()
}

/// The id the thumbnail's pixels carry.
pub fn id_of(thumbnail: &Thumbnail) -> Option<u32> {
    fixture_server::decode_id(&thumbnail.pixels, thumbnail.width, thumbnail.height)
}
