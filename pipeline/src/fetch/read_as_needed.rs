//! A fetch layer that reads a JPEG or a camera RAW only as far as its
//! thumbnail needs: in front of any fetcher (the HTTP one, the file reader,
//! an app's own), it gives each request that may be cut short for a
//! thumbnail the decode stage's watch as its [`StopRule`]
//! (`decode/watch.rs` says what the watch looks for). What else the request is, and what the answer is, is
//! the inner fetcher's business.
//!
//! Made by the pipeline's builder when its decoder takes bodies cut short;
//! lives as long as the fetcher it wraps.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::exchange::{FetchRequest, FetchResponse};
use super::{Fetch, fetch_from_response};
use crate::decode::{DecodeConfig, DecodeLimits, stop_rule, watches_bodies};
use crate::error::Error;

/// `inner`, behind a layer that reads JPEGs only as far as their thumbnail
/// needs where `config` takes an embedded thumbnail or the DC scans; `inner`
/// itself where it takes neither.
pub(crate) fn read_as_needed(inner: Arc<dyn Fetch>, config: &DecodeConfig) -> Arc<dyn Fetch> {
    let limits = DecodeLimits::from(config);
    if watches_bodies(&limits) {
        Arc::new(ReadAsNeeded { inner, limits })
    } else {
        inner
    }
}

/// A [`Fetch`] in front of `inner` that gives every request that may be
/// cut short for a thumbnail ([`FetchRequest::cut_short_for`]) a
/// [`StopRule`](super::StopRule) that stops at the JPEG's embedded
/// thumbnail or DC scans.
struct ReadAsNeeded {
    inner: Arc<dyn Fetch>,
    limits: DecodeLimits,
}

impl Fetch for ReadAsNeeded {
    fetch_from_response!();

    fn fetch_response(
        &self,
        mut request: FetchRequest,
    ) -> BoxFuture<'static, Result<FetchResponse, Error>> {
        if request.stop_rule.is_none()
            && let Some(target) = request.cut_short_for
        {
            request.stop_rule = stop_rule(target, self.limits);
        }
        self.inner.fetch_response(request)
    }
}
