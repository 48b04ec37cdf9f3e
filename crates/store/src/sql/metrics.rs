//! Metric reports: batch insertion with the restart rollback rule and the per-trial summaries
//! kept in step, all in one transaction, and the queries over them.
//!
//! Rollback rule (as upstream): a report of run R at `steps_completed` S archives every live row
//! of the same trial and group from an earlier run with more than S steps: a restarted run that
//! resumed from an older checkpoint recomputes those steps, and they must not count twice.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use sqlx::AssertSqlSafe;

use super::args::{Args, BatchInsert, bind_args};
use super::{SqlStore, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model_metrics::{BestValidation, MetricRecord, NewMetricReport, VALIDATION_GROUP};
use crate::summary;

const METRIC_COLUMNS: &str = "id, trial_id, trial_run_id, metric_group, steps_completed, report_time, body, archived";

const INSERT_HEAD: &str = "INSERT INTO metrics (trial_id, trial_run_id, metric_group, steps_completed, report_time, body)";
const INSERT_COLUMNS: usize = 6;

/// Locks the trial's row for the rest of the transaction (a no-op write: portable, and on SQLite
/// it takes the write lock before anything is read) and reads what the batch updates.
const LOCK_TRIAL: &str = "UPDATE trials SET summary_metrics = summary_metrics WHERE id = $1 \
     RETURNING summary_metrics, total_batches, best_validation";

const ARCHIVE: &str = "UPDATE metrics SET archived = TRUE WHERE trial_id = $1 AND archived = FALSE \
     AND trial_run_id < $2 AND steps_completed > $3 AND ($4 IS NULL OR metric_group = $4)";

const LIVE_METRICS: &str =
    "SELECT metric_group, steps_completed, body FROM metrics WHERE trial_id = $1 AND archived = FALSE ORDER BY steps_completed, id";

/// The harness ships metrics from a background thread, so a checkpoint may be reported before the
/// validation at its step; the validation then gives it its searcher metric (what GC ranks by).
const BACKFILL_CHECKPOINT_METRIC: &str =
    "UPDATE checkpoints SET searcher_metric = $3 WHERE trial_id = $1 AND steps_completed = $2 AND searcher_metric IS NULL";
const SAVE_TRIAL: &str = "UPDATE trials SET summary_metrics = $2, total_batches = $3, best_validation = $4 WHERE id = $1";

#[derive(sqlx::FromRow)]
struct MetricRow {
    id: i64,
    trial_id: i32,
    trial_run_id: i32,
    metric_group: String,
    steps_completed: i64,
    report_time: DateTime<Utc>,
    body: String,
    archived: bool,
}

impl MetricRow {
    fn into_record(self) -> StoreResult<MetricRecord> {
        let (avg_metrics, batch_metrics) = split_body(parse_json("body", &self.body)?);
        Ok(MetricRecord {
            id: self.id,
            trial_id: self.trial_id,
            trial_run_id: self.trial_run_id,
            group: self.metric_group,
            steps_completed: self.steps_completed,
            report_time: self.report_time,
            avg_metrics,
            batch_metrics,
            archived: self.archived,
        })
    }
}

/// The stored body, shaped as upstream's: `{"avgMetrics": {...}, "batchMetrics": [...]}`.
fn body_text(report: &NewMetricReport) -> String {
    let mut body = json!({"avgMetrics": report.avg_metrics});
    if !report.batch_metrics.is_empty() {
        body["batchMetrics"] = Value::Array(report.batch_metrics.clone());
    }
    body.to_string()
}

fn split_body(mut body: Value) -> (Map<String, Value>, Vec<Value>) {
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
struct TrialTotals {
    summary: Value,
    total_batches: i64,
    best_validation: Option<f64>,
}

impl TrialTotals {
    fn fold(&mut self, group: &str, steps_completed: i64, avg_metrics: &Map<String, Value>) {
        summary::fold(&mut self.summary, group, avg_metrics);
        self.total_batches = self.total_batches.max(steps_completed);
    }

    /// Rebuilds summary and total from the trial's live rows (after some were archived).
    fn recompute(&mut self, live: Vec<(String, i64, String)>) -> StoreResult<()> {
        self.summary = json!({});
        self.total_batches = 0;
        for (group, steps, body) in live {
            let (avg, _) = split_body(parse_json("body", &body)?);
            self.fold(&group, steps, &avg);
        }
        Ok(())
    }

    fn offer_validation(&mut self, report: &NewMetricReport) {
        let (Some(searcher), Some(value)) = (&report.searcher_metric, searcher_value(report)) else { return };
        if self.best_validation.is_none_or(|best| is_better(value, best, searcher.smaller_is_better)) {
            self.best_validation = Some(value);
        }
    }
}

/// The report's value of the searcher metric, when it names one and holds it as a number.
fn searcher_value(report: &NewMetricReport) -> Option<f64> {
    let searcher = report.searcher_metric.as_ref()?;
    report.avg_metrics.get(&searcher.name).and_then(Value::as_f64)
}

fn is_better(candidate: f64, incumbent: f64, smaller_is_better: bool) -> bool {
    if smaller_is_better { candidate < incumbent } else { candidate > incumbent }
}

impl SqlStore {
    pub(crate) async fn insert_metrics_impl(&self, reports: &[NewMetricReport]) -> StoreResult<()> {
        if reports.is_empty() {
            return Ok(());
        }
        // Sorted, so concurrent batches lock shared trials in the same order.
        let trial_ids: BTreeSet<i32> = reports.iter().map(|r| r.trial_id).collect();
        // Per (trial, group, run): the fewest steps reported, which archives the most.
        let mut rollbacks: BTreeMap<(i32, &str, i32), i64> = BTreeMap::new();
        for r in reports {
            let steps = rollbacks.entry((r.trial_id, r.group.as_str(), r.trial_run_id)).or_insert(r.steps_completed);
            *steps = (*steps).min(r.steps_completed);
        }
        let insert = BatchInsert::for_store(self, INSERT_HEAD, INSERT_COLUMNS);
        let statements: Vec<(String, Args)> = reports
            .chunks(insert.rows_per_statement())
            .map(|chunk| {
                let mut args = Args::default();
                for r in chunk {
                    args.push(r.trial_id);
                    args.push(r.trial_run_id);
                    args.push(&r.group);
                    args.push(r.steps_completed);
                    args.push(r.report_time);
                    args.push(body_text(r));
                }
                (insert.sql(chunk.len()), args)
            })
            .collect();

        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut totals = BTreeMap::new();
            for &id in &trial_ids {
                let row: Option<(String, i64, Option<f64>)> = sqlx::query_as(LOCK_TRIAL).bind(id).fetch_optional(&mut *tx).await?;
                let Some((summary, total_batches, best_validation)) = row else {
                    return Err(StoreError::not_found("trial", id));
                };
                totals.insert(id, TrialTotals { summary: parse_json("summary_metrics", &summary)?, total_batches, best_validation });
            }
            for (sql, args) in &statements {
                bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), args).execute(&mut *tx).await?;
            }
            // After the insert, so a batch that mixes runs also archives its own superseded rows.
            let mut stale = BTreeSet::new();
            for (&(trial_id, group, run_id), &steps) in &rollbacks {
                let archived = sqlx::query(ARCHIVE)
                    .bind(trial_id)
                    .bind(run_id)
                    .bind(steps)
                    .bind(Some(group))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if archived > 0 {
                    stale.insert(trial_id);
                }
            }
            for (&id, t) in totals.iter_mut() {
                if stale.contains(&id) {
                    let live: Vec<(String, i64, String)> = sqlx::query_as(LIVE_METRICS).bind(id).fetch_all(&mut *tx).await?;
                    t.recompute(live)?;
                } else {
                    for r in reports.iter().filter(|r| r.trial_id == id) {
                        t.fold(&r.group, r.steps_completed, &r.avg_metrics);
                    }
                }
                for r in reports.iter().filter(|r| r.trial_id == id) {
                    t.offer_validation(r);
                    if let Some(value) = searcher_value(r) {
                        sqlx::query(BACKFILL_CHECKPOINT_METRIC).bind(id).bind(r.steps_completed).bind(value).execute(&mut *tx).await?;
                    }
                }
                sqlx::query(SAVE_TRIAL)
                    .bind(id)
                    .bind(t.summary.to_string())
                    .bind(t.total_batches)
                    .bind(t.best_validation)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    pub(crate) async fn archive_metrics_after_impl(
        &self,
        trial_id: i32,
        run_id: i32,
        steps_completed: i64,
        group: Option<&str>,
    ) -> StoreResult<u64> {
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let row: Option<(String, i64, Option<f64>)> = sqlx::query_as(LOCK_TRIAL).bind(trial_id).fetch_optional(&mut *tx).await?;
            let Some((summary, total_batches, best_validation)) = row else {
                return Err(StoreError::not_found("trial", trial_id));
            };
            let archived = sqlx::query(ARCHIVE)
                .bind(trial_id)
                .bind(run_id)
                .bind(steps_completed)
                .bind(group)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if archived > 0 {
                let mut t = TrialTotals { summary: parse_json("summary_metrics", &summary)?, total_batches, best_validation };
                let live: Vec<(String, i64, String)> = sqlx::query_as(LIVE_METRICS).bind(trial_id).fetch_all(&mut *tx).await?;
                t.recompute(live)?;
                sqlx::query(SAVE_TRIAL)
                    .bind(trial_id)
                    .bind(t.summary.to_string())
                    .bind(t.total_batches)
                    .bind(t.best_validation)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(archived)
        })
    }

    pub(crate) async fn metrics_for_trial_impl(
        &self,
        trial_id: i32,
        group: Option<&str>,
        include_archived: bool,
    ) -> StoreResult<Vec<MetricRecord>> {
        let sql = format!(
            "SELECT {METRIC_COLUMNS} FROM metrics WHERE trial_id = $1 AND ($2 IS NULL OR metric_group = $2) \
             AND ($3 OR archived = FALSE) ORDER BY steps_completed, id"
        );
        let rows = on_pool!(self, pool => {
            sqlx::query_as::<_, MetricRow>(AssertSqlSafe(sql.as_str()))
                .bind(trial_id)
                .bind(group)
                .bind(include_archived)
                .fetch_all(pool)
                .await?
        });
        rows.into_iter().map(MetricRow::into_record).collect()
    }

    pub(crate) async fn latest_validation_impl(&self, trial_id: i32) -> StoreResult<Option<MetricRecord>> {
        let sql = format!(
            "SELECT {METRIC_COLUMNS} FROM metrics WHERE trial_id = $1 AND metric_group = $2 AND archived = FALSE \
             ORDER BY steps_completed DESC, id DESC LIMIT 1"
        );
        let row = on_pool!(self, pool => {
            sqlx::query_as::<_, MetricRow>(AssertSqlSafe(sql.as_str()))
                .bind(trial_id)
                .bind(VALIDATION_GROUP)
                .fetch_optional(pool)
                .await?
        });
        row.map(MetricRow::into_record).transpose()
    }

    pub(crate) async fn best_validation_for_experiment_impl(
        &self,
        experiment_id: i32,
        metric_name: &str,
        smaller_is_better: bool,
    ) -> StoreResult<Option<BestValidation>> {
        // The metric lives inside the JSON body, which the dialects query differently: scan the
        // (comparatively few) validation rows here instead.
        const SQL: &str = "SELECT m.trial_id, m.steps_completed, m.body FROM metrics m JOIN trials t ON t.id = m.trial_id \
             WHERE t.experiment_id = $1 AND m.metric_group = $2 AND m.archived = FALSE ORDER BY m.id";
        let rows: Vec<(i32, i64, String)> = on_pool!(self, pool => {
            sqlx::query_as(SQL).bind(experiment_id).bind(VALIDATION_GROUP).fetch_all(pool).await?
        });
        let mut best: Option<BestValidation> = None;
        for (trial_id, steps_completed, body) in rows {
            let (avg, _) = split_body(parse_json("body", &body)?);
            let Some(value) = avg.get(metric_name).and_then(Value::as_f64) else { continue };
            if best.as_ref().is_none_or(|b| is_better(value, b.value, smaller_is_better)) {
                best = Some(BestValidation { trial_id, steps_completed, value });
            }
        }
        Ok(best)
    }
}
