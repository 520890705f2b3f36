//! The body budget: how many bytes of response bodies a pipeline's fetches
//! hold between the network (or the disk cache) and the decoders, streaming
//! or waiting for a decode.
//!
//! Owned by the load actor, one per pipeline, and lent to every fetch in its
//! [`FetchRequest`]. A fetch reserves its
//! body's size (the server's `Content-Length`, or the body cap when there is
//! none) before it reads the body, waiting while the budget is spent, so a
//! stalled decoder stops the reading instead of piling bodies up. The
//! reservation travels inside the body's [`Bytes`] and is given back when
//! the last copy is dropped: after the decode, or at once when the load is
//! cancelled. A reservation is all or nothing, so two half-read bodies can
//! never wait for each other.
//!
//! [`FetchRequest`]: crate::FetchRequest

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget counts in KiB, so that a reservation fits the semaphore's
/// `u32` and the budget can exceed 4 GiB.
const UNIT: u64 = 1024;

#[derive(Debug)]
pub(crate) struct BodyBudget {
    units: Arc<Semaphore>,
    total_units: u32,
}

/// A share of the budget, held until dropped.
#[derive(Debug)]
pub(crate) struct Reservation(Option<OwnedSemaphorePermit>);

impl BodyBudget {
    pub(crate) fn new(bytes: u64) -> Self {
        let total_units = u32::try_from(bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize) as u32);
        Self {
            units: Arc::new(Semaphore::new(total_units as usize)),
            total_units,
        }
    }

    /// Reserves `bytes`, waiting while the budget is spent. A body larger
    /// than the whole budget reserves all of it, and so waits until it is
    /// the only body held.
    pub(crate) async fn reserve(&self, bytes: u64) -> Reservation {
        let units = u32::try_from(bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .clamp(1, self.total_units);
        // The semaphore is never closed; were it, nothing would wait.
        Reservation(Arc::clone(&self.units).acquire_many_owned(units).await.ok())
    }

    /// Bytes reserved now.
    #[cfg(test)]
    pub(crate) fn reserved(&self) -> u64 {
        u64::from(self.total_units - self.units.available_permits() as u32) * UNIT
    }
}

impl Reservation {
    /// A reservation of nothing, for a body outside any budget.
    pub(crate) fn none() -> Self {
        Self(None)
    }

    /// `body` as [`Bytes`] that hold the reservation, cut down to the body's
    /// size, until the last copy is dropped.
    pub(crate) fn hold(mut self, body: Vec<u8>) -> Bytes {
        let needed = (body.len() as u64).div_ceil(UNIT).max(1) as usize;
        if let Some(permit) = &mut self.0 {
            // The rest is given back at once: only the body's size stays
            // reserved.
            let spare = permit.num_permits().saturating_sub(needed);
            drop(permit.split(spare));
        }
        Bytes::from_owner(HeldBody {
            body,
            _reservation: self,
        })
    }
}

/// A body and its share of the budget.
struct HeldBody {
    body: Vec<u8>,
    _reservation: Reservation,
}

impl AsRef<[u8]> for HeldBody {
    fn as_ref(&self) -> &[u8] {
        &self.body
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;

    #[tokio::test]
    async fn a_body_holds_its_size_until_its_last_copy_is_dropped() {
        let budget = BodyBudget::new(64 * UNIT);
        let reservation = budget.reserve(40 * UNIT).await;
        assert_eq!(budget.reserved(), 40 * UNIT);
        // A body smaller than its claim gives the rest back.
        let bytes = reservation.hold(vec![7; 10 * UNIT as usize]);
        assert_eq!(budget.reserved(), 10 * UNIT);
        let copy = bytes.slice(1..5);
        drop(bytes);
        assert_eq!(budget.reserved(), 10 * UNIT);
        assert_eq!(&copy[..], &[7, 7, 7, 7]);
        drop(copy);
        assert_eq!(budget.reserved(), 0);
    }

    #[tokio::test]
    async fn a_reservation_waits_while_the_budget_is_spent() {
        let budget = BodyBudget::new(64 * UNIT);
        let first = budget.reserve(50 * UNIT).await;
        let mut waiting = Box::pin(budget.reserve(30 * UNIT));
        assert!((&mut waiting).now_or_never().is_none());
        drop(first);
        let second = waiting.await;
        assert_eq!(budget.reserved(), 30 * UNIT);
        drop(second);
        // More than the whole budget takes all of it, and still goes.
        let all = budget.reserve(1000 * UNIT).await;
        assert_eq!(budget.reserved(), 64 * UNIT);
        drop(all);
    }
}
