//! Latency is at least what was asked for, and `/stats` tells completed
//! requests from abandoned ones.

use std::time::{Duration, Instant};

use crate::common::{client, id_in, server_with_latency, stats_when};
use fixture_server::StatsSnapshot;

#[tokio::test]
async fn a_request_takes_at_least_the_configured_latency() {
    let server = server_with_latency(Duration::from_millis(300)).await;
    let started = Instant::now();
    let body = client()
        .get(server.image_url(3))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(id_in(&body), Some(3));

    let started = Instant::now();
    let url = format!("{}?latency_ms=450", server.image_url(4));
    client()
        .get(url)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(450),
        "{:?}",
        started.elapsed()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_that_leaves_during_the_wait_is_counted_as_aborted() {
    let server = server_with_latency(Duration::from_secs(10)).await;
    let request = client().get(server.image_url(9)).send();
    // Give up after the request is surely in the server's wait.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), request)
            .await
            .is_err()
    );
    let stats = stats_when(&server, |s| s.responses_aborted == 1).await;
    assert_eq!(stats.requests_started, 1);
    assert_eq!(stats.responses_aborted, 1, "{stats:?}");
    assert_eq!(
        stats.responses_completed, 0,
        "an abandoned request is never completed"
    );
    assert_eq!(stats.in_flight, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn stats_count_completions_and_bytes_and_reset_to_zero() {
    let server = server_with_latency(Duration::ZERO).await;
    let mut body_bytes = 0;
    for (id, path) in [(1, "1.jpg"), (2, "2.png?w=64&h=48"), (3, "3.jpeg?w=300")] {
        let url = format!("{}/img/{path}", server.base_url());
        let body = client()
            .get(url)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(id_in(&body), Some(id), "{path}");
        body_bytes += body.len() as u64;
    }
    let png = client()
        .get(format!("{}/img/2.png?w=64&h=48", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(png.headers()["content-type"], "image/png");
    body_bytes += png.bytes().await.unwrap().len() as u64;

    let stats = stats_when(&server, |s| s.responses_completed == 4).await;
    let over_http: StatsSnapshot = client()
        .get(format!("{}/stats", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The /stats request came on a connection of its own.
    let expected = StatsSnapshot {
        connections: stats.connections + 1,
        ..stats.clone()
    };
    assert_eq!(over_http, expected, "/stats and the handle agree");
    assert_eq!(stats.connections, 4, "a new client for each image");
    assert_eq!(
        (
            stats.requests_started,
            stats.responses_completed,
            stats.responses_aborted
        ),
        (4, 4, 0)
    );
    assert_eq!(stats.bytes_sent, body_bytes);
    assert_eq!(stats.faults.len(), fixture_server::FaultKind::ALL.len());

    let reset = client()
        .post(format!("{}/stats/reset", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 204);
    assert_eq!(
        server.stats(),
        StatsSnapshot {
            faults: stats.faults.keys().map(|k| (k.clone(), 0)).collect(),
            ..StatsSnapshot::default()
        }
    );
    server.shutdown().await;
}

#[tokio::test]
async fn many_concurrent_waits_all_complete() {
    let server = server_with_latency(Duration::from_millis(200)).await;
    let client = client();
    let requests = (0..200).map(|id| {
        let client = client.clone();
        let url = format!("{}/img/{id}.jpg?w=32&h=32", server.base_url());
        async move { client.get(url).send().await?.bytes().await }
    });
    let bodies = futures::future::join_all(requests).await;
    for (id, body) in bodies.into_iter().enumerate() {
        assert_eq!(id_in(&body.unwrap()), Some(id as u32));
    }
    let stats = stats_when(&server, |s| s.responses_completed == 200).await;
    assert_eq!((stats.responses_completed, stats.in_flight), (200, 0));
    server.shutdown().await;
}
