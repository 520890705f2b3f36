//! Errors of the network: how reqwest's errors become the pipeline's
//! [`Error`], naming the phase and the setting to change, and the
//! redirect policy whose refusals they report. Plain functions, called by
//! the fetch stage.

use std::sync::Arc;

use url::Url;

use super::FetchLimits;
use crate::error::Error;

/// Follows at most `max` redirects, and none from `https` to `http` unless
/// `downgrades` allows it: the image would travel unencrypted, open to be
/// read or replaced on the way.
pub(super) fn redirect_policy(max: usize, downgrades: bool) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        // The first URL is the one requested, not a redirect.
        if attempt.previous().len() > max {
            return attempt.error(TooManyRedirects);
        }
        let from_https = attempt
            .previous()
            .last()
            .is_some_and(|from| from.scheme() == "https");
        if from_https && attempt.url().scheme() == "http" && !downgrades {
            let to = attempt.url().to_string();
            return attempt.error(Downgrade(to));
        }
        attempt.follow()
    })
}

/// Why a redirect was not followed: more than the limit.
#[derive(Debug, thiserror::Error)]
#[error("too many redirects")]
struct TooManyRedirects;

/// Why a redirect was not followed: from `https` to this `http` URL.
#[derive(Debug, thiserror::Error)]
#[error("redirected from https to plain http ({0})")]
struct Downgrade(String);

/// Turns a reqwest error into the pipeline's, naming the phase and the
/// setting that applies.
pub(super) fn classify(url: &Url, error: reqwest::Error, limits: &FetchLimits) -> Error {
    let url_text = url.to_string();
    if error.is_timeout() {
        let connect = error.is_connect();
        return Error::Timeout {
            url: url_text,
            phase: if connect {
                "connection"
            } else {
                "complete response"
            },
            limit: if connect {
                limits.connect_timeout
            } else {
                limits.total_timeout
            },
            setting: if connect {
                "fetch.connect_timeout"
            } else {
                "fetch.total_timeout"
            },
        };
    }
    #[cfg(any(feature = "rustls-aws-lc", feature = "rustls-ring"))]
    if let Some(tls) = find_cause::<rustls::Error>(&error) {
        return Error::Tls {
            url: url_text,
            reason: tls.to_string(),
            source: Some(Arc::new(error)),
        };
    }
    if let Some(Downgrade(to)) = find_cause::<Downgrade>(&error) {
        return Error::InsecureRedirect {
            url: url_text,
            to: to.clone(),
        };
    }
    let reason = if error.is_redirect() {
        format!("redirected more than {} times", limits.max_redirects)
    } else if error.is_connect() {
        format!("could not connect: {}", causes(&error))
    } else if error.is_body() || error.is_decode() {
        format!("the response body broke off: {}", causes(&error))
    } else {
        causes(&error)
    };
    Error::Network {
        url: url_text,
        reason,
        source: Some(Arc::new(error)),
    }
}

/// An error and its sources, joined with ": ".
pub(super) fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        next = cause.source();
    }
    text
}

/// The first error of type `E` in `error`'s chain of causes, looking
/// inside I/O errors too (hyper and rustls wrap theirs in them).
fn find_cause<'e, E: std::error::Error + 'static>(
    error: &'e (dyn std::error::Error + 'static),
) -> Option<&'e E> {
    let mut next = Some(error);
    while let Some(cause) = next {
        if let Some(found) = cause.downcast_ref::<E>() {
            return Some(found);
        }
        next = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => cause.source(),
        };
    }
    None
}
