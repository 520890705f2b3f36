//! Schemes: the names of the URL schemes a pipeline has a source for, and
//! why a URL of another is refused. Plain data: made by the router
//! (`sources.rs`) when the pipeline is built, read by every request's URL
//! check on the UI side and by the egui door.

use std::sync::Arc;

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
