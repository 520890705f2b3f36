//! The network side of an `http` or `https` fetch: one GET, with the
//! request's headers, and its body, under the deadline, the body cap and
//! the body budget. What HTTP's caching rules make of the response is the
//! disk cache's business, a layer in front of this one (`disk/tier.rs`).
//! Runs as the fetch's future on the I/O runtime; dropping it closes the
//! connection.

use std::time::Duration;

use super::errors::classify;
use super::stop::{BodySoFar, ReadOn};
use super::{FetchLimits, FetchRequest, FetchResponse, HttpFetcher, check_status};
use crate::body::Body;
use crate::error::Error;

/// The response at an `http` or `https` URL: a success with its body, or,
/// for a conditional request, a `304 Not Modified` with none.
pub(super) async fn fetch_http(
    fetcher: HttpFetcher,
    mut request: FetchRequest,
) -> Result<FetchResponse, Error> {
    let conditional = request.is_conditional();
    // Sent once, so moved into the GET rather than copied.
    let headers = std::mem::take(&mut request.headers);
    let limits = &fetcher.limits;
    // The whole fetch's deadline, the wait for the client (made at the
    // pipeline's first load) included.
    let deadline = later_by(tokio::time::Instant::now(), limits.total_timeout);
    let client = tokio::time::timeout_at(deadline, fetcher.client.get(&request.url))
        .await
        .map_err(|_| timed_out(&request, limits, "HTTP client"))??;
    let net = Network {
        client: &client,
        limits,
        conditional,
        request: &request,
    };
    let response = net.send(headers, deadline).await?;
    net.receive(response, deadline).await
}

/// The error of a fetch of `request` past its deadline in `phase`.
fn timed_out(request: &FetchRequest, limits: &FetchLimits, phase: &'static str) -> Error {
    Error::Timeout {
        url: request.url.to_string(),
        phase,
        limit: limits.total_timeout,
        setting: "fetch.total_timeout",
    }
}

/// One fetch's network side: the client, its limits and the request (its
/// headers already taken for the GET).
struct Network<'a> {
    client: &'a reqwest::Client,
    limits: &'a FetchLimits,
    /// Whether the request asked for a `304` when the cache's copy holds.
    conditional: bool,
    request: &'a FetchRequest,
}

impl Network<'_> {
    fn timed_out(&self) -> Error {
        timed_out(self.request, self.limits, "complete response")
    }

    /// Sends the GET, with the request's `headers` added, by `deadline`;
    /// returns the response (headers read).
    async fn send(
        &self,
        headers: http::HeaderMap,
        deadline: tokio::time::Instant,
    ) -> Result<reqwest::Response, Error> {
        let url = &self.request.url;
        let mut get = self.client.get(url.clone());
        if !headers.is_empty() {
            get = get.headers(headers);
        }
        let response = tokio::time::timeout_at(deadline, get.send())
            .await
            .map_err(|_| self.timed_out())?
            .map_err(|error| classify(url, error, self.limits))?;
        Ok(response)
    }

    /// Checks the status and reads the body of `response` within the body
    /// budget and the cap.
    async fn receive(
        &self,
        mut response: reqwest::Response,
        mut deadline: tokio::time::Instant,
    ) -> Result<FetchResponse, Error> {
        let (url, max_bytes) = (&self.request.url, self.request.max_bytes);
        let status = response.status();
        let final_url = response.url().clone();
        let headers = response.headers().clone();
        let received_at = std::time::SystemTime::now();
        let answered = |body: Body| {
            FetchResponse::new(final_url, body)
                .with_headers(status, headers)
                .received_at(received_at)
        };
        if status == reqwest::StatusCode::NOT_MODIFIED && self.conditional {
            return Ok(answered(Body::default()));
        }
        check_status(url, status)?;
        let watched = self.request.stop_rule.is_some();
        let too_large = |size: String| Error::TooLarge {
            url: url.to_string(),
            what: format!(
                "the body is {size}, over the {max_bytes}-byte limit{}",
                if watched {
                    ", and its start did not make the thumbnail"
                } else {
                    ""
                }
            ),
            setting: "fetch.max_body_bytes",
        };
        // A body whose start may make the thumbnail (the request's stop
        // rule watches it) is read as far as the limit, and only while the
        // rule may find it enough.
        let declared = response.content_length();
        if let Some(length) = declared.filter(|len| *len > max_bytes)
            && !watched
        {
            return Err(too_large(format!("{length} bytes")));
        }
        // Bodies waiting for a decoder are bounded: this one waits here,
        // its bytes unread, while the budget is spent. The wait is the
        // decoders' time, not the server's: the deadline moves by it.
        let waiting = tokio::time::Instant::now();
        let reservation = self
            .request
            .reserve(
                response
                    .content_length()
                    .unwrap_or(max_bytes)
                    .min(max_bytes),
            )
            .await;
        deadline = later_by(deadline, waiting.elapsed());
        // The server's length is a claim: reserve at most 1 MiB up
        // front, and let the buffer grow with the bytes that arrive.
        let capacity = response
            .content_length()
            .unwrap_or(64 * 1024)
            .min(max_bytes)
            .min(1024 * 1024);
        // A body whose start makes the thumbnail (the request's stop rule
        // says so) is read no further: dropping the response closes its
        // connection (HTTP/1.1) or resets its stream (HTTP/2).
        let read = async {
            let mut body = BodySoFar::new(
                capacity as usize,
                max_bytes,
                self.request.stop_rule.as_ref(),
            )
            .declared(declared);
            let size = declared.map_or("larger".into(), |length| format!("{length} bytes"));
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|error| classify(url, error, self.limits))?
            {
                if body.push(&chunk, || too_large(size.clone()))? == ReadOn::Stop {
                    return Ok((body, true));
                }
            }
            Ok((body, false))
        };
        let (body, stopped) = tokio::time::timeout_at(deadline, read)
            .await
            .map_err(|_| self.timed_out())??;
        let body = body.finish(stopped, |bytes| reservation.hold(bytes));
        Ok(answered(body))
    }
}

/// `instant` plus `wait`; for a wait too long to add (a timeout of
/// `Duration::MAX`, meaning none), about thirty years on.
fn later_by(instant: tokio::time::Instant, wait: Duration) -> tokio::time::Instant {
    instant
        .checked_add(wait)
        .or_else(|| instant.checked_add(Duration::from_secs(30 * 365 * 24 * 3600)))
        .unwrap_or(instant)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `total_timeout = Duration::MAX` (no timeout) overflowed
    /// the deadline's `Instant`, and every fetch panicked.
    #[test]
    fn a_timeout_too_long_for_an_instant_is_a_distant_deadline() {
        let now = tokio::time::Instant::now();
        let deadline = later_by(now, Duration::MAX);
        assert!(deadline > now + Duration::from_secs(365 * 24 * 3600));
        assert_eq!(
            later_by(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(later_by(deadline, Duration::MAX) >= deadline);
    }
}
