//! TLS: an `https` URL to a server whose certificate the platform does not
//! trust fails with `Error::Tls`, while plain HTTP to the fixture server
//! works; with the certificate trusted through the config, a redirect from
//! `https` to `http` is refused with a typed error unless allowed.
//!
//! The certificate is self-signed for localhost and 127.0.0.1 (made once
//! with `openssl req -x509 -newkey rsa:2048 -nodes -days 36500
//! -subj /CN=localhost -addext
//! subjectAltName=DNS:localhost,IP:127.0.0.1 -addext
//! basicConstraints=critical,CA:FALSE`, key converted to PKCS#8 DER).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use crate::common::{drain_until, id_of, server};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use thumbpipe::{Config, Error, Pipeline, Priority, TargetSize};

const CERT: &[u8] = include_bytes!("tls/self-signed.cert.der");
const KEY: &[u8] = include_bytes!("tls/self-signed.key.der");

/// A TLS server on loopback that presents the self-signed certificate to
/// every connection and serves nothing; returns its port.
fn untrusted_tls_server() -> u16 {
    tls_server(None)
}

/// A TLS server on loopback with the self-signed certificate that answers
/// every request with a redirect to `location`, or, without one, serves
/// nothing; returns its port.
fn tls_server(location: Option<String>) -> u16 {
    let config = Arc::new(server_config());
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

/// The self-signed certificate's server settings, offering no protocol
/// by ALPN.
fn server_config() -> rustls::ServerConfig {
    // Name the provider: other crates in the workspace may enable a second
    // one, and then rustls will not pick.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(CERT.to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(KEY.to_vec())),
        )
        .unwrap()
}

/// The protocol each connection chose by ALPN, in order (`None`: none).
type Chosen = Arc<Mutex<Vec<Option<Vec<u8>>>>>;

/// A TLS server on loopback that offers HTTP/2 and HTTP/1.1 by ALPN,
/// records what each client chose, and hangs up. Returns its port and the
/// choices.
fn alpn_server() -> (u16, Chosen) {
    let mut config = server_config();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let chosen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&chosen);
    std::thread::Builder::new()
        .name("alpn-test-server".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let connection = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
                let mut tls = rustls::StreamOwned::new(connection, stream);
                // Reading drives the handshake; the client speaks first.
                let _ = tls.read(&mut [0u8; 1]);
                let protocol = tls.conn.alpn_protocol().map(<[u8]>::to_vec);
                log.lock().unwrap().push(protocol);
            }
        })
        .unwrap();
    (port, chosen)
}

#[test]
fn a_server_that_offers_http2_is_spoken_to_in_http2() {
    let (port, chosen) = alpn_server();
    let mut config = Config::default();
    config.fetch.extra_root_certificates = vec![CERT.to_vec()];
    let mut pipeline = Pipeline::<u8>::new(config).unwrap();
    let https = format!("https://localhost:{port}/a.png");
    pipeline.request(0, &https, TargetSize::square(32), Priority::Visible);
    // The server hangs up: the load ends in an error, after the handshake.
    let done = drain_until(&mut pipeline, |all| !all.is_empty());
    assert!(done[0].result.is_err());
    assert_eq!(chosen.lock().unwrap().first(), Some(&Some(b"h2".to_vec())));
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
