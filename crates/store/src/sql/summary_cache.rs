//! The metric writers' copy of each reporting trial's totals (`summary_metrics`,
//! `total_batches`, `best_validation`), which lets a batch skip rewriting the trial's row.
//!
//! Why: the row's ≈1.2 KB summary was re-serialised and rewritten for every report, about half
//! of what a report cost the writer (and of its WAL bytes). Now a batch whose reports only fold
//! into the summary ("training" and custom groups, no searcher metric, no restart rollback)
//! updates the entry here and leaves the row behind, for at most [`WRITE_INTERVAL`]:
//! - readers overlay the entry on the row they read (`overlay`), so what they see is current;
//! - a periodic flush (`Store::flush_metric_summaries`) writes entries left behind by trials that
//!   stopped reporting;
//! - a row that may be behind has `summary_pending = TRUE`, written before any batch is deferred;
//!   opening the store re-derives such rows from their metrics (a crash loses no summary).
//!
//! An entry is used only while the row still holds the text the entry was made from (or, for a
//! reader that read the row just before our own write, the text that write replaced): any
//! other writer (an archive's recompute) changes the text, and the entry is then ignored.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::metric_batch::TrialTotals;
use crate::model_metrics::NewMetricReport;

/// How long a trial's row may lag behind its reports.
pub(crate) const WRITE_INTERVAL: Duration = Duration::from_millis(500);
/// Entries kept before clean ones are dropped (a dropped entry only costs a parse).
const MAX_ENTRIES: usize = 10_000;

struct Entry {
    /// The `summary_metrics` text the row holds, as a metrics writer last wrote or read it.
    row_text: String,
    /// The text our own last write replaced: a reader that read the row just before that write
    /// still gets the current totals.
    replaced_text: Option<String>,
    totals: TrialTotals,
    /// Reports are folded into `totals` that the row does not hold yet.
    behind: bool,
    /// The row has `summary_pending = TRUE` (we wrote it so): batches may be deferred.
    pending_marked: bool,
    written_at: Instant,
    /// A batch or flush is working on a copy; flushes skip it.
    checked_out: bool,
}

/// A row to write for a trial whose reports stopped: see [`SummaryCache::due`].
pub(crate) struct DueRow {
    pub trial_id: i32,
    /// The text the row must still hold (compare-and-set).
    pub row_text: String,
    pub summary_text: String,
    pub total_batches: i64,
}

/// The trials a batch checked out; released when dropped (a failed or abandoned batch).
pub(crate) struct CheckOuts<'a> {
    cache: &'a SummaryCache,
    ids: Vec<i32>,
}

impl CheckOuts<'_> {
    pub(crate) fn push(&mut self, trial_id: i32) {
        self.ids.push(trial_id);
    }

    /// After the batch committed: `written` rows (trial, totals, the text written) replace their
    /// entries; `deferred` trials' reports are folded into theirs. The rest is released.
    pub(crate) fn commit(mut self, written: Vec<(i32, TrialTotals, String)>, deferred: &[(i32, Vec<&NewMetricReport>)], now: Instant) {
        for (id, totals, row_text) in written {
            self.cache.written(id, totals, row_text, now);
        }
        for (id, own) in deferred {
            self.cache.fold_in(*id, own);
        }
        self.cache.release(self.ids.drain(..));
    }
}

impl Drop for CheckOuts<'_> {
    fn drop(&mut self) {
        if !self.ids.is_empty() {
            self.cache.release(self.ids.drain(..));
        }
    }
}

pub(crate) struct SummaryCache {
    entries: Mutex<HashMap<i32, Entry>>,
    interval: Duration,
}

impl Default for SummaryCache {
    fn default() -> Self {
        SummaryCache::with_interval(WRITE_INTERVAL)
    }
}

impl SummaryCache {
    /// `interval` zero writes every batch's rows (nothing is ever deferred).
    pub(crate) fn with_interval(interval: Duration) -> SummaryCache {
        SummaryCache { entries: Mutex::new(HashMap::new()), interval }
    }

    /// Whether batches may leave rows behind (rows they write are then marked pending).
    pub(crate) fn defers(&self) -> bool {
        !self.interval.is_zero()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Entry>> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn check_outs(&self) -> CheckOuts<'_> {
        CheckOuts { cache: self, ids: Vec::new() }
    }

    /// For a batch holding the trial's row lock, which read `row_text`: whether the entry is
    /// valid (an invalid one is dropped) and, if so, whether the batch may leave the row behind
    /// (when its own reports allow). A valid entry stays checked out until the batch ends.
    pub(crate) fn check_out(&self, trial_id: i32, row_text: &str, now: Instant) -> Option<bool> {
        let mut entries = self.lock();
        let entry = entries.get_mut(&trial_id)?;
        if entry.row_text != row_text {
            entries.remove(&trial_id);
            return None;
        }
        entry.checked_out = true;
        Some(entry.pending_marked && now < entry.written_at + self.interval)
    }

    /// A copy of a checked-out entry's totals, for a batch that writes the row.
    pub(crate) fn copy(&self, trial_id: i32) -> Option<TrialTotals> {
        self.lock().get(&trial_id).map(|e| e.totals.clone())
    }

    /// A batch that left the row behind committed: its reports join the entry's totals, in
    /// place (no copy of the summary per batch). Without an entry (another writer rewrote the
    /// row since, from the committed metrics) there is nothing to do.
    fn fold_in(&self, trial_id: i32, own: &[&NewMetricReport]) {
        if let Some(entry) = self.lock().get_mut(&trial_id) {
            entry.totals.apply(own, false);
            entry.behind = true;
        }
    }

    /// A batch wrote the row (with `summary_pending = TRUE`): `row_text` is what it holds now.
    fn written(&self, trial_id: i32, totals: TrialTotals, row_text: String, now: Instant) {
        let mut entries = self.lock();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&trial_id) {
            entries.retain(|_, e| e.behind || e.pending_marked || e.checked_out);
        }
        let replaced_text = entries.get(&trial_id).map(|e| e.row_text.clone());
        let entry = Entry { row_text, replaced_text, totals, behind: false, pending_marked: true, written_at: now, checked_out: false };
        entries.insert(trial_id, entry);
    }

    /// After a batch failed: the entries still describe what is committed.
    pub(crate) fn release(&self, trial_ids: impl IntoIterator<Item = i32>) {
        let mut entries = self.lock();
        for id in trial_ids {
            if let Some(entry) = entries.get_mut(&id) {
                entry.checked_out = false;
            }
        }
    }

    /// Another writer rewrote the trial's row, which held `old_text`: an entry made from that
    /// text is stale. (A newer entry stays, but the text it replaced may never match again: the
    /// rewrite can produce a text a metrics writer once wrote.)
    pub(crate) fn rewritten(&self, trial_id: i32, old_text: &str) {
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(&trial_id) {
            if entry.row_text == old_text {
                entries.remove(&trial_id);
            } else {
                entry.replaced_text = None;
            }
        }
    }

    /// Rows to write now: behind (or marked pending) and last written at least an interval ago
    /// (all of them with `force`). They are checked out until `flushed` or `release`.
    pub(crate) fn due(&self, now: Instant, force: bool) -> Vec<DueRow> {
        let mut entries = self.lock();
        let mut due = Vec::new();
        for (&trial_id, entry) in entries.iter_mut() {
            let old = force || now >= entry.written_at + self.interval;
            if entry.checked_out || !old || !(entry.behind || entry.pending_marked) {
                continue;
            }
            entry.checked_out = true;
            due.push(DueRow {
                trial_id,
                row_text: entry.row_text.clone(),
                summary_text: entry.totals.summary.to_string(),
                total_batches: entry.totals.total_batches,
            });
        }
        due.sort_by_key(|d| d.trial_id);
        due
    }

    /// After a flush committed; `written` says whether the row still held the expected text
    /// (if not, another writer got there first and the entry is dropped).
    pub(crate) fn flushed(&self, row: DueRow, written: bool, now: Instant) {
        let mut entries = self.lock();
        if !written {
            entries.remove(&row.trial_id);
            return;
        }
        if let Some(entry) = entries.get_mut(&row.trial_id) {
            entry.replaced_text = Some(std::mem::replace(&mut entry.row_text, row.summary_text));
            entry.behind = false;
            entry.pending_marked = false;
            entry.written_at = now;
            entry.checked_out = false;
        }
    }

    /// For a reader that read `row_text` from the trial's row: the current totals when the row
    /// is behind them, or `None` (the row is current, or was rewritten by another writer).
    pub(crate) fn overlay(&self, trial_id: i32, row_text: &str) -> Option<TrialTotals> {
        let entries = self.lock();
        let entry = entries.get(&trial_id)?;
        let ours = entry.row_text == row_text || entry.replaced_text.as_deref() == Some(row_text);
        (ours && (entry.behind || entry.row_text != row_text)).then(|| entry.totals.clone())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::model_metrics::TRAINING_GROUP;

    fn totals(summary: Value, total_batches: i64) -> TrialTotals {
        TrialTotals { summary, total_batches, best_validation: None }
    }

    fn report(steps: i64) -> NewMetricReport {
        NewMetricReport {
            trial_id: 7,
            trial_run_id: 1,
            group: TRAINING_GROUP.into(),
            steps_completed: steps,
            report_time: crate::db_now(),
            avg_metrics: json!({"loss": steps}).as_object().cloned().unwrap_or_default(),
            batch_metrics: Vec::new(),
            searcher_metric: None,
        }
    }

    #[test]
    fn an_entry_is_used_only_for_its_own_text() {
        let cache = SummaryCache::default();
        let now = Instant::now();
        let value = json!({"training": {"loss": {"count": 1}}});
        cache.written(1, totals(value.clone(), 1), value.to_string(), now);
        assert_eq!(cache.check_out(1, "{}", now), None, "another writer changed it");
        assert_eq!(cache.check_out(1, &value.to_string(), now), None, "dropped above");
        cache.written(1, totals(value.clone(), 1), value.to_string(), now);
        assert_eq!(cache.check_out(1, &value.to_string(), now), Some(true), "written with summary_pending a moment ago");
        assert_eq!(cache.copy(1).expect("valid").summary, value);
        assert_eq!(cache.check_out(2, "{}", now), None);
    }

    #[test]
    fn deferred_reports_overlay_the_row_until_flushed() {
        let cache = SummaryCache::default();
        let t0 = Instant::now();
        let mut first = totals(json!({}), 0);
        first.apply(&[&report(1)], false);
        let row = first.summary.to_string();
        cache.written(7, first, row.clone(), t0);
        assert!(cache.overlay(7, &row).is_none(), "the row is current");

        assert_eq!(cache.check_out(7, &row, t0), Some(true));
        let second = report(2);
        let mut batch = cache.check_outs();
        batch.push(7);
        batch.commit(Vec::new(), &[(7, vec![&second])], t0);
        let read = cache.overlay(7, &row).expect("behind");
        assert_eq!((read.total_batches, read.summary["training"]["loss"]["count"].clone()), (2, json!(2)));
        assert!(cache.overlay(7, "{\"other\":1}").is_none(), "rewritten by someone else");

        assert!(cache.due(t0, false).is_empty(), "written less than an interval ago");
        let due = cache.due(t0 + WRITE_INTERVAL, false);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].summary_text, read.summary.to_string());
        assert!(cache.due(t0 + WRITE_INTERVAL, true).is_empty(), "checked out by the flush");
        let new_row = due[0].summary_text.clone();
        cache.flushed(due.into_iter().next().expect("one"), true, t0 + WRITE_INTERVAL);
        assert!(cache.overlay(7, &new_row).is_none(), "the row is current again");
        assert_eq!(cache.overlay(7, &row).expect("read before the flush").total_batches, 2);
        assert_eq!(cache.check_out(7, &new_row, t0 + WRITE_INTERVAL), Some(false), "the flush cleared summary_pending");
    }

    #[test]
    fn a_lost_compare_and_set_drops_the_entry() {
        let cache = SummaryCache::default();
        let t0 = Instant::now();
        cache.written(3, totals(json!({}), 0), "{}".into(), t0);
        let due = cache.due(t0, true);
        cache.flushed(due.into_iter().next().expect("marked pending"), false, t0);
        assert!(cache.overlay(3, "{}").is_none());
        assert_eq!(cache.check_out(3, "{}", t0), None);
    }

    #[test]
    fn an_abandoned_batch_releases_its_trials() {
        let cache = SummaryCache::default();
        let t0 = Instant::now();
        cache.written(4, totals(json!({}), 0), "{}".into(), t0);
        {
            let mut batch = cache.check_outs();
            assert_eq!(cache.check_out(4, "{}", t0), Some(true));
            batch.push(4);
            assert!(cache.due(t0, true).is_empty(), "a flush skips it while checked out");
        }
        assert_eq!(cache.due(t0, true).len(), 1);
    }

    #[test]
    fn zero_interval_never_defers() {
        let cache = SummaryCache::with_interval(Duration::ZERO);
        let now = Instant::now();
        cache.written(1, totals(json!({}), 0), "{}".into(), now);
        assert_eq!(cache.check_out(1, "{}", now), Some(false));
    }
}
