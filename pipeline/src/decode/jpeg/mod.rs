//! JPEG: everything thumbpipe reads of a JPEG itself, in one place. The
//! camera photos and progressive web images a list shows are JPEGs, and
//! most of their thumbnails need only part of the file:
//!
//! - `markers.rs`: the marker table and the one segment reader every file
//!   here uses, and the one frame-header reader.
//! - `walk.rs`: the one walk over a JPEG's markers, begun by the fetch's
//!   watch or the decode pool's size probe and gone on with by the decode:
//!   everything below reads its structure from it.
//! - `layout.rs`: the file's layout, checked before any decoder runs (scans
//!   counted, a second frame refused), what each route allocates, and the
//!   DCT scale that covers a thumbnail, which `libjpeg.rs` decodes at
//!   (cargo feature `libjpeg`).
//! - `exif.rs`: the thumbnail a camera embeds in its EXIF, decoded in the
//!   photo's place where it serves.
//! - `dc_scans.rs`: a progressive JPEG bound for 1/8 of its size or less,
//!   decoded from its DC scans alone; its tables and scan headers are read
//!   by `dc_headers.rs`, its Huffman codes by `huffman.rs`, its pixels made
//!   by `dc_pixels.rs`.
//! - `prefix.rs`: reading a JPEG only as far as its thumbnail needs, the
//!   watch the fetch stage's read-as-needed layer gives each request,
//!   which reads the headers as the decoders above do.
//!
//! Its row of the format table (`FORMAT`) is here; the route
//! (`decode/route.rs`) chooses among the rest. Everything here runs on the
//! thread that calls it (a decode thread; the fetch task for the watch)
//! and keeps nothing between calls.

mod dc_headers;
mod dc_pixels;
mod dc_scans;
mod exif;
mod huffman;
mod layout;
#[cfg(feature = "libjpeg")]
mod libjpeg;
#[cfg(not(feature = "libjpeg"))]
use super::off::libjpeg;
mod markers;
mod prefix;
mod walk;

use image::ImageFormat;

use super::formats::{Decoder, Format, Raster, Signature};

/// JPEG's row of the format table: its header is read from its markers'
/// walk (`walk.rs`, by `header.rs`), which libjpeg's route and the
/// shortcuts read too; `image` decodes it where libjpeg does not.
pub(super) const FORMAT: Format = Format {
    name: "JPEG",
    media_types: &["image/jpeg"],
    signature: Signature::Magic(&[(0, b"\xFF\xD8\xFF")]),
    decoder: Decoder::Image(Raster::of(ImageFormat::Jpeg)),
};

pub(super) use dc_scans::{covers as dc_scans_cover, decode_dc};
pub(super) use exif::covers as embedded_covers;
pub(super) use layout::{JpegLayout, scale_eighths, scaled_side};
pub(super) use libjpeg::decode_scaled;
pub(super) use prefix::{PrefixWatch, watch};
pub(super) use walk::{JpegWalk, walk_to_frame};
#[cfg(feature = "raw")]
pub(super) use {layout::ThumbnailAt, markers::is_frame as is_frame_marker};
