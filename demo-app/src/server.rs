//! Where the demo's images come from: the embedded fixture server (its own
//! runtime, `fixture-*` threads) or one given with `--server`.
//!
//! The link reads and resets the server's counters: in memory for the
//! embedded one, over HTTP (`/stats`) for another. It lives as long as the
//! app; dropping it stops an embedded server.

use fixture_server::{FixtureServer, StatsSnapshot};

pub enum ServerLink {
    Embedded(FixtureServer, String),
    External(String),
}

impl ServerLink {
    pub fn base_url(&self) -> &str {
        match self {
            ServerLink::Embedded(_, base) | ServerLink::External(base) => base,
        }
    }

    /// The server's counters; zeros when an external server does not
    /// answer `/stats`.
    pub fn stats(&self) -> StatsSnapshot {
        match self {
            ServerLink::Embedded(server, _) => server.stats(),
            ServerLink::External(base) => {
                fixture_server::blocking_client::get(&format!("{base}/stats"))
                    .ok()
                    .and_then(|body| serde_json::from_slice(&body).ok())
                    .unwrap_or_default()
            }
        }
    }

    /// The embedded server's counters, read in memory; `None` for another
    /// server, whose counters cost a request (not for every frame).
    pub fn embedded_stats(&self) -> Option<StatsSnapshot> {
        match self {
            ServerLink::Embedded(server, _) => Some(server.stats()),
            ServerLink::External(_) => None,
        }
    }

    /// Requests in flight at the server.
    pub fn in_flight(&self) -> u64 {
        self.stats().in_flight
    }

    pub fn reset_stats(&self) {
        match self {
            ServerLink::Embedded(server, _) => server.reset_stats(),
            ServerLink::External(base) => {
                let _ = fixture_server::blocking_client::post(&format!("{base}/stats/reset"));
            }
        }
    }
}
