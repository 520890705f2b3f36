//! Rows: the UI side's book of requests. One live request per row key, its
//! [`RequestId`], and which row owns each pending request;
//! what a new request, the end of a frame or a completion does to them.
//!
//! Plain data, owned by the [`Pipeline`](crate::Pipeline) handle and
//! changed only on the caller's (UI) thread. It sends nothing: each change
//! returns the requests to start or end, and the handle (`frame.rs`) tells
//! the load actor. It ends with the handle.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Instant;

use crate::deliver::{Completion, Delivery};
use crate::error::Error;
use crate::request::{Priority, RequestId, TargetSize};

/// A row's current request.
#[derive(Debug)]
struct Row {
    id: RequestId,
    url: Arc<str>,
    target: TargetSize,
    priority: Priority,
    /// Asked for since the last end of a frame.
    seen: bool,
    /// Still waiting for its completion.
    pending: bool,
    /// When this request was made.
    since: Instant,
}

/// What asking for a row's image did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Asked {
    /// The row already asks for this URL and size: its request `id` goes
    /// on. `reprioritized` is its new priority, when it changed while the
    /// request is pending.
    Current {
        id: RequestId,
        reprioritized: Option<Priority>,
    },
    /// A new request `id`. `superseded` is the row's previous
    /// request, if it was still pending; `refused` whether the requests
    /// pending had reached their limit, so that no work may start.
    New {
        id: RequestId,
        url: Arc<str>,
        superseded: Option<RequestId>,
        refused: bool,
    },
}

/// Every row's current request.
#[derive(Debug)]
pub(crate) struct RowTable<K> {
    rows: HashMap<K, Row>,
    /// Which row owns each pending request.
    owners: HashMap<RequestId, K>,
    last_id: RequestId,
    /// `Config::max_pending_requests`.
    max_pending: usize,
}

impl<K> RowTable<K> {
    pub(crate) fn new(max_pending: usize) -> Self {
        Self {
            rows: HashMap::new(),
            owners: HashMap::new(),
            last_id: RequestId(0),
            max_pending,
        }
    }
}

impl<K: Hash + Eq + Clone> RowTable<K> {
    /// `row` asks for `url` fitted to `target` at `priority`; `now` is read
    /// only for a new request (a row asking again every frame costs no
    /// clock read).
    pub(crate) fn ask(
        &mut self,
        row: K,
        url: &str,
        target: TargetSize,
        priority: Priority,
        now: impl FnOnce() -> Instant,
    ) -> Asked {
        if let Some(current) = self.rows.get_mut(&row)
            && *current.url == *url
            && current.target == target
        {
            current.seen = true;
            let changed = current.priority != priority;
            current.priority = priority;
            return Asked::Current {
                id: current.id,
                reprioritized: (changed && current.pending).then_some(priority),
            };
        }
        let superseded = self
            .rows
            .remove(&row)
            .and_then(|previous| self.end(&previous));
        self.last_id = RequestId(self.last_id.0 + 1);
        let id = self.last_id;
        let refused = self.owners.len() >= self.max_pending;
        self.owners.insert(id, row.clone());
        let url: Arc<str> = Arc::from(url);
        self.rows.insert(
            row,
            Row {
                id,
                url: Arc::clone(&url),
                target,
                priority,
                seen: true,
                pending: true,
                since: now(),
            },
        );
        Asked::New {
            id,
            url,
            superseded,
            refused,
        }
    }

    /// Ends a frame: rows not asked for since the previous end have left
    /// the view and are forgotten. Returns their pending requests.
    pub(crate) fn end_frame(&mut self) -> Vec<RequestId> {
        self.forget_where(|row| !std::mem::take(&mut row.seen))
    }

    /// Forgets `row`; returns its request if it was pending.
    pub(crate) fn forget_row(&mut self, row: &K) -> Option<RequestId> {
        let current = self.rows.remove(row)?;
        self.end(&current)
    }

    /// Forgets every row asking for `url`; returns their pending requests.
    pub(crate) fn forget_url(&mut self, url: &str) -> Vec<RequestId> {
        self.forget_where(|row| *row.url == *url)
    }

    /// Forgets every row; returns their pending requests.
    pub(crate) fn forget_all(&mut self) -> Vec<RequestId> {
        self.forget_where(|_| true)
    }

    /// `delivery` as its row's completion, if it is for the row's current
    /// request; `None` for a request superseded or cancelled since.
    pub(crate) fn complete(&mut self, delivery: Delivery) -> Option<Completion<K>> {
        let row = self.owners.remove(&delivery.id)?;
        let current = self.rows.get_mut(&row)?;
        if current.id != delivery.id {
            return None;
        }
        current.pending = false;
        let completion = Completion {
            url: Arc::clone(&current.url),
            target: current.target,
            request: current.id,
            row,
            result: delivery.result,
        };
        // Refused, not failed: asking again, even for the same URL, is a
        // new request, so the row is forgotten.
        if matches!(completion.result, Err(Error::TooManyPending { .. })) {
            self.rows.remove(&completion.row);
        }
        Some(completion)
    }

    /// The URL of pending request `id`, if it is still its row's.
    pub(crate) fn url_of(&self, id: RequestId) -> Option<&Arc<str>> {
        let row = self.rows.get(self.owners.get(&id)?)?;
        (row.id == id).then_some(&row.url)
    }

    /// The rows' pending requests and their URLs.
    pub(crate) fn pending(&self) -> impl Iterator<Item = (RequestId, &Arc<str>)> {
        self.rows
            .values()
            .filter(|row| row.pending)
            .map(|row| (row.id, &row.url))
    }

    /// When `row`'s current request was made.
    pub(crate) fn requested_at(&self, row: &K) -> Option<Instant> {
        self.rows.get(row).map(|current| current.since)
    }

    /// The most pending requests before new ones are refused.
    pub(crate) fn max_pending(&self) -> usize {
        self.max_pending
    }

    /// Ends `row`'s request: returns it if it was pending.
    fn end(&mut self, row: &Row) -> Option<RequestId> {
        if !row.pending {
            return None;
        }
        self.owners.remove(&row.id);
        Some(row.id)
    }

    /// Forgets the rows whose request has completed and been drained.
    #[cfg(any(feature = "egui", feature = "iced"))]
    pub(crate) fn forget_settled(&mut self) {
        self.forget_where(|row| !row.pending);
    }

    fn forget_where(&mut self, mut which: impl FnMut(&mut Row) -> bool) -> Vec<RequestId> {
        let mut gone = Vec::new();
        self.rows.retain(|_, row| {
            let forget = which(row);
            if forget && row.pending {
                gone.push(row.id);
            }
            !forget
        });
        for id in &gone {
            self.owners.remove(id);
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thumbnail::Thumbnail;

    const SIZE: TargetSize = TargetSize::square(64);

    fn ask(rows: &mut RowTable<u32>, row: u32, url: &str) -> Asked {
        rows.ask(row, url, SIZE, Priority::Visible, Instant::now)
    }

    fn new_id(asked: Asked) -> RequestId {
        match asked {
            Asked::New { id, .. } => id,
            Asked::Current { .. } => panic!("expected a new request, got {asked:?}"),
        }
    }

    fn done(id: RequestId) -> Delivery {
        Delivery {
            id,
            result: Ok(Thumbnail {
                url: Arc::from("u"),
                width: 1,
                height: 1,
                pixels: Arc::from([0u8; 4].as_slice()),
                source_size: (1, 1),
                animation: None,
            }),
        }
    }

    #[test]
    fn asking_again_for_the_same_url_and_size_keeps_the_request_id() {
        let mut rows = RowTable::new(100);
        let id = new_id(ask(&mut rows, 7, "a"));
        assert_eq!(
            ask(&mut rows, 7, "a"),
            Asked::Current {
                id,
                reprioritized: None
            }
        );
        let higher = rows.ask(7, "a", SIZE, Priority::Destination, Instant::now);
        assert_eq!(
            higher,
            Asked::Current {
                id,
                reprioritized: Some(Priority::Destination)
            }
        );
        // Another size is another request.
        let resized = rows.ask(
            7,
            "a",
            TargetSize::square(32),
            Priority::Visible,
            Instant::now,
        );
        assert!(matches!(resized, Asked::New { superseded: Some(old), .. } if old == id));
    }

    #[test]
    fn a_new_url_supersedes_the_pending_request_and_its_completion_is_dropped() {
        let mut rows = RowTable::new(100);
        let first = new_id(ask(&mut rows, 1, "a"));
        let Asked::New {
            id: second,
            superseded,
            refused,
            ..
        } = ask(&mut rows, 1, "b")
        else {
            panic!("a new URL is a new request");
        };
        assert_eq!((superseded, refused), (Some(first), false));
        assert!(second > first);
        // The wrong-row image: the first URL's result arrives late.
        assert!(rows.complete(done(first)).is_none());
        let completion = rows.complete(done(second)).unwrap();
        assert_eq!((completion.row, completion.request), (1, second));
        assert_eq!(&*completion.url, "b");
        // Delivered once.
        assert!(rows.complete(done(second)).is_none());
    }

    #[test]
    fn a_completed_request_is_replaced_without_a_cancel() {
        let mut rows = RowTable::new(100);
        let first = new_id(ask(&mut rows, 1, "a"));
        assert!(rows.complete(done(first)).is_some());
        assert!(matches!(
            ask(&mut rows, 1, "b"),
            Asked::New {
                superseded: None,
                ..
            }
        ));
        // Nor is its priority sent anywhere once completed.
        let Asked::New { id, .. } = ask(&mut rows, 2, "c") else {
            panic!()
        };
        rows.complete(done(id));
        let later = rows.ask(2, "c", SIZE, Priority::Destination, Instant::now);
        assert_eq!(
            later,
            Asked::Current {
                id,
                reprioritized: None
            }
        );
    }

    #[test]
    fn rows_not_asked_for_during_a_frame_leave_at_its_end() {
        let mut rows = RowTable::new(100);
        let kept = new_id(ask(&mut rows, 1, "a"));
        let left = new_id(ask(&mut rows, 2, "b"));
        let finished = new_id(ask(&mut rows, 3, "c"));
        rows.complete(done(finished));
        // Every row was asked for in this frame.
        assert!(rows.end_frame().is_empty());
        ask(&mut rows, 1, "a");
        // Rows 2 and 3 were not; only 2 had a request to cancel.
        assert_eq!(rows.end_frame(), vec![left]);
        assert!(rows.complete(done(left)).is_none());
        assert_eq!(rows.requested_at(&2), None);
        assert!(rows.requested_at(&1).is_some());
        assert_eq!(rows.pending().map(|(id, _)| id).collect::<Vec<_>>(), [kept]);
    }

    #[test]
    fn forgetting_a_url_or_a_row_cancels_only_theirs() {
        let mut rows = RowTable::new(100);
        let a1 = new_id(ask(&mut rows, 1, "a"));
        let a2 = new_id(ask(&mut rows, 2, "a"));
        let b = new_id(ask(&mut rows, 3, "b"));
        let mut gone = rows.forget_url("a");
        gone.sort_unstable();
        assert_eq!(gone, [a1, a2]);
        assert_eq!(rows.forget_row(&1), None);
        assert_eq!(rows.forget_row(&3), Some(b));
        assert_eq!(rows.forget_all(), Vec::<RequestId>::new());
    }

    #[test]
    fn requests_past_the_pending_limit_are_refused_and_their_rows_forgotten() {
        let mut rows = RowTable::new(2);
        new_id(ask(&mut rows, 1, "a"));
        new_id(ask(&mut rows, 2, "b"));
        let Asked::New { id, refused, .. } = ask(&mut rows, 3, "c") else {
            panic!()
        };
        assert!(refused);
        assert_eq!(rows.url_of(id).map(|url| &**url), Some("c"));
        let refusal = Delivery {
            id,
            result: Err(Error::TooManyPending {
                url: "c".into(),
                limit: rows.max_pending(),
            }),
        };
        assert!(rows.complete(refusal).unwrap().result.is_err());
        // Asking again is a new request, not the refused one.
        assert!(matches!(
            ask(&mut rows, 3, "c"),
            Asked::New {
                superseded: None,
                ..
            }
        ));
    }
}
