//! The scheme router: which [`Fetch`] serves a URL, by its scheme. `http`
//! and `https` are the [`HttpFetcher`](crate::HttpFetcher)'s (or the app's
//! [`PipelineBuilder::fetcher`](crate::PipelineBuilder::fetcher)), `file`
//! is the local files' when there is a root, and an app adds its own with
//! [`PipelineBuilder::source`](crate::PipelineBuilder::source).
//!
//! Made once by the pipeline's builder; the router is the innermost
//! fetcher (the disk cache and the cut-short reads are layers in front of
//! it), and its [`Schemes`] are what a request's URL is checked against on
//! the UI side, and what the egui door takes. Both live as long as the
//! pipeline.

use std::sync::Arc;

use futures::future::BoxFuture;
use url::Url;

use super::{Fetch, FetchRequest, FetchResponse, fetch_from_response};
use crate::error::Error;

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

/// A fetcher for each scheme.
pub(crate) struct Sources {
    /// Lower-case scheme and its fetcher, one each.
    by_scheme: Vec<(String, Arc<dyn Fetch>)>,
}

impl Sources {
    /// The router over `sources`; a later entry for a scheme replaces an
    /// earlier one. Schemes are taken in lower case, as URLs parse them.
    pub(crate) fn new(sources: impl IntoIterator<Item = (String, Arc<dyn Fetch>)>) -> Self {
        let mut by_scheme: Vec<(String, Arc<dyn Fetch>)> = Vec::new();
        for (scheme, fetcher) in sources {
            let scheme = scheme.to_ascii_lowercase();
            by_scheme.retain(|(known, _)| *known != scheme);
            by_scheme.push((scheme, fetcher));
        }
        by_scheme.sort_by(|a, b| a.0.cmp(&b.0));
        Self { by_scheme }
    }

    /// The schemes served.
    pub(crate) fn schemes(&self) -> Schemes {
        Schemes::of(self.by_scheme.iter().map(|(scheme, _)| scheme.as_str()))
    }

    fn source(&self, url: &Url) -> Option<&Arc<dyn Fetch>> {
        // `Url` keeps its scheme in lower case.
        self.by_scheme
            .iter()
            .find(|(scheme, _)| scheme == url.scheme())
            .map(|(_, fetcher)| fetcher)
    }
}

impl Fetch for Sources {
    fetch_from_response!();

    fn fetch_response(
        &self,
        request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        match self.source(&request.url) {
            Some(fetcher) => fetcher.fetch_response(request),
            // Requests are checked against the schemes first: only a
            // layer's own request could come here.
            None => {
                let error = no_source(request.url.as_str(), request.url.scheme());
                Box::pin(std::future::ready(Err(error)))
            }
        }
    }
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
    use crate::fetch_fn;

    fn named(body: &'static [u8]) -> Arc<dyn Fetch> {
        Arc::new(fetch_fn(move |_url, _max| async move {
            Ok(bytes::Bytes::from_static(body))
        }))
    }

    #[tokio::test]
    async fn each_scheme_goes_to_its_own_source_and_a_later_one_wins() {
        let sources = Sources::new([
            ("http".to_owned(), named(b"web")),
            ("Demo".to_owned(), named(b"first")),
            ("demo".to_owned(), named(b"second")),
        ]);
        let get = |url: &str| sources.fetch(Url::parse(url).unwrap(), 100);
        assert_eq!(get("http://h/a").await.unwrap(), "web");
        assert_eq!(get("DEMO://row/5").await.unwrap(), "second");
        let error = get("s3://bucket/key").await.unwrap_err();
        assert!(
            matches!(&error, Error::UnsupportedUrl { reason, .. } if reason.contains("'s3'")),
            "{error}"
        );
        let schemes = sources.schemes();
        assert_eq!(schemes.names().collect::<Vec<_>>(), ["demo", "http"]);
        assert!(schemes.takes("Demo://x") && schemes.takes("http://h/a"));
        assert!(!schemes.takes("https://h/a") && !schemes.takes("demo") && !schemes.takes(""));
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
