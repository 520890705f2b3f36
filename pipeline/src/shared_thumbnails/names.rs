//! Names: where the shared cache keeps a file's thumbnail, as the
//! freedesktop.org Thumbnail Managing Standard names it. The file's
//! canonical URI (its absolute path, percent-escaped as GLib escapes it),
//! the MD5 of that URI as the file name, and the four size classes. Plain
//! functions; keep nothing.

use std::path::{Path, PathBuf};

use md5::{Digest as _, Md5};

use crate::request::{Fit, TargetSize};
use crate::small_files::hex;

/// A size class of the shared cache: a directory of thumbnails that fit
/// inside a square of its side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SizeClass {
    Normal,
    Large,
    XLarge,
    XxLarge,
}

impl SizeClass {
    /// Every class, smallest first.
    pub(super) const ALL: [Self; 4] = [Self::Normal, Self::Large, Self::XLarge, Self::XxLarge];

    /// The largest side of its thumbnails.
    pub(super) fn side(self) -> u32 {
        match self {
            Self::Normal => 128,
            Self::Large => 256,
            Self::XLarge => 512,
            Self::XxLarge => 1024,
        }
    }

    /// Its directory in the cache.
    pub(super) fn dir(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Large => "large",
            Self::XLarge => "x-large",
            Self::XxLarge => "xx-large",
        }
    }

    /// The class a thumbnail for `target` is written in: the smallest
    /// whose thumbnails still cover the target once fitted to it (for a
    /// cover crop, of an image up to twice as wide as tall; a wider one is
    /// decoded again at the target); none for a target past the largest,
    /// or at an image's own size.
    pub(super) fn for_writing(target: TargetSize) -> Option<Self> {
        let longest = target.width.max(target.height);
        let needed = match target.fit {
            Fit::Inside => longest,
            Fit::Cover => longest.saturating_mul(2),
            _ => return None,
        };
        Self::ALL.into_iter().find(|class| class.side() >= needed)
    }
}

/// The canonical URI of the file at `path` (absolute, links not resolved),
/// as GLib's `g_filename_to_uri` writes it, which the standard's hash is
/// of: `file://`, then the path's bytes with every byte but ASCII letters,
/// digits and `-._~!$&'()*+,=:@/` escaped as `%XX`. A Windows path
/// `C:\a b.jpg` is `file:///C:/a%20b.jpg`.
pub(super) fn canonical_uri(path: &Path) -> Option<String> {
    let bytes = path_bytes(path)?;
    let mut uri = String::with_capacity(7 + bytes.len() * 3 / 2);
    uri.push_str("file://");
    for byte in bytes {
        if byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,=:@/".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    Some(uri)
}

/// The path's bytes as the URI escapes them: as they are on Unix; on
/// Windows, its UTF-8 with `/` for `\` and a `/` before the drive.
fn path_bytes(path: &Path) -> Option<Vec<u8>> {
    if !path.is_absolute() {
        return None;
    }
    // `a//b` and `a/./b` as `a/b`, as GLib writes them.
    let path: PathBuf = path.components().collect();
    let path = path.as_path();
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        Some(path.as_os_str().as_bytes().to_vec())
    }
    #[cfg(not(unix))]
    {
        let text = path.to_str()?.replace('\\', "/");
        Some(match text.starts_with('/') {
            true => text.into_bytes(),
            false => format!("/{text}").into_bytes(),
        })
    }
}

/// The file name of the thumbnails of the file whose canonical URI is
/// `uri`: the MD5 of the URI in lowercase hex, `.png`.
pub(super) fn thumbnail_name(uri: &str) -> String {
    let mut name = hex(&Md5::digest(uri.as_bytes()));
    name.push_str(".png");
    name
}

/// The directory of this version's failure entries, under the cache's
/// `fail/`: `thumbpipe-VERSION`.
pub(super) fn fail_dir_name() -> String {
    concat!("thumbpipe-", env!("CARGO_PKG_VERSION")).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_escaped_as_glib_escapes_them() {
        // What GIO 2.74's `gio info` prints as the file's `uri:`.
        assert_eq!(
            canonical_uri(Path::new("/tmp/photos/a b;#\u{e9}.jpg")).unwrap(),
            "file:///tmp/photos/a%20b%3B%23%C3%A9.jpg"
        );
        assert_eq!(
            canonical_uri(Path::new("/p/~-_.!$&'()*+,=:@%?x")).unwrap(),
            "file:///p/~-_.!$&'()*+,=:@%25%3Fx"
        );
        assert_eq!(canonical_uri(Path::new("relative.jpg")), None);
        assert_eq!(
            canonical_uri(Path::new("/a//b/./c.jpg")).unwrap(),
            "file:///a/b/c.jpg"
        );
    }

    #[test]
    fn names_are_the_md5_of_the_uri() {
        // The standard's own example.
        assert_eq!(
            thumbnail_name("file:///home/jens/photos/me.png"),
            "c6ee772d9e49320e97ec29a7eb5b1697.png"
        );
    }

    #[test]
    fn thumbnails_are_written_in_the_smallest_class_that_covers_the_target() {
        let class = |target| SizeClass::for_writing(target).map(SizeClass::side);
        assert_eq!(class(TargetSize::square(64)), Some(128));
        assert_eq!(class(TargetSize::square(128)), Some(128));
        assert_eq!(class(TargetSize::new(300, 100)), Some(512));
        assert_eq!(class(TargetSize::cover(64, 64)), Some(128));
        assert_eq!(class(TargetSize::cover(100, 100)), Some(256));
        assert_eq!(class(TargetSize::cover(512, 512)), Some(1024));
        assert_eq!(class(TargetSize::cover(1000, 1000)), None);
        assert_eq!(class(TargetSize::square(2000)), None);
        assert_eq!(class(TargetSize::original(100, 4096)), None);
    }
}
