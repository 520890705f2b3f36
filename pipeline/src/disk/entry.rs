//! Entry: what one cache entry is on disk, and what it costs.
//!
//! An entry is a cacache index line (its key, its body's SHA-256, and an
//! envelope: the response's caching policy, or how a thumbnail was made)
//! and a content file. Every content file begins with its key, so no two
//! keys share one (cacache names files by their hash: two URLs with the
//! same bytes, a default avatar, would otherwise share a file, and evicting
//! one would take the other's), and a file read back is checked against
//! the key asked for as well as its hash. Plain functions of their inputs,
//! called by the store on the disk threads.

use std::panic::AssertUnwindSafe;
use std::time::SystemTime;

use http_cache_semantics::CachePolicy;
use url::Url;

use super::{request_parts, sane_age};
use crate::request::{Fit, TargetSize};

/// What the index stores beside a response's body.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Envelope {
    /// The layout of this record; another is read as a miss.
    pub(super) version: u32,
    pub(super) policy: CachePolicy,
}

pub(super) const ENVELOPE_VERSION: u32 = 1;

/// What the index stores beside a thumbnail's pixels.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct ThumbnailEnvelope {
    /// How the thumbnail was made: another value is read as a miss, so a
    /// release that decodes differently does not serve old thumbnails.
    pub(super) version: u32,
    pub(super) width: u32,
    pub(super) height: u32,
    /// The image's own size ([`Thumbnail::source_size`](crate::Thumbnail::source_size)).
    pub(super) source_size: (u32, u32),
    /// The integrity (SHA-256) of the response's content file it was made
    /// from.
    pub(super) original: String,
}

/// 2: with the image's own size (`source_size`).
pub(super) const THUMBNAIL_VERSION: u32 = 2;

/// Bytes an index line costs beyond its key and envelope: the line's hash
/// and the entry's other fields (207 to 210 bytes in cacache 13's lines),
/// rounded up so that the ledger never counts less than the directory
/// holds.
const INDEX_LINE_OVERHEAD: u64 = 256;

/// The index key of `url`'s thumbnail for `target`; a response's key is
/// its URL. A cover crop's box is marked as such (`64x64c`), and an image
/// at its own size with its percentage (`8192x8192o200`).
pub(super) fn thumbnail_key(url: &str, target: TargetSize) -> String {
    let fit = match target.fit {
        Fit::Inside => String::new(),
        Fit::Cover => "c".to_owned(),
        Fit::Original { percent } => format!("o{percent}"),
    };
    format!(
        "thumbnail/v{THUMBNAIL_VERSION} {}x{}{fit} {url}",
        target.width, target.height
    )
}

/// `bytes` as stored under `key`: the key's length (4 bytes, little
/// endian), the key, the bytes.
pub(super) fn frame(key: &str, bytes: &[u8]) -> Vec<u8> {
    let mut framed = Vec::with_capacity(4 + key.len() + bytes.len());
    framed.extend_from_slice(&(key.len() as u32).to_le_bytes());
    framed.extend_from_slice(key.as_bytes());
    framed.extend_from_slice(bytes);
    framed
}

pub(super) fn frame_len(key: &str) -> usize {
    4 + key.len()
}

/// The bytes of a content file stored under `key`, or `None` if it was
/// stored under another.
pub(super) fn unframe(key: &str, mut framed: Vec<u8>) -> Option<Vec<u8>> {
    let stored_len = u32::from_le_bytes(framed.get(..4)?.try_into().ok()?) as usize;
    if stored_len != key.len() || framed.get(4..frame_len(key))? != key.as_bytes() {
        return None;
    }
    framed.drain(..frame_len(key));
    Some(framed)
}

/// The caching policy stored in a response's index entry under `key`, if
/// it is in this release's layout and the caching rules can use it: its
/// `Age` is within [`super::MAX_AGE_SECONDS`] (as every policy this cache writes
/// is, `response_parts` sees to it) and asking it whether it is fresh does
/// not panic. An index line is read from a directory anyone with access to
/// it may have written.
pub(super) fn stored_policy(key: &str, metadata: serde_json::Value) -> Option<CachePolicy> {
    // Every `Age` header, whatever the case of its name (the policy's
    // loader lowercases names, so `AGE` would be read as `age`).
    let sane = match metadata.pointer("/policy/res") {
        None => true,
        Some(serde_json::Value::Object(headers)) => headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("age"))
            .all(|(_, value)| match value {
                serde_json::Value::String(age) => sane_age(Some(age)),
                serde_json::Value::Array(ages) => ages.iter().all(|age| sane_age(age.as_str())),
                _ => false,
            }),
        Some(_) => false,
    };
    if !sane {
        return None;
    }
    let envelope = serde_json::from_value::<Envelope>(metadata)
        .ok()
        .filter(|envelope| envelope.version == ENVELOPE_VERSION)?;
    let request = request_parts(&Url::parse(key).ok()?)?;
    let policy = envelope.policy;
    let usable = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let now = SystemTime::now();
        let _ = policy.before_request(&request, now);
        policy.time_to_live(now)
    }));
    usable.is_ok().then_some(policy)
}

/// What `entry` costs in the ledger: its content file and its index line.
pub(super) fn entry_cost(entry: &cacache::Metadata) -> u64 {
    let envelope = serde_json::to_string(&entry.metadata).map_or(0, |m| m.len());
    (entry.size as u64).saturating_add(line_cost(&entry.key, envelope))
}

/// The bytes an index line for `key` with `envelope_len` bytes of envelope
/// costs.
pub(super) fn line_cost(key: &str, envelope_len: usize) -> u64 {
    (key.len() as u64)
        .saturating_add(envelope_len as u64)
        .saturating_add(INDEX_LINE_OVERHEAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_holds_its_key() {
        let framed = frame("http://a/1.jpg", b"body");
        assert_eq!(
            unframe("http://a/1.jpg", framed.clone()).as_deref(),
            Some(&b"body"[..])
        );
        assert_eq!(unframe("http://a/2.jpg", framed.clone()), None);
        assert_eq!(unframe("http://a/1.jpg", framed[..10].to_vec()), None);
        assert_eq!(unframe("x", Vec::new()), None);
        // Two keys with the same bytes have files of their own.
        assert_ne!(
            cacache::Integrity::from(frame("a", b"same")),
            cacache::Integrity::from(frame("b", b"same"))
        );
    }
}
