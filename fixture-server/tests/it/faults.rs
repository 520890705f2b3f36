//! Every fault kind behaves as named, over real HTTP on loopback.

use std::io::ErrorKind;
use std::time::Duration;

use crate::common::{caused_by_io, client, server_with_latency, stats_when};
use fixture_server::{BOMB_SIDE, Config, FaultKind, FixtureServer, HUGE_BYTES};
use futures::StreamExt;

async fn get(server: &FixtureServer, path: &str) -> reqwest::Response {
    client()
        .get(format!("{}{path}", server.base_url()))
        .send()
        .await
        .expect("response headers arrive")
}

#[tokio::test]
async fn status_faults_answer_with_their_status() {
    let server = server_with_latency(Duration::ZERO).await;
    for (fault, status) in [("404", 404), ("500", 500), ("503", 503)] {
        let response = get(&server, &format!("/img/5.jpg?fault={fault}")).await;
        assert_eq!(response.status().as_u16(), status);
        if status == 503 {
            assert_eq!(response.headers()["retry-after"], "1");
        }
        let text = response.text().await.unwrap();
        assert!(text.contains(&format!("fault '{fault}'")), "{text}");
    }
    let stats = stats_when(&server, |s| s.responses_completed == 3).await;
    assert_eq!(stats.faults["404"], 1);
    assert_eq!(stats.faults["500"], 1);
    assert_eq!(stats.faults["503"], 1);
    server.shutdown().await;
}

#[tokio::test]
async fn reset_sends_half_the_body_then_resets_the_connection() {
    let server = server_with_latency(Duration::ZERO).await;
    let response = get(&server, "/img/5.jpg?fault=reset").await;
    assert_eq!(response.status(), 200);
    let length = response
        .content_length()
        .expect("reset declares the full length");
    let mut received = 0;
    let mut stream = response.bytes_stream();
    let error = loop {
        match stream.next().await {
            Some(Ok(chunk)) => received += chunk.len() as u64,
            Some(Err(error)) => break error,
            None => panic!("body ended cleanly after {received} of {length} bytes"),
        }
    };
    assert!(received < length, "{received} of {length}");
    assert!(
        caused_by_io(&error, ErrorKind::ConnectionReset),
        "expected a connection reset, got {error:?}"
    );
    let stats = stats_when(&server, |s| s.responses_cut == 1).await;
    assert_eq!((stats.responses_cut, stats.responses_completed), (1, 0));
    assert_eq!(stats.faults["reset"], 1);
    server.shutdown().await;
}

#[tokio::test]
async fn truncate_declares_more_bytes_than_it_sends() {
    let server = server_with_latency(Duration::ZERO).await;
    let full = get(&server, "/img/5.jpg").await.bytes().await.unwrap();
    let response = get(&server, "/img/5.jpg?fault=truncate").await;
    assert_eq!(response.content_length(), Some(full.len() as u64 + 1000));
    let mut received = Vec::new();
    let mut stream = response.bytes_stream();
    let mut failed = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => received.extend_from_slice(&chunk),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "a short body must be an error for the client");
    assert!(received.len() <= full.len());
    assert_eq!(
        received[..],
        full[..received.len()],
        "what arrives is the image"
    );
    let stats = stats_when(&server, |s| s.responses_cut == 1).await;
    assert_eq!(stats.responses_cut, 1);
    server.shutdown().await;
}

#[tokio::test]
async fn garbage_is_labelled_jpeg_and_does_not_decode() {
    let server = server_with_latency(Duration::ZERO).await;
    let response = get(&server, "/img/5.jpg?fault=garbage").await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "image/jpeg");
    let body = response.bytes().await.unwrap();
    assert!(body.len() > 1000);
    assert!(image::load_from_memory(&body).is_err());
    server.shutdown().await;
}

#[tokio::test]
async fn wrong_type_is_an_html_page() {
    let server = server_with_latency(Duration::ZERO).await;
    let response = get(&server, "/img/5.jpg?fault=wrong-type").await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        response
            .text()
            .await
            .unwrap()
            .starts_with("<!doctype html>")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn slow_drips_the_body() {
    let server = server_with_latency(Duration::ZERO).await;
    let response = get(&server, "/img/5.jpg?fault=slow").await;
    let length = response.content_length().unwrap();
    let mut stream = response.bytes_stream();
    let mut received = 0u64;
    // Read for one second: at 300 bytes per second most of the image is
    // still to come.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while let Some(Ok(chunk)) = stream.next().await {
            received += chunk.len() as u64;
        }
    })
    .await;
    assert!(received > 0, "slow still sends");
    assert!(
        received < length / 4,
        "{received} of {length} bytes in one second"
    );
    drop(stream);
    let stats = stats_when(&server, |s| s.responses_aborted == 1).await;
    assert_eq!(
        stats.responses_aborted, 1,
        "a slow body left unread is aborted"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn hang_never_answers_and_counts_as_aborted_when_the_client_leaves() {
    let server = server_with_latency(Duration::ZERO).await;
    let request = client()
        .get(format!("{}/img/5.jpg?fault=hang", server.base_url()))
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    let error = request.expect_err("hang must not answer");
    assert!(error.is_timeout(), "{error:?}");
    let stats = stats_when(&server, |s| s.responses_aborted == 1).await;
    assert_eq!((stats.responses_aborted, stats.in_flight), (1, 0));
    server.shutdown().await;
}

#[tokio::test]
async fn bomb_is_a_small_png_claiming_60000_pixels_a_side() {
    let server = server_with_latency(Duration::ZERO).await;
    let response = get(&server, "/img/5.jpg?fault=bomb").await;
    assert_eq!(response.headers()["content-type"], "image/png");
    let body = response.bytes().await.unwrap();
    assert!(body.len() < 16 * 1024, "{} bytes", body.len());
    let reader = image::ImageReader::new(std::io::Cursor::new(&body[..]))
        .with_guessed_format()
        .unwrap();
    assert_eq!(reader.into_dimensions().unwrap(), (BOMB_SIDE, BOMB_SIDE));
    server.shutdown().await;
}

#[tokio::test]
async fn huge_streams_200_mb_without_a_length() {
    let server = server_with_latency(Duration::ZERO).await;
    let response = get(&server, "/img/5.jpg?fault=huge").await;
    assert_eq!(response.content_length(), None);
    let mut stream = response.bytes_stream();
    let mut first = None;
    let mut received = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        first.get_or_insert_with(|| chunk.slice(..2));
        received += chunk.len() as u64;
    }
    assert_eq!(received, HUGE_BYTES);
    assert_eq!(first.unwrap()[..], [0xFF, 0xD8], "it starts as a JPEG");
    server.shutdown().await;
}

#[tokio::test]
async fn redirect_loop_redirects_forever() {
    let server = server_with_latency(Duration::ZERO).await;
    let mut path = "/img/5.jpg?fault=redirect-loop".to_owned();
    for hop in 1..=12 {
        let response = get(&server, &path).await;
        assert_eq!(response.status(), 302);
        path = response.headers()["location"].to_str().unwrap().to_owned();
        assert!(path.contains(&format!("hop={hop}")), "{path}");
    }
    // A client with a redirect limit gives up.
    let limited = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
        .unwrap();
    let error = limited
        .get(format!(
            "{}/img/5.jpg?fault=redirect-loop",
            server.base_url()
        ))
        .send()
        .await
        .expect_err("the loop never ends");
    assert!(error.is_redirect(), "{error:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn the_server_wide_mix_applies_unless_a_request_says_none() {
    let server = FixtureServer::start(Config {
        latency: Duration::ZERO,
        faults: vec![(FaultKind::Status503, 1.0)],
        ..Config::default()
    })
    .await
    .unwrap();
    for _ in 0..5 {
        assert_eq!(get(&server, "/img/1.jpg").await.status(), 503);
    }
    assert_eq!(get(&server, "/img/1.jpg?fault=none").await.status(), 200);
    assert_eq!(get(&server, "/img/1.jpg?fault=404").await.status(), 404);
    let stats = stats_when(&server, |s| s.responses_completed == 7).await;
    assert_eq!((stats.faults["503"], stats.faults["404"]), (5, 1));
    server.shutdown().await;
}

#[tokio::test]
async fn a_mix_of_probabilities_lands_near_them() {
    let server = FixtureServer::start(Config {
        latency: Duration::ZERO,
        faults: vec![(FaultKind::Status500, 0.25), (FaultKind::Status404, 0.25)],
        ..Config::default()
    })
    .await
    .unwrap();
    let mut counts = [0u32; 3];
    for _ in 0..400 {
        match get(&server, "/img/2.png?w=16&h=16").await.status().as_u16() {
            500 => counts[0] += 1,
            404 => counts[1] += 1,
            _ => counts[2] += 1,
        }
    }
    // Expected 100 / 100 / 200; the bounds are about five standard deviations.
    assert!((60..140).contains(&counts[0]), "{counts:?}");
    assert!((60..140).contains(&counts[1]), "{counts:?}");
    assert!((150..250).contains(&counts[2]), "{counts:?}");
    server.shutdown().await;
}
