//! HTTP caching for images: `ETag`, `Last-Modified`, `Cache-Control` and
//! `304 Not Modified`.
//!
//! Plain functions called by the image handler for every image it would
//! send whole. An image is a function of its id, size, format, the JPEG
//! quality and the seed, so its strong ETag names exactly those; its
//! `Last-Modified` is the server's start, so a client that kept it across
//! a restart of the server revalidates and gets a 304, as from a real
//! server whose files did not change.

use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::images::{Format, ImageKey};

/// What a request asked of the caching headers (`?max_age=`, `?no_store=1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CachingAsked {
    /// Overrides the server's `max_age`.
    pub(crate) max_age: Option<Duration>,
    /// `Cache-Control: no-store`.
    pub(crate) no_store: bool,
}

/// The validators and freshness of one image.
#[derive(Debug)]
pub(crate) struct Caching {
    etag: String,
    last_modified: SystemTime,
    cache_control: Option<String>,
}

impl Caching {
    /// The headers `key` gets, served by a server started at `started`.
    pub(crate) fn new(
        key: ImageKey,
        jpeg_quality: u8,
        seed: u64,
        started: SystemTime,
        server_max_age: Option<Duration>,
        asked: CachingAsked,
    ) -> Self {
        let extension = key.format.extension();
        let quality = match key.format {
            Format::Jpeg => format!("-q{jpeg_quality}"),
            Format::Camera {
                thumbnail_width,
                progressive,
            } => format!(
                "-q{jpeg_quality}-exif{thumbnail_width}{}",
                if progressive { "-progressive" } else { "" }
            ),
            Format::Png | Format::Gif => String::new(),
        };
        let cache_control = if asked.no_store {
            Some("no-store".to_owned())
        } else {
            asked
                .max_age
                .or(server_max_age)
                .map(|age| format!("max-age={}", age.as_secs()))
        };
        Self {
            etag: format!(
                "\"{}-{}x{}.{extension}{quality}-s{seed:x}\"",
                key.id, key.width, key.height
            ),
            last_modified: started,
            cache_control,
        }
    }

    /// Whether the request's conditional headers match the image as it is:
    /// `If-None-Match` naming its ETag (or `*`), or, without an
    /// `If-None-Match`, an `If-Modified-Since` no earlier than its
    /// `Last-Modified` (RFC 9110 §13.2.2).
    pub(crate) fn not_modified(&self, request: &HeaderMap) -> bool {
        if let Some(tags) = request.get(header::IF_NONE_MATCH) {
            let Ok(tags) = tags.to_str() else {
                return false;
            };
            return tags.split(',').map(str::trim).any(|tag| {
                // Weak comparison, as If-None-Match asks (§13.1.2).
                tag == "*" || tag.trim_start_matches("W/") == self.etag
            });
        }
        request
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|since| since.to_str().ok())
            .and_then(|since| httpdate::parse_http_date(since).ok())
            .is_some_and(|since| since >= truncated(self.last_modified))
    }

    /// `304 Not Modified`: the validators and freshness, no body.
    pub(crate) fn not_modified_response(&self) -> Response {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        self.add_headers(response.headers_mut());
        response
    }

    /// `200 OK` with the image.
    pub(crate) fn full_response(&self, content_type: &'static str, bytes: Bytes) -> Response {
        let mut response = ([(header::CONTENT_TYPE, content_type)], bytes).into_response();
        self.add_headers(response.headers_mut());
        response
    }

    fn add_headers(&self, headers: &mut HeaderMap) {
        let values = [
            (header::ETAG, Some(self.etag.clone())),
            (
                header::LAST_MODIFIED,
                Some(httpdate::fmt_http_date(self.last_modified)),
            ),
            (header::CACHE_CONTROL, self.cache_control.clone()),
        ];
        for (name, value) in values {
            if let Some(value) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
                headers.insert(name, value);
            }
        }
    }
}

/// `time` to whole seconds, as an HTTP date carries it.
fn truncated(time: SystemTime) -> SystemTime {
    let seconds = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caching(asked: CachingAsked) -> Caching {
        let key = ImageKey {
            id: 7,
            width: 64,
            height: 48,
            format: Format::Jpeg,
        };
        let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        Caching::new(key, 85, 3, started, Some(Duration::from_secs(60)), asked)
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_str(value).unwrap()))
            .collect()
    }

    #[test]
    fn the_etag_names_what_the_image_is_made_from() {
        let image = caching(CachingAsked::default());
        assert_eq!(image.etag, "\"7-64x48.jpg-q85-s3\"");
        assert_eq!(image.cache_control.as_deref(), Some("max-age=60"));
        let asked = CachingAsked {
            max_age: Some(Duration::from_secs(5)),
            no_store: false,
        };
        assert_eq!(caching(asked).cache_control.as_deref(), Some("max-age=5"));
        let asked = CachingAsked {
            max_age: Some(Duration::from_secs(5)),
            no_store: true,
        };
        assert_eq!(caching(asked).cache_control.as_deref(), Some("no-store"));
    }

    #[test]
    fn conditional_requests_match_the_etag_then_the_date() {
        let image = caching(CachingAsked::default());
        let etag = image.etag.clone();
        assert!(image.not_modified(&headers(&[(header::IF_NONE_MATCH, &etag)])));
        let list = format!("\"other\", W/{etag}");
        assert!(image.not_modified(&headers(&[(header::IF_NONE_MATCH, &list)])));
        assert!(image.not_modified(&headers(&[(header::IF_NONE_MATCH, "*")])));
        assert!(!image.not_modified(&headers(&[(header::IF_NONE_MATCH, "\"7-64x48.png-s3\"")])));
        let date = httpdate::fmt_http_date(image.last_modified);
        assert!(image.not_modified(&headers(&[(header::IF_MODIFIED_SINCE, &date)])));
        // An ETag that does not match wins over a date that does.
        assert!(!image.not_modified(&headers(&[
            (header::IF_NONE_MATCH, "\"stale\""),
            (header::IF_MODIFIED_SINCE, &date),
        ])));
        let earlier = httpdate::fmt_http_date(image.last_modified - Duration::from_secs(1));
        assert!(!image.not_modified(&headers(&[(header::IF_MODIFIED_SINCE, &earlier)])));
        assert!(!image.not_modified(&HeaderMap::new()));
    }
}
