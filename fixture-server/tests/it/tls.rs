//! TLS: with `Config::tls`, the server speaks HTTPS with its self-signed
//! certificate; offering `h2`, every request of a client that speaks HTTP/2
//! shares one connection and one handshake, while offering `h1` each request
//! in flight takes a connection of its own. The counters say which.

use std::time::Duration;

use fixture_server::tls::CERTIFICATE_DER;
use fixture_server::{Config, FixtureServer, StatsSnapshot, TlsOffer};

use crate::common::stats_when;

async fn tls_server(offer: TlsOffer) -> FixtureServer {
    FixtureServer::start(Config {
        latency: Duration::from_millis(100),
        shutdown_grace: Duration::from_millis(100),
        tls: Some(offer),
        ..Config::default()
    })
    .await
    .expect("server starts")
}

/// A client that trusts the fixture's certificate and speaks HTTP/2 when
/// the server offers it.
fn trusting_client() -> reqwest::Client {
    let root = reqwest::Certificate::from_der(CERTIFICATE_DER).unwrap();
    reqwest::Client::builder()
        .tls_certs_merge([root])
        .build()
        .unwrap()
}

/// Sends `count` image requests at once and waits for all of them; returns
/// the HTTP versions of the answers.
async fn concurrent_images(
    client: &reqwest::Client,
    server: &FixtureServer,
    count: u32,
) -> Vec<reqwest::Version> {
    let requests = (0..count).map(|id| {
        let client = client.clone();
        let url = format!("{}/img/{id}.jpg?w=32&h=32", server.base_url());
        async move {
            let response = client.get(url).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let version = response.version();
            response.bytes().await.unwrap();
            version
        }
    });
    futures::future::join_all(requests).await
}

fn settled(stats: &StatsSnapshot, count: u64) -> bool {
    stats.responses_completed == count && stats.in_flight == 0
}

#[tokio::test]
async fn offering_h2_puts_every_request_on_one_connection() {
    let server = tls_server(TlsOffer::Http2).await;
    assert!(server.base_url().starts_with("https://127.0.0.1:"));
    let client = trusting_client();
    // One request first, so that the rest find the connection open.
    let first = concurrent_images(&client, &server, 1).await;
    assert_eq!(first, [reqwest::Version::HTTP_2]);
    let versions = concurrent_images(&client, &server, 12).await;
    assert!(
        versions.iter().all(|v| *v == reqwest::Version::HTTP_2),
        "{versions:?}"
    );

    let stats = stats_when(&server, |s| settled(s, 13)).await;
    assert_eq!(stats.connections, 1, "{stats:?}");
    assert_eq!(stats.http2_connections, 1, "{stats:?}");
    assert_eq!(stats.tls_full_handshakes, 1, "{stats:?}");
    assert_eq!(stats.image_bodies, 13);
    server.shutdown().await;
}

#[tokio::test]
async fn offering_h1_only_takes_a_connection_per_request_in_flight() {
    let server = tls_server(TlsOffer::Http1).await;
    let versions = concurrent_images(&trusting_client(), &server, 6).await;
    assert!(
        versions.iter().all(|v| *v == reqwest::Version::HTTP_11),
        "{versions:?}"
    );

    let stats = stats_when(&server, |s| settled(s, 6)).await;
    assert_eq!(stats.connections, 6, "{stats:?}");
    assert_eq!(stats.http2_connections, 0, "{stats:?}");
    assert_eq!(
        stats.tls_full_handshakes + stats.tls_resumed_handshakes,
        6,
        "{stats:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_gets_no_image() {
    let server = tls_server(TlsOffer::Http2).await;
    let url = format!("{}/img/1.jpg", server.base_url());
    let error = reqwest::Client::new().get(url).send().await.unwrap_err();
    assert!(error.is_connect(), "{error:?}");

    let stats = stats_when(&server, |s| s.connections == 1).await;
    assert_eq!(stats.connections, 1);
    assert_eq!(stats.tls_full_handshakes, 0, "{stats:?}");
    assert_eq!(stats.requests_started, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn a_plain_server_counts_connections_and_no_handshakes() {
    let server = crate::common::server_with_latency(Duration::ZERO).await;
    assert!(server.base_url().starts_with("http://"));
    for id in 0..3 {
        // A client each, so that each request has a connection of its own.
        let url = format!("{}/img/{id}.jpg?w=32&h=32", server.base_url());
        let response = reqwest::Client::new().get(url).send().await.unwrap();
        response.bytes().await.unwrap();
    }
    let stats = stats_when(&server, |s| settled(s, 3)).await;
    assert_eq!(stats.connections, 3, "{stats:?}");
    assert_eq!(stats.tls_full_handshakes + stats.tls_resumed_handshakes, 0);
    assert_eq!(stats.http2_connections, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn a_reset_over_http2_ends_its_stream_and_spares_the_others() {
    let server = tls_server(TlsOffer::Http2).await;
    let client = trusting_client();
    // Open the connection first, so that both requests share it.
    concurrent_images(&client, &server, 1).await;
    let base = server.base_url();
    let reset = client
        .get(format!("{base}/img/1.jpg?fault=reset&latency_ms=0"))
        .send();
    let fine = client.get(format!("{base}/img/2.jpg?w=32&h=32")).send();
    let (reset, fine) = tokio::join!(reset, fine);
    let cut = match reset {
        Ok(response) => response.bytes().await.is_err(),
        Err(_) => true,
    };
    assert!(cut, "the reset body arrived whole");
    let fine = fine.unwrap();
    assert_eq!(fine.status(), 200);
    fine.bytes().await.unwrap();

    let stats = stats_when(&server, |s| s.in_flight == 0 && s.responses_cut == 1).await;
    assert_eq!(stats.responses_cut, 1, "{stats:?}");
    assert_eq!(stats.connections, 1, "{stats:?}");
    server.shutdown().await;
}
