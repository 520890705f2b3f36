//! Request: what a request for a thumbnail is made of, and the ids that
//! name requests and loads; its URL parsed once, on the UI side, against
//! the schemes the pipeline has a source for, and the host its fetch
//! counts against, both handed on as data. A leaf of the
//! crate: every stage may use it, and it uses none of them.

use std::sync::Arc;

use url::Url;

use crate::error::Error;

/// Identifies one load task for its whole life; allocated by the load
/// actor's registry, increasing.
pub(crate) type TaskId = u64;

/// Names one request: what [`Pipeline::request`](crate::Pipeline::request)
/// returns and what its [`Completion`](crate::Completion) carries.
///
/// A row keeps its request id while it asks for the same URL and size;
/// asking for another URL or size is a new request with a new id. Ids are
/// unique over a pipeline's life and increase in the order requests are
/// made, so of two ids the greater is the newer request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub(crate) u64);

impl RequestId {
    /// The id as a number, for logs and maps keyed by integers.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "request {}", self.0)
    }
}

/// How urgently a row wants its thumbnail. The fetch and decode queues
/// serve [`Priority::Destination`], then [`Priority::Visible`], then
/// [`Priority::Prefetch`], and within a priority the newest request first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    /// Rows near the viewport, loaded ahead of need.
    Prefetch,
    /// Rows on screen now.
    #[default]
    Visible,
    /// Rows where a coasting list will come to rest
    /// ([`crate::CoastPrediction::resting_rows`]): served before the rows
    /// it passes on the way, which will have left by the time theirs
    /// arrive.
    Destination,
}

/// The box a thumbnail is made for, and how the image goes in it: scaled
/// down to fit inside ([`Fit::Inside`], the default), cropped to the box's
/// shape ([`Fit::Cover`]), or at its own size, inside the box
/// ([`Fit::Original`]). Any way, a raster image is never scaled up (an SVG
/// is drawn at the box's size, or its own), and the thumbnail is never
/// larger than the box.
///
/// ```
/// use thumbpipe::{Fit, TargetSize};
///
/// // A list row's icon: the whole image, inside 64x64.
/// assert_eq!(TargetSize::square(64).fit, Fit::Inside);
/// // A photo grid's cell: its centre, cropped to fill 128x128.
/// assert_eq!(TargetSize::cover(128, 128).fit, Fit::Cover);
/// // A viewer on a screen of 2 pixels per point: the image at its own
/// // size (an SVG at twice its own), inside the GPU's largest texture.
/// assert_eq!(
///     TargetSize::original(200, 8192).fit,
///     Fit::Original { percent: 200 }
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetSize {
    /// Largest width, in pixels.
    pub width: u32,
    /// Largest height, in pixels.
    pub height: u32,
    /// How the image goes in the box.
    pub fit: Fit,
}

impl TargetSize {
    /// A `width` x `height` box the whole image fits inside.
    pub const fn new(width: u32, height: u32) -> Self {
        Self {
            width,
            height,
            fit: Fit::Inside,
        }
    }

    /// A square box the whole image fits inside.
    pub const fn square(side: u32) -> Self {
        Self::new(side, side)
    }

    /// A `width` x `height` box the image fills, cropped to its shape: see
    /// [`Fit::Cover`].
    pub const fn cover(width: u32, height: u32) -> Self {
        Self {
            width,
            height,
            fit: Fit::Cover,
        }
    }

    /// The image at its own size times `percent` / 100, inside a square
    /// of `max_side`: see [`Fit::Original`].
    pub const fn original(percent: u16, max_side: u32) -> Self {
        Self {
            width: max_side,
            height: max_side,
            fit: Fit::Original { percent },
        }
    }
}

/// How an image goes in its [`TargetSize`] box.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fit {
    /// The whole image, scaled down to fit inside the box, its aspect ratio
    /// kept: a 400x200 image in a 64x64 box is 64x32.
    #[default]
    Inside,
    /// The image's centre, cropped to the box's aspect ratio and scaled
    /// down to the box: a 400x200 image in a 64x64 box is its middle
    /// 200x200 at 64x64. The crop happens during the decode, so a 12 MP
    /// photo in a 128x128 grid cell costs 128x128x4 bytes, not a larger
    /// thumbnail to clip. An image smaller than the box keeps its size,
    /// cropped to the box's shape (a 100x50 image in 64x64 is 50x50): draw
    /// it scaled to the box.
    Cover,
    /// The image at its own size times `percent` / 100, and smaller only
    /// to fit inside the box (a GPU's largest texture, say), its aspect
    /// ratio kept: what a viewer shows at one pixel a pixel. A raster image
    /// is scaled down (`percent` under 100), never up; an SVG is drawn at
    /// its size in user units times the percentage, so 200 draws it sharp
    /// on a screen of 2 pixels per point. A `percent` of 0 is taken as 1.
    Original {
        /// The scale, in hundredths: 100 is the image's own size.
        percent: u16,
    },
}

/// Checks that `url` is an absolute URL of a scheme in `schemes`: `http`
/// and `https` with a host, `file` a local path: what every request is
/// parsed by, once, on the UI side. Whether a file lies under the root is
/// checked when it is read, off the UI thread.
pub(crate) fn parse_url(url: &str, schemes: &Schemes) -> Result<Url, Error> {
    let unsupported = |reason: String| Error::UnsupportedUrl {
        url: url.to_owned(),
        reason,
    };
    let parsed = Url::parse(url).map_err(|e| unsupported(format!("not a URL ({e})")))?;
    match parsed.scheme() {
        "file" if !schemes.has("file") => Err(files_off(url)),
        scheme if !schemes.has(scheme) => Err(no_source(url, scheme)),
        "http" | "https" if parsed.host_str().is_none() => {
            Err(unsupported("the URL has no host".into()))
        }
        "file" if parsed.to_file_path().is_err() => {
            Err(unsupported("not a local file path".into()))
        }
        _ => Ok(parsed),
    }
}

/// The key every `file://` URL's read counts against: local files are a
/// lane of their own (`FetchConfig::file_readers`), apart from the
/// network's hosts and its global limit. No host key of a network URL
/// (`host:port`) ends in a bare colon.
pub(crate) const FILES_HOST: &str = "file:";

/// The host (and port) a URL's fetch counts against; for a `file://` URL,
/// [`FILES_HOST`]; for a URL of an app's scheme, its scheme and host
/// (`demo://covers`), or its scheme alone when it has no host (`myapp:42`),
/// so two sources' hosts of one name are two lanes.
pub(crate) fn host_key(url: &Url) -> String {
    match (url.scheme(), url.host_str()) {
        ("file", _) => return FILES_HOST.to_owned(),
        ("http" | "https", _) => {}
        (scheme, None) => return format!("{scheme}:"),
        (scheme, Some(host)) => return format!("{scheme}://{host}"),
    }
    format!(
        "{}:{}",
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// Why a `file` URL is refused when files are off.
pub(crate) fn files_off(url: &str) -> Error {
    Error::UnsupportedUrl {
        url: url.to_owned(),
        reason: "file URLs are off; add a directory to config.fetch.file_roots to allow the \
                 files under it"
            .into(),
    }
}

/// The schemes a pipeline has a source for, lower case, sorted.
#[derive(Clone, Debug, Default)]
pub(crate) struct Schemes(Arc<[String]>);

impl Schemes {
    /// The schemes `names` (any case), lower case and sorted.
    pub(crate) fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut names: Vec<String> = names.into_iter().map(str::to_ascii_lowercase).collect();
        names.sort();
        names.dedup();
        Self(names.into())
    }

    /// Whether `scheme` (any case) has a source.
    pub(crate) fn has(&self, scheme: &str) -> bool {
        self.0
            .iter()
            .any(|known| known.eq_ignore_ascii_case(scheme))
    }

    /// The schemes, lower case, in order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// Whether `uri` begins with a scheme that has a source.
    #[cfg(any(feature = "egui", test))]
    pub(crate) fn takes(&self, uri: &str) -> bool {
        uri.split_once(':')
            .is_some_and(|(scheme, _)| is_scheme(scheme) && self.has(scheme))
    }
}

/// Whether `name` is a URL scheme (RFC 3986: a letter, then letters,
/// digits, `+`, `-` or `.`).
pub(crate) fn is_scheme(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Why a URL whose scheme has no source is refused.
pub(crate) fn no_source(url: &str, scheme: &str) -> Error {
    Error::UnsupportedUrl {
        url: url.to_owned(),
        reason: format!(
            "no source for the scheme '{scheme}': thumbpipe serves http and https (and file \
             under config.fetch.file_roots); add others with PipelineBuilder::source"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web() -> Schemes {
        Schemes::of(["http", "https"])
    }

    #[test]
    fn urls_of_a_scheme_with_no_source_are_refused() {
        let files = Schemes::of(["http", "https", "file"]);
        assert!(parse_url("http://127.0.0.1:8080/a.jpg", &web()).is_ok());
        assert!(parse_url("https://example.com/a.jpg", &web()).is_ok());
        assert!(parse_url("file:///srv/a.jpg", &files).is_ok());
        assert!(parse_url("file://host/a.jpg", &files).is_err());
        let apps = Schemes::of(["demo", "myapp"]);
        assert!(parse_url("demo://cover/7", &apps).is_ok());
        assert!(parse_url("MyApp:42", &apps).is_ok());
        for bad in [
            "ftp://example.com/a.jpg",
            "file:///etc/passwd",
            "demo://cover/7",
            "a.jpg",
            "",
            "http://",
        ] {
            assert!(
                matches!(parse_url(bad, &web()), Err(Error::UnsupportedUrl { .. })),
                "{bad}"
            );
        }
        let Err(Error::UnsupportedUrl { reason, .. }) = parse_url("file:///a", &web()) else {
            panic!("file URLs with no root are refused");
        };
        assert!(reason.contains("file_roots"), "{reason}");
        let Err(Error::UnsupportedUrl { reason, .. }) = parse_url("s3://b/k", &apps) else {
            panic!("a scheme with no source is refused");
        };
        assert!(reason.contains("PipelineBuilder::source"), "{reason}");
    }

    #[test]
    fn hosts_include_the_port() {
        let a = parse_url("http://h:1/x", &web()).unwrap();
        let b = parse_url("http://h:2/x", &web()).unwrap();
        assert_ne!(host_key(&a), host_key(&b));
        assert_eq!(
            host_key(&parse_url("https://h/x", &web()).unwrap()),
            "h:443"
        );
        let files = Schemes::of(["file"]);
        let file = parse_url("file:///srv/a.jpg", &files).unwrap();
        assert_eq!(host_key(&file), FILES_HOST);
        assert_ne!(
            host_key(&parse_url("http://file/x", &web()).unwrap()),
            FILES_HOST
        );
        let apps = Schemes::of(["myapp", "demo"]);
        assert_eq!(host_key(&parse_url("myapp:42", &apps).unwrap()), "myapp:");
        assert_eq!(
            host_key(&parse_url("demo://covers/7", &apps).unwrap()),
            "demo://covers"
        );
        let s3 = Schemes::of(["s3", "zip"]);
        assert_ne!(
            host_key(&parse_url("s3://photos/a", &s3).unwrap()),
            host_key(&parse_url("zip://photos/a", &s3).unwrap())
        );
    }

    #[test]
    fn scheme_names_follow_the_url_grammar() {
        for good in ["s3", "demo", "x-app+v1.2"] {
            assert!(is_scheme(good), "{good}");
        }
        for bad in ["", "3d", "my app", "a:b", "ü"] {
            assert!(!is_scheme(bad), "{bad}");
        }
    }
}
