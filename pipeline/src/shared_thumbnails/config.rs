//! The settings of the desktop's shared thumbnails
//! ([`SharedThumbnailsConfig`]): where they are read from and written to.
//! Plain data, read by the pipeline's builder once.

use std::path::PathBuf;

use crate::error::BuildError;

/// Where shared thumbnails are read from or written to:
/// [`SharedThumbnailsConfig::read`] and [`SharedThumbnailsConfig::write`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThumbnailStore {
    /// The desktop's shared cache: `$XDG_CACHE_HOME/thumbnails`, or
    /// `~/.cache/thumbnails` without it, where GNOME, KDE, Xfce and the
    /// other freedesktop.org desktops keep theirs. None if neither
    /// `XDG_CACHE_HOME` nor `HOME` is set.
    Desktop,
    /// A directory of its own with the same layout: for a sandboxed app,
    /// or a platform without a desktop cache, or to keep an app's
    /// thumbnails apart.
    Dir(PathBuf),
    /// None.
    Off,
}

impl ThumbnailStore {
    /// The store's directory, if it has one.
    pub(crate) fn dir(&self) -> Option<PathBuf> {
        match self {
            Self::Desktop => desktop_dir(),
            Self::Dir(dir) => Some(dir.clone()),
            Self::Off => None,
        }
    }

    /// [`ThumbnailStore::Desktop`] where desktops keep the standard's cache
    /// (Unix but Apple's and Android) and the feature is built; elsewhere
    /// [`ThumbnailStore::Off`].
    fn platform_default() -> Self {
        if cfg!(all(
            feature = "shared-thumbnails",
            unix,
            not(any(
                target_os = "macos",
                target_os = "ios",
                target_os = "android"
            ))
        )) {
            Self::Desktop
        } else {
            Self::Off
        }
    }
}

/// `$XDG_CACHE_HOME/thumbnails`, or `$HOME/.cache/thumbnails`; a relative
/// `XDG_CACHE_HOME` is ignored, as the XDG base directory spec says.
fn desktop_dir() -> Option<PathBuf> {
    let absolute = |name| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let cache = absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache")));
    Some(cache?.join("thumbnails"))
}

/// Settings of the shared thumbnails of local files:
/// [`Config::shared_thumbnails`](crate::Config::shared_thumbnails). They
/// apply to `file://` URLs, which load only under
/// [`FetchConfig::file_roots`](crate::FetchConfig::file_roots).
///
/// Read: before a local image is read, the smallest of the standard's
/// thumbnails that covers the target is used if its `Thumb::MTime` (and
/// `Thumb::Size`, when it has one) match the file: no read of the photo,
/// no decode of it. The file is opened beneath its root as its read would
/// open it, and its stamp taken from the open handle. A thumbnail that
/// does not match, does not parse, or is not a regular file of the user's
/// of at most 16 MiB is passed over, never deleted; so is every thumbnail
/// in a directory (the cache's, or its size class's) that is a link, is
/// another user's, or others may write to, checked when the directory is
/// opened and again at its first use a second or more later: what is
/// read is only what the user alone could have written.
/// Where there is no valid thumbnail, a failure entry thumbpipe wrote
/// (`fail/thumbpipe-VERSION/`) for the same modification time makes the
/// load [`Error::Decode`](crate::Error::Decode) at once.
///
/// Write: a local image decoded by the default decoder (with
/// [`DecodeConfig::animation`](crate::DecodeConfig::animation) off: an
/// animation's frames are not the standard's still thumbnail) is decoded
/// in the size class that covers the target (`normal` for targets up to
/// 128 px; a cover crop takes the class twice its side), scaled down to
/// the target, and written in that class: an 8-bit PNG, not deflated up
/// to 256 px unless [`compress_writes`](Self::compress_writes) (RGB when the image
/// is opaque, RGBA otherwise: the standard asks for alpha, and GNOME's and
/// KDE's thumbnailers write a photo as RGB too, which every reader of the
/// cache reads) with the EXIF orientation applied and
/// `Thumb::URI`, `Thumb::MTime`, `Thumb::Size`, `Thumb::Mimetype`,
/// `Thumb::Image::Width` and `Thumb::Image::Height`, through a temporary
/// file renamed into place, directories 0700 and files 0600. Its stamp is
/// the one its read took from the file it read (the same before and after
/// the read), so a thumbnail is only ever of the bytes it was made from.
/// Never for a file inside the cache, nor when the file changed during its
/// load, nor into a directory that is a link or that another user owns or
/// may write to, nor for bytes an app's own [`Fetch`](crate::Fetch) read
/// (no read of thumbpipe's vouches for which file they came from). An image in a format this build decodes that the decoder refuses
/// gets a failure entry. A thumbnail shown at 64 px thus costs a decode at
/// 128 px (the same DCT scale of a camera photo) and a resize; a body read
/// only as far as a 64 px thumbnail needs (a camera's 160 px EXIF
/// thumbnail) still writes its 128 px one, and where the start of a file
/// holds too little for the class, or a cover crop of a panorama falls
/// short, the image is decoded at the target and nothing is written.
///
/// ```
/// use thumbpipe::ThumbnailStore;
///
/// let mut config = thumbpipe::Config::default();
/// config.fetch.file_roots.push("/home/ana/Pictures".into());
/// // A sandboxed app: a directory of its own, read and written (made 0700
/// // at the first write, and refused if another user owns it).
/// let dir = std::path::PathBuf::from("/home/ana/.var/app/org.example.Photos/cache/thumbnails");
/// config.shared_thumbnails.read = ThumbnailStore::Dir(dir.clone());
/// config.shared_thumbnails.write = ThumbnailStore::Dir(dir);
/// // Or none at all:
/// config.shared_thumbnails.write = ThumbnailStore::Off;
/// # let _ = config;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedThumbnailsConfig {
    /// Where thumbnails are looked for. Default:
    /// [`ThumbnailStore::Desktop`] on Unix other than macOS, iOS and
    /// Android (Linux, the BSDs: what a desktop user expects, a folder the
    /// file manager showed appears at once and costs no battery),
    /// [`ThumbnailStore::Off`] elsewhere or without the `shared-thumbnails`
    /// feature.
    pub read: ThumbnailStore,
    /// Where thumbnails decoded from local files are written. Default: as
    /// `read` (the desktop's apps share the work: what one decoded, the
    /// file manager and the others show). A write waits on the file
    /// threads behind every read a load waits for, so the rows in view
    /// never wait on it; at most 64 writes wait at once, and a thumbnail
    /// decoded past that is not written (a later load of the file writes
    /// it).
    pub write: ThumbnailStore,
    /// Whether written thumbnails of the `normal` and `large` classes
    /// (128 and 256 px) are deflated too; those of the larger classes
    /// always are. Default `false`: stored as they are (a valid PNG every
    /// reader of the cache reads). On 39 phone photos, a stored one takes
    /// half as much disk again (35 KB rather than 23 at 128 px, 139 KB
    /// rather than 87 at 256) and decodes 15-20 times faster (5 us rather
    /// than 83, 16 rather than 304), about 40% of a look-up's cost at 128
    /// px: a warm folder's first screen of 144 shows a frame sooner.
    /// `true` for an app whose users keep many thumbnails on small disks.
    /// Thumbnails other programs wrote are read either way.
    pub compress_writes: bool,
}

impl Default for SharedThumbnailsConfig {
    fn default() -> Self {
        Self {
            read: ThumbnailStore::platform_default(),
            write: ThumbnailStore::platform_default(),
            compress_writes: false,
        }
    }
}

impl SharedThumbnailsConfig {
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        let on = |store: &ThumbnailStore| *store != ThumbnailStore::Off;
        if cfg!(not(feature = "shared-thumbnails")) && (on(&self.read) || on(&self.write)) {
            return Err(BuildError::Config(
                "shared_thumbnails is set, but thumbpipe was built without its \
                 `shared-thumbnails` feature"
                    .into(),
            ));
        }
        Ok(())
    }
}
