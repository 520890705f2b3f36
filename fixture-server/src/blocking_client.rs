//! A minimal blocking HTTP/1.1 client over a plain `TcpStream`, one
//! connection per request: the demo's naive loader, the benchmarks'
//! thread-per-request baselines, and a way to read a server's `/stats`
//! without a runtime.
//!
//! The baselines need a fetch that parks its thread in a socket read while
//! it waits, as the blocking loaders they reproduce do; a blocking client
//! that hides an async runtime behind a channel would park in a futex
//! instead and hide the cost from a thread census.
//!
//! ```no_run
//! let body = fixture_server::blocking_client::get("http://127.0.0.1:8080/img/7.jpg")?;
//! # Ok::<(), String>(())
//! ```

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// GETs `url` (`http://host:port/path`) and returns the body of a 200.
pub fn get(url: &str) -> Result<Vec<u8>, String> {
    request("GET", url)
}

/// POSTs an empty body to `url`.
pub fn post(url: &str) -> Result<Vec<u8>, String> {
    request("POST", url)
}

fn request(method: &str, url: &str) -> Result<Vec<u8>, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("'{url}' is not an http:// URL"))?;
    let (authority, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, "/"),
    };
    let mut stream = TcpStream::connect(authority).map_err(|e| format!("{url}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("{url}: {e}"))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| format!("{url}: {e}"))?;
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("{url}: no HTTP header in the response"))?;
    let head = String::from_utf8_lossy(&response[..split]);
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if !status.starts_with('2') {
        return Err(format!("{url}: status {status}"));
    }
    Ok(response[split + 4..].to_vec())
}
