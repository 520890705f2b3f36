//! The responses of the fault kinds: each one a way for a real server or
//! network to let a client down.
//!
//! Owns nothing long-lived: every function builds one response. Streaming
//! bodies run inside the connection's task and end when the body ends or the
//! connection goes away.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, StreamExt};

use crate::FaultKind;

/// Bytes per tick of the `slow` fault, and the tick: 300 bytes per second.
const SLOW_CHUNK: usize = 30;
const SLOW_TICK: Duration = Duration::from_millis(100);
/// The `huge` body's length.
pub const HUGE_BYTES: u64 = 200 * 1000 * 1000;
/// `garbage` body length.
pub(crate) const GARBAGE_BYTES: usize = 24 * 1024;
/// How long `reset` and `truncate` wait after their last bytes before they
/// cut, so the client has read what was sent and sees the cut, not a race.
const CUT_PAUSE: Duration = Duration::from_millis(50);

/// Set by a `reset` response; read when its connection is dropped, which then
/// closes the socket with a TCP RST instead of a FIN.
#[derive(Clone, Debug, Default)]
pub(crate) struct ResetSwitch(Arc<AtomicBool>);

impl ResetSwitch {
    pub(crate) fn arm(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub(crate) fn is_armed(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A plain-text error response, as for an HTTP status fault.
pub(crate) fn status(kind: FaultKind, id: u32) -> Response {
    let code = match kind {
        FaultKind::Status404 => StatusCode::NOT_FOUND,
        FaultKind::Status503 => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let mut response = (
        code,
        format!("fixture-server: fault '{kind}' for image {id}\n"),
    )
        .into_response();
    if code == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// The first half of `image`, then a reset connection.
pub(crate) fn reset(image: Bytes, content_type: &'static str, switch: ResetSwitch) -> Response {
    let half = image.slice(..image.len() / 2);
    let total = image.len();
    let body =
        stream::once(async move { Ok::<_, io::Error>(half) }).chain(stream::once(async move {
            tokio::time::sleep(CUT_PAUSE).await;
            switch.arm();
            Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "reset fault: connection reset mid-body",
            ))
        }));
    with_length(Body::from_stream(body), content_type, total as u64)
}

/// All of `image` under a `Content-Length` 1000 bytes larger, then a closed
/// connection.
pub(crate) fn truncate(image: Bytes, content_type: &'static str) -> Response {
    let claimed = image.len() as u64 + 1000;
    let body = stream::once(async move { Ok::<_, io::Error>(image) }).chain(stream::once(async {
        tokio::time::sleep(CUT_PAUSE).await;
        Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "truncate fault: body shorter than Content-Length",
        ))
    }));
    with_length(Body::from_stream(body), content_type, claimed)
}

/// Random bytes that claim to be a JPEG.
pub(crate) fn garbage(id: u32, seed: u64) -> Response {
    let bytes = crate::images::garbage(seed ^ u64::from(id), GARBAGE_BYTES);
    ([(header::CONTENT_TYPE, "image/jpeg")], bytes).into_response()
}

/// A 200 response with an HTML page where the image should be.
pub(crate) fn wrong_type(id: u32) -> Response {
    let page = format!(
        "<!doctype html>\n<html><head><title>Sign in</title></head>\n<body><h1>Please sign in \
         to see image {id}</h1></body></html>\n"
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

/// `image`, dripped at 300 bytes per second.
pub(crate) fn slow(image: Bytes, content_type: &'static str) -> Response {
    let total = image.len() as u64;
    let body = stream::unfold(image, |rest| async move {
        if rest.is_empty() {
            return None;
        }
        tokio::time::sleep(SLOW_TICK).await;
        let mut rest = rest;
        let chunk = rest.split_to(rest.len().min(SLOW_CHUNK));
        Some((Ok::<_, Infallible>(chunk), rest))
    });
    with_length(Body::from_stream(body), content_type, total)
}

/// A small PNG that claims 60000x60000 pixels.
pub(crate) fn bomb() -> Response {
    (
        [(header::CONTENT_TYPE, "image/png")],
        crate::images::bomb_png(),
    )
        .into_response()
}

/// `image` followed by zeros, 200 MB in all, without `Content-Length`.
pub(crate) fn huge(image: Bytes, content_type: &'static str) -> Response {
    static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
    let first = image.len() as u64;
    let filler = stream::unfold(first, |sent| async move {
        if sent >= HUGE_BYTES {
            return None;
        }
        let len = (HUGE_BYTES - sent).min(ZEROS.len() as u64) as usize;
        Some((
            Ok::<_, Infallible>(Bytes::from_static(&ZEROS[..len])),
            sent + len as u64,
        ))
    });
    let body = stream::once(async move { Ok(image) }).chain(filler);
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(body),
    )
        .into_response()
}

/// A redirect to `location`, which redirects again.
pub(crate) fn redirect(location: &str) -> Response {
    let mut response = (StatusCode::FOUND, "redirecting\n").into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

fn with_length(body: Body, content_type: &'static str, length: u64) -> Response {
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    response
}
