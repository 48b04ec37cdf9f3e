//! Metric reports: batch insertion with the restart rollback rule and the per-trial summaries
//! kept in step, all in one transaction, and the queries over them.
//!
//! Rollback rule (as upstream): a report of run R at `steps_completed` S archives every live row
//! of the same trial and group from an earlier run with more than S steps: a restarted run that
//! resumed from an older checkpoint recomputes those steps, and they must not count twice.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::AssertSqlSafe;

use super::args::{Args, BatchInsert, bind_args};
use super::metric_batch::{LockedTrial, RowWrite, TrialTotals, admit, backfills, body_text, is_better, plan_rows, rollbacks, split_body};
use super::{Pool, SqlStore, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model_metrics::{BestValidation, CurrentMetricReport, MetricAdmission, MetricRecord, NewMetricReport, VALIDATION_GROUP};

pub(crate) const METRIC_COLUMNS: &str = "id, trial_id, trial_run_id, metric_group, steps_completed, report_time, body, archived";

const INSERT_HEAD: &str = "INSERT INTO metrics (trial_id, trial_run_id, metric_group, steps_completed, report_time, body)";
const INSERT_COLUMNS: usize = 6;

/// Locks the trial's row for the rest of the transaction (a no-op write: portable, and on SQLite
/// it takes the write lock before anything is read) and reads what the batch updates.
const LOCK_TRIAL: &str = "UPDATE trials SET summary_metrics = summary_metrics WHERE id = $1 \
     RETURNING summary_metrics, total_batches, best_validation";

/// Bound ids per `IN (...)` list (SQLite binds `$n` by a linear scan: keep statements small).
const IDS_PER_STATEMENT: usize = 200;

/// What a batch reads of its trials (also the current run, for admission); `IN (...)` follows.
const LOCK_TRIALS_HEAD: &str = "SELECT id, run_id, summary_metrics, total_batches, best_validation FROM trials WHERE id IN";

/// Sessions (of the listed ids) whose allocation is still open.
const LIVE_SESSIONS: &str = "SELECT s.id FROM allocation_sessions s JOIN allocations a ON a.allocation_id = s.allocation_id \
     WHERE a.end_time IS NULL AND s.id IN";

/// [`ARCHIVE`] for many (trial, group, run) at once: `(...) OR (...)` follows.
const ARCHIVE_ANY_HEAD: &str = "UPDATE metrics SET archived = TRUE WHERE archived = FALSE AND";

/// [`SAVE_TRIAL`] for many trials: `(VALUES (id, summary, total, best), ...)` follows.
const SAVE_TRIALS_HEAD: &str = "UPDATE trials SET summary_metrics = v.column2, total_batches = v.column3, best_validation = v.column4, \
     summary_pending = v.column5 FROM";

const ARCHIVE: &str = "UPDATE metrics SET archived = TRUE WHERE trial_id = $1 AND archived = FALSE \
     AND trial_run_id < $2 AND steps_completed > $3 AND ($4 IS NULL OR metric_group = $4)";

const LIVE_METRICS: &str =
    "SELECT metric_group, steps_completed, body FROM metrics WHERE trial_id = $1 AND archived = FALSE ORDER BY steps_completed, id";

/// The harness ships metrics from a background thread, so a checkpoint may be reported before the
/// validation at its step; the validation then gives it its searcher metric (what GC ranks by).
const BACKFILL_CHECKPOINT_METRIC: &str =
    "UPDATE checkpoints SET searcher_metric = $3 WHERE trial_id = $1 AND steps_completed = $2 AND searcher_metric IS NULL";
/// Also clears `summary_pending`: the row is whole (see `summary_cache`).
const SAVE_TRIAL: &str =
    "UPDATE trials SET summary_metrics = $2, total_batches = $3, best_validation = $4, summary_pending = FALSE WHERE id = $1";
/// Compare-and-set: only if the row still holds the text the cache's entry was made from.
const FLUSH_TRIAL: &str =
    "UPDATE trials SET summary_metrics = $2, total_batches = $3, summary_pending = FALSE WHERE id = $1 AND summary_metrics = $4";

/// Within `$tx` (holding the trial's lock): rebuilds the trial's summary and total from its live
/// metrics and saves them (clearing `summary_pending`). A macro: `$tx` is either backend's.
macro_rules! recompute_trial {
    ($tx:ident, $id:expr, $summary:expr, $total_batches:expr, $best_validation:expr) => {{
        let mut t = TrialTotals {
            summary: parse_json("summary_metrics", &$summary)?,
            total_batches: $total_batches,
            best_validation: $best_validation,
        };
        let live: Vec<(String, i64, String)> = sqlx::query_as(LIVE_METRICS).bind($id).fetch_all(&mut *$tx).await?;
        t.recompute(live)?;
        sqlx::query(SAVE_TRIAL)
            .bind($id)
            .bind(t.summary.to_string())
            .bind(t.total_batches)
            .bind(t.best_validation)
            .execute(&mut *$tx)
            .await?;
    }};
}

#[derive(sqlx::FromRow)]
pub(crate) struct MetricRow {
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
    pub(crate) fn into_record(self) -> StoreResult<MetricRecord> {
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

/// `items` padded to the next power of two by repeating the last one, so the statements built
/// from a batch take few distinct texts and stay in the prepared-statement cache. Only for
/// lists where a repeat changes nothing (`IN` lists, idempotent terms, equal rows).
fn padded<T: Copy>(items: &[T]) -> Vec<T> {
    let mut out = items.to_vec();
    if let Some(&last) = items.last() {
        out.resize(items.len().next_power_of_two(), last);
    }
    out
}

impl SqlStore {
    pub(crate) async fn insert_metrics_impl(&self, reports: &[NewMetricReport]) -> StoreResult<()> {
        let reports: Vec<&NewMetricReport> = reports.iter().collect();
        self.write_metrics(&reports, None).await.map(drop)
    }

    pub(crate) async fn insert_metrics_if_current_impl(&self, reports: &[CurrentMetricReport]) -> StoreResult<Vec<MetricAdmission>> {
        if let Some(writer) = &self.sqlite_metrics {
            return writer.write(&self.summaries, reports).await;
        }
        let sessions: Vec<Option<i64>> = reports.iter().map(|r| r.allocation_session_id).collect();
        let reports: Vec<&NewMetricReport> = reports.iter().map(|r| &r.report).collect();
        self.write_metrics(&reports, Some(&sessions)).await
    }

    /// One transaction for the whole batch, with a fixed number of statements however many
    /// trials it spans: lock the trials, check sessions (admission path), insert, archive,
    /// save the trials. `sessions` is `None` for plain inserts: no per-report checks, and a
    /// missing trial fails the batch.
    async fn write_metrics(&self, reports: &[&NewMetricReport], sessions: Option<&[Option<i64>]>) -> StoreResult<Vec<MetricAdmission>> {
        if reports.is_empty() {
            return Ok(Vec::new());
        }
        // Sorted, so concurrent batches lock shared trials in the same order.
        let trial_ids: Vec<i32> = reports.iter().map(|r| r.trial_id).collect::<BTreeSet<_>>().into_iter().collect();
        let session_ids: Vec<i64> = sessions.unwrap_or_default().iter().flatten().copied().collect::<BTreeSet<_>>().into_iter().collect();
        let insert = BatchInsert::for_store(self, INSERT_HEAD, INSERT_COLUMNS);
        let now = Instant::now();
        let mut checked_out = self.summaries.check_outs();

        // The trials' rows are locked by reading them: SQLite's `BEGIN IMMEDIATE` takes the
        // database's write lock up front, PostgreSQL locks the rows (in id order, as every
        // metrics writer does) with `FOR UPDATE`.
        let sqlite = matches!(self.pool, Pool::Sqlite(_));
        let lock_tail = if sqlite { "" } else { " ORDER BY id FOR UPDATE" };
        on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let mut trials: BTreeMap<i32, LockedTrial> = BTreeMap::new();
            for chunk in trial_ids.chunks(IDS_PER_STATEMENT) {
                let mut args = Args::default();
                let sql = format!("{LOCK_TRIALS_HEAD} ({}){lock_tail}", args.push_list(padded(chunk).iter().copied()));
                let rows: Vec<(i32, i32, String, i64, Option<f64>)> =
                    bind_args!(sqlx::query_as(AssertSqlSafe(sql.as_str())), args).fetch_all(&mut *tx).await?;
                for (id, run_id, row_text, total_batches, best_validation) in rows {
                    let cached = self.summaries.check_out(id, &row_text, now);
                    if cached.is_some() {
                        checked_out.push(id);
                    }
                    trials.insert(id, LockedTrial { run_id, row_text, total_batches, best_validation, cached });
                }
            }
            let mut live_sessions = BTreeSet::new();
            for chunk in session_ids.chunks(IDS_PER_STATEMENT) {
                let mut args = Args::default();
                let sql = format!("{LIVE_SESSIONS} ({})", args.push_list(padded(chunk).iter().copied()));
                let rows: Vec<(i64,)> = bind_args!(sqlx::query_as(AssertSqlSafe(sql.as_str())), args).fetch_all(&mut *tx).await?;
                live_sessions.extend(rows.into_iter().map(|(id,)| id));
            }
            let mut admissions = admit(reports, sessions, &trials, &live_sessions)?;
            if sessions.is_some() {
                // Exactly once (`metric_repeats`): a retried report is not stored twice.
                let lookups = super::metric_repeats::lookups(reports, &admissions);
                let mut stored = std::collections::HashSet::new();
                for chunk in lookups.chunks(IDS_PER_STATEMENT / 3) {
                    let mut args = Args::default();
                    for (trial_id, group, steps) in chunk {
                        args.push(*trial_id);
                        args.push(*group);
                        args.push(*steps);
                    }
                    let sql = super::metric_repeats::candidates_sql(chunk.len(), |i| format!("${i}"));
                    let rows: Vec<(i32, i32, String, i64, String)> =
                        bind_args!(sqlx::query_as(AssertSqlSafe(sql.as_str())), args).fetch_all(&mut *tx).await?;
                    stored.extend(rows);
                }
                super::metric_repeats::mark_repeats(reports, &mut admissions, stored)?;
            }
            let accepted: Vec<&NewMetricReport> =
                reports.iter().zip(&admissions).filter(|(_, a)| **a == MetricAdmission::Stored).map(|(r, _)| *r).collect();
            if accepted.is_empty() {
                tx.rollback().await?;
                return Ok(admissions);
            }

            for chunk in accepted.chunks(insert.rows_per_statement()) {
                let mut args = Args::default();
                for r in chunk {
                    args.push(r.trial_id);
                    args.push(r.trial_run_id);
                    args.push(&r.group);
                    args.push(r.steps_completed);
                    args.push(r.report_time);
                    args.push(body_text(r)?);
                }
                let sql = insert.sql(chunk.len());
                bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), args).execute(&mut *tx).await?;
            }
            // After the insert, so a batch that mixes runs also archives its own superseded rows.
            let mut stale = BTreeSet::new();
            // Runs start at 1, and admitted reports are of their trial's current run: one of run 1
            // has no earlier run to roll back (plain inserts may carry any run id).
            let rollbacks: Vec<((i32, &str, i32), i64)> =
                rollbacks(&accepted).into_iter().filter(|((_, _, run_id), _)| sessions.is_none() || *run_id > 1).collect();
            for chunk in rollbacks.chunks(IDS_PER_STATEMENT / 4) {
                let mut args = Args::default();
                let terms: Vec<String> = padded(chunk)
                    .iter()
                    .map(|&((trial_id, group, run_id), steps)| {
                        format!(
                            "(trial_id = {} AND metric_group = {} AND trial_run_id < {} AND steps_completed > {})",
                            args.push(trial_id),
                            args.push(group),
                            args.push(run_id),
                            args.push(steps)
                        )
                    })
                    .collect();
                let sql = format!("{ARCHIVE_ANY_HEAD} ({}) RETURNING trial_id", terms.join(" OR "));
                let rows: Vec<(i32,)> = bind_args!(sqlx::query_as(AssertSqlSafe(sql.as_str())), args).fetch_all(&mut *tx).await?;
                stale.extend(rows.into_iter().map(|(id,)| id));
            }
            let (writes, deferred) = plan_rows(&accepted, &trials, &stale, &self.summaries)?;
            let mut written: Vec<(i32, TrialTotals, String)> = Vec::with_capacity(writes.len());
            for RowWrite { id, own, recomputed, totals: mut t } in writes {
                if recomputed {
                    let live: Vec<(String, i64, String)> = sqlx::query_as(LIVE_METRICS).bind(id).fetch_all(&mut *tx).await?;
                    t.recompute(live)?;
                }
                t.apply(&own, recomputed);
                for (steps, value) in backfills(&own) {
                    sqlx::query(BACKFILL_CHECKPOINT_METRIC).bind(id).bind(steps).bind(value).execute(&mut *tx).await?;
                }
                let text = t.summary.to_string();
                written.push((id, t, text));
            }
            let pending = self.summaries.defers();
            let rows: Vec<(i32, &String, i64, Option<f64>)> =
                written.iter().map(|(id, t, text)| (*id, text, t.total_batches, t.best_validation)).collect();
            for chunk in rows.chunks(IDS_PER_STATEMENT / 4) {
                let mut args = Args::default();
                // A repeated row sets the same values again.
                let rows: Vec<String> = padded(chunk)
                    .iter()
                    .map(|&(id, text, total_batches, best_validation)| {
                        format!(
                            "({}, {}, {}, {}, {})",
                            args.push(id),
                            args.push(text),
                            args.push(total_batches),
                            args.push(best_validation),
                            args.push(pending)
                        )
                    })
                    .collect();
                // VALUES names its columns column1..5 on both backends.
                let sql = format!("{SAVE_TRIALS_HEAD} (VALUES {}) AS v WHERE trials.id = v.column1", rows.join(", "));
                bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), args).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            checked_out.commit(written, &deferred, now);
            Ok(admissions)
        })
    }

    /// Writes the rows that metric batches left behind once they are an interval old (all of
    /// them with `force`); returns how many were written.
    pub(crate) async fn flush_metric_summaries_impl(&self, force: bool) -> StoreResult<u64> {
        if let Some(writer) = &self.sqlite_metrics {
            return writer.flush(&self.summaries, force).await;
        }
        let due = self.summaries.due(Instant::now(), force);
        if due.is_empty() {
            return Ok(0);
        }
        let ids: Vec<i32> = due.iter().map(|d| d.trial_id).collect();
        let written: StoreResult<Vec<bool>> = async {
            on_pool!(self, pool => {
                let mut tx = super::begin_write!(self, pool);
                let mut written = Vec::with_capacity(due.len());
                // In id order, as the batches lock rows.
                for d in &due {
                    let done = sqlx::query(FLUSH_TRIAL)
                        .bind(d.trial_id)
                        .bind(&d.summary_text)
                        .bind(d.total_batches)
                        .bind(&d.row_text)
                        .execute(&mut *tx)
                        .await?;
                    written.push(done.rows_affected() > 0);
                }
                tx.commit().await?;
                Ok(written)
            })
        }
        .await;
        match written {
            Ok(written) => {
                let now = Instant::now();
                let count = written.iter().filter(|w| **w).count() as u64;
                for (row, written) in due.into_iter().zip(written) {
                    self.summaries.flushed(row, written, now);
                }
                Ok(count)
            }
            Err(e) => {
                self.summaries.release(ids);
                Err(e)
            }
        }
    }

    /// Re-derives the summaries of rows marked pending (a crash may have lost what batches left
    /// behind) from their live metrics. Runs when the store opens.
    pub(crate) async fn repair_pending_summaries(&self) -> StoreResult<u64> {
        let ids: Vec<(i32,)> = on_pool!(self, pool => {
            sqlx::query_as("SELECT id FROM trials WHERE summary_pending = TRUE ORDER BY id").fetch_all(pool).await?
        });
        for &(id,) in &ids {
            on_pool!(self, pool => {
                let mut tx = super::begin_write!(self, pool);
                let row: Option<(String, i64, Option<f64>)> = sqlx::query_as(LOCK_TRIAL).bind(id).fetch_optional(&mut *tx).await?;
                if let Some((summary, total_batches, best_validation)) = row {
                    recompute_trial!(tx, id, summary, total_batches, best_validation);
                }
                tx.commit().await?;
            });
        }
        if !ids.is_empty() {
            tracing::info!(trials = ids.len(), "re-derived metric summaries left pending by an unclean shutdown");
        }
        Ok(ids.len() as u64)
    }

    pub(crate) async fn archive_metrics_after_impl(
        &self,
        trial_id: i32,
        run_id: i32,
        steps_completed: i64,
        group: Option<&str>,
    ) -> StoreResult<u64> {
        on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
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
                recompute_trial!(tx, trial_id, summary, total_batches, best_validation);
            }
            tx.commit().await?;
            if archived > 0 {
                self.summaries.rewritten(trial_id, &summary);
            }
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
        self.decode_metrics(rows)
    }

    /// Rows to records, counted in [`SqlStore::decoded_metric_rows`].
    pub(crate) fn decode_metrics(&self, rows: Vec<MetricRow>) -> StoreResult<Vec<MetricRecord>> {
        self.decoded_metric_rows.fetch_add(rows.len() as u64, std::sync::atomic::Ordering::Relaxed);
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
        Ok(self.decode_metrics(row.into_iter().collect())?.pop())
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
