//! TLS: an `https` URL to a server whose certificate the platform does not
//! trust fails with `Error::Tls`, while plain HTTP to the fixture server
//! works; with the certificate trusted through the config, a redirect from
//! `https` to `http` is refused with a typed error unless allowed, and a
//! server that offers HTTP/2 gets every load over HTTP/2, on one connection
//! once it is open.
//!
//! The certificate is the fixture server's, self-signed for localhost and
//! 127.0.0.1 (`fixture_server::tls`).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use crate::common::{drain_until, id_of, server};
use fixture_server::tls::{CERTIFICATE_DER as CERT, TlsOffer};
use fixture_server::{Config as ServerConfig, FixtureServer};
use thumbpipe::{Config, Error, Pipeline, Priority, TargetSize};

/// A TLS server on loopback that presents the self-signed certificate to
/// every connection and serves nothing; returns its port.
fn untrusted_tls_server() -> u16 {
    tls_server(None)
}

/// A TLS server on loopback with the self-signed certificate that answers
/// every request with a redirect to `location`, or, without one, serves
/// nothing; returns its port.
fn tls_server(location: Option<String>) -> u16 {
    let config = Arc::new(fixture_server::tls::server_config(TlsOffer::Http1).unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::Builder::new()
        .name("tls-test-server".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let connection = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
                let mut tls = rustls::StreamOwned::new(connection, stream);
                let Some(location) = &location else {
                    // The client refuses the certificate and hangs up.
                    let _ = tls.read_to_end(&mut Vec::new());
                    continue;
                };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && tls.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let answer = format!(
                    "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\
                     Connection: close\r\n\r\n"
                );
                let _ = tls.write_all(answer.as_bytes());
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        })
        .unwrap();
    port
}

/// The fixture server over TLS, offering `offer`.
fn fixture_over_tls(offer: TlsOffer, latency_ms: u64) -> FixtureServer {
    FixtureServer::start_dedicated(ServerConfig {
        latency: Duration::from_millis(latency_ms),
        shutdown_grace: Duration::from_millis(100),
        tls: Some(offer),
        ..ServerConfig::default()
    })
    .unwrap()
}

fn trusting_pipeline() -> Pipeline<u32> {
    let mut config = Config::default();
    config.fetch.extra_root_certificates = vec![CERT.to_vec()];
    Pipeline::new(config).unwrap()
}

#[test]
fn a_server_that_offers_http2_gets_every_load_on_one_connection() {
    let fixture = fixture_over_tls(TlsOffer::Http2, 50);
    let mut pipeline = trusting_pipeline();
    // The first load opens the connection; the next ones, all in flight at
    // once, share it.
    pipeline.request(
        0,
        &fixture.image_url(0),
        TargetSize::square(32),
        Priority::Visible,
    );
    let first = drain_until(&mut pipeline, |all| !all.is_empty());
    assert_eq!(id_of(first[0].result.as_ref().unwrap()), Some(0));
    for id in 1..=12 {
        pipeline.request(
            id,
            &fixture.image_url(id),
            TargetSize::square(32),
            Priority::Visible,
        );
    }
    let done = drain_until(&mut pipeline, |all| all.len() == 12);
    assert_eq!(done.len(), 12);
    for completion in &done {
        let thumbnail = completion.result.as_ref().unwrap();
        assert_eq!(id_of(thumbnail), Some(completion.row));
    }
    let stats = fixture.stats();
    assert_eq!(stats.image_bodies, 13, "{stats:?}");
    assert_eq!(stats.connections, 1, "{stats:?}");
    assert_eq!(stats.http2_connections, 1, "{stats:?}");
    assert_eq!(stats.tls_full_handshakes, 1, "{stats:?}");
}

/// Before the first handshake says HTTP/2, each load in flight opens a
/// connection (hyper's pool cannot know it could share one); those that
/// lose the race close, and every later load shares the one kept.
#[test]
fn a_cold_burst_over_http2_opens_at_most_a_connection_per_load_then_none() {
    let fixture = fixture_over_tls(TlsOffer::Http2, 100);
    let mut pipeline = trusting_pipeline();
    let mut burst = |ids: std::ops::Range<u32>| {
        let count = ids.len();
        for id in ids {
            pipeline.request(
                id,
                &fixture.image_url(id),
                TargetSize::square(32),
                Priority::Visible,
            );
        }
        let done = drain_until(&mut pipeline, |all| all.len() == count);
        assert!(done.iter().all(|c| c.result.is_ok()), "{done:?}");
        fixture.stats()
    };
    let cold = burst(0..8);
    assert!((1..=8).contains(&cold.connections), "{cold:?}");
    assert_eq!(cold.http2_connections, cold.connections, "{cold:?}");
    let warm = burst(8..16);
    assert_eq!(warm.connections, cold.connections, "{warm:?}");
    assert_eq!(warm.image_bodies, 16);
}

#[test]
fn a_server_that_offers_only_http1_gets_a_connection_per_load_in_flight() {
    let fixture = fixture_over_tls(TlsOffer::Http1, 200);
    let mut pipeline = trusting_pipeline();
    for id in 0..6 {
        pipeline.request(
            id,
            &fixture.image_url(id),
            TargetSize::square(32),
            Priority::Visible,
        );
    }
    let done = drain_until(&mut pipeline, |all| all.len() == 6);
    assert!(done.iter().all(|c| c.result.is_ok()), "{done:?}");
    let stats = fixture.stats();
    assert_eq!(stats.connections, 6, "{stats:?}");
    assert_eq!(stats.http2_connections, 0, "{stats:?}");
}

#[test]
fn an_untrusted_certificate_is_a_tls_error_and_plain_http_works() {
    let fixture = server(0);
    let port = untrusted_tls_server();
    let mut pipeline = Pipeline::<&str>::new(Config::default()).unwrap();
    let https = format!("https://localhost:{port}/img/1.jpg");
    pipeline.request("https", &https, TargetSize::square(32), Priority::Visible);
    pipeline.request(
        "http",
        &fixture.image_url(9),
        TargetSize::square(32),
        Priority::Visible,
    );
    let done = drain_until(&mut pipeline, |all| all.len() == 2);
    assert_eq!(done.len(), 2);
    for completion in done {
        match (completion.row, completion.result) {
            ("http", Ok(thumbnail)) => assert_eq!(id_of(&thumbnail), Some(9)),
            ("https", Err(Error::Tls { url, reason, .. })) => {
                assert_eq!(url, https);
                assert!(!reason.is_empty());
                eprintln!("https: {reason}");
            }
            (row, result) => panic!("{row}: {result:?}"),
        }
    }
}

/// Regression: only the number of redirects was limited, so an `https`
/// image that redirected to `http` was fetched in the clear.
#[test]
fn a_redirect_from_https_to_http_is_refused_unless_allowed() {
    let fixture = server(0);
    let target = fixture.image_url(5);
    let port = tls_server(Some(target.clone()));
    let https = format!("https://localhost:{port}/moved.jpg");
    for allowed in [false, true] {
        let mut config = Config::default();
        config.fetch.extra_root_certificates = vec![CERT.to_vec()];
        config.fetch.allow_https_to_http_redirects = allowed;
        let mut pipeline = Pipeline::<u8>::new(config).unwrap();
        pipeline.request(0, &https, TargetSize::square(32), Priority::Visible);
        let done = drain_until(&mut pipeline, |all| !all.is_empty());
        match (allowed, &done[0].result) {
            (false, Err(Error::InsecureRedirect { url, to })) => {
                assert_eq!((url, to), (&https, &target));
                let message = done[0].result.as_ref().unwrap_err().to_string();
                assert!(
                    message.contains("allow_https_to_http_redirects"),
                    "{message}"
                );
            }
            (true, Ok(thumbnail)) => assert_eq!(id_of(thumbnail), Some(5)),
            (allowed, other) => panic!("allowed: {allowed}: {other:?}"),
        }
    }
}

#[test]
fn an_unreadable_extra_root_certificate_fails_the_build() {
    let mut config = Config::default();
    config.fetch.extra_root_certificates = vec![b"not a certificate".to_vec()];
    let error = Pipeline::<u8>::new(config).err().unwrap();
    assert!(
        error.to_string().contains("extra_root_certificates"),
        "{error}"
    );
}
