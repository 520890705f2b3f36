//! Request: what a request for a thumbnail is made of, and the ids that
//! name requests and loads. A leaf of the crate: every stage may use it,
//! and it uses none of them.

/// Identifies one load task for its whole life; allocated by the load
/// actor's registry, increasing.
pub(crate) type TaskId = u64;

/// Names one request: what [`Pipeline::request`](crate::Pipeline::request)
/// returns and what its [`Completion`](crate::Completion) carries.
///
/// A row keeps its request id while it asks for the same URL and size;
/// asking for another URL or size is a new request with a new id. Ids are
/// unique over a pipeline's life and increase in the order requests are
/// made, so of two ids the greater is the newer request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub(crate) u64);

impl RequestId {
    /// The id as a number, for logs and maps keyed by integers.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "request {}", self.0)
    }
}

/// How urgently a row wants its thumbnail. The fetch and decode queues
/// serve [`Priority::Destination`], then [`Priority::Visible`], then
/// [`Priority::Prefetch`], and within a priority the newest request first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    /// Rows near the viewport, loaded ahead of need.
    Prefetch,
    /// Rows on screen now.
    #[default]
    Visible,
    /// Rows where a coasting list will come to rest
    /// ([`crate::CoastPrediction::resting_rows`]): served before the rows
    /// it passes on the way, which will have left by the time theirs
    /// arrive.
    Destination,
}

/// The box a thumbnail must fit in. The image is scaled down to fit inside
/// it, keeping its aspect ratio, and never scaled up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetSize {
    /// Largest width, in pixels.
    pub width: u32,
    /// Largest height, in pixels.
    pub height: u32,
}

impl TargetSize {
    /// A `width` x `height` box.
    pub const fn new(width: u32, height: u32) -> Self {
        Self { width, height }
    }

    /// A square box.
    pub const fn square(side: u32) -> Self {
        Self::new(side, side)
    }
}
