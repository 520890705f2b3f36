//! BMFF: ISO base media file format, the box structure AVIF and HEIC files
//! are made of (`boxes.rs`), the tables of a HEIF's items (`items.rs`):
//! what each is and where its data lies, what an HEVC stream's parameter
//! sets declare (`hevc.rs`), the properties a walk of them reads
//! (`properties.rs`), and the pictures a HEIC's items make libheif
//! allocate (`streams.rs`). Read by the AVIF decoder, and by HEIC's before
//! libheif reads the file.
//!
//! Plain functions over borrowed bytes; they keep nothing.

mod boxes;
// HEIC's: pure Rust, and tested in every build that has AVIF.
#[cfg_attr(not(feature = "heic"), allow(dead_code))]
mod hevc;
mod items;
#[cfg_attr(not(feature = "heic"), allow(dead_code))]
mod properties;
#[cfg_attr(not(feature = "heic"), allow(dead_code))]
mod streams;

#[cfg(feature = "avif")]
pub(crate) use boxes::{Boxes, FourCc, Reader, full_box};
#[cfg(feature = "heic")]
pub(crate) use hevc::Picture;
#[cfg(feature = "avif")]
pub(crate) use items::{
    Associations, Location, MAX_ENTRIES, read_iinf, read_iloc, read_ipma, read_iref, read_pitm,
};
#[cfg(feature = "heic")]
pub(crate) use streams::Streams;
