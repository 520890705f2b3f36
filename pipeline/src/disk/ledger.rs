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
    total: u64,
    next: i64,
}

impl Ledger {
    /// Bytes of every entry together.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Records `key` as just used, at `cost` bytes (replacing its old cost).
    pub(super) fn used(&mut self, key: &str, cost: u64) {
        self.remove(key);
        let stamp = self.next;
        self.next += 1;
        self.insert(key.to_owned(), cost, stamp);
    }

    /// Records `key` as just used, keeping its cost, or at `cost` if the
    /// ledger did not know it (another process wrote it).
    pub(super) fn touch(&mut self, key: &str, cost: u64) {
        let cost = self.entries.get(key).map_or(cost, |(known, _)| *known);
        self.used(key, cost);
    }

    /// Adds `extra` bytes to `key`'s cost (a line appended to its index).
    pub(super) fn grow(&mut self, key: &str, extra: u64) {
        if let Some((cost, _)) = self.entries.get_mut(key) {
            *cost += extra;
            self.total += extra;
        }
    }

    pub(super) fn remove(&mut self, key: &str) -> Option<u64> {
        let (cost, stamp) = self.entries.remove(key)?;
        self.order.remove(&stamp);
        self.total -= cost;
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
    /// used since the cache opened (those keep their place).
    pub(super) fn merge_found(&mut self, found: Vec<(String, u64)>) {
        let count = i64::try_from(found.len()).unwrap_or(i64::MAX);
        for (rank, (key, cost)) in (0_i64..).zip(found) {
            if !self.entries.contains_key(&key) {
                self.insert(key, cost, rank - count);
            }
        }
    }

    fn insert(&mut self, key: String, cost: u64, stamp: i64) {
        self.total += cost;
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
        ledger.touch("a", 0);
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
        // Found in the order of their last write: "old" before "older-still".
        assert_eq!(ledger.total(), 6);
        assert_eq!(ledger.pop_oldest(None).as_deref(), Some("old"));
        assert_eq!(ledger.pop_oldest(None).as_deref(), Some("older-still"));
        assert_eq!(ledger.pop_oldest(None).as_deref(), Some("new"));
    }

    #[test]
    fn a_rewritten_entry_costs_its_new_size_once() {
        let mut ledger = Ledger::default();
        ledger.used("a", 10);
        ledger.used("a", 15);
        ledger.grow("a", 5);
        ledger.grow("unknown", 5);
        assert_eq!((ledger.total(), ledger.len()), (20, 1));
        assert_eq!(ledger.remove("a"), Some(20));
        assert_eq!(ledger.total(), 0);
    }
}
