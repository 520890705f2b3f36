//! TLS: the server's certificate, what it offers by ALPN, and the handshake.
//!
//! With [`Config::tls`](crate::Config::tls) set, every connection begins with
//! a TLS handshake in which the server presents a self-signed certificate for
//! `localhost` and `127.0.0.1` ([`CERTIFICATE_DER`]); a client trusts it by
//! adding that certificate as a root (thumbpipe:
//! `FetchConfig::extra_root_certificates`). Then the connection speaks what
//! ALPN agreed, and only that: HTTP/2 if the server offered it and the
//! client chose it, HTTP/1.1 otherwise. A handshake not done in 10 s is
//! dropped. The handshake runs on the connection's own task and
//! ends with it; nothing here outlives a connection.
//!
//! The certificate and its key are test material, published here on
//! purpose: never trust them beyond loopback. They were made once with
//! `openssl req -x509 -newkey rsa:2048 -nodes -days 36500 -subj /CN=localhost
//! -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -addext
//! basicConstraints=critical,CA:FALSE`, the key converted to PKCS#8 DER.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The server's certificate (DER): self-signed, for `localhost` and
/// `127.0.0.1`, valid until 2126.
///
/// ```
/// // A client of a TLS fixture server trusts this as a root:
/// let root = fixture_server::tls::CERTIFICATE_DER.to_vec();
/// assert!(!root.is_empty());
/// ```
pub const CERTIFICATE_DER: &[u8] = include_bytes!("tls/localhost.cert.der");

/// The certificate's private key (PKCS#8 DER), for tests that run a TLS
/// server of their own with [`CERTIFICATE_DER`].
pub const PRIVATE_KEY_DER: &[u8] = include_bytes!("tls/localhost.key.der");

/// What a TLS server offers a client by ALPN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TlsOffer {
    /// HTTP/1.1 only (`http/1.1`): every request in flight holds a
    /// connection of its own, and a client that cancels one closes it.
    Http1,
    /// HTTP/2, then HTTP/1.1 (`h2`, `http/1.1`): a client that speaks
    /// HTTP/2 sends its requests as streams of a connection (one, once it
    /// knows the server speaks HTTP/2), and a cancel resets one stream.
    Http2,
}

impl TlsOffer {
    /// The name on the command line: `h1` or `h2`.
    pub fn name(self) -> &'static str {
        match self {
            TlsOffer::Http1 => "h1",
            TlsOffer::Http2 => "h2",
        }
    }

    fn alpn(self) -> Vec<Vec<u8>> {
        match self {
            TlsOffer::Http1 => vec![b"http/1.1".to_vec()],
            TlsOffer::Http2 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        }
    }
}

impl fmt::Display for TlsOffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A TLS offer that is neither `h1` nor `h2`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown TLS offer '{0}' (expected h1 or h2)")]
pub struct UnknownTlsOffer(pub String);

impl FromStr for TlsOffer {
    type Err = UnknownTlsOffer;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "h1" => Ok(TlsOffer::Http1),
            "h2" => Ok(TlsOffer::Http2),
            other => Err(UnknownTlsOffer(other.to_owned())),
        }
    }
}

/// rustls' server settings for [`CERTIFICATE_DER`], offering `offer` by
/// ALPN, with aws-lc as the cryptography (named, so that a process with a
/// second provider compiled in still builds it).
///
/// ```
/// use fixture_server::tls::{TlsOffer, server_config};
///
/// let config = server_config(TlsOffer::Http2)?;
/// assert_eq!(config.alpn_protocols[0], b"h2");
/// # Ok::<(), rustls::Error>(())
/// ```
pub fn server_config(offer: TlsOffer) -> Result<rustls::ServerConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(CERTIFICATE_DER.to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(PRIVATE_KEY_DER.to_vec())),
        )?;
    config.alpn_protocols = offer.alpn();
    Ok(config)
}

/// What one connection's handshake agreed, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Agreed {
    /// A resumed session (no certificate sent, less cryptography).
    pub resumed: bool,
    /// ALPN chose `h2`.
    pub http2: bool,
}

impl Agreed {
    pub(crate) fn of(connection: &rustls::ServerConnection) -> Self {
        Self {
            resumed: connection.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            http2: connection.alpn_protocol() == Some(b"h2"),
        }
    }
}
