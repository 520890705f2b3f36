//! Cache: decoded thumbnails by (url, target size), with a byte budget, a
//! count limit, a per-entry cap and a time to live.
//!
//! `ThumbnailCache` is plain data with no lock and no clock of its own
//! (callers pass `now`), so it is tested directly. In the pipeline, the load
//! actor (`crate::load`) owns the only instance: nothing else changes it,
//! and it ends with the actor. Its settings are [`CacheConfig`].
//!
//! The UI side reads it without waiting through a `CacheView`: a map of
//! the same entries behind a lock, which the cache updates with every change
//! it makes, so a thumbnail already decoded is drawn in the pass that asks
//! for it instead of a message round trip later. The view is only read
//! (and, by `forget`, emptied) from outside; recency and counters stay the
//! actor's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use lru::LruCache;

use crate::error::BuildError;
use crate::request::TargetSize;
use crate::thumbnail::Thumbnail;

/// Settings of the memory cache: [`Config::cache`](crate::Config::cache).
///
/// ```
/// use std::time::Duration;
///
/// let mut config = thumbpipe::Config::default();
/// config.cache.max_bytes = 16 * 1024 * 1024;
/// config.cache.ttl = Duration::from_secs(60);
/// let pipeline = thumbpipe::Pipeline::<usize>::new(config)?;
/// # Ok::<(), thumbpipe::BuildError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CacheConfig {
    /// Cache budget: the sum of cached thumbnails' RGBA bytes. Default: 64 MiB.
    pub max_bytes: usize,
    /// Most thumbnails cached at once. Default: 4096.
    pub max_entries: usize,
    /// How long a cached thumbnail stays valid, unless the request says
    /// otherwise; longer than ten years (`Duration::MAX` included) counts as
    /// ten years. Default: 300 s.
    pub ttl: Duration,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            max_bytes: 64 * 1024 * 1024,
            max_entries: 4096,
            ttl: Duration::from_secs(300),
        }
    }
}

impl CacheConfig {
    pub(crate) fn validate(&self) -> Result<(), BuildError> {
        crate::error::at_least_one(&[("cache.max_entries", self.max_entries as u64)])
    }
}

/// A cache key: the URL and the box the thumbnail was made for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey {
    pub(crate) url: Arc<str>,
    pub(crate) target: TargetSize,
}

/// The longest time to live: longer ones (`Duration::MAX` included) are
/// taken as this. Ten years.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);

/// Limits of a [`ThumbnailCache`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct CacheLimits {
    /// Sum of entries' costs (RGBA bytes).
    pub(crate) cost: usize,
    /// Number of entries.
    pub(crate) count: usize,
}

impl CacheLimits {
    /// An entry over a tenth of the budget is not cached: it would evict a
    /// screenful of others.
    pub(crate) fn entry_cap(&self) -> usize {
        self.cost / 10
    }
}

/// Counters of what the cache did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Thumbnails held now.
    pub entries: usize,
    /// Their RGBA bytes.
    pub cost: usize,
    /// Lookups that found a live entry.
    pub hits: u64,
    /// Lookups that found nothing, or only an expired entry.
    pub misses: u64,
    /// Entries evicted to stay under the byte budget.
    pub evicted_for_cost: u64,
    /// Entries evicted to stay under the count limit.
    pub evicted_for_count: u64,
    /// Thumbnails not stored because they alone exceed a tenth of the budget.
    pub refused_too_large: u64,
    /// Entries dropped because their time to live ran out.
    pub expired: u64,
}

#[derive(Clone)]
struct Entry {
    thumbnail: Thumbnail,
    expires: Instant,
}

/// The cache's entries as the UI side sees them: the same thumbnails (their
/// pixels shared, not copied) by URL and target size, with their expiry.
///
/// A std mutex, not an actor message: the UI thread must answer "is it
/// decoded already?" within the pass, the critical sections are a hash
/// lookup or insert, and no `.await` happens while it is held. The actor
/// locks it once per cache change (a put and its evictions together).
#[derive(Clone, Default)]
pub(crate) struct CacheView {
    entries: Arc<Mutex<ViewEntries>>,
}

/// Each URL's cached sizes: a list, since a URL is drawn at one or two.
type ViewEntries = HashMap<Arc<str>, Vec<(TargetSize, Entry)>>;

impl CacheView {
    /// The live thumbnail of `url` at `target`, if the cache holds one.
    pub(crate) fn get(&self, url: &str, target: TargetSize, now: Instant) -> Option<Thumbnail> {
        let entries = self.lock();
        let sizes = entries.get(url)?;
        sizes
            .iter()
            .find(|(size, entry)| *size == target && entry.expires > now)
            .map(|(_, entry)| entry.thumbnail.clone())
    }

    /// Drops every size of `url`.
    pub(crate) fn remove_url(&self, url: &str) {
        self.lock().remove(url);
    }

    /// Drops everything.
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }

    fn insert(entries: &mut ViewEntries, key: &CacheKey, entry: Entry) {
        let sizes = entries.entry(Arc::clone(&key.url)).or_default();
        sizes.retain(|(size, _)| *size != key.target);
        sizes.push((key.target, entry));
    }

    fn remove(entries: &mut ViewEntries, key: &CacheKey) {
        if let Some(sizes) = entries.get_mut(&key.url) {
            sizes.retain(|(size, _)| *size != key.target);
            if sizes.is_empty() {
                entries.remove(&key.url);
            }
        }
    }

    /// A poisoned lock still holds a consistent map: every critical section
    /// is a single insert or removal.
    fn lock(&self) -> MutexGuard<'_, ViewEntries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Least-recently-used thumbnails under a cost and count budget.
pub(crate) struct ThumbnailCache {
    entries: LruCache<CacheKey, Entry>,
    limits: CacheLimits,
    stats: CacheStats,
    /// Kept equal to `entries`, for the UI side.
    view: CacheView,
}

impl ThumbnailCache {
    /// An empty cache that publishes its entries to `view`.
    pub(crate) fn new(limits: CacheLimits, view: CacheView) -> Self {
        view.clear();
        Self {
            entries: LruCache::unbounded(),
            limits,
            stats: CacheStats::default(),
            view,
        }
    }

    /// The live entry for `key`, marked most recently used. An expired entry
    /// is removed and counts as a miss.
    pub(crate) fn get(&mut self, key: &CacheKey, now: Instant) -> Option<Thumbnail> {
        match self.entries.get(key) {
            Some(entry) if entry.expires > now => {
                self.stats.hits += 1;
                Some(entry.thumbnail.clone())
            }
            Some(_) => {
                self.remove_expired(key);
                self.stats.misses += 1;
                None
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Stores `thumbnail` for `ttl` (at most [`MAX_TTL`]), evicting least
    /// recently used entries until the limits hold. Returns whether it was
    /// stored.
    pub(crate) fn put(
        &mut self,
        key: CacheKey,
        thumbnail: Thumbnail,
        ttl: Duration,
        now: Instant,
    ) -> bool {
        let cost = thumbnail.cost();
        if cost > self.limits.entry_cap() || ttl.is_zero() {
            self.stats.refused_too_large += u64::from(cost > self.limits.entry_cap());
            return false;
        }
        // `now + Duration::MAX` would panic and end the actor.
        let Some(expires) = now.checked_add(ttl.min(MAX_TTL)) else {
            return false;
        };
        let entry = Entry { thumbnail, expires };
        let mut view = self.view.lock();
        CacheView::insert(&mut view, &key, entry.clone());
        if let Some(old) = self.entries.put(key, entry) {
            self.stats.cost -= old.thumbnail.cost();
        }
        self.stats.cost += cost;
        while self.stats.cost > self.limits.cost || self.entries.len() > self.limits.count {
            let over_cost = self.stats.cost > self.limits.cost;
            let Some((evicted_key, evicted)) = self.entries.pop_lru() else {
                break;
            };
            CacheView::remove(&mut view, &evicted_key);
            self.stats.cost -= evicted.thumbnail.cost();
            if over_cost {
                self.stats.evicted_for_cost += 1;
            } else {
                self.stats.evicted_for_count += 1;
            }
        }
        self.stats.entries = self.entries.len();
        true
    }

    /// Drops every expired entry.
    pub(crate) fn sweep(&mut self, now: Instant) {
        let expired: Vec<CacheKey> = self
            .entries
            .iter()
            .filter(|(_, entry)| entry.expires <= now)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &expired {
            self.remove_expired(key);
        }
    }

    fn remove_expired(&mut self, key: &CacheKey) {
        if let Some(entry) = self.entries.pop(key) {
            CacheView::remove(&mut self.view.lock(), key);
            self.stats.cost -= entry.thumbnail.cost();
            self.stats.expired += 1;
            self.stats.entries = self.entries.len();
        }
    }

    /// Drops every size of `url`: the app asked for it to be loaded afresh.
    pub(crate) fn remove_url(&mut self, url: &str) {
        let keys: Vec<CacheKey> = self
            .entries
            .iter()
            .filter(|(key, _)| *key.url == *url)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &keys {
            if let Some(entry) = self.entries.pop(key) {
                self.stats.cost -= entry.thumbnail.cost();
            }
        }
        self.view.remove_url(url);
        self.stats.entries = self.entries.len();
    }

    /// Drops every entry.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.view.clear();
        self.stats.cost = 0;
        self.stats.entries = 0;
    }

    pub(crate) fn stats(&self) -> CacheStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl ThumbnailCache {
        fn with_limits(limits: CacheLimits) -> Self {
            Self::new(limits, CacheView::default())
        }
    }

    fn thumb(cost: usize) -> Thumbnail {
        Thumbnail {
            url: "http://x/".into(),
            width: 1,
            height: 1,
            pixels: vec![0; cost].into(),
            source_size: (1, 1),
            animation: None,
        }
    }

    fn key(name: &str) -> CacheKey {
        CacheKey {
            url: name.into(),
            target: TargetSize::square(64),
        }
    }

    const TTL: Duration = Duration::from_secs(60);

    #[test]
    fn an_entry_expires_after_its_ttl_and_is_never_returned_after() {
        let mut cache = ThumbnailCache::with_limits(CacheLimits {
            cost: 1000,
            count: 10,
        });
        let start = Instant::now();
        assert!(cache.put(key("a"), thumb(10), Duration::from_secs(5), start));
        assert!(
            cache
                .get(&key("a"), start + Duration::from_secs(4))
                .is_some()
        );
        assert!(
            cache
                .get(&key("a"), start + Duration::from_secs(5))
                .is_none()
        );
        assert_eq!(
            (
                cache.stats().expired,
                cache.stats().cost,
                cache.stats().entries
            ),
            (1, 0, 0)
        );
    }

    #[test]
    fn the_view_answers_for_live_entries_and_forgets_with_the_cache() {
        let view = CacheView::default();
        let mut cache = ThumbnailCache::new(
            CacheLimits {
                cost: 1000,
                count: 10,
            },
            view.clone(),
        );
        let start = Instant::now();
        let small = TargetSize::square(64);
        cache.put(key("a"), thumb(10), Duration::from_secs(5), start);
        cache.put(
            CacheKey {
                url: "a".into(),
                target: TargetSize::square(128),
            },
            thumb(40),
            TTL,
            start,
        );
        cache.put(key("b"), thumb(20), TTL, start);
        assert_eq!(view.get("a", small, start).map(|t| t.cost()), Some(10));
        assert!(view.get("a", TargetSize::square(32), start).is_none());
        // Expired: the view never returns it, even before a sweep.
        assert!(
            view.get("a", small, start + Duration::from_secs(5))
                .is_none()
        );
        cache.remove_url("a");
        assert!(view.get("a", TargetSize::square(128), start).is_none());
        assert_eq!((cache.stats().entries, cache.stats().cost), (1, 20));
        cache.clear();
        assert!(view.get("b", small, start).is_none());
        assert_eq!((cache.stats().entries, cache.stats().cost), (0, 0));
    }

    #[test]
    fn sweep_drops_expired_entries_only() {
        let mut cache = ThumbnailCache::with_limits(CacheLimits {
            cost: 1000,
            count: 10,
        });
        let start = Instant::now();
        cache.put(key("short"), thumb(10), Duration::from_secs(1), start);
        cache.put(key("long"), thumb(20), Duration::from_secs(100), start);
        cache.sweep(start + Duration::from_secs(2));
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.cost, stats.expired), (1, 20, 1));
        assert!(
            cache
                .get(&key("long"), start + Duration::from_secs(2))
                .is_some()
        );
    }

    #[test]
    fn the_cost_limit_evicts_least_recently_used_first() {
        let mut cache = ThumbnailCache::with_limits(CacheLimits {
            cost: 300,
            count: 100,
        });
        let now = Instant::now();
        for name in ["a", "b", "c"] {
            cache.put(key(name), thumb(30), TTL, now);
        }
        // Touch "a": "b" is now the least recently used.
        assert!(cache.get(&key("a"), now).is_some());
        for name in ["d", "e", "f", "g", "h", "i", "j"] {
            cache.put(key(name), thumb(30), TTL, now);
        }
        assert_eq!(cache.stats().cost, 300);
        cache.put(key("k"), thumb(30), TTL, now);
        assert!(cache.get(&key("b"), now).is_none(), "b was least recent");
        assert!(cache.get(&key("a"), now).is_some(), "a was touched");
        assert!(cache.get(&key("c"), now).is_some());
        assert_eq!(cache.stats().evicted_for_cost, 1);
        assert!(cache.stats().cost <= 300);
    }

    #[test]
    fn the_count_limit_holds() {
        let mut cache = ThumbnailCache::with_limits(CacheLimits {
            cost: 10_000,
            count: 3,
        });
        let now = Instant::now();
        for name in ["a", "b", "c", "d", "e"] {
            cache.put(key(name), thumb(1), TTL, now);
        }
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.evicted_for_count), (3, 2));
        assert!(cache.get(&key("a"), now).is_none());
        assert!(cache.get(&key("e"), now).is_some());
    }

    #[test]
    fn an_entry_over_a_tenth_of_the_budget_is_not_cached() {
        let mut cache = ThumbnailCache::with_limits(CacheLimits {
            cost: 1000,
            count: 10,
        });
        let now = Instant::now();
        assert!(!cache.put(key("big"), thumb(101), TTL, now));
        assert!(cache.put(key("ok"), thumb(100), TTL, now));
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.refused_too_large), (1, 1));
    }

    #[test]
    fn replacing_an_entry_keeps_the_cost_right() {
        let mut cache = ThumbnailCache::with_limits(CacheLimits {
            cost: 1000,
            count: 10,
        });
        let now = Instant::now();
        cache.put(key("a"), thumb(50), TTL, now);
        cache.put(key("a"), thumb(70), TTL, now);
        assert_eq!((cache.stats().entries, cache.stats().cost), (1, 70));
    }

    /// The cache against a model: a list of entries in recency order.
    mod model {
        use super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Op {
            Get(u8),
            Put { key: u8, cost: usize, ttl_ms: u64 },
            Advance(u64),
            Sweep,
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                4 => (0u8..24).prop_map(Op::Get),
                4 => (0u8..24, 0usize..=130, 0u64..400)
                    .prop_map(|(key, cost, ttl_ms)| Op::Put { key, cost, ttl_ms }),
                2 => (0u64..200).prop_map(Op::Advance),
                1 => Just(Op::Sweep),
            ]
        }

        /// What the cache should hold: (key, serial, cost, expires at ms),
        /// least recently used first, and the counters it should report.
        #[derive(Default)]
        struct Model {
            entries: Vec<(u8, u32, usize, u64)>,
            stats: CacheStats,
        }

        impl Model {
            fn cost(&self) -> usize {
                self.entries.iter().map(|e| e.2).sum()
            }

            fn position(&self, key: u8) -> Option<usize> {
                self.entries.iter().position(|e| e.0 == key)
            }

            fn get(&mut self, key: u8, now: u64) -> Option<u32> {
                let Some(at) = self.position(key) else {
                    self.stats.misses += 1;
                    return None;
                };
                let entry = self.entries.remove(at);
                if entry.3 > now {
                    self.stats.hits += 1;
                    self.entries.push(entry);
                    Some(entry.1)
                } else {
                    self.stats.misses += 1;
                    self.stats.expired += 1;
                    None
                }
            }

            fn put(
                &mut self,
                key: u8,
                serial: u32,
                cost: usize,
                ttl: u64,
                now: u64,
                limits: CacheLimits,
            ) {
                if cost > limits.entry_cap() || ttl == 0 {
                    self.stats.refused_too_large += u64::from(cost > limits.entry_cap());
                    return;
                }
                if let Some(at) = self.position(key) {
                    self.entries.remove(at);
                }
                self.entries.push((key, serial, cost, now + ttl));
                while self.cost() > limits.cost || self.entries.len() > limits.count {
                    if self.cost() > limits.cost {
                        self.stats.evicted_for_cost += 1;
                    } else {
                        self.stats.evicted_for_count += 1;
                    }
                    self.entries.remove(0);
                }
            }

            fn sweep(&mut self, now: u64) {
                let before = self.entries.len();
                self.entries.retain(|e| e.3 > now);
                self.stats.expired += (before - self.entries.len()) as u64;
            }
        }

        fn numbered(cost: usize, serial: u32) -> Thumbnail {
            Thumbnail {
                url: "http://x/".into(),
                width: serial,
                height: 1,
                pixels: vec![0; cost].into(),
                source_size: (serial, 1),
                animation: None,
            }
        }

        fn key_of(key: u8) -> CacheKey {
            CacheKey {
                url: format!("http://x/{key}").into(),
                target: TargetSize::square(64),
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            /// Random gets, puts, clock steps and sweeps: the cost and count
            /// stay within their limits, an expired entry is never returned,
            /// eviction follows LRU order and the counters match.
            #[test]
            fn the_cache_behaves_like_its_model(
                ops in proptest::collection::vec(op(), 1..200),
                count in 1usize..12,
            ) {
                let limits = CacheLimits { cost: 1000, count };
                let view = CacheView::default();
                let mut cache = ThumbnailCache::new(limits, view.clone());
                let mut model = Model::default();
                let start = Instant::now();
                let mut now_ms = 0u64;
                let at = |ms: u64| start + Duration::from_millis(ms);
                for (serial, op) in ops.into_iter().enumerate() {
                    let serial = serial as u32;
                    match op {
                        Op::Get(key) => {
                            let got = cache.get(&key_of(key), at(now_ms)).map(|t| t.width);
                            prop_assert_eq!(got, model.get(key, now_ms), "get {}", key);
                        }
                        Op::Put { key, cost, ttl_ms } => {
                            let thumbnail = numbered(cost, serial);
                            cache.put(key_of(key), thumbnail, Duration::from_millis(ttl_ms), at(now_ms));
                            model.put(key, serial, cost, ttl_ms, now_ms, limits);
                        }
                        Op::Advance(ms) => now_ms += ms,
                        Op::Sweep => {
                            cache.sweep(at(now_ms));
                            model.sweep(now_ms);
                        }
                    }
                    let stats = cache.stats();
                    prop_assert!(stats.cost <= limits.cost);
                    prop_assert!(stats.entries <= limits.count);
                    prop_assert_eq!(stats.cost, model.cost());
                    prop_assert_eq!(stats.entries, model.entries.len());
                    // Same entries, same recency order (the LRU order).
                    let held: Vec<(String, u32)> = cache
                        .entries
                        .iter()
                        .rev()
                        .map(|(key, entry)| (key.url.to_string(), entry.thumbnail.width))
                        .collect();
                    let expected: Vec<(String, u32)> = model
                        .entries
                        .iter()
                        .map(|e| (key_of(e.0).url.to_string(), e.1))
                        .collect();
                    prop_assert_eq!(&held, &expected);
                    // The UI side's view holds exactly the same entries.
                    let mut seen: Vec<(String, u32)> = view
                        .lock()
                        .iter()
                        .flat_map(|(url, sizes)| sizes.iter().map(move |(_, e)| (url.to_string(), e.thumbnail.width)))
                        .collect();
                    let mut held = held;
                    seen.sort();
                    held.sort();
                    prop_assert_eq!(seen, held);
                    let mut counters = model.stats;
                    counters.entries = stats.entries;
                    counters.cost = stats.cost;
                    prop_assert_eq!(stats, counters);
                }
            }
        }
    }
}
