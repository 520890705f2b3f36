//! Stall: whether the disk is answering.
//!
//! Set when a read misses its deadline; while it is set, loads do not ask
//! the disk, except one probe a second, so that a disk that hangs costs
//! one wait, not one per load. A disk operation that reaches the disk and
//! finishes (a probe, a read that was late, a write, a removal) clears
//! it. Read and set by the fetch
//! stage's tasks and the disk threads; it holds no thread.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often a stalled disk is asked again.
pub(super) const PROBE_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub(super) struct Stall {
    /// When a read last went to a stalled disk (or the stall was noticed);
    /// `None` while the disk answers.
    probed: Mutex<Option<Instant>>,
}

impl Stall {
    /// Whether a read may go to the disk now: always while it answers;
    /// while it is stalled, once every [`PROBE_EVERY`].
    pub(super) fn may_read(&self) -> bool {
        let mut probed = self.probed.lock().unwrap_or_else(PoisonError::into_inner);
        match *probed {
            None => true,
            Some(at) if at.elapsed() >= PROBE_EVERY => {
                *probed = Some(Instant::now());
                true
            }
            Some(_) => false,
        }
    }

    /// A read missed its deadline.
    pub(super) fn timed_out(&self) {
        *self.probed.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// A disk operation finished.
    pub(super) fn answered(&self) {
        *self.probed.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stalled_disk_is_asked_once_a_probe_period_until_it_answers() {
        let stall = Stall::default();
        assert!(stall.may_read() && stall.may_read());
        stall.timed_out();
        assert!(!stall.may_read());
        // As if the stall were a period old: one probe goes, the next waits.
        *stall.probed.lock().unwrap() = Some(Instant::now() - PROBE_EVERY);
        assert!(stall.may_read());
        assert!(!stall.may_read());
        stall.answered();
        assert!(stall.may_read() && stall.may_read());
    }
}
