//! The ledger: which entries the disk cache holds, what each costs in
//! bytes, and the order they were last used in, so that the least recently
//! used can be evicted when the directory is over its budget.
//!
//! Plain data behind the disk cache's mutex, touched by the disk threads
//! only. Entries found on disk when the cache opens are older than any
//! used since: they take stamps below zero, in the order of their last
//! write, and live entries count up from zero.

use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Default)]
pub(super) struct Ledger {
    /// Key to (cost, stamp).
    entries: HashMap<String, (u64, i64)>,
    /// Stamp to key, oldest first.
    order: BTreeMap<i64, String>,
    /// The sum of the costs, wide enough that no number of entries of any
    /// cost (an index line may claim any size) overflows it.
    total: u128,
    next: i64,
}

impl Ledger {
    /// Bytes of every entry together.
    pub(super) fn total(&self) -> u64 {
        u64::try_from(self.total).unwrap_or(u64::MAX)
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Records `key` as just used, at `cost` bytes (replacing its old cost).
    pub(super) fn used(&mut self, key: &str, cost: u64) {
        self.remove(key);
        let stamp = self.next;
        self.next = self.next.saturating_add(1);
        self.insert(key.to_owned(), cost, stamp);
    }

    /// Records `key` as just used, keeping its cost, if the ledger knows
    /// it; returns whether it does.
    pub(super) fn touch_known(&mut self, key: &str) -> bool {
        match self.entries.get(key) {
            Some(&(known, _)) => {
                self.used(key, known);
                true
            }
            None => false,
        }
    }

    /// Makes room for `key` at `cost` bytes within `budget`, in one step
    /// so that two threads cannot both count on the same room: drops
    /// `key`'s old cost, takes the least recently used other entries out
    /// until the rest and `cost` fit, and records `key` as just used.
    /// Returns the keys taken out, for their files to be removed.
    pub(super) fn make_room(&mut self, key: &str, cost: u64, budget: u64) -> Vec<String> {
        self.remove(key);
        let mut victims = Vec::new();
        while self.total + u128::from(cost) > u128::from(budget) {
            match self.pop_oldest(None) {
                Some(victim) => victims.push(victim),
                None => break,
            }
        }
        self.used(key, cost);
        victims
    }

    /// Takes the least recently used entry out if the ledger is over
    /// `budget`.
    pub(super) fn pop_over(&mut self, budget: u64) -> Option<String> {
        if self.total <= u128::from(budget) {
            return None;
        }
        self.pop_oldest(None)
    }

    pub(super) fn remove(&mut self, key: &str) -> Option<u64> {
        let (cost, stamp) = self.entries.remove(key)?;
        self.order.remove(&stamp);
        self.total -= u128::from(cost);
        Some(cost)
    }

    /// Takes the least recently used entry other than `keep` out of the
    /// ledger and returns its key.
    pub(super) fn pop_oldest(&mut self, keep: Option<&str>) -> Option<String> {
        let victim = self
            .order
            .values()
            .find(|key| Some(key.as_str()) != keep)?
            .clone();
        self.remove(&victim);
        Some(victim)
    }

    /// Adds the entries found on disk, oldest first, below every entry
    /// used since the cache opened. Those keep their place, at the larger
    /// of the two costs: one read while the scan ran was counted by its
    /// index line alone, the scan counts its whole bucket file.
    pub(super) fn merge_found(&mut self, found: Vec<(String, u64)>) {
        let count = i64::try_from(found.len()).unwrap_or(i64::MAX);
        for (rank, (key, cost)) in (0_i64..).zip(found) {
            match self.entries.get_mut(&key) {
                None => self.insert(key, cost, rank.saturating_sub(count)),
                Some((known, _)) if *known < cost => {
                    self.total += u128::from(cost - *known);
                    *known = cost;
                }
                Some(_) => {}
            }
        }
    }

    fn insert(&mut self, key: String, cost: u64, stamp: i64) {
        self.total += u128::from(cost);
        self.order.insert(stamp, key.clone());
        self.entries.insert(key, (cost, stamp));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_goes_first() {
        let mut ledger = Ledger::default();
        ledger.used("a", 10);
        ledger.used("b", 20);
        ledger.used("c", 30);
        assert!(ledger.touch_known("a"));
        assert_eq!(ledger.total(), 60);
        assert_eq!(ledger.pop_oldest(None).as_deref(), Some("b"));
        assert_eq!(ledger.pop_oldest(Some("c")).as_deref(), Some("a"));
        assert_eq!(ledger.pop_oldest(Some("c")), None);
        assert_eq!((ledger.total(), ledger.len()), (30, 1));
    }

    #[test]
    fn entries_found_on_disk_are_older_than_entries_used_since() {
        let mut ledger = Ledger::default();
        ledger.used("new", 1);
        ledger.merge_found(vec![
            ("old".into(), 2),
            ("new".into(), 99),
            ("older-still".into(), 3),
        ]);
        // Found in the order of their last write: "old" before "older-still";
        // "new" keeps its place, at the cost the scan found.
        assert_eq!(ledger.total(), 2 + 99 + 3);
        assert_eq!(ledger.pop_oldest(None).as_deref(), Some("old"));
        assert_eq!(ledger.pop_oldest(None).as_deref(), Some("older-still"));
        assert_eq!(ledger.pop_oldest(None).as_deref(), Some("new"));
    }

    #[test]
    fn a_rewritten_entry_costs_its_new_size_once() {
        let mut ledger = Ledger::default();
        ledger.used("a", 10);
        ledger.used("a", 15);
        assert_eq!((ledger.total(), ledger.len()), (15, 1));
        assert_eq!(ledger.remove("a"), Some(15));
        assert_eq!(ledger.total(), 0);
    }

    /// Regression: an index line claiming a size near `u64::MAX` overflowed
    /// the total, killing the opening scan and leaving the directory over
    /// its budget.
    #[test]
    fn costs_of_any_size_add_up_without_overflow() {
        let mut ledger = Ledger::default();
        ledger.merge_found(vec![("huge".into(), u64::MAX), ("also".into(), u64::MAX)]);
        ledger.used("small", 10);
        assert_eq!(ledger.total(), u64::MAX);
        assert_eq!(ledger.pop_over(100).as_deref(), Some("huge"));
        assert_eq!(ledger.pop_over(100).as_deref(), Some("also"));
        assert_eq!((ledger.pop_over(100), ledger.total()), (None, 10));
    }

    #[test]
    fn room_is_made_by_evicting_the_oldest_first() {
        let mut ledger = Ledger::default();
        for key in ["a", "b", "c"] {
            assert!(ledger.make_room(key, 10, 30).is_empty());
        }
        assert!(ledger.touch_known("a"));
        assert_eq!(ledger.make_room("d", 15, 30), ["b", "c"]);
        assert_eq!(ledger.total(), 25);
        // Rewriting an entry frees its old cost first.
        assert!(ledger.make_room("d", 20, 30).is_empty());
        assert_eq!(ledger.total(), 30);
        assert_eq!(ledger.pop_over(30), None);
        assert_eq!(ledger.pop_over(25).as_deref(), Some("a"));
        // Larger than the whole budget: everything else goes.
        assert_eq!(ledger.make_room("e", 40, 30), ["d"]);
    }

    /// Regression: an entry the ledger did not know (written by another
    /// process, or planted) was added when read without making room for
    /// it, and the directory stayed over its budget.
    #[test]
    fn an_unknown_entry_read_makes_room_for_itself() {
        let mut ledger = Ledger::default();
        for key in ["a", "b", "c"] {
            assert!(ledger.make_room(key, 10, 30).is_empty());
        }
        assert!(!ledger.touch_known("found"));
        assert_eq!(ledger.make_room("found", 15, 30), ["a", "b"]);
        assert_eq!(ledger.total(), 25);
        // Known now: a later read keeps its cost and takes nothing.
        assert!(ledger.touch_known("found"));
        assert_eq!(ledger.total(), 25);
    }
}
