//! The fixture server's integration tests, one binary for all of them so
//! that it links once instead of once per file. Each module is named for
//! what it proves; `lifecycle.rs`, which counts the process's threads, is a
//! binary of its own.

#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

mod bad_requests;
mod caching;
mod faults;
mod id_survives_jpeg_and_downscale;
mod latency_and_stats;
mod tls;
