//! The scheme router: which [`Fetch`] serves a URL, by its scheme. `http`
//! and `https` are the [`HttpFetcher`](crate::HttpFetcher)'s (or the app's
//! [`PipelineBuilder::fetcher`](crate::PipelineBuilder::fetcher)), `file`
//! is the local files' when there is a root, and an app adds its own with
//! [`PipelineBuilder::source`](crate::PipelineBuilder::source).
//!
//! Made once by the pipeline's builder; the router is the innermost
//! fetcher (the disk cache and the cut-short reads are layers in front of
//! it), and its [`Schemes`] are what a request's URL is checked against on
//! the UI side (`request.rs`), and what the egui door takes. Both live as
//! long as the pipeline.

use std::sync::Arc;

use futures::future::BoxFuture;
use url::Url;

use super::{Fetch, FetchRequest, FetchResponse, fetch_from_response};
use crate::error::Error;
use crate::request::{Schemes, no_source};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::fetch_fn;

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
}
