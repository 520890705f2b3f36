//! When a reader may stop reading a body: the [`StopRule`] a layer in front
//! of the fetcher puts in the request (the JPEG layer, `decode/jpeg/`, which
//! knows how far a thumbnail needs a photo read), and the loop every reader
//! of this crate runs over the chunks it reads (`BodySoFar`): the body cap,
//! and the rule's watch; and how often a watch looks again at a growing
//! body (`Looks`). The fetch stage knows nothing of formats: a rule is a
//! function of the bytes read so far.
//!
//! A rule is made once per request and shared by its clones; each body read
//! gets a watch of its own, which ends with that read, handing what it found
//! in the bytes (the JPEG layer's walk over the markers) to the body.

use std::sync::Arc;

use bytes::Bytes;

use crate::body::{Body, Found};
use crate::error::Error;

/// What a [`StopRule`]'s watch says of the bytes read so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enough {
    /// They make the thumbnail: the rest need not be read.
    Yes,
    /// Not known yet: read on, and ask again.
    NotYet,
    /// The whole body is needed: read on without asking.
    Never,
}

/// One body's watch: told the bytes read so far, each time a longer start of
/// the same body.
pub(crate) trait BodyWatch: Send {
    /// What the bytes read so far say.
    fn check(&mut self, read: &[u8]) -> Enough;

    /// What the watch found in the bytes, for the body to carry once the
    /// watch is asked no more.
    fn found(&mut self) -> Option<Found> {
        None
    }
}

/// An app's watch: a function of the bytes read, which finds nothing to
/// hand on.
struct WatchFn<F>(F);

impl<F: FnMut(&[u8]) -> Enough + Send> BodyWatch for WatchFn<F> {
    fn check(&mut self, read: &[u8]) -> Enough {
        (self.0)(read)
    }
}

type Watch = Box<dyn BodyWatch>;

/// When a fetcher may stop reading a body, set on a
/// [`FetchRequest`](crate::FetchRequest) by a layer in front of it. A fetcher
/// that honours it asks a [`watch`](StopRule::watch) after each chunk it
/// reads and, at [`Enough::Yes`], stops and answers the bytes read as a
/// [`Body::cut_short`]; one that does not answers whole bodies, which serve
/// as well. thumbpipe's fetcher honours it for `http`, `https` and `file`
/// URLs.
///
/// ```
/// use thumbpipe::{Enough, StopRule};
///
/// // Enough once the first 4 bytes are read.
/// let rule = StopRule::new(|| |read: &[u8]| if read.len() >= 4 { Enough::Yes } else { Enough::NotYet });
/// let mut watch = rule.watch();
/// assert_eq!(watch(b"ab"), Enough::NotYet);
/// assert_eq!(watch(b"abcd"), Enough::Yes);
/// ```
#[derive(Clone)]
pub struct StopRule(Arc<dyn Fn() -> Watch + Send + Sync>);

impl StopRule {
    /// A rule whose watches `start` makes, one for each body read: a watch
    /// may keep state from one call to the next (how far it has looked),
    /// since it is asked about longer starts of one body.
    pub fn new<W>(start: impl Fn() -> W + Send + Sync + 'static) -> Self
    where
        W: FnMut(&[u8]) -> Enough + Send + 'static,
    {
        Self(Arc::new(move || Box::new(WatchFn(start())) as Watch))
    }

    /// A rule whose watches hand on what they find in the bytes.
    pub(crate) fn finding<W: BodyWatch + 'static>(
        start: impl Fn() -> W + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(move || Box::new(start()) as Watch))
    }

    /// A watch for one body.
    pub fn watch(&self) -> impl FnMut(&[u8]) -> Enough + Send + 'static {
        let mut watch = (self.0)();
        move |read: &[u8]| watch.check(read)
    }
}

impl std::fmt::Debug for StopRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StopRule")
    }
}

/// A body being read, chunk by chunk, under the request's cap and its stop
/// rule: what the `http` and `file` readers share.
pub(crate) struct BodySoFar {
    bytes: Vec<u8>,
    max_bytes: u64,
    /// `None` once the rule has said the whole body is needed, or without
    /// a rule.
    watch: Option<Watch>,
    /// What the watch found, once it said the whole body is needed.
    found: Option<Found>,
    /// The whole body's size, when known (a file's): room for it is made
    /// once the rule says the whole body is needed.
    whole: usize,
    /// Whether the body says it is longer than the cap (a file's size, a
    /// `Content-Length`): read only while the rule may find its start
    /// enough, refused as soon as it gives up.
    over: bool,
}

/// Whether to read on after a chunk.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadOn {
    More,
    /// The stop rule's watch said the bytes read make the thumbnail.
    Stop,
}

impl BodySoFar {
    /// An empty body with room for `capacity` bytes, capped at `max_bytes`,
    /// watched by `rule`.
    pub(crate) fn new(capacity: usize, max_bytes: u64, rule: Option<&StopRule>) -> Self {
        Self {
            bytes: Vec::with_capacity(capacity),
            max_bytes,
            watch: rule.map(|rule| (rule.0)()),
            found: None,
            whole: 0,
            over: false,
        }
    }

    /// The same body, which says it is `length` bytes long: past the cap,
    /// it is refused as soon as the rule gives up on its start.
    pub(crate) fn declared(self, length: Option<u64>) -> Self {
        Self {
            over: length.is_some_and(|length| length > self.max_bytes),
            ..self
        }
    }

    /// The same, for a body known to be `whole` bytes long: it starts at
    /// `capacity` and grows to `whole` at once when it must be read whole.
    pub(crate) fn of_known_size(
        capacity: usize,
        whole: usize,
        max_bytes: u64,
        rule: Option<&StopRule>,
    ) -> Self {
        Self {
            whole,
            ..Self::new(capacity, max_bytes, rule)
        }
    }

    /// Adds `chunk`; refuses it with `too_large` past the cap, or once the
    /// rule gives up on a body declared past it.
    pub(crate) fn push(
        &mut self,
        chunk: &[u8],
        too_large: impl FnOnce() -> Error,
    ) -> Result<ReadOn, Error> {
        if (self.bytes.len() + chunk.len()) as u64 > self.max_bytes {
            return Err(too_large());
        }
        self.bytes.extend_from_slice(chunk);
        if let Some(watch) = &mut self.watch {
            match watch.check(&self.bytes) {
                Enough::Yes => return Ok(ReadOn::Stop),
                Enough::NotYet => {}
                Enough::Never if self.over => return Err(too_large()),
                Enough::Never => {
                    self.found = watch.found();
                    self.watch = None;
                    self.bytes
                        .reserve_exact(self.whole.saturating_sub(self.bytes.len()));
                }
            }
        }
        Ok(ReadOn::More)
    }

    /// Whether the stop rule still watches: it may yet say the bytes are
    /// enough.
    pub(crate) fn watching(&self) -> bool {
        self.watch.is_some()
    }

    /// The body: cut short if `stopped`, whole otherwise; its bytes held
    /// by `hold` (a share of the body budget).
    pub(crate) fn finish(mut self, stopped: bool, hold: impl FnOnce(Vec<u8>) -> Bytes) -> Body {
        let found = match &mut self.watch {
            Some(watch) => watch.found(),
            None => self.found,
        };
        let bytes = hold(self.bytes);
        let mut body = if stopped {
            Body::cut_short(bytes)
        } else {
            Body::whole(bytes)
        };
        body.set_found(found);
        body
    }

    /// The bytes read so far.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// When a watch over a growing body looks at it again: once it has grown
/// by a quarter (and at least a step), so however it arrives, a few
/// dozen looks cover the most it is watched for. Past that most, the body
/// is read whole.
#[cfg_attr(not(any(feature = "raw", feature = "jxl")), allow(dead_code))]
#[derive(Clone, Debug)]
pub(crate) struct Looks {
    /// The most bytes watched.
    most: usize,
    /// The least a body grows between looks.
    step: usize,
    /// Bytes read before the next look.
    next: usize,
}

#[cfg_attr(not(any(feature = "raw", feature = "jxl")), allow(dead_code))]
impl Looks {
    pub(crate) fn new(most: usize, step: usize) -> Self {
        Self {
            most,
            step,
            next: 0,
        }
    }

    /// What `look` says of `read`, the bytes read so far, when a look is
    /// due; `NotYet` until then.
    pub(crate) fn check(&mut self, read: &[u8], look: impl FnOnce(&[u8]) -> Enough) -> Enough {
        if read.len() > self.most {
            return Enough::Never;
        }
        if read.len() < self.next {
            return Enough::NotYet;
        }
        let enough = look(read);
        self.next = read.len() + (read.len() / 4).max(self.step);
        enough
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn too_large() -> Error {
        Error::TooLarge {
            url: "test".into(),
            what: "over".into(),
            setting: "fetch.max_body_bytes",
        }
    }

    /// A rule that is enough at `at` bytes.
    fn enough_at(at: usize) -> StopRule {
        StopRule::new(move || {
            move |read: &[u8]| {
                if read.len() >= at {
                    Enough::Yes
                } else {
                    Enough::NotYet
                }
            }
        })
    }

    #[test]
    fn a_body_stops_at_the_first_chunk_that_is_enough() {
        let rule = enough_at(10);
        let mut body = BodySoFar::new(0, 100, Some(&rule));
        assert_eq!(body.push(&[1; 4], too_large).unwrap(), ReadOn::More);
        assert_eq!(body.push(&[2; 4], too_large).unwrap(), ReadOn::More);
        assert_eq!(body.push(&[3; 4], too_large).unwrap(), ReadOn::Stop);
        assert_eq!(body.len(), 12);
        let body = body.finish(true, Bytes::from);
        assert!(!body.complete);
        assert_eq!(body.len(), 12);
    }

    #[test]
    fn without_a_rule_or_once_it_says_never_a_body_is_read_whole() {
        let never = StopRule::new(|| |_: &[u8]| Enough::Never);
        for rule in [None, Some(&never)] {
            let mut body = BodySoFar::new(0, 100, rule);
            for _ in 0..10 {
                assert_eq!(body.push(&[0; 10], too_large).unwrap(), ReadOn::More);
            }
            assert!(body.finish(false, Bytes::from).complete);
        }
    }

    #[test]
    fn a_body_declared_past_the_cap_is_refused_once_the_rule_gives_up() {
        let gives_up = StopRule::new(|| {
            let mut calls = 0;
            move |_: &[u8]| {
                calls += 1;
                if calls < 2 {
                    Enough::NotYet
                } else {
                    Enough::Never
                }
            }
        });
        let mut body = BodySoFar::new(0, 100, Some(&gives_up)).declared(Some(101));
        assert_eq!(body.push(&[0; 10], too_large).unwrap(), ReadOn::More);
        assert!(matches!(
            body.push(&[0; 10], too_large),
            Err(Error::TooLarge { .. })
        ));
        // Within the cap, or of no declared length, it is read on.
        for declared in [Some(100), None] {
            let mut body = BodySoFar::new(0, 100, Some(&gives_up)).declared(declared);
            for _ in 0..5 {
                assert_eq!(body.push(&[0; 10], too_large).unwrap(), ReadOn::More);
            }
        }
        // Past it, a start that is enough is still read and kept.
        let rule = enough_at(10);
        let mut body = BodySoFar::new(0, 100, Some(&rule)).declared(Some(1 << 30));
        assert_eq!(body.push(&[0; 10], too_large).unwrap(), ReadOn::Stop);
    }

    #[test]
    fn the_cap_is_kept_with_or_without_a_rule() {
        let rule = enough_at(1000);
        let mut body = BodySoFar::new(0, 10, Some(&rule));
        assert_eq!(body.push(&[0; 10], too_large).unwrap(), ReadOn::More);
        assert!(matches!(
            body.push(&[0; 1], too_large),
            Err(Error::TooLarge { .. })
        ));
    }

    /// Each body read (a request sent again, a clone of it) starts a watch
    /// of its own: this one is enough at its own second call.
    #[test]
    fn every_body_gets_a_fresh_watch() {
        let rule = StopRule::new(|| {
            let mut calls = 0;
            move |_: &[u8]| {
                calls += 1;
                if calls == 2 {
                    Enough::Yes
                } else {
                    Enough::NotYet
                }
            }
        });
        let copy = rule.clone();
        for rule in [&rule, &copy, &rule] {
            let mut watch = rule.watch();
            assert_eq!(watch(b"a"), Enough::NotYet);
            assert_eq!(watch(b"ab"), Enough::Yes);
        }
    }
}
