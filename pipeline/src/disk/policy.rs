//! Policy: the HTTP caching rules as this cache applies them, through
//! `http-cache-semantics` as a private cache (`private` responses are
//! kept, `s-maxage` is not used), except that a response to a request
//! with credentials is kept only when a shared cache could keep it. Plain functions, called by the fetch
//! stage when a response arrives and by the store when an entry is read;
//! every policy is made from [`response_parts`], which reads an absurd
//! `Age` as the most RFC 9111 allows.

use std::time::SystemTime;

use http_cache_semantics::{BeforeRequest, CacheOptions, CachePolicy};
use url::Url;

/// How the policies are computed: a private cache of one user's client.
pub(crate) fn cache_options() -> CacheOptions {
    CacheOptions {
        shared: false,
        ..CacheOptions::default()
    }
}

/// Whether a request with `headers` carries a user's credentials, whose
/// response the cache, keyed by URL alone, must not give another request.
pub(super) fn carries_credentials(headers: &http::HeaderMap) -> bool {
    headers.contains_key(http::header::AUTHORIZATION) || headers.contains_key(http::header::COOKIE)
}

/// Whether a response with `headers` to a request with credentials may be
/// kept and given to other requests: RFC 9111, 3.5, allows a shared cache
/// that for `public`, `s-maxage` and `must-revalidate`.
pub(super) fn may_be_shared(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::CACHE_CONTROL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|directive| {
            let name = directive.split('=').next().unwrap_or_default();
            name.trim().to_ascii_lowercase()
        })
        .any(|name| matches!(name.as_str(), "public" | "s-maxage" | "must-revalidate"))
}

/// The request the policies are computed for: a plain GET of `url`, as the
/// fetcher sends it. `None` for a URL `http` cannot represent, which is
/// then not cached.
pub(crate) fn request_parts(url: &Url) -> Option<http::request::Parts> {
    let request = http::Request::get(url.as_str()).body(()).ok()?;
    Some(request.into_parts().0)
}

/// The most seconds an `Age` header is read as: RFC 9111 (1.2.2) has a
/// cache read any larger delta-seconds as 2^31. http-cache-semantics adds
/// the header's value to the time a response has been kept, and a value
/// near `u64::MAX` overflows that sum (a panic in every later use of the
/// policy).
pub(crate) const MAX_AGE_SECONDS: u64 = 1 << 31;

/// A response's status and headers, for the policies: every policy is
/// made from these, so an `Age` past [`MAX_AGE_SECONDS`] is read as that
/// here, before the caching rules see it.
pub(crate) fn response_parts(
    status: http::StatusCode,
    headers: &http::HeaderMap,
) -> http::response::Parts {
    let mut response = http::Response::new(());
    *response.status_mut() = status;
    let mut headers = headers.clone();
    if headers
        .get_all(http::header::AGE)
        .iter()
        .any(|age| !sane_age(age.to_str().ok()))
    {
        headers.insert(http::header::AGE, http::HeaderValue::from(MAX_AGE_SECONDS));
    }
    *response.headers_mut() = headers;
    response.into_parts().0
}

/// Whether an `Age` value is one the caching rules can add to: not a
/// number (read as 0), or a number up to [`MAX_AGE_SECONDS`].
pub(crate) fn sane_age(value: Option<&str>) -> bool {
    value
        .and_then(|age| age.trim().parse::<u64>().ok())
        .is_none_or(|seconds| seconds <= MAX_AGE_SECONDS)
}

/// Whether a stored copy could ever save a download: it is fresh now, or
/// it can be revalidated (the server gave an `ETag` or `Last-Modified`).
pub(super) fn reusable(policy: &CachePolicy, request: &http::request::Parts) -> bool {
    match policy.before_request(request, SystemTime::now()) {
        BeforeRequest::Fresh(_) => true,
        BeforeRequest::Stale { request, .. } => {
            request.headers.contains_key(http::header::IF_NONE_MATCH)
                || request
                    .headers
                    .contains_key(http::header::IF_MODIFIED_SINCE)
        }
    }
}

/// Tests: a policy of a response fresh for ten minutes.
#[cfg(test)]
pub(super) fn fresh_policy() -> CachePolicy {
    let url = Url::parse("http://a.test/1.jpg").unwrap();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("max-age=600"),
    );
    let response = response_parts(http::StatusCode::OK, &headers);
    let request = request_parts(&url).unwrap();
    CachePolicy::new_options(&request, &response, SystemTime::now(), cache_options())
}

/// Tests: a new, empty scratch directory `thumbpipe-{name}-{pid}`.
#[cfg(test)]
pub(super) fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("thumbpipe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(headers: &[(&'static str, &'static str)]) -> (CachePolicy, http::request::Parts) {
        let url = Url::parse("http://images.example/1.jpg").unwrap();
        let request = request_parts(&url).unwrap();
        let mut map = http::HeaderMap::new();
        for (name, value) in headers {
            map.insert(
                http::header::HeaderName::from_static(name),
                http::HeaderValue::from_static(value),
            );
        }
        let response = response_parts(http::StatusCode::OK, &map);
        let policy =
            CachePolicy::new_options(&request, &response, SystemTime::now(), cache_options());
        (policy, request)
    }

    fn kept(headers: &[(&'static str, &'static str)]) -> bool {
        let (policy, request) = policy(headers);
        policy.is_storable() && reusable(&policy, &request)
    }

    const ETAG: (&str, &str) = ("etag", "\"v1\"");

    #[test]
    fn what_is_written_follows_the_caching_headers() {
        assert!(kept(&[("cache-control", "max-age=60")]));
        // A private cache keeps what a shared one may not.
        assert!(kept(&[("cache-control", "private, max-age=60")]));
        assert!(!kept(&[("cache-control", "no-store"), ETAG]));
        // Kept, to be revalidated every time.
        assert!(kept(&[("cache-control", "no-cache"), ETAG]));
        assert!(kept(&[("cache-control", "max-age=0"), ETAG]));
        // Stale at once and nothing to revalidate with: no use on disk.
        assert!(!kept(&[("cache-control", "no-cache")]));
        assert!(!kept(&[]));
    }

    #[test]
    fn credentials_are_kept_only_with_a_response_that_may_be_shared() {
        let shared = |value: &'static str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(
                http::header::CACHE_CONTROL,
                http::HeaderValue::from_static(value),
            );
            may_be_shared(&headers)
        };
        assert!(shared("public, max-age=60"));
        assert!(shared("max-age=60, S-MAXAGE=600"));
        assert!(shared("must-revalidate"));
        assert!(!shared("private, max-age=60"));
        assert!(!shared("max-age=60"));
        // A directive's name, not a value that contains one.
        assert!(!shared("x-note=\"public\""));
        assert!(!may_be_shared(&http::HeaderMap::new()));
        let mut request = http::HeaderMap::new();
        assert!(!carries_credentials(&request));
        request.insert(http::header::COOKIE, http::HeaderValue::from_static("s=1"));
        assert!(carries_credentials(&request));
    }

    #[test]
    fn no_cache_is_always_revalidated_with_its_etag() {
        let (policy, request) = policy(&[("cache-control", "no-cache"), ETAG]);
        match policy.before_request(&request, SystemTime::now()) {
            BeforeRequest::Stale { request, .. } => {
                assert_eq!(request.headers[http::header::IF_NONE_MATCH], "\"v1\"");
            }
            BeforeRequest::Fresh(_) => panic!("no-cache was used without asking"),
        }
    }

    #[test]
    fn a_policy_survives_the_index_round_trip() {
        let (policy, request) = policy(&[("cache-control", "max-age=600"), ETAG]);
        let stored = serde_json::to_value(&policy).unwrap();
        let back: CachePolicy = serde_json::from_value(stored).unwrap();
        assert!(matches!(
            back.before_request(&request, SystemTime::now()),
            BeforeRequest::Fresh(_)
        ));
    }
}
