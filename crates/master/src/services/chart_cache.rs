//! Downsampled chart answers of `GET /api/v1/trials/time-series` (and its columnar form): the
//! report rows the downsampling kept, so that a repeated request (a page reload, a UI polling a
//! finished trial) costs the answer's size, not a pass over the whole series: a trial of 1,000,000
//! reports is otherwise walked and downsampled per request. Both answer forms are built from the
//! kept rows and the series.
//!
//! Key: trial, group, metric names, batch range and point budget. Validity: each entry remembers
//! the `MetricSeries` it was computed from (`Store::metric_series` hands out one shared `Arc` per
//! stored version and a new one once a trial's rows change), so new points make the entry miss.
//! The entry holds only a `Weak` to that series: it keeps the allocation's address from being
//! reused (no false hit) without keeping an evicted series' columns in memory.
//! Bound: the kept rows of all answers together (least recently used out).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use resolute_store::MetricSeries;

/// Kept rows of all cached answers together (8 bytes each, 8 MiB): a thousand 1,000-point charts,
/// or 500 trials × 100 points twenty times over.
pub const MAX_CACHED_POINTS: usize = 1_000_000;

/// What a downsampled answer depends on besides the series itself.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChartKey {
    pub trial_id: i32,
    pub group: String,
    /// The metrics asked for (empty: all of the group's).
    pub names: Vec<String>,
    /// `[start, end]` batches.
    pub range: (i64, i64),
    pub budget: usize,
}

struct Entry {
    source: Weak<MetricSeries>,
    source_len: usize,
    rows: Arc<[usize]>,
    points: usize,
    last_used: u64,
}

#[derive(Default)]
struct Entries {
    map: HashMap<ChartKey, Entry>,
    points: usize,
    clock: u64,
}

/// The cache (one per master, in `AppServices`).
pub struct ChartCache {
    entries: Mutex<Entries>,
    max_points: usize,
}

impl Default for ChartCache {
    fn default() -> Self {
        ChartCache::with_capacity(MAX_CACHED_POINTS)
    }
}

impl ChartCache {
    pub fn with_capacity(max_points: usize) -> ChartCache {
        ChartCache { entries: Mutex::default(), max_points }
    }

    /// The rows kept for `key` of `series`: the cached ones while they were computed from this
    /// very series, else `compute()`'s (then kept).
    pub fn rows(&self, key: ChartKey, series: &Arc<MetricSeries>, compute: impl FnOnce() -> Vec<usize>) -> Arc<[usize]> {
        if let Some(hit) = self.get(&key, series) {
            return hit;
        }
        let rows: Arc<[usize]> = compute().into();
        self.put(key, series, rows.clone());
        rows
    }

    /// Points held now (for tests and diagnostics).
    pub fn points(&self) -> usize {
        self.lock().points
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, key: &ChartKey, series: &Arc<MetricSeries>) -> Option<Arc<[usize]>> {
        let mut entries = self.lock();
        entries.clock += 1;
        let clock = entries.clock;
        let entry = entries.map.get_mut(key)?;
        // The Weak pins the old allocation, so an equal address is the same series.
        if entry.source.as_ptr() != Arc::as_ptr(series) || entry.source_len != series.len() {
            return None;
        }
        entry.last_used = clock;
        Some(entry.rows.clone())
    }

    fn put(&self, key: ChartKey, series: &Arc<MetricSeries>, rows: Arc<[usize]>) {
        let points = rows.len().max(1);
        if points > self.max_points {
            return;
        }
        let mut entries = self.lock();
        entries.clock += 1;
        let last_used = entries.clock;
        let entry = Entry { source: Arc::downgrade(series), source_len: series.len(), rows, points, last_used };
        if let Some(old) = entries.map.insert(key, entry) {
            entries.points -= old.points;
        }
        entries.points += points;
        while entries.points > self.max_points {
            let Some(oldest) = entries.map.iter().min_by_key(|(_, e)| e.last_used).map(|(k, _)| k.clone()) else { break };
            if let Some(gone) = entries.map.remove(&oldest) {
                entries.points -= gone.points;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use chrono::{TimeZone, Utc};
    use resolute_store::MetricSeriesBuilder;

    use super::*;

    fn series(reports: usize) -> Arc<MetricSeries> {
        let mut b = MetricSeriesBuilder::default();
        for i in 0..reports {
            let mut m = serde_json::Map::new();
            m.insert("loss".into(), serde_json::json!(1.0 / (i as f64 + 1.0)));
            b.push(i as i64, Utc.timestamp_opt(1_700_000_000 + i as i64, 0).unwrap(), &m);
        }
        Arc::new(b.finish())
    }

    fn key(trial_id: i32) -> ChartKey {
        ChartKey { trial_id, group: "training".into(), names: vec!["loss".into()], range: (i64::MIN, i64::MAX), budget: 1000 }
    }

    fn answer(points: usize) -> Vec<usize> {
        (0..points).collect()
    }

    #[test]
    fn a_repeated_request_is_not_computed_again() {
        let cache = ChartCache::default();
        let s = series(10);
        let computed = Cell::new(0);
        for _ in 0..3 {
            let a = cache.rows(key(1), &s, || {
                computed.set(computed.get() + 1);
                answer(10)
            });
            assert_eq!(a.len(), 10);
        }
        assert_eq!(computed.get(), 1);
        // Another budget is another answer.
        cache.rows(ChartKey { budget: 5, ..key(1) }, &s, || {
            computed.set(computed.get() + 1);
            answer(5)
        });
        assert_eq!(computed.get(), 2);
    }

    #[test]
    fn new_points_compute_the_answer_again() {
        let cache = ChartCache::default();
        let old = series(10);
        cache.rows(key(1), &old, || answer(10));
        // The store hands out a new series once the trial's rows change (the old one may live on).
        let new = series(11);
        let a = cache.rows(key(1), &new, || answer(11));
        assert_eq!(a.len(), 11);
        // And the old series, dropped and its memory reused, never matches the new entry's source.
        drop(old);
        let again = cache.rows(key(1), &new, || unreachable!("cached for the new series"));
        assert_eq!(again.len(), 11);
    }

    #[test]
    fn the_cache_holds_at_most_its_point_bound() {
        let cache = ChartCache::with_capacity(1000);
        let s = series(3);
        for trial in 0..50 {
            cache.rows(key(trial), &s, || answer(100));
            assert!(cache.points() <= 1000, "{} points held", cache.points());
        }
        assert_eq!(cache.points(), 1000);
        // The most recent answers stayed, the oldest went.
        cache.rows(key(49), &s, || unreachable!("the latest answer is kept"));
        let recomputed = Cell::new(false);
        cache.rows(key(0), &s, || {
            recomputed.set(true);
            answer(100)
        });
        assert!(recomputed.get());
        // An answer larger than the whole bound is served, not kept.
        cache.rows(key(99), &s, || answer(2000));
        assert!(cache.points() <= 1000);
    }
}
