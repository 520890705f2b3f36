//! thumbpipe's integration tests, one binary for all of them so that the
//! workspace links once instead of once per file. Each module is named for
//! what it proves.
//!
//! Tests that measure the whole process (its threads, its allocations) are
//! binaries of their own next to this directory: here, other tests would
//! run beside them.

#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

mod animation;
#[cfg(feature = "avif")]
mod avif;
mod cancellation;
mod coalescing;
#[cfg(feature = "egui")]
mod coasting;
mod corpus;
mod cut_short;
mod disk;
mod disk_layer;
mod disk_untrusted;
#[cfg(feature = "egui")]
mod egui_image;
mod embedded;
mod faults;
mod fetch_queue;
mod file_races;
mod files;
#[cfg(feature = "iced")]
mod iced_list;
mod no_silent_death;
mod photos;
mod priority;
mod request_headers;
mod seams;
mod shared_thumbnails;
mod shared_thumbnails_untrusted;
mod sources;
mod tls;
mod wrong_row;
