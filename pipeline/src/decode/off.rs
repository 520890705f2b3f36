//! What the decode calls of a route whose cargo feature is off: no JPEG is
//! decoded by libjpeg (its route is off: `jpeg_dct_scaling` is false
//! without the feature), so the full decode takes every JPEG. A format
//! whose feature is off needs nothing here: it has no row in the format
//! table.
//!
//! Plain functions; they keep nothing.

#[cfg(not(feature = "libjpeg"))]
pub(super) mod libjpeg {
    use crate::decode::resize::Pixels;

    /// `Ok(None)`: the full decode takes every JPEG.
    pub(in crate::decode) fn decode_scaled(_: &[u8], _: u32) -> Result<Option<Pixels>, String> {
        Ok(None)
    }
}
