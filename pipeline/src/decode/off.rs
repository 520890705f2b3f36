//! What the decode calls of a part whose cargo feature is off: the same
//! functions, answering as if the input never needed them. An AVIF is
//! refused as a format this build does not decode, an ICO has no
//! best entry to choose (and is refused as a format this build does not
//! decode), markup is no SVG, a TIFF is refused before its header is read,
//! and no JPEG is decoded by libjpeg (its route is off: `jpeg_dct_scaling`
//! is false without the feature). `mod.rs` uses these in place of the real
//! modules, so no feature is named anywhere else in `decode/`.
//!
//! Plain functions; they keep nothing.

#[cfg(not(feature = "avif"))]
pub(super) mod avif {
    use std::sync::Arc;

    use crate::decode::DecodeLimits;
    use crate::error::Error;
    use crate::request::TargetSize;
    use crate::thumbnail::Thumbnail;

    /// Never called: an AVIF is refused as a format this build does not
    /// decode.
    pub(in crate::decode) fn thumbnail(
        url: &Arc<str>,
        _: &[u8],
        _: TargetSize,
        _: DecodeLimits,
    ) -> Result<Thumbnail, Error> {
        Err(Error::Decode {
            url: url.to_string(),
            reason: "AVIF needs thumbpipe's cargo feature `avif`".into(),
        })
    }
}

#[cfg(not(feature = "ico"))]
pub(super) mod ico {
    use crate::request::TargetSize;

    /// The entry of an icon chosen for a thumbnail.
    pub(in crate::decode) struct BestEntry {
        pub(in crate::decode) icon: Vec<u8>,
        pub(in crate::decode) largest: (u32, u32),
    }

    /// None: ICO is not decoded.
    pub(in crate::decode) fn best_entry(_: &[u8], _: TargetSize) -> Option<BestEntry> {
        None
    }
}

#[cfg(not(feature = "svg"))]
pub(super) mod svg {
    use std::sync::Arc;

    use crate::decode::DecodeLimits;
    use crate::error::Error;
    use crate::request::TargetSize;
    use crate::thumbnail::Thumbnail;

    /// False: markup is not drawn.
    pub(in crate::decode) fn looks_like_svg(_: &[u8]) -> bool {
        false
    }

    /// Never called: nothing looks like an SVG.
    pub(in crate::decode) fn rasterise(
        url: &Arc<str>,
        _: &[u8],
        _: TargetSize,
        _: DecodeLimits,
    ) -> Result<Thumbnail, Error> {
        Err(Error::Decode {
            url: url.to_string(),
            reason: "SVG needs thumbpipe's cargo feature `svg`".into(),
        })
    }
}

#[cfg(not(feature = "tiff"))]
pub(super) mod tiff {
    /// Never called: TIFF is refused as a format this build does not
    /// decode.
    pub(in crate::decode) fn inspect(_: &[u8]) -> Result<u64, String> {
        Ok(0)
    }
}

#[cfg(not(feature = "libjpeg"))]
pub(super) mod libjpeg {
    use crate::decode::resize::Pixels;

    /// `Ok(None)`: the full decode takes every JPEG.
    pub(in crate::decode) fn decode_scaled(_: &[u8], _: u32) -> Result<Option<Pixels>, String> {
        Ok(None)
    }
}
