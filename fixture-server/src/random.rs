//! Repeatable random choices for jitter, faults and garbage bytes.
//!
//! A seeded SplitMix64 sequence indexed by an atomic counter: lock-free, and
//! the same seed gives the same sequence of draws in arrival order.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Advances `state` and returns the next SplitMix64 output: a small, fast
/// generator whose outputs are well spread even from consecutive seeds.
///
/// ```
/// let mut state = 7;
/// assert_ne!(fixture_server::splitmix64(&mut state), fixture_server::splitmix64(&mut state));
/// ```
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A shared source of draws.
#[derive(Debug)]
pub(crate) struct Draws {
    seed: u64,
    next: AtomicU64,
}

impl Draws {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            seed,
            next: AtomicU64::new(0),
        }
    }

    /// A uniform draw in `[0, 1)`.
    pub(crate) fn unit(&self) -> f64 {
        let mut state = self.seed
            ^ self
                .next
                .fetch_add(1, Relaxed)
                .wrapping_mul(0xA24B_AED4_963E_E407);
        (splitmix64(&mut state) >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_uniform_enough_and_repeatable() {
        let a = Draws::new(1);
        let b = Draws::new(1);
        let xs: Vec<f64> = (0..10_000).map(|_| a.unit()).collect();
        let ys: Vec<f64> = (0..10_000).map(|_| b.unit()).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let below_half = xs.iter().filter(|x| **x < 0.5).count();
        assert!((4_700..5_300).contains(&below_half), "{below_half}");
    }
}
