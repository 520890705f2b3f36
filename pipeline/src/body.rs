//! Body: the bytes a fetch answers and a decode reads, and whether they are
//! the whole resource. A leaf of the crate, like `request.rs`: the fetch
//! stage makes bodies, its layers pass them on, the load actor hands them
//! to the decode pool, and the body is freed with its decode (its bytes may
//! hold a share of the pipeline's body budget until then).

use std::ops::Deref;

use bytes::Bytes;

/// An image's bytes as a [`Fetch`](crate::Fetch) answers them and a
/// [`Decode`](crate::Decode) reads them: the whole resource, or its start
/// when a reader stopped once the bytes read made the thumbnail (a JPEG's
/// embedded thumbnail or its DC scans: see [`StopRule`](crate::StopRule)).
///
/// It reads as the bytes it holds:
///
/// ```
/// let body = thumbpipe::Body::whole(&b"\x89PNG"[..]);
/// assert!(body.complete);
/// assert!(body.starts_with(b"\x89PNG"));
///
/// let start = thumbpipe::Body::cut_short(&b"\xFF\xD8\xFF"[..]);
/// assert!(!start.complete);
/// assert_eq!(start.len(), 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// The bytes read.
    pub bytes: Bytes,
    /// Whether they are all of the resource. A body cut short reaches
    /// only a decoder that takes such bodies
    /// ([`Decode::takes_cut_short_bodies`](crate::Decode::takes_cut_short_bodies));
    /// a layer that keeps bodies (the disk cache) never keeps one as the
    /// resource.
    pub complete: bool,
}

impl Body {
    /// All of a resource's bytes.
    pub fn whole(bytes: impl Into<Bytes>) -> Self {
        Self {
            bytes: bytes.into(),
            complete: true,
        }
    }

    /// The start of a resource, read until it made the thumbnail.
    pub fn cut_short(bytes: impl Into<Bytes>) -> Self {
        Self {
            bytes: bytes.into(),
            complete: false,
        }
    }
}

/// A whole body of no bytes (a `304 Not Modified`'s).
impl Default for Body {
    fn default() -> Self {
        Self::whole(Bytes::new())
    }
}

/// A whole body.
impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Self {
        Self::whole(bytes)
    }
}

impl Deref for Body {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}
