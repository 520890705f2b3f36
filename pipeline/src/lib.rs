//! thumbpipe loads thumbnails for GUI lists: async HTTP fetch, decode and
//! downscale on a bounded pool, an actor-owned memory cache with TTL and
//! byte-cost eviction, and cancellation tied to list-row identity.
//!
//! The rule behind it: waiting (network, timers) never holds a thread, CPU
//! work (decode, downscale) runs on a bounded pool, and the UI thread never
//! blocks. A fast flick through hundreds of rows costs a few futures and a
//! few decodes, never a thread per row, and a row can never show an image
//! meant for its previous URL.
//!
//! # Cargo features
//!
//! | feature | default | what it adds | what it costs |
//! |---|---|---|---|
//! | `avif` | on | AVIF as browsers show it: 8-, 10- and 12-bit, every subsampling, the file's matrix and range, alpha (premultiplied or not), grids, `clap`/`irot`/`imir`; an image sequence's first frame. In [`SUPPORTED_FORMATS`] and the `Accept` header. Its decoder's frame counts in [`DecodeConfig::max_alloc_bytes`] before it is allocated | re_rav1d (Rerun's fork of rav1d, the Rust port of dav1d, BSD-2-Clause) and its dependencies: 25 crates, pure Rust. Without `avif-asm`, a 12 MP photo takes 2.6x libavif's time (Pillow, one thread) to its thumbnail (`avif-report`) |
//! | `avif-asm` | off | rav1d's assembly (dav1d's SIMD): AVIF decodes 2x faster, 1.2x libavif's time | NASM on x86 and x86_64 |
//! | `bmp`, `ico`, `tiff` | on | BMP; ICO (the entry that best fits the thumbnail); TIFF and BigTIFF (the first page; uncompressed, LZW, Deflate, PackBits, JPEG, CCITT G4), in [`SUPPORTED_FORMATS`] and the `Accept` header | `image`'s pure-Rust decoders: `tiff` adds 5 crates (tiff, fax, half, zerocopy and its derive), `bmp` and `ico` none |
//! | `jxl` | on | JPEG XL (codestream or container; lossy and lossless; an animation's first frame), turned as the file says, in [`SUPPORTED_FORMATS`] and the `Accept` header (`image/jxl`). Decoded on the decode thread (no pool of its own), every allocation of the decoder under [`DecodeConfig::max_alloc_bytes`]; a lossy photo whose eighth-size LF covers the thumbnail from its LF alone, as a JPEG from its DC | jxl-oxide, pure Rust: 17 crates, 39 s of a cold release build on 2 cores |
//! | `heic` | off | HEIC and HEIF from phones and cameras (HEVC-coded; grids, alpha, 10- and 12-bit brought to 8, the primary image turned and cropped as the file says), in [`SUPPORTED_FORMATS`] and the `Accept` header (`image/heic`, `image/heif`). The file's own thumbnail is decoded in place of the photo when it covers the one asked for (a phone's is 240-512 px). The size the file and its HEVC streams declare is refused past [`DecodeConfig::max_dimension`], and what decoding it takes past [`DecodeConfig::max_alloc_bytes`] (reckoned: libheif allocates outside Rust), before anything is decoded | the system's libheif 1.15 or later (1.18 or later, or a distribution's patched 1.15, for its security fixes), found by pkg-config (Debian and Ubuntu: `libheif-dev`), and the pkg-config crate at build time. libheif and libde265 are C: a file that crashes them crashes the process. libde265 starts and joins a thread of its own for each picture it decodes |
//! | `raw` | on | Camera RAW (CR2, CR3, NEF, ARW, DNG, ORF, RW2, RAF, PEF, SRW and other TIFF-structured RAWs) shown from the JPEG previews the camera wrote into the file: the smallest that makes the thumbnail as the largest would, decoded by the JPEG route and turned as the RAW says; a fetch reads the file no further than that preview. The sensor data is never decoded: a RAW without a JPEG preview is [`Error::Decode`]. In [`SUPPORTED_FORMATS`] (`RAW`) and the `Accept` header (`image/x-dcraw`) | none: thumbpipe reads the containers itself |
//! | `qoi` | off | QOI (lossless RGB or RGBA, fast to decode), in [`SUPPORTED_FORMATS`] and the `Accept` header (`image/qoi`) | `image`'s pure-Rust decoder: one crate (`qoi`) |
//! | `svg` | off | SVG drawn at the thumbnail's size by resvg, sharp at every scale, under [`DecodeConfig::svg_max_elements`]; `.svg` URIs in the egui front door. The layers, masks, filters and pattern tiles it holds at once count in [`DecodeConfig::max_alloc_bytes`], and the pixels it fills in four times it. For SVGs from servers you trust: these limits stop the known bombs (self-referring `<use>`, nested layers, huge pattern tiles, filters' kernels) but the reckoning is not exact (the pixels a clip path's contents fill and filters' working buffers are not counted). Off by default, as in egui_extras: 18 more crates to build | resvg, usvg and tiny-skia, pure Rust: 18 crates |
//! | `disk-cache` | on | the HTTP cache on disk ([`DiskConfig`]) | cacache, http-cache-semantics and their hashes: 43 crates |
//! | `shared-thumbnails` | on | the desktop's shared thumbnails of local files ([`SharedThumbnailsConfig`]), read and written as the freedesktop.org standard says | md-5: 1 crate beside `disk-cache`'s hashes, 6 without them; png is `image`'s |
//! | `libjpeg` | on | JPEGs decoded at the DCT scale that covers the thumbnail: a 12 MP photo 2.3x faster than the pure-Rust full decode (`jpeg-routes`), without holding the whole image | libjpeg-turbo, built from source: 3 crates and a C compiler |
//! | `rustls-aws-lc` | on | `https` (HTTP/2 when the server offers it), its cryptography by aws-lc | rustls, aws-lc and h2: 16 crates, aws-lc built from source with cmake and a C compiler, and NASM on Windows x86_64 |
//! | `rustls-ring` | off | `https` (HTTP/2 when offered), its cryptography by ring, for builds without cmake or NASM | rustls, ring and h2: 16 crates and a C compiler; ring becomes rustls' process-wide provider unless the app installed one |
//! | `egui` | off | `thumbpipe::egui`: `egui::Image::new(url)` through the pipeline | egui |
//! | `iced` | off | `thumbpipe::iced`: a list's thumbnails as iced `image::Handle`s under a byte budget, and a subscription woken when they arrive | `iced_core` and `iced_futures` 0.14, no renderer: 7 crates beside thumbpipe's own (glam, lilt, rustc-hash, smol_str, web-time) |
//!
//! Without `disk-cache`, a config with [`disk.dir`](DiskConfig::dir) fails
//! to build a pipeline, and so does one that sets
//! [`shared_thumbnails`](SharedThumbnailsConfig) without
//! `shared-thumbnails` (its default is then off); without `libjpeg`, every JPEG takes `image`'s
//! pure-Rust decoder in full; without either TLS feature, `https` URLs fail
//! to load and [`FetchConfig::extra_root_certificates`] is refused. A lean
//! egui app without cmake:
//!
//! ```toml
//! thumbpipe = { version = "0.1", default-features = false, features = ["egui", "rustls-ring"] }
//! ```
//!
//! # Layout
//!
//! The modules are private; everything public is re-exported here, except
//! `egui` and `iced` (cargo features of those names). In the order a request travels:
//!
//! - `request`: what a request is made of, [`Priority`] and [`TargetSize`]
//!   (with its [`Fit`]), the ids of requests and loads, and the URL parsed
//!   once with the host its fetch counts against; a leaf every stage may
//!   use.
//! - `body`: the [`Body`] a fetch answers and a decode reads, whole or cut
//!   short; a leaf too.
//! - `pipeline`: the [`Pipeline`] handle and its builder
//!   (`pipeline/builder.rs`), and the UI side, `pipeline/rows.rs`:
//!   [`Pipeline::request`] / [`Pipeline::drain`], one live request per row,
//!   cancelled when the row asks for something else or leaves the view.
//! - `load`: the load actor, a dispatcher over plain-data parts:
//!   `load/registry.rs` (one shared task per url and size: coalescing,
//!   subscribers, stages) and `load/schedule.rs` (the fetch queue and
//!   per-host slots). The UI side reaches it through one handle.
//! - `shared_thumbnails`: the desktop's thumbnails of local files (the
//!   freedesktop.org standard's `~/.cache/thumbnails`), a tier of the load
//!   actor beside the fetch: looked up before a file is read, written after
//!   it is decoded.
//! - `cache`: least-recently-used thumbnails under cost, count and TTL
//!   limits, owned by the actor, with a view the UI side reads without
//!   waiting ([`Pipeline::cached`]).
//! - `queue`: the serving order of the fetch and decode queues: by
//!   priority, newest first.
//! - `fetch`: the [`Fetch`] trait, what it is asked and answers
//!   ([`FetchRequest`], [`FetchResponse`]), the headers every request
//!   carries (`fetch/headers.rs`: the app's, a [`HeaderHook`]'s, thumbpipe's
//!   `User-Agent` and `Accept`), when a reader may stop reading a body
//!   ([`StopRule`], `fetch/stop.rs`), the router that gives each scheme its
//!   source (`fetch/sources.rs`: [`PipelineBuilder::source`]), the reqwest
//!   source [`HttpFetcher`], the local files' (`fetch/file.rs`), and
//!   [`fetch_fn`].
//! - `disk` (opt-in, [`disk.dir`](DiskConfig::dir)): the HTTP cache on disk, a
//!   layer in front of the pipeline's [`Fetch`] (`disk/tier.rs`) that owns
//!   every caching decision, and beside it the decoded thumbnails, which
//!   the load actor asks before a fetch; `disk/store.rs` reads and writes
//!   the entries, `disk/lanes.rs` keeps each URL's operations in order,
//!   `disk/layout.rs` reads the directory without trusting it,
//!   `disk/scan.rs` is the opening scan, `disk/ledger.rs` keeps the byte
//!   budget. Its threads, `thumbpipe-disk-N` and
//!   `thumbpipe-disk-scan`, are `workers.rs`, as is the `file://` thread.
//! - `decode`: the [`Decode`] trait and its default [`ImageDecoder`] (JPEG's
//!   routes in `decode/jpeg/`, with the layer in front of the fetcher that
//!   reads a JPEG only as far as its thumbnail needs,
//!   `decode/jpeg/prefix.rs`, when the decoder
//!   [takes such bodies](Decode::takes_cut_short_bodies)), and the decode
//!   pool (`decode/pool.rs`,
//!   threads `thumbpipe-decode-N`) where large images
//!   ([`decode.large_image_pixels`](DecodeConfig::large_image_pixels)) never
//!   hold the last free thread.
//! - `thumbnail`: the [`Thumbnail`] every stage after decode shares (how an
//!   image is fitted to its target is the decode's, `decode/fitting.rs`).
//! - `coast`: [`CoastPrediction`], where a kinetic scroll comes to rest and
//!   how long each row it passes is on screen, for the UI side to request
//!   the rows a list will stop on first and skip the ones it flies past.
//! - `deliver`: [`Completion`]s back to the UI thread, and its waker.
//! - `metrics`: the counters behind [`Pipeline::stats`].
//! - `config` and `error`: [`Config`]; [`Error`] and [`BuildError`].
//! - `egui` (cargo feature `egui`): `egui::Image::new(url)` through the
//!   pipeline, textures under a budget, and a row-keyed list helper.
//! - `iced` (cargo feature `iced`): the row-keyed state an iced app keeps,
//!   its handles under a budget, and the subscription that wakes it.
//!
//! ```text
//! UI thread                 io runtime (2 workers)                 decode pool (<= cores)
//! ---------                 ----------------------                 ----------------------
//! request(row, url, size)
//!   rows: one live request
//!   per row ---subscribe--> load actor: cache hit? ---------------------+
//!                           registry: same (url, size) joins one task   |
//!                           scheduler: priority, LIFO, per-host slots   |
//!                           [disk thumbnail? lookup task: hit ----------+]
//!                           fetch task: [JPEG layer ->] [disk layer ->] |
//!                             fetcher                                   |
//!                             (cancellable, body cap, body budget)      |
//!                             --Fetched--> load actor --submit-------------> queue: priority, LIFO
//!                                                                          decode + downscale
//!                                                                          (skipped if cancelled;
//!                                                                          large: all threads but one)
//!                           load actor <--Decoded--------------------------+
//!                           cache put (TTL, cost, LRU)                  |
//! drain() <---------------- deliver to every subscriber <---------------+
//!   only the row's current request; the waker asks for a frame
//! ```
//!
//! # Where to change what
//!
//! - **A new priority**: a [`Priority`] variant; both queues (`queue.rs`)
//!   order by it, and the registry gives a task its subscribers' highest.
//! - **A layer in front of the network** (a cache, a header hook, a rate
//!   limiter, reading only as far as a format needs): a [`Fetch`] that wraps
//!   the pipeline's fetcher, as `disk/tier.rs` and `decode/jpeg/prefix.rs` do,
//!   made by the builder (`pipeline/builder.rs`).
//! - **A new stage** the actor schedules: a `Stage` in
//!   `load/registry.rs` and an `Event` the actor handles in `load/mod.rs`
//!   (as the thumbnail tier's lookup is `LookingUp` and `LookedUp`), and a
//!   seam trait like [`Fetch`] if it is pluggable.
//! - **A new setting**: a field of its stage's config, beside the stage
//!   (`fetch/config.rs`, `decode/config.rs`, `cache.rs`, `disk/config.rs`;
//!   egui's in `egui/config.rs`), with its default and its check in that
//!   config's `validate`.
//! - **A new image format**: a row of the format table,
//!   `decode/formats.rs` ([`SUPPORTED_FORMATS`], the `Accept` header, the
//!   header read and the route all read it): its file in `decode/` (or
//!   folder, like `decode/jpeg/`) with its `FORMAT` row (name, media
//!   types, how its bytes are told, and either its own decoder or
//!   `image`'s with its fixes), a cargo feature in `pipeline/Cargo.toml`,
//!   and one line in the table. A format whose feature is off has no row.
//! - **A new UI toolkit**: the row-keyed [`Pipeline`] is toolkit-free; a
//!   module like `egui` or `iced` turns its completions into the
//!   toolkit's images, its waker into the toolkit's wake-up (a repaint, a
//!   subscription) and its frame or `update` into `request` / `end_frame`
//!   calls, behind a cargo feature.
//!
//! # Example
//!
//! ```no_run
//! use thumbpipe::{Config, Pipeline, Priority, TargetSize};
//!
//! let mut pipeline = Pipeline::<usize>::new(Config::default())?;
//! pipeline.set_waker(|| { /* egui: ctx.request_repaint() */ });
//! // Each frame:
//! for row in 0..30 {
//!     let url = format!("http://127.0.0.1:8080/img/{row}.jpg");
//!     pipeline.request(row, &url, TargetSize::square(64), Priority::Visible);
//! }
//! for done in pipeline.drain() {
//!     match done.result {
//!         Ok(thumbnail) => { /* upload thumbnail.pixels for done.row */ }
//!         Err(error) => eprintln!("row {}: {error}", done.row),
//!     }
//! }
//! pipeline.end_frame();
//! # Ok::<(), thumbpipe::BuildError>(())
//! ```
//!
//! # Limits
//!
//! Whatever a server sends, a load ends within these limits with a typed
//! [`Error`] that names the setting to raise; nothing else in the app is
//! held up by it (with animations played, a decode in progress runs to its
//! end, half a second of one core at most by default, however soon its
//! row is scrolled away).
//!
//! | limit | default | when it is exceeded | setting |
//! |---|---|---|---|
//! | fetches in flight per host | 16 | the rest wait in the queue, costing no thread | [`fetch.max_per_host`](FetchConfig::max_per_host) |
//! | fetches in flight over all hosts | 24 | the rest wait in the queue, costing no thread | [`fetch.max_in_flight`](FetchConfig::max_in_flight) |
//! | connect timeout | 5 s | [`Error::Timeout`] | [`fetch.connect_timeout`](FetchConfig::connect_timeout) |
//! | whole-response timeout (headers and body; a body's wait for the budget below does not count) | 30 s | [`Error::Timeout`]; the slot is free again at once | [`fetch.total_timeout`](FetchConfig::total_timeout) |
//! | response body | 16 MiB | [`Error::TooLarge`], from `Content-Length` or while streaming, never buffered past the cap | [`fetch.max_body_bytes`](FetchConfig::max_body_bytes) |
//! | bodies held between the network and the decoders | 64 MiB | no new fetch starts and no new body is read until decodes catch up; a cancelled load's body is freed at once | [`fetch.body_budget_bytes`](FetchConfig::body_budget_bytes) |
//! | redirects | 5; none from `https` to `http` | [`Error::Network`]; [`Error::InsecureRedirect`] for a downgrade | [`fetch.max_redirects`](FetchConfig::max_redirects), [`fetch.allow_https_to_http_redirects`](FetchConfig::allow_https_to_http_redirects) |
//! | image width or height | 16384 | [`Error::TooLarge`], from the header, before decoding | [`decode.max_dimension`](DecodeConfig::max_dimension) |
//! | decoded pixels and decoder allocations | 256 MiB (JPEG and WebP decoder buffers count: a progressive 4:4:4 JPEG takes 13 bytes per pixel, a baseline 4:2:0 one 5.5, a lossy WebP 5.5, a lossless one 8) | [`Error::TooLarge`], from the header, before decoding | [`decode.max_alloc_bytes`](DecodeConfig::max_alloc_bytes) |
//! | an animation's frames (with [`decode.animation`](DecodeConfig::animation), off by default) | 200 frames, 4 MiB of them at the thumbnail's size, 50,000,000 pixels decoded (frames times the screen); no frame larger than the screen | the first frame alone, as with animation off | [`decode.max_animation_frames`](DecodeConfig::max_animation_frames), [`decode.max_animation_bytes`](DecodeConfig::max_animation_bytes), [`decode.max_animation_pixels`](DecodeConfig::max_animation_pixels) |
//! | scans in a JPEG | 100 (a photo has about ten) | [`Error::Decode`], from the markers, before decoding | - |
//! | cache | 64 MiB, 4096 entries, 300 s | least recently used entries are evicted; expired ones are never returned | [`cache.max_bytes`](CacheConfig::max_bytes), [`cache.max_entries`](CacheConfig::max_entries), [`cache.ttl`](CacheConfig::ttl) |
//! | textures (`egui` feature) | 32 MiB | least recently drawn textures are freed; their thumbnails come back from the cache | `egui::EguiConfig::max_texture_bytes` |
//! | texture uploads per pass (`egui` feature) | 4 MiB | the rest are uploaded in the next passes | `egui::EguiConfig::upload_bytes_per_pass` |
//! | requests waiting to be drained | 10,000 | [`Error::TooManyPending`], with no work started: a UI that never drains holds a bounded number of thumbnails | [`max_pending_requests`](Config::max_pending_requests) |
//! | disk cache (opt-in) | 256 MiB when a directory is set | least recently used entries are removed before a write that would pass it; a response larger than the budget is not written | [`disk.dir`](DiskConfig::dir), [`disk.max_bytes`](DiskConfig::max_bytes) |
//! | a disk cache read | 250 ms | the load goes to the network, and later loads skip the disk, but for one probe a second, until a disk operation finishes | [`disk.read_timeout`](DiskConfig::read_timeout) |
//! | bodies of writes waiting for the disk | 16 MiB (and 16 MiB more while the opening scan runs) | a response or thumbnail is not written ([`DiskStats::writes_skipped`]) | - |
//! | dropping the pipeline | 0.5 s for a decode still running, as long for a `file://` read or the disk cache's pending writes | the thread finishes that job alone and exits; nothing is delivered or woken after the drop | - |
//!
//! Change them with [`Config`]:
//!
//! ```
//! use std::time::Duration;
//!
//! let mut config = thumbpipe::Config::default();
//! config.fetch.total_timeout = Duration::from_secs(10);
//! config.fetch.max_body_bytes = 4 * 1024 * 1024;
//! config.decode.max_dimension = 8192;
//! let pipeline = thumbpipe::Pipeline::<u32>::new(config)?;
//! # Ok::<(), thumbpipe::BuildError>(())
//! ```
//!
//! # What is loaded
//!
//! - `http` and `https` URLs. TLS is rustls, with certificates checked against
//!   the platform's trusted roots and any
//!   [`fetch.extra_root_certificates`](FetchConfig::extra_root_certificates); a
//!   certificate that fails the check is [`Error::Tls`]. A redirect from
//!   `https` to `http` is not followed unless
//!   [`fetch.allow_https_to_http_redirects`](FetchConfig::allow_https_to_http_redirects)
//!   says so.
//! - `file://` URLs only under the directories of
//!   [`fetch.file_roots`](FetchConfig::file_roots): files whose path, with
//!   symbolic links resolved, lies under one of them; others are
//!   [`Error::UnsupportedUrl`]. Only regular
//!   files are read: a FIFO or a device is [`Error::File`], told from the
//!   opened handle without waiting on it. On Unix a file is opened beneath
//!   its root and then checked by its open handle, off the UI thread, so a
//!   link swapped into its path while it is opened cannot lead a read out
//!   of the roots.
//! - A scheme an app adds with [`PipelineBuilder::source`] is its source's
//!   to read; a `file` source of the app's replaces thumbpipe's, and the
//!   roots with it. Every other scheme is [`Error::UnsupportedUrl`], delivered at
//!   the next [`Pipeline::drain`].
//! - The [`SUPPORTED_FORMATS`]. Anything else, and any
//!   malformed input, is [`Error::Decode`]; a decoder panic is caught and
//!   becomes [`Error::Decode`] too, and a custom fetcher's panic
//!   [`Error::FetcherPanicked`].
//! - If a runtime given to [`PipelineBuilder::runtime`] is shut down while
//!   the pipeline is in use, the waker is called and every pending and later
//!   request completes with [`Error::Shutdown`].

#![warn(missing_docs)]

mod body;
mod cache;
mod coast;
mod config;
mod decode;
mod deliver;
mod disk;
#[cfg(feature = "egui")]
pub mod egui;
mod error;
mod fetch;
#[cfg(any(feature = "egui", feature = "iced"))]
mod front;
#[cfg(feature = "iced")]
pub mod iced;
mod load;
mod local_files;
mod metrics;
mod pipeline;
mod queue;
mod request;
mod room;
mod shared_thumbnails;
#[cfg(any(feature = "disk-cache", feature = "shared-thumbnails"))]
mod small_files;
mod thumbnail;
mod workers;

pub use body::Body;
pub use cache::{CacheConfig, CacheStats};
pub use coast::{CoastModel, CoastPrediction, ExponentialDecay, ListGeometry, RowVisit};
pub use config::Config;
pub use decode::formats::SUPPORTED_FORMATS;
pub use decode::{Decode, DecodeConfig, ImageDecoder, thumbnail_from_bytes};
pub use deliver::Completion;
pub use disk::{DiskConfig, DiskStats};
pub use error::{BuildError, Error};
pub use fetch::{
    Enough, Fetch, FetchConfig, FetchFn, FetchRequest, FetchResponse, HeaderHook, HttpFetcher,
    Proxy, StopRule, fetch_fn,
};
/// The `http` crate, whose header types [`FetchConfig::headers`],
/// [`HeaderHook`] and [`FetchRequest`] use.
pub use http;
pub use metrics::Stats;
pub use pipeline::{Pipeline, PipelineBuilder};
pub use request::{Fit, Priority, RequestId, TargetSize};
pub use shared_thumbnails::{SharedThumbnailsConfig, ThumbnailStore};
pub use thumbnail::{Animation, AnimationFrame, Thumbnail};

/// The crate README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
