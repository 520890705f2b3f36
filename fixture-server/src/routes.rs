//! The routes: the help text, the stats endpoints and the image handler,
//! which waits the latency asked for and answers with the image (or a
//! 304) or with the fault drawn. Each runs on its connection's task; an
//! image request is counted from its first line to the end of its body.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::FaultKind;
use crate::caching::Caching;
use crate::faults::{self, ResetSwitch};
use crate::image_request::{BadRequest, ImageRequest};
use crate::server::Shared;

/// Every route, over the server's shared state.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(help))
        .route("/img/{file}", get(image))
        .route("/stats", get(stats))
        .route("/stats/reset", post(reset_stats))
        .fallback(|| async { (StatusCode::NOT_FOUND, "no such path (GET / lists them)\n") })
        .with_state(shared)
}

const HELP: &str = "\
fixture-server: generated images with latency and faults

GET  /img/{id}.jpg | /img/{id}.png   the image for id 0..=1048575
GET  /img/{id}.gif   the same, animated: 8 frames of 100 ms, a bar sweeping
       ?w=&h=          size, 1..=4096 (default 600x600)
       ?latency_ms=    wait before answering (default: the server's)
       ?fault=KIND     one of: none, 404, 500, 503, reset, truncate, garbage,
                       wrong-type, slow, hang, bomb, huge, redirect-loop
       ?max_age=N      Cache-Control: max-age=N (default: the server's)
       ?no_store=1     Cache-Control: no-store
       ?exif=W         (.jpg) a camera photo: a photo's texture, and an EXIF
                       thumbnail W pixels wide (1..=640; 0: none) of its
                       aspect ratio
       ?progressive=1  (with exif=W) the camera photo as a progressive JPEG
     every image has a strong ETag and Last-Modified; a matching
     If-None-Match (or If-Modified-Since) gets 304 Not Modified
GET  /stats          counters as JSON
POST /stats/reset    zero the counters
";

async fn help() -> &'static str {
    HELP
}

async fn stats(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.stats.snapshot()).into_response()
}

async fn reset_stats(State(shared): State<Arc<Shared>>) -> StatusCode {
    shared.stats.reset();
    StatusCode::NO_CONTENT
}

/// `GET /img/{file}`: waits the latency, then answers with the image or the
/// fault. Counted from its first line to the end of its body.
async fn image(
    State(shared): State<Arc<Shared>>,
    Path(file): Path<String>,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
    request: Request,
) -> Response {
    let guard = shared.stats.begin();
    shared.stats.log_request(&file);
    let parsed = match query {
        Ok(Query(query)) => ImageRequest::parse(&file, &query, &shared.config),
        Err(rejection) => Err(BadRequest(format!("malformed query string: {rejection}"))),
    };
    let parsed = match parsed {
        Ok(parsed) => parsed,
        Err(BadRequest(message)) => {
            let response = (StatusCode::BAD_REQUEST, format!("{message}\n")).into_response();
            return settle(response, guard);
        }
    };
    let fault = match parsed.fault {
        Some(chosen) => chosen,
        None => pick_fault(&shared),
    };
    if let Some(kind) = fault {
        shared.stats.count_fault(kind);
    }

    let config = &shared.config;
    let mut latency = parsed.latency.unwrap_or(config.latency);
    if !config.jitter.is_zero() {
        latency += config.jitter.mul_f64(shared.draws.unit());
    }
    tokio::time::sleep(latency).await;

    let id = parsed.key.id;
    let content_type = parsed.key.format.content_type();
    let response = match fault {
        Some(kind @ (FaultKind::Status404 | FaultKind::Status500 | FaultKind::Status503)) => {
            faults::status(kind, id)
        }
        Some(FaultKind::Garbage) => faults::garbage(id, config.seed),
        Some(FaultKind::WrongType) => faults::wrong_type(id),
        Some(FaultKind::Hang) => std::future::pending().await,
        Some(FaultKind::Bomb) => faults::bomb(),
        Some(FaultKind::RedirectLoop) => faults::redirect(&parsed.next_hop()),
        Some(FaultKind::Reset | FaultKind::Truncate | FaultKind::Slow | FaultKind::Huge) | None => {
            match shared.images.get(parsed.key).await {
                Ok(bytes) => match fault {
                    Some(FaultKind::Reset) => {
                        let switch = request
                            .extensions()
                            .get::<ResetSwitch>()
                            .cloned()
                            .unwrap_or_default();
                        faults::reset(bytes, content_type, switch)
                    }
                    Some(FaultKind::Truncate) => faults::truncate(bytes, content_type),
                    Some(FaultKind::Slow) => faults::slow(bytes, content_type),
                    Some(FaultKind::Huge) => faults::huge(bytes, content_type),
                    _ => {
                        let caching = Caching::new(
                            parsed.key,
                            config.jpeg_quality,
                            config.seed,
                            shared.started,
                            config.max_age,
                            parsed.caching,
                        );
                        if caching.not_modified(request.headers()) {
                            shared.stats.count_not_modified();
                            caching.not_modified_response()
                        } else {
                            shared.stats.count_image_body();
                            caching.full_response(content_type, bytes)
                        }
                    }
                },
                Err(error) => {
                    (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")).into_response()
                }
            }
        }
    };
    settle(response, guard)
}

/// Moves the request's guard into the response body.
fn settle(response: Response, guard: crate::stats::RequestGuard) -> Response {
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, guard.into_body(body))
}

/// The server-wide fault mix's choice for one request.
fn pick_fault(shared: &Shared) -> Option<FaultKind> {
    if shared.config.faults.is_empty() {
        return None;
    }
    let mut draw = shared.draws.unit();
    for (kind, probability) in &shared.config.faults {
        if draw < *probability {
            return Some(*kind);
        }
        draw -= probability;
    }
    None
}
