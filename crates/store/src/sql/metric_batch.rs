//! The backend-independent part of writing a batch of metric reports: the stored body, the
//! per-trial totals folded from the reports, the restart rollback ranges, and the admission of
//! each report given what the batch's transaction read. Both write paths use it: the sqlx one
//! (PostgreSQL, in-memory SQLite) in `metrics`, and SQLite's writer thread in `sqlite_metrics`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::parse_json;
use super::summary_cache::SummaryCache;
use crate::error::{StoreError, StoreResult};
use crate::model_metrics::{MetricAdmission, NewMetricReport};
use crate::summary;

/// The stored body, shaped as upstream's: `{"avgMetrics": {...}, "batchMetrics": [...]}`.
pub(crate) fn body_text(report: &NewMetricReport) -> StoreResult<String> {
    // Serialised by reference: building a `json!` value first would deep-copy the metrics.
    let mut body = String::with_capacity(256);
    body.push_str("{\"avgMetrics\":");
    body.push_str(&serde_json::to_string(&report.avg_metrics).map_err(|e| StoreError::corrupt("body", e))?);
    if !report.batch_metrics.is_empty() {
        body.push_str(",\"batchMetrics\":");
        body.push_str(&serde_json::to_string(&report.batch_metrics).map_err(|e| StoreError::corrupt("body", e))?);
    }
    body.push('}');
    Ok(body)
}

pub(crate) fn split_body(mut body: Value) -> (Map<String, Value>, Vec<Value>) {
    let avg = match body.get_mut("avgMetrics").map(Value::take) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let batch = match body.get_mut("batchMetrics").map(Value::take) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    (avg, batch)
}

/// What a batch changes on one trial's row.
#[derive(Clone, Debug)]
pub(crate) struct TrialTotals {
    pub summary: Value,
    pub total_batches: i64,
    pub best_validation: Option<f64>,
}

impl TrialTotals {
    pub(crate) fn fold(&mut self, group: &str, steps_completed: i64, avg_metrics: &Map<String, Value>) {
        summary::fold(&mut self.summary, group, avg_metrics);
        self.total_batches = self.total_batches.max(steps_completed);
    }

    /// Rebuilds summary and total from the trial's live rows (after some were archived).
    pub(crate) fn recompute(&mut self, live: Vec<(String, i64, String)>) -> StoreResult<()> {
        self.summary = json!({});
        self.total_batches = 0;
        for (group, steps, body) in live {
            let (avg, _) = split_body(parse_json("body", &body)?);
            self.fold(&group, steps, &avg);
        }
        Ok(())
    }

    /// Takes a trial's own reports of the batch: folded into the summary unless it was just
    /// `recomputed` from the trial's live rows (which include them), and offered as validations.
    pub(crate) fn apply(&mut self, own: &[&NewMetricReport], recomputed: bool) {
        for r in own {
            if !recomputed {
                self.fold(&r.group, r.steps_completed, &r.avg_metrics);
            }
            self.offer_validation(r);
        }
    }

    pub(crate) fn offer_validation(&mut self, report: &NewMetricReport) {
        let (Some(searcher), Some(value)) = (&report.searcher_metric, searcher_value(report)) else { return };
        if self.best_validation.is_none_or(|best| is_better(value, best, searcher.smaller_is_better)) {
            self.best_validation = Some(value);
        }
    }
}

/// (steps, searcher metric value) of the reports that carry one: a checkpoint reported at those
/// steps before its validation gets the value (what GC ranks by).
pub(crate) fn backfills<'a>(own: &'a [&NewMetricReport]) -> impl Iterator<Item = (i64, f64)> + 'a {
    own.iter().filter_map(|r| searcher_value(r).map(|value| (r.steps_completed, value)))
}

/// A trial's row as a batch read it, holding its lock.
pub(crate) struct LockedTrial {
    pub run_id: i32,
    pub row_text: String,
    pub total_batches: i64,
    pub best_validation: Option<f64>,
    /// `Some(may_defer)` when the writers' cache entry for the row is valid (and checked out).
    pub cached: Option<bool>,
}

impl LockedTrial {
    /// Whether the batch may leave the row behind: the cache allows it, no restart rollback
    /// touched the trial, and its reports only fold into summary and total (no searcher value:
    /// `best_validation` and checkpoints stay as they are).
    pub(crate) fn defers(&self, recomputed: bool, own: &[&NewMetricReport]) -> bool {
        self.cached == Some(true) && !recomputed && own.iter().all(|r| searcher_value(r).is_none())
    }

    /// The totals a batch that writes the row starts from.
    pub(crate) fn totals(&self, trial_id: i32, cache: &SummaryCache) -> StoreResult<TrialTotals> {
        if self.cached.is_some()
            && let Some(totals) = cache.copy(trial_id)
        {
            return Ok(totals);
        }
        let summary = parse_json("summary_metrics", &self.row_text)?;
        Ok(TrialTotals { summary, total_batches: self.total_batches, best_validation: self.best_validation })
    }
}

/// The report's value of the searcher metric, when it names one and holds it as a number.
pub(crate) fn searcher_value(report: &NewMetricReport) -> Option<f64> {
    let searcher = report.searcher_metric.as_ref()?;
    report.avg_metrics.get(&searcher.name).and_then(Value::as_f64)
}

pub(crate) fn is_better(candidate: f64, incumbent: f64, smaller_is_better: bool) -> bool {
    if smaller_is_better { candidate < incumbent } else { candidate > incumbent }
}

/// The batch's admitted reports by trial (in trial id order, as rows are locked and written).
/// A trial row a batch writes: the trial's admitted reports, whether a restart rollback touched
/// it (then its totals are recomputed from the live rows first), and the totals to start from.
pub(crate) struct RowWrite<'a> {
    pub id: i32,
    pub own: Vec<&'a NewMetricReport>,
    pub recomputed: bool,
    pub totals: TrialTotals,
}

/// A trial's reports folded into the writers' cache only (see `summary_cache`).
pub(crate) type Deferred<'a> = (i32, Vec<&'a NewMetricReport>);

/// Groups the admitted reports by trial and splits the trials into rows written now and rows
/// left behind. `stale`: trials whose earlier runs' rows this batch archived.
pub(crate) fn plan_rows<'a>(
    accepted: &[&'a NewMetricReport],
    trials: &BTreeMap<i32, LockedTrial>,
    stale: &BTreeSet<i32>,
    cache: &SummaryCache,
) -> StoreResult<(Vec<RowWrite<'a>>, Vec<Deferred<'a>>)> {
    let mut by_trial: BTreeMap<i32, Vec<&NewMetricReport>> = BTreeMap::new();
    for r in accepted {
        by_trial.entry(r.trial_id).or_default().push(r);
    }
    let (mut writes, mut deferred) = (Vec::new(), Vec::new());
    for (id, own) in by_trial {
        let Some(locked) = trials.get(&id) else { continue };
        let recomputed = stale.contains(&id);
        if locked.defers(recomputed, &own) {
            deferred.push((id, own));
        } else {
            writes.push(RowWrite { id, recomputed, totals: locked.totals(id, cache)?, own });
        }
    }
    Ok((writes, deferred))
}

/// Per (trial, group, run): the fewest steps reported, which archives the most.
pub(crate) fn rollbacks<'a>(reports: &[&'a NewMetricReport]) -> BTreeMap<(i32, &'a str, i32), i64> {
    let mut rollbacks: BTreeMap<(i32, &str, i32), i64> = BTreeMap::new();
    for r in reports {
        let steps = rollbacks.entry((r.trial_id, r.group.as_str(), r.trial_run_id)).or_insert(r.steps_completed);
        *steps = (*steps).min(r.steps_completed);
    }
    rollbacks
}

/// Decides each report's fate from the locked trials (id → current run) and the live sessions.
/// Without `sessions` (plain inserts) every report is stored, and a missing trial is an error.
pub(crate) fn admit(
    reports: &[&NewMetricReport],
    sessions: Option<&[Option<i64>]>,
    trials: &BTreeMap<i32, LockedTrial>,
    live_sessions: &BTreeSet<i64>,
) -> StoreResult<Vec<MetricAdmission>> {
    reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let Some(LockedTrial { run_id, .. }) = trials.get(&r.trial_id) else {
                return if sessions.is_some() {
                    Ok(MetricAdmission::TrialNotFound)
                } else {
                    Err(StoreError::not_found("trial", r.trial_id))
                };
            };
            let Some(sessions) = sessions else { return Ok(MetricAdmission::Stored) };
            if sessions.get(i).copied().flatten().is_some_and(|s| !live_sessions.contains(&s)) {
                Ok(MetricAdmission::SessionEnded)
            } else if r.trial_run_id != *run_id {
                Ok(MetricAdmission::StaleRun { current_run_id: *run_id })
            } else {
                Ok(MetricAdmission::Stored)
            }
        })
        .collect()
}
