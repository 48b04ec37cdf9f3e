//! `Store::metric_series`: a trial's live reports of one group as columns, read in one ordered
//! pass over the live-steps index (on a SQLite file through `sqlite_series`) and kept in a bounded in-memory cache, so repeated chart
//! requests (`GET /api/v1/trials/time-series`, a UI polling a comparison) read no report bodies.
//!
//! Validity: every write that adds or archives a trial's metric rows bumps that trial's stripe of
//! [`SeriesCache::generations`] after it commits (`store_impl`); an entry is used only while its
//! stripe still holds the generation read *before* its rows were. A write racing a read can only
//! make the entry look stale (it is then read again), never make a stale entry look current.
//! Stripes are shared by trials with equal ids modulo [`STRIPES`]: a busy trial costs an
//! unrelated one a re-read at most.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use sqlx::Row;

use super::series_body::push_body;
use super::{SqlStore, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model_series::{MetricSeries, MetricSeriesBuilder};

const STRIPES: usize = 4096;
/// Memory the cached series may hold together (about 8 bytes a value: 100 trials of 10,000
/// reports with two metrics take ~40 MiB). One series may take up to all of it: a trial of
/// 1,000,000 reports of two metrics is ~32 MiB, and a series left out of the cache is read and
/// decoded whole again on every chart request (seconds for such a trial), so it must fit.
const CACHE_BYTES: usize = 64 << 20;

/// Whether a series of `bytes` is kept: any that fits the cache, evicting the least recently used.
fn admitted(bytes: usize) -> bool {
    bytes <= CACHE_BYTES
}

/// The live rows of `$1`'s group `$2` in step order (both readers; SQLite numbers `$n` in order).
pub(super) const LIVE_SERIES: &str = "SELECT steps_completed, report_time, body FROM metrics \
     WHERE trial_id = $1 AND archived = FALSE AND metric_group = $2 ORDER BY steps_completed, id";

struct Entry {
    generation: u64,
    series: Arc<MetricSeries>,
    bytes: usize,
    last_used: u64,
}

/// The cached series and the per-trial write generations that validate them.
pub(crate) struct SeriesCache {
    generations: Box<[AtomicU64]>,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<(i32, String), Entry>,
    bytes: usize,
    clock: u64,
}

impl Default for SeriesCache {
    fn default() -> Self {
        SeriesCache { generations: (0..STRIPES).map(|_| AtomicU64::new(0)).collect(), entries: Mutex::default() }
    }
}

impl SeriesCache {
    fn stripe(&self, trial_id: i32) -> &AtomicU64 {
        &self.generations[(trial_id as u32 as usize) % STRIPES]
    }

    /// Called after a write to the trial's metric rows committed (or failed: harmless).
    pub(crate) fn invalidate(&self, trial_id: i32) {
        self.stripe(trial_id).fetch_add(1, Ordering::AcqRel);
    }

    fn generation(&self, trial_id: i32) -> u64 {
        self.stripe(trial_id).load(Ordering::Acquire)
    }

    fn get(&self, trial_id: i32, group: &str, generation: u64) -> Option<Arc<MetricSeries>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.clock += 1;
        let clock = entries.clock;
        let entry = entries.map.get_mut(&(trial_id, group.to_owned()))?;
        if entry.generation != generation {
            return None;
        }
        entry.last_used = clock;
        Some(entry.series.clone())
    }

    fn put(&self, trial_id: i32, group: &str, generation: u64, series: Arc<MetricSeries>) {
        let bytes = series.bytes() + 128;
        if !admitted(bytes) {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.clock += 1;
        let last_used = entries.clock;
        if let Some(old) = entries.map.insert((trial_id, group.to_owned()), Entry { generation, series, bytes, last_used }) {
            entries.bytes -= old.bytes;
        }
        entries.bytes += bytes;
        while entries.bytes > CACHE_BYTES {
            let Some(oldest) = entries.map.iter().min_by_key(|(_, e)| e.last_used).map(|(k, _)| k.clone()) else { break };
            if let Some(gone) = entries.map.remove(&oldest) {
                entries.bytes -= gone.bytes;
            }
        }
    }
}

impl SqlStore {
    pub(crate) async fn metric_series_impl(&self, trial_id: i32, group: &str) -> StoreResult<Arc<MetricSeries>> {
        let generation = self.series.generation(trial_id);
        if let Some(series) = self.series.get(trial_id, group, generation) {
            return Ok(series);
        }
        let (series, decoded) = match &self.sqlite_series {
            Some(reader) => reader.read(trial_id, group).await?,
            None => {
                let mut builder = MetricSeriesBuilder::default();
                let mut decoded = 0u64;
                on_pool!(self, pool => {
                    let mut rows = sqlx::query(LIVE_SERIES).bind(trial_id).bind(group).fetch(pool);
                    while let Some(row) = rows.try_next().await? {
                        let (steps, time, body): (i64, DateTime<Utc>, &str) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
                        push_body(&mut builder, steps, time.timestamp_micros(), body).map_err(|e| StoreError::corrupt("body", e))?;
                        decoded += 1;
                    }
                });
                (builder.finish(), decoded)
            }
        };
        self.decoded_metric_rows.fetch_add(decoded, Ordering::Relaxed);
        let series = Arc::new(series);
        self.series.put(trial_id, group, generation, series.clone());
        Ok(series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A series of about `mib` MiB (steps and times only).
    fn series_of(mib: usize) -> Arc<MetricSeries> {
        let rows = (mib << 20) / 16;
        Arc::new(MetricSeries { steps: vec![0; rows], times: vec![0; rows], names: Vec::new(), columns: Vec::new() })
    }

    #[test]
    fn a_million_report_series_is_kept() {
        // 1,000,000 reports of two metrics: steps, times and two columns of 8 bytes each.
        assert!(admitted(1_000_000 * 32 + 128));
        let cache = SeriesCache::default();
        cache.put(1, "training", 0, series_of(1));
        cache.put(2, "training", 0, series_of(40));
        assert!(cache.get(2, "training", 0).is_some(), "a 40 MiB series is cached");
        assert!(cache.get(1, "training", 0).is_some(), "a small one stays beside it");
        // A second big one evicts the least recently used until both bounds hold.
        cache.put(3, "training", 0, series_of(40));
        assert!(cache.get(3, "training", 0).is_some());
        assert!(cache.get(2, "training", 0).is_none(), "the cache stays within its bytes");
        // Never more than the whole cache.
        assert!(!admitted(CACHE_BYTES + 1));
        cache.put(4, "training", 0, series_of(65));
        assert!(cache.get(4, "training", 0).is_none());
    }
}
