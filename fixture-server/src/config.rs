//! What a server is asked to do: its address, latency, fault mix and limits.
//!
//! Plain data, parsed from the command line or built in code; nothing here
//! runs. [`crate::FixtureServer::start`] takes a [`Config`] by value.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use crate::tls::TlsOffer;

/// How a [`crate::FixtureServer`] behaves.
///
/// ```
/// use fixture_server::{Config, FaultKind};
/// use std::time::Duration;
///
/// let config = Config {
///     latency: Duration::from_millis(50),
///     faults: vec![(FaultKind::Status500, 0.1)],
///     ..Config::default()
/// };
/// assert_eq!(config.addr.port(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to listen. Default: `127.0.0.1:0` (loopback, any free port).
    pub addr: SocketAddr,
    /// Time before the first byte of every image response. Default: 250 ms.
    /// A request overrides it with `?latency_ms=`.
    pub latency: Duration,
    /// A uniformly random extra wait in `0..=jitter`, added to the latency.
    /// Default: none.
    pub jitter: Duration,
    /// Faults applied at random to image requests that name none themselves:
    /// each entry is a kind and its probability. Probabilities add up to at
    /// most 1. Default: none.
    pub faults: Vec<(FaultKind, f64)>,
    /// Image size when a request gives no `?w=`/`?h=`. Default: 600x600.
    pub default_size: (u32, u32),
    /// JPEG quality, 1-100. Default: 85.
    pub jpeg_quality: u8,
    /// Seed for the random choices (jitter, faults, garbage bytes), so that a
    /// run can be repeated. Default: 0.
    pub seed: u64,
    /// How long [`crate::FixtureServer::shutdown`] lets in-flight requests
    /// finish before it closes their connections. Default: 1 s.
    pub shutdown_grace: Duration,
    /// `Cache-Control: max-age` on every image: how long a client may reuse
    /// it without asking again. A request overrides it with `?max_age=`,
    /// and `?no_store=1` forbids storing the image at all. Default: `None`,
    /// no `Cache-Control`: a client may still keep the image, but (its
    /// `Last-Modified` being the server's start) must revalidate it before
    /// reuse. Every image carries a strong `ETag` and `Last-Modified`, and
    /// a request whose `If-None-Match` names its ETag gets `304 Not
    /// Modified` with no body.
    pub max_age: Option<Duration>,
    /// Serve over TLS with the self-signed [`crate::tls::CERTIFICATE_DER`],
    /// offering HTTP/2 or HTTP/1.1 only by ALPN; URLs are then `https://`.
    /// Default: `None`, plain HTTP (HTTP/1.1, or HTTP/2 to a client that
    /// starts with it).
    pub tls: Option<TlsOffer>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            latency: Duration::from_millis(250),
            jitter: Duration::ZERO,
            faults: Vec::new(),
            default_size: (600, 600),
            jpeg_quality: 85,
            seed: 0,
            shutdown_grace: Duration::from_secs(1),
            max_age: None,
            tls: None,
        }
    }
}

impl Config {
    /// Checks the values a user can get wrong: fault probabilities, sizes and
    /// JPEG quality.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut total = 0.0;
        for (kind, probability) in &self.faults {
            if !(0.0..=1.0).contains(probability) {
                return Err(ConfigError::Probability {
                    kind: *kind,
                    probability: *probability,
                });
            }
            total += probability;
        }
        if total > 1.0 + 1e-9 {
            return Err(ConfigError::ProbabilitySum(total));
        }
        let (w, h) = self.default_size;
        if !(1..=MAX_SIDE).contains(&w) || !(1..=MAX_SIDE).contains(&h) {
            return Err(ConfigError::Size(w, h));
        }
        if !(1..=100).contains(&self.jpeg_quality) {
            return Err(ConfigError::JpegQuality(self.jpeg_quality));
        }
        Ok(())
    }
}

/// The largest width or height the server draws.
pub const MAX_SIDE: u32 = 4096;

/// The longest latency a request may ask for with `?latency_ms=`.
pub const MAX_LATENCY: Duration = Duration::from_secs(600);

/// A [`Config`] the server cannot run with.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A fault probability outside 0..=1.
    #[error("fault '{kind}' has probability {probability}, outside 0..=1")]
    Probability {
        /// The fault.
        kind: FaultKind,
        /// Its probability.
        probability: f64,
    },
    /// Fault probabilities that add up to more than 1.
    #[error("fault probabilities add up to {0}, over 1 (lower some of them)")]
    ProbabilitySum(f64),
    /// A default image size outside 1..=4096.
    #[error("image size {0}x{1} is outside 1..=4096 on a side")]
    Size(u32, u32),
    /// A JPEG quality outside 1..=100.
    #[error("jpeg quality {0} is outside 1..=100")]
    JpegQuality(u8),
}

/// A way for an image response to go wrong.
///
/// Named on the wire (`?fault=503`, `--fault slow:0.1`) by [`FaultKind::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultKind {
    /// `404`: status 404 with a short text body.
    Status404,
    /// `500`: status 500 with a short text body.
    Status500,
    /// `503`: status 503 with a short text body and `Retry-After: 1`.
    Status503,
    /// `reset`: headers and about half of the body, then the connection is
    /// reset (TCP RST); over HTTP/2, the stream alone (`RST_STREAM`).
    Reset,
    /// `truncate`: `Content-Length` larger than the body, which is sent whole
    /// before the connection closes (over HTTP/2: before the stream is
    /// reset).
    Truncate,
    /// `garbage`: random bytes, labelled `image/jpeg`.
    Garbage,
    /// `wrong-type`: a 200 response with an HTML page.
    WrongType,
    /// `slow`: the image, dripped at about 300 bytes per second.
    Slow,
    /// `hang`: the request is accepted and never answered.
    Hang,
    /// `bomb`: a small PNG whose header claims 60000x60000 pixels; its pixel
    /// data stops after a few rows.
    Bomb,
    /// `huge`: a 200 MB body without `Content-Length`, sent as fast as the
    /// client reads it.
    Huge,
    /// `redirect-loop`: a 302 to another URL that redirects again, forever.
    RedirectLoop,
}

impl FaultKind {
    /// Every fault, in the order `/stats` lists them.
    pub const ALL: [FaultKind; 12] = [
        FaultKind::Status404,
        FaultKind::Status500,
        FaultKind::Status503,
        FaultKind::Reset,
        FaultKind::Truncate,
        FaultKind::Garbage,
        FaultKind::WrongType,
        FaultKind::Slow,
        FaultKind::Hang,
        FaultKind::Bomb,
        FaultKind::Huge,
        FaultKind::RedirectLoop,
    ];

    /// The fault's name on the wire.
    ///
    /// ```
    /// use fixture_server::FaultKind;
    /// assert_eq!(FaultKind::RedirectLoop.name(), "redirect-loop");
    /// assert_eq!("redirect-loop".parse::<FaultKind>(), Ok(FaultKind::RedirectLoop));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Status404 => "404",
            FaultKind::Status500 => "500",
            FaultKind::Status503 => "503",
            FaultKind::Reset => "reset",
            FaultKind::Truncate => "truncate",
            FaultKind::Garbage => "garbage",
            FaultKind::WrongType => "wrong-type",
            FaultKind::Slow => "slow",
            FaultKind::Hang => "hang",
            FaultKind::Bomb => "bomb",
            FaultKind::Huge => "huge",
            FaultKind::RedirectLoop => "redirect-loop",
        }
    }

    pub(crate) fn index(self) -> usize {
        Self::ALL.iter().position(|kind| *kind == self).unwrap_or(0)
    }

    fn names() -> String {
        Self::ALL.map(FaultKind::name).join(", ")
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A fault name that is not one of [`FaultKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown fault '{given}' (known: {known})")]
pub struct UnknownFault {
    given: String,
    known: String,
}

impl FromStr for FaultKind {
    type Err = UnknownFault;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| UnknownFault {
                given: s.to_owned(),
                known: Self::names(),
            })
    }
}

/// Parses a `KIND:PROBABILITY` pair, as given to `--fault`.
///
/// ```
/// use fixture_server::{parse_fault_spec, FaultKind};
/// assert_eq!(parse_fault_spec("slow:0.25"), Ok((FaultKind::Slow, 0.25)));
/// assert!(parse_fault_spec("slow").is_err());
/// ```
pub fn parse_fault_spec(spec: &str) -> Result<(FaultKind, f64), String> {
    let (kind, probability) = spec
        .rsplit_once(':')
        .ok_or_else(|| format!("'{spec}' is not KIND:PROBABILITY (for example 500:0.1)"))?;
    let kind: FaultKind = kind.parse().map_err(|e: UnknownFault| e.to_string())?;
    let probability: f64 = probability
        .parse()
        .map_err(|_| format!("'{probability}' in '{spec}' is not a number between 0 and 1"))?;
    if !(0.0..=1.0).contains(&probability) {
        return Err(format!(
            "probability {probability} in '{spec}' is outside 0..=1"
        ));
    }
    Ok((kind, probability))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_name_round_trips() {
        for kind in FaultKind::ALL {
            assert_eq!(kind.name().parse::<FaultKind>(), Ok(kind));
            assert_eq!(FaultKind::ALL[kind.index()], kind);
        }
    }

    #[test]
    fn unknown_fault_lists_the_known_ones() {
        let err = "teapot".parse::<FaultKind>().unwrap_err().to_string();
        assert!(err.contains("'teapot'"), "{err}");
        assert!(err.contains("redirect-loop"), "{err}");
    }

    #[test]
    fn bad_fault_specs_are_refused() {
        assert!(parse_fault_spec("500:1.5").is_err());
        assert!(parse_fault_spec("500:abc").is_err());
        assert!(parse_fault_spec("nope:0.1").is_err());
    }

    #[test]
    fn probabilities_over_one_in_total_are_refused() {
        let config = Config {
            faults: vec![(FaultKind::Hang, 0.6), (FaultKind::Slow, 0.6)],
            ..Config::default()
        };
        assert!(matches!(
            config.validate(),
            Err(ConfigError::ProbabilitySum(_))
        ));
        assert_eq!(Config::default().validate(), Ok(()));
    }
}
