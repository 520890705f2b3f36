//! Body: the bytes a fetch answers and a decode reads, whether they are
//! the whole resource, and what their read learned of where they came
//! from (a local file's stamp). A leaf of the crate, like `request.rs`:
//! the fetch stage makes bodies, its layers pass them on, the load actor
//! hands them to the decode pool, and the body is freed with its decode
//! (its bytes may hold a share of the pipeline's body budget until then).
//! What the read learned of the bytes themselves (a JPEG's walk over its
//! markers) rides on the body too, for the decode to go on from.

use std::any::Any;
use std::ops::Deref;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::Arc;

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
    /// The stamp of the local file the bytes were read from, taken from
    /// the open file itself before and after the read: what the desktop's
    /// shared thumbnail of them is written against. `None` for bodies
    /// from anywhere else, and for a file that changed while it was read.
    /// Boxed: a body is passed by value through every stage, most often
    /// without one.
    file: Option<Box<FileStamp>>,
    /// What a reader found in the bytes as it read them, for the decode to
    /// go on from instead of starting again: a JPEG's walk over its markers
    /// (`decode/jpeg/walk.rs`), made by the fetch's watch or the decode
    /// pool's size probe. Opaque to the stages that only pass it on; with
    /// the bytes it was found in, which `bytes` (public) must still be.
    /// Boxed, as `file` is.
    found: Option<Box<(Found, FoundIn)>>,
}

/// What a reader found in a body's bytes (see [`Body`]'s `found`): any
/// value of the decode stage's, shared by the body's clones. Plain data:
/// a body stays safe to hold across an unwind, as an app's decoder may.
#[derive(Clone)]
pub(crate) struct Found(Arc<dyn Any + Send + Sync + RefUnwindSafe + UnwindSafe>);

/// The bytes something was found in: where they start and how many.
/// `Bytes` never change in place, so other bytes in `Body::bytes` (a layer
/// of an app's that replaced them) start elsewhere or are as many no more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FoundIn(usize, usize);

impl FoundIn {
    fn of(bytes: &Bytes) -> Self {
        Self(bytes.as_ptr() as usize, bytes.len())
    }
}

impl Found {
    pub(crate) fn new(value: impl Any + Send + Sync + RefUnwindSafe + UnwindSafe) -> Self {
        Self(Arc::new(value))
    }
}

impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Found(..)")
    }
}

/// What was found is found in the bytes: bodies of the same bytes are the
/// same body, whatever their reads found.
impl PartialEq for Found {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Found {}

impl Body {
    /// All of a resource's bytes.
    pub fn whole(bytes: impl Into<Bytes>) -> Self {
        Self {
            bytes: bytes.into(),
            complete: true,
            file: None,
            found: None,
        }
    }

    /// The start of a resource, read until it made the thumbnail.
    pub fn cut_short(bytes: impl Into<Bytes>) -> Self {
        Self {
            bytes: bytes.into(),
            complete: false,
            file: None,
            found: None,
        }
    }

    /// The same body, read from a local file that had `stamp` throughout
    /// the read.
    pub(crate) fn read_from_file(self, stamp: FileStamp) -> Self {
        Self {
            file: Some(Box::new(stamp)),
            ..self
        }
    }

    /// Keeps what a reader found in the bytes with them.
    pub(crate) fn set_found(&mut self, found: Option<Found>) {
        self.found = found.map(|found| Box::new((found, FoundIn::of(&self.bytes))));
    }

    /// What a reader found in the bytes, if it was a `T` and the bytes are
    /// still those it was found in: a walk over other bytes would vouch
    /// for what it never read.
    pub(crate) fn found<T: Any>(&self) -> Option<&T> {
        let (found, found_in) = self.found.as_deref()?;
        if *found_in != FoundIn::of(&self.bytes) {
            return None;
        }
        let found: &dyn Any = &*found.0;
        found.downcast_ref()
    }

    /// The stamp of the local file the body was read from, if it was.
    #[cfg_attr(not(feature = "shared-thumbnails"), allow(dead_code))]
    pub(crate) fn file_stamp(&self) -> Option<FileStamp> {
        self.file.as_deref().copied()
    }
}

/// A local file as one open handle saw it (`fstat`): what tells whether a
/// thumbnail made from its bytes is still its thumbnail (the standard's
/// whole seconds and size) and whether it changed (the nanoseconds and
/// the inode too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileStamp {
    /// Modification time, whole seconds since 1970.
    pub(crate) mtime: u64,
    pub(crate) mtime_nanos: u32,
    pub(crate) size: u64,
    /// The file's inode, on Unix (0 elsewhere): a file replaced by another.
    pub(crate) inode: u64,
}

impl FileStamp {
    /// The stamp of an open file's metadata; `None` without a modification
    /// time after 1970.
    pub(crate) fn of(metadata: &std::fs::Metadata) -> Option<Self> {
        let mtime = metadata
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(metadata);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Self {
            mtime: mtime.as_secs(),
            mtime_nanos: mtime.subsec_nanos(),
            size: metadata.len(),
            inode,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A walk found in some bytes vouches for those bytes alone: an app's
    /// layer that puts others in the body's public `bytes`, even equal
    /// ones or a slice of them, leaves nothing found.
    #[test]
    fn what_was_found_goes_with_the_bytes_it_was_found_in_alone() {
        let mut body = Body::whole(vec![1u8, 2, 3]);
        body.set_found(Some(Found::new(7u32)));
        assert_eq!(body.found::<u32>(), Some(&7));
        assert_eq!(body.clone().found::<u32>(), Some(&7), "clones share it");
        assert_eq!(body.found::<u64>(), None, "of another type");
        let mut replaced = body.clone();
        replaced.bytes = Bytes::from(vec![1u8, 2, 3]);
        assert_eq!(replaced.found::<u32>(), None);
        let mut sliced = body.clone();
        sliced.bytes = sliced.bytes.slice(..2);
        assert_eq!(sliced.found::<u32>(), None);
    }
}
