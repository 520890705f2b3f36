//! One fetch's exchange: the [`FetchRequest`] a [`Fetch`] is given and the
//! [`FetchResponse`] it answers with. Plain data, made by the load actor
//! for each fetch and by a layer (the disk cache) for the fetch it wraps;
//! it ends with the fetch.
//!
//! [`Fetch`]: crate::Fetch

use std::sync::Arc;
use std::time::SystemTime;

use url::Url;

use super::budget::{BodyBudget, Reservation};
use super::stop::StopRule;
use crate::body::Body;
use crate::request::TargetSize;

/// What a [`Fetch`](crate::Fetch) is asked for: a URL, the largest body
/// it may return, and any headers a layer in front of it adds (the disk
/// cache's `If-None-Match` and `If-Modified-Since` when it revalidates).
///
/// ```
/// let request = thumbpipe::FetchRequest::new(
///     url::Url::parse("https://example.com/1.jpg")?,
///     16 << 20,
/// );
/// assert!(request.headers.is_empty());
/// # Ok::<(), url::ParseError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FetchRequest {
    /// The URL to read.
    pub url: Url,
    /// A body past this many bytes is refused with
    /// [`Error::TooLarge`](crate::Error::TooLarge)
    /// ([`FetchConfig::max_body_bytes`](crate::FetchConfig::max_body_bytes)).
    pub max_bytes: u64,
    /// Headers to send besides the fetcher's own; empty unless a layer
    /// asks for a conditional request.
    pub headers: http::HeaderMap,
    /// The pipeline's budget of bodies awaiting a decode
    /// ([`FetchConfig::body_budget_bytes`](crate::FetchConfig::body_budget_bytes));
    /// `None` outside a pipeline.
    budget: Option<Arc<BodyBudget>>,
    /// The thumbnail the body is read for, when the body's start may
    /// serve it: set by the pipeline when its decoder takes bodies cut
    /// short ([`Decode::takes_cut_short_bodies`](crate::Decode::takes_cut_short_bodies)),
    /// except when it reads a body again whole after one cut short did not
    /// decode. A layer that knows the format turns it into a
    /// [`stop_rule`](Self::stop_rule).
    pub cut_short_for: Option<TargetSize>,
    /// When the fetcher may stop reading the body (see [`StopRule`]);
    /// `None` (read it whole) unless a layer in front of the fetcher sets
    /// it. A layer that keeps bodies clears it.
    pub stop_rule: Option<StopRule>,
}

impl FetchRequest {
    /// A request for `url`, its body capped at `max_bytes`, with no extra
    /// headers and no body budget.
    pub fn new(url: Url, max_bytes: u64) -> Self {
        Self {
            url,
            max_bytes,
            headers: http::HeaderMap::new(),
            budget: None,
            cut_short_for: None,
            stop_rule: None,
        }
    }

    /// A request whose body counts against `budget`.
    pub(crate) fn within(url: Url, max_bytes: u64, budget: Arc<BodyBudget>) -> Self {
        Self {
            budget: Some(budget),
            ..Self::new(url, max_bytes)
        }
    }

    /// Reserves `bytes` of the body budget, waiting while it is spent; at
    /// once without a budget.
    pub(crate) async fn reserve(&self, bytes: u64) -> Reservation {
        match &self.budget {
            Some(budget) => budget.reserve(bytes).await,
            None => Reservation::none(),
        }
    }

    /// Whether the request asks the server to answer `304 Not Modified`
    /// when its copy still holds.
    pub(crate) fn is_conditional(&self) -> bool {
        self.headers.contains_key(http::header::IF_NONE_MATCH)
            || self.headers.contains_key(http::header::IF_MODIFIED_SINCE)
    }
}

/// What a [`Fetch`](crate::Fetch) answers: the body, with the status and
/// headers the caching rules read and the URL the body came from.
///
/// The status is a success (`2xx`), or `304 Not Modified` (with an empty
/// body) for a conditional request; a fetcher answers any other status
/// with [`Error::Status`](crate::Error::Status).
///
/// ```
/// use bytes::Bytes;
///
/// let url = url::Url::parse("https://example.com/1.jpg")?;
/// let response = thumbpipe::FetchResponse::new(url, Bytes::from_static(b"\x89PNG"));
/// assert_eq!(response.status, http::StatusCode::OK);
/// # Ok::<(), url::ParseError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FetchResponse {
    /// `2xx`, or `304 Not Modified`.
    pub status: http::StatusCode,
    /// The response's headers: with `Cache-Control`, `ETag` or
    /// `Last-Modified`, the disk cache can keep the body.
    pub headers: http::HeaderMap,
    /// Where the body came from, after any redirects. A body from another
    /// URL than the one asked for is not kept on disk.
    pub url: Url,
    /// The body, whole or cut short by the request's
    /// [`stop_rule`](FetchRequest::stop_rule); empty for a `304`.
    pub body: Body,
    /// When its headers arrived: what HTTP's caching rules count a stored
    /// copy's age from (RFC 9111's `response_time`), so that reading the
    /// body, or waiting for the body budget, does not make it younger.
    pub received_at: SystemTime,
}

impl FetchResponse {
    /// A `200 OK` from `url` with no headers (nothing the disk cache may
    /// keep), received now; `body` is whole when given as [`Bytes`](bytes::Bytes).
    pub fn new(url: Url, body: impl Into<Body>) -> Self {
        Self {
            status: http::StatusCode::OK,
            headers: http::HeaderMap::new(),
            url,
            body: body.into(),
            received_at: SystemTime::now(),
        }
    }

    /// A response with `status` and `headers`.
    pub fn with_headers(mut self, status: http::StatusCode, headers: http::HeaderMap) -> Self {
        self.status = status;
        self.headers = headers;
        self
    }

    /// A response whose headers arrived at `received_at`.
    pub fn received_at(mut self, received_at: SystemTime) -> Self {
        self.received_at = received_at;
        self
    }
}

/// The one rule for statuses: a success (`2xx`) carries a body to decode;
/// any other status (a `304` nobody asked for among them) is
/// [`Error::Status`](crate::Error::Status).
pub(crate) fn check_status(
    url: &impl std::fmt::Display,
    status: http::StatusCode,
) -> Result<(), crate::error::Error> {
    if status.is_success() {
        Ok(())
    } else {
        Err(crate::error::Error::Status {
            url: url.to_string(),
            status: status.as_u16(),
        })
    }
}
