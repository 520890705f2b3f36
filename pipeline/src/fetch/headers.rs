//! Headers: what every request carries besides its URL. thumbpipe's
//! `User-Agent` and an `Accept` naming the formats the decoder reads, the
//! app's own headers ([`FetchConfig::headers`](crate::FetchConfig::headers)),
//! and its hook for the headers of each request
//! ([`FetchConfig::header_hook`](crate::FetchConfig::header_hook)).
//!
//! Plain data, made when the pipeline is built. The load actor puts the
//! app's headers and the hook's into each [`FetchRequest`](crate::FetchRequest)
//! as the fetch starts, so every layer (the disk cache) and any fetcher see
//! them, as the hook left them. The pipeline's default fetcher adds only
//! thumbpipe's `User-Agent` and `Accept` where a request has none; an
//! [`HttpFetcher`](crate::HttpFetcher) made by the app sends the app's
//! headers on its own.

use std::sync::Arc;

use http::header::{ACCEPT, HeaderMap, HeaderValue, USER_AGENT};
use url::Url;

/// The `User-Agent` of every request unless the app sets its own.
const THUMBPIPE: &str = concat!("thumbpipe/", env!("CARGO_PKG_VERSION"));

/// A function that adds or changes the headers of each request: a token
/// that rotates, a signature over the URL. Called on the pipeline's I/O
/// runtime as each fetch starts, with the headers of
/// [`FetchConfig::headers`](crate::FetchConfig::headers) already in the
/// map; it must return at once (read a token kept up to date elsewhere,
/// never wait for one). A panic in it fails that load with
/// [`Error::FetcherPanicked`](crate::Error::FetcherPanicked), its reason
/// naming `fetch.header_hook`.
///
/// ```
/// use std::sync::{Arc, RwLock};
/// use thumbpipe::http::HeaderValue;
///
/// let token = Arc::new(RwLock::new(String::from("first")));
/// let current = Arc::clone(&token);
/// let mut config = thumbpipe::Config::default();
/// config.fetch.header_hook = Some(thumbpipe::HeaderHook::new(move |_url, headers| {
///     let bearer = format!("Bearer {}", current.read().unwrap_or_else(|e| e.into_inner()));
///     if let Ok(value) = HeaderValue::from_str(&bearer) {
///         headers.insert(thumbpipe::http::header::AUTHORIZATION, value);
///     }
/// }));
/// // Later, when the app renews its token:
/// *token.write().unwrap() = String::from("second");
/// ```
#[derive(Clone)]
pub struct HeaderHook(Arc<HookFn>);

type HookFn = dyn Fn(&Url, &mut HeaderMap) + Send + Sync;

impl HeaderHook {
    /// A hook that calls `hook` with each request's URL and headers.
    pub fn new(hook: impl Fn(&Url, &mut HeaderMap) + Send + Sync + 'static) -> Self {
        Self(Arc::new(hook))
    }
}

impl std::fmt::Debug for HeaderHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeaderHook(..)")
    }
}

/// The headers the pipeline puts into every request: the app's, then the
/// hook's.
#[derive(Debug)]
pub(crate) struct RequestHeaders {
    fixed: HeaderMap,
    hook: Option<HeaderHook>,
}

impl RequestHeaders {
    pub(crate) fn new(fixed: HeaderMap, hook: Option<HeaderHook>) -> Self {
        Self { fixed, hook }
    }

    /// The headers of a request for `url`.
    pub(crate) fn for_url(&self, url: &Url) -> HeaderMap {
        let mut headers = self.fixed.clone();
        if let Some(HeaderHook(hook)) = &self.hook {
            hook(url, &mut headers);
        }
        headers
    }
}

/// The default fetcher's headers: thumbpipe's `User-Agent` and `accept`,
/// replaced by any the app gives in `app`, and the rest of `app`'s.
pub(crate) fn client_defaults(app: &HeaderMap, accept: HeaderValue) -> HeaderMap {
    let mut headers = app.clone();
    headers
        .entry(USER_AGENT)
        .or_insert(HeaderValue::from_static(THUMBPIPE));
    headers.entry(ACCEPT).or_insert(accept);
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{AUTHORIZATION, COOKIE};

    #[test]
    fn the_apps_headers_replace_the_defaults_and_keep_their_repeats() {
        let mut app = HeaderMap::new();
        app.insert(USER_AGENT, HeaderValue::from_static("gallery/2.0"));
        app.append(COOKIE, HeaderValue::from_static("a=1"));
        app.append(COOKIE, HeaderValue::from_static("b=2"));
        let images = HeaderValue::from_static("image/png");
        let headers = client_defaults(&app, images.clone());
        assert_eq!(headers[USER_AGENT], "gallery/2.0");
        assert_eq!(headers[ACCEPT], images);
        assert_eq!(headers.get_all(COOKIE).iter().count(), 2);
        let defaults = client_defaults(&HeaderMap::new(), images);
        assert_eq!(defaults[USER_AGENT], THUMBPIPE);
        app.insert(ACCEPT, HeaderValue::from_static("image/avif"));
        let apps = client_defaults(&app, HeaderValue::from_static("image/png"));
        assert_eq!(apps[ACCEPT], "image/avif");
    }

    #[test]
    fn the_hook_sees_the_url_and_the_apps_headers() {
        let mut fixed = HeaderMap::new();
        fixed.insert(COOKIE, HeaderValue::from_static("session=1"));
        let hook = HeaderHook::new(|url, headers| {
            assert!(headers.contains_key(COOKIE));
            let signed = format!("sig-{}", url.path());
            headers.insert(AUTHORIZATION, HeaderValue::from_str(&signed).unwrap());
        });
        let request = RequestHeaders::new(fixed, Some(hook));
        let url = Url::parse("https://cdn.example/a.jpg").unwrap();
        let headers = request.for_url(&url);
        assert_eq!(headers[AUTHORIZATION], "sig-/a.jpg");
        assert_eq!(headers[COOKIE], "session=1");
    }
}
