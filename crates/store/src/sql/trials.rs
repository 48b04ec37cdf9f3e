//! Trials: creation, lookup, listing and the updates the master makes over a trial's runs.
//! Metric-derived columns (`total_batches`, `summary_metrics`, `best_validation`) are written by
//! the metrics module, in the transaction that inserts the metrics.

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args, direction};
use super::summary_cache::SummaryCache;
use super::{SqlStore, expect_row, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model_trials::{NewTrial, TrialFilter, TrialPage, TrialRecord, TrialSort};

pub(super) const TRIAL_COLUMNS: &str = "id, experiment_id, request_id, task_id, state, hparams, seed, start_time, end_time, \
     restarts, run_id, total_batches, latest_checkpoint_uuid, best_validation, summary_metrics, runner_state, end_reason, progress, warm_start_checkpoint_uuid";

#[derive(sqlx::FromRow)]
pub(super) struct TrialRow {
    id: i32,
    experiment_id: i32,
    request_id: String,
    task_id: String,
    state: String,
    hparams: String,
    seed: i64,
    start_time: DateTime<Utc>,
    end_time: Option<DateTime<Utc>>,
    restarts: i32,
    run_id: i32,
    total_batches: i64,
    latest_checkpoint_uuid: Option<String>,
    best_validation: Option<f64>,
    summary_metrics: String,
    runner_state: String,
    end_reason: Option<String>,
    progress: Option<f64>,
    warm_start_checkpoint_uuid: Option<String>,
}

impl TrialRow {
    /// The record, with the metric writers' totals where the row is behind them.
    pub(super) fn into_record(self, summaries: &SummaryCache) -> StoreResult<TrialRecord> {
        let (summary_metrics, total_batches, best_validation) = match summaries.overlay(self.id, &self.summary_metrics) {
            Some(t) => (t.summary, t.total_batches, t.best_validation),
            None => (parse_json("summary_metrics", &self.summary_metrics)?, self.total_batches, self.best_validation),
        };
        Ok(TrialRecord {
            id: self.id,
            experiment_id: self.experiment_id,
            request_id: self.request_id,
            task_id: self.task_id,
            state: self.state,
            hparams: parse_json("hparams", &self.hparams)?,
            seed: self.seed,
            start_time: self.start_time,
            end_time: self.end_time,
            restarts: self.restarts,
            run_id: self.run_id,
            total_batches,
            latest_checkpoint_uuid: self.latest_checkpoint_uuid,
            best_validation,
            summary_metrics,
            runner_state: self.runner_state,
            end_reason: self.end_reason,
            progress: self.progress,
            warm_start_checkpoint_uuid: self.warm_start_checkpoint_uuid,
        })
    }
}

impl SqlStore {
    pub(crate) async fn create_trial_impl(&self, t: NewTrial) -> StoreResult<TrialRecord> {
        let sql = format!(
            "INSERT INTO trials (experiment_id, request_id, task_id, state, hparams, seed, start_time) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {TRIAL_COLUMNS}"
        );
        let created = on_pool!(self, pool => {
            sqlx::query_as::<_, TrialRow>(AssertSqlSafe(sql.as_str()))
                .bind(t.experiment_id)
                .bind(&t.request_id)
                .bind(&t.task_id)
                .bind(&t.state)
                .bind(t.hparams.to_string())
                .bind(t.seed)
                .bind(t.start_time)
                .fetch_one(pool)
                .await
        })
        .map_err(|e| StoreError::from_write_ref("trial", &t.task_id, "experiment", t.experiment_id, e))?;
        created.into_record(&self.summaries)
    }

    pub(crate) async fn trial_by_id_impl(&self, id: i32) -> StoreResult<TrialRecord> {
        let sql = format!("SELECT {TRIAL_COLUMNS} FROM trials WHERE id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, TrialRow>(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("trial", id))?.into_record(&self.summaries)
    }

    pub(crate) async fn trial_by_task_id_impl(&self, task_id: &str) -> StoreResult<TrialRecord> {
        super::findable("trial", task_id)?;
        let sql = format!("SELECT {TRIAL_COLUMNS} FROM trials WHERE task_id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, TrialRow>(AssertSqlSafe(sql.as_str())).bind(task_id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("trial", task_id))?.into_record(&self.summaries)
    }

    pub(crate) async fn list_trials_impl(&self, filter: &TrialFilter) -> StoreResult<TrialPage> {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        cond.and(format!("experiment_id = {}", args.push(filter.experiment_id)));
        cond.and_in(&mut args, "state", &filter.states);
        let where_sql = cond.sql();
        let count_sql = format!("SELECT COUNT(*) FROM trials WHERE {where_sql}");
        let count_args = args.clone();
        let column = match filter.sort {
            TrialSort::Id => "id",
            TrialSort::StartTime => "start_time",
            TrialSort::EndTime => "end_time",
            TrialSort::State => "state",
            TrialSort::BestValidation => "best_validation",
            TrialSort::TotalBatches => "total_batches",
        };
        let dir = direction(filter.order);
        let limit = args.push(filter.limit.unwrap_or(i64::MAX));
        let offset = args.push(filter.offset);
        let list_sql = format!(
            "SELECT {TRIAL_COLUMNS} FROM trials WHERE {where_sql} ORDER BY {column} {dir} NULLS LAST, id {dir} LIMIT {limit} OFFSET {offset}"
        );
        let (rows, total) = on_pool!(self, pool => {
            let rows = bind_args!(sqlx::query_as::<_, TrialRow>(AssertSqlSafe(list_sql.as_str())), args).fetch_all(pool).await?;
            let total: i64 = bind_args!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())), count_args).fetch_one(pool).await?;
            (rows, total)
        });
        let trials = rows.into_iter().map(|r| r.into_record(&self.summaries)).collect::<StoreResult<_>>()?;
        Ok(TrialPage { trials, total })
    }

    /// Applies `set` (an assignment list over the trial's columns) and returns the updated trial.
    async fn update_trial_returning(&self, id: i32, set: &'static str) -> StoreResult<TrialRecord> {
        let sql = format!("UPDATE trials SET {set} WHERE id = $1 RETURNING {TRIAL_COLUMNS}");
        let updated = on_pool!(self, pool => {
            sqlx::query_as::<_, TrialRow>(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(pool).await?
        });
        updated.ok_or_else(|| StoreError::not_found("trial", id))?.into_record(&self.summaries)
    }

    pub(crate) async fn record_trial_restart_impl(&self, id: i32) -> StoreResult<TrialRecord> {
        self.update_trial_returning(id, "restarts = restarts + 1, run_id = run_id + 1").await
    }

    pub(crate) async fn advance_trial_run_impl(&self, id: i32) -> StoreResult<TrialRecord> {
        self.update_trial_returning(id, "run_id = run_id + 1").await
    }

    pub(crate) async fn set_trial_runner_state_impl(&self, id: i32, runner_state: &str) -> StoreResult<()> {
        crate::error::StoreError::reject_nul("runner state", runner_state)?;
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET runner_state = $2 WHERE id = $1").bind(id).bind(runner_state).execute(pool).await?.rows_affected()
        });
        expect_row(done, "trial", id)
    }

    pub(crate) async fn set_trial_progress_impl(&self, id: i32, progress: Option<f64>) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET progress = $2 WHERE id = $1").bind(id).bind(progress).execute(pool).await?.rows_affected()
        });
        expect_row(done, "trial", id)
    }

    pub(crate) async fn set_trial_end_reason_impl(&self, id: i32, reason: Option<&str>) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET end_reason = $2 WHERE id = $1").bind(id).bind(reason).execute(pool).await?.rows_affected()
        });
        expect_row(done, "trial", id)
    }
}
