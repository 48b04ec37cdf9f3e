//! Unmanaged (detached) experiments and trials: reported from outside the cluster by the Core API
//! v2, never scheduled. The caller's own ids (`external_experiment_id`, `external_trial_id`) make
//! a re-run find what it created before; a trial's state is what its script reports (RUNNING on
//! start, COMPLETED/ERROR at the end), its heartbeat is `last_activity`, and the experiment's state
//! follows its most advanced trial, as upstream's `UpdateUnmanagedExperimentStatesTx`:
//! RUNNING over COMPLETED over ERROR over PAUSED (any other trial state counts as PAUSED).

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use super::trials::{TRIAL_COLUMNS, TrialRow};
use super::{SqlStore, expect_row, findable, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model_trials::{NewUnmanagedTrial, TrialRecord};

/// Sets an unmanaged experiment's state from its trials' (bind: experiment id).
const SETTLE_STATE: &str = "UPDATE experiments SET state = CASE \
     WHEN EXISTS (SELECT 1 FROM trials WHERE experiment_id = $1 AND state = 'STATE_RUNNING') THEN 'STATE_RUNNING' \
     WHEN EXISTS (SELECT 1 FROM trials WHERE experiment_id = $1 AND state = 'STATE_COMPLETED') THEN 'STATE_COMPLETED' \
     WHEN EXISTS (SELECT 1 FROM trials WHERE experiment_id = $1 AND state = 'STATE_ERROR') THEN 'STATE_ERROR' \
     ELSE 'STATE_PAUSED' END \
     WHERE id = $1 AND unmanaged AND EXISTS (SELECT 1 FROM trials WHERE experiment_id = $1)";

/// Its end time: the latest trial end once it is finished, none while it may go on
/// (binds: experiment id, now).
const SETTLE_END_TIME: &str = "UPDATE experiments SET end_time = CASE \
     WHEN state IN ('STATE_COMPLETED', 'STATE_ERROR') \
     THEN COALESCE(end_time, (SELECT MAX(end_time) FROM trials WHERE experiment_id = $1), $2) \
     ELSE NULL END \
     WHERE id = $1 AND unmanaged";

/// The trial states a script may report.
const TERMINAL: [&str; 3] = ["STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"];

/// What `start_unmanaged_trial` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnmanagedStart {
    /// Started on this run id (1 for the first start).
    Started { run_id: i32 },
    /// Already started once, and the caller did not ask to resume.
    AlreadyStarted,
}

impl SqlStore {
    pub(crate) async fn experiment_id_by_external_id_impl(&self, external_id: &str) -> StoreResult<Option<(i32, bool)>> {
        findable("experiment", external_id)?;
        let found: Option<(i32, bool)> = on_pool!(self, pool => {
            sqlx::query_as("SELECT id, unmanaged FROM experiments WHERE external_experiment_id = $1")
                .bind(external_id)
                .fetch_optional(pool)
                .await?
        });
        Ok(found)
    }

    pub(crate) async fn set_experiment_external_id_impl(&self, id: i32, external_id: &str) -> StoreResult<()> {
        StoreError::reject_nul("externalExperimentId", external_id)?;
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET external_experiment_id = $2 WHERE id = $1")
                .bind(id)
                .bind(external_id)
                .execute(pool)
                .await
                .map_err(|e| StoreError::from_write("experiment with external id", external_id, e))?
                .rows_affected()
        });
        expect_row(done, "experiment", id)
    }

    pub(crate) async fn experiment_external_id_impl(&self, id: i32) -> StoreResult<Option<String>> {
        let found: Option<(Option<String>,)> = on_pool!(self, pool => {
            sqlx::query_as("SELECT external_experiment_id FROM experiments WHERE id = $1").bind(id).fetch_optional(pool).await?
        });
        found.map(|(e,)| e).ok_or_else(|| StoreError::not_found("experiment", id))
    }

    pub(crate) async fn set_unmanaged_experiment_config_impl(&self, id: i32, config: &serde_json::Value, name: &str) -> StoreResult<()> {
        let summary = crate::config_summary_text(config);
        let config = config.to_string();
        StoreError::reject_nul("config", &config)?;
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET config = $2, name = $3, config_summary = $4 WHERE id = $1 AND unmanaged")
                .bind(id)
                .bind(&config)
                .bind(name)
                .bind(&summary)
                .execute(pool)
                .await?
                .rows_affected()
        });
        expect_row(done, "unmanaged experiment", id)
    }

    /// Creates the trial (paused, run 0, its task open), or with an external id already taken in
    /// the experiment, returns the trial that has it.
    pub(crate) async fn create_unmanaged_trial_impl(&self, t: NewUnmanagedTrial) -> StoreResult<TrialRecord> {
        if let Some(external) = &t.external_trial_id {
            StoreError::reject_nul("externalTrialId", external)?;
        }
        let hparams = t.hparams.to_string();
        StoreError::reject_nul("hparams", &hparams)?;
        let find = format!("SELECT {TRIAL_COLUMNS} FROM trials WHERE experiment_id = $1 AND external_trial_id = $2");
        let insert = format!(
            "INSERT INTO trials (experiment_id, request_id, task_id, state, hparams, seed, start_time, run_id, external_trial_id) \
             VALUES ($1, $2, $3, 'STATE_PAUSED', $4, 0, $5, 0, $6) RETURNING {TRIAL_COLUMNS}"
        );
        let row: TrialRow = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let existing = match &t.external_trial_id {
                Some(external) => sqlx::query_as::<_, TrialRow>(AssertSqlSafe(find.as_str()))
                    .bind(t.experiment_id)
                    .bind(external)
                    .fetch_optional(&mut *tx)
                    .await?,
                None => None,
            };
            match existing {
                Some(row) => row,
                None => {
                    sqlx::query("INSERT INTO tasks (task_id, task_type, start_time, job_id, owner_id) VALUES ($1, 'TASK_TYPE_TRIAL', $2, $3, $4)")
                        .bind(&t.task_id)
                        .bind(t.at)
                        .bind(&t.job_id)
                        .bind(t.owner_id)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| StoreError::from_write("task", &t.task_id, e))?;
                    let row = sqlx::query_as::<_, TrialRow>(AssertSqlSafe(insert.as_str()))
                        .bind(t.experiment_id)
                        .bind(&t.request_id)
                        .bind(&t.task_id)
                        .bind(&hparams)
                        .bind(t.at)
                        .bind(&t.external_trial_id)
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(|e| StoreError::from_write_ref("trial", &t.task_id, "experiment", t.experiment_id, e))?;
                    tx.commit().await?;
                    row
                }
            }
        });
        row.into_record(&self.summaries)
    }

    pub(crate) async fn trial_id_by_external_ids_impl(&self, external_experiment_id: &str, external_trial_id: &str) -> StoreResult<i32> {
        findable("experiment", external_experiment_id)?;
        findable("trial", external_trial_id)?;
        let found: Option<(i32,)> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT t.id FROM trials t JOIN experiments e ON e.id = t.experiment_id \
                 WHERE e.external_experiment_id = $1 AND t.external_trial_id = $2",
            )
            .bind(external_experiment_id)
            .bind(external_trial_id)
            .fetch_optional(pool)
            .await?
        });
        found.map(|(id,)| id).ok_or_else(|| StoreError::not_found("trial", format!("{external_experiment_id}/{external_trial_id}")))
    }

    /// Starts (or, with `resume`, restarts) an unmanaged trial: a new run, RUNNING, heartbeat now,
    /// no end time; the experiment's state follows.
    pub(crate) async fn start_unmanaged_trial_impl(&self, id: i32, resume: bool, at: DateTime<Utc>) -> StoreResult<UnmanagedStart> {
        let outcome = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let row: Option<(i32, i32)> =
                sqlx::query_as("SELECT run_id, experiment_id FROM trials WHERE id = $1").bind(id).fetch_optional(&mut *tx).await?;
            let Some((run_id, experiment_id)) = row else { return Err(StoreError::not_found("trial", id)) };
            if !resume && run_id != 0 {
                UnmanagedStart::AlreadyStarted
            } else {
                let (run_id,): (i32,) = sqlx::query_as(
                    "UPDATE trials SET run_id = run_id + 1, state = 'STATE_RUNNING', last_activity = $2, end_time = NULL \
                     WHERE id = $1 RETURNING run_id",
                )
                .bind(id)
                .bind(at)
                .fetch_one(&mut *tx)
                .await?;
                sqlx::query("UPDATE tasks SET end_time = NULL WHERE task_id = (SELECT task_id FROM trials WHERE id = $1)")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(SETTLE_STATE).bind(experiment_id).execute(&mut *tx).await?;
                sqlx::query(SETTLE_END_TIME).bind(experiment_id).bind(at).execute(&mut *tx).await?;
                tx.commit().await?;
                UnmanagedStart::Started { run_id }
            }
        });
        Ok(outcome)
    }

    /// A heartbeat (`state` `None`) or a state the script reports; a final state ends the trial
    /// and its task. The experiment's state follows.
    pub(crate) async fn touch_unmanaged_trial_impl(&self, id: i32, state: Option<&str>, at: DateTime<Utc>) -> StoreResult<()> {
        let terminal = state.is_some_and(|s| TERMINAL.contains(&s));
        on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let row: Option<(i32,)> = sqlx::query_as("SELECT experiment_id FROM trials WHERE id = $1").bind(id).fetch_optional(&mut *tx).await?;
            let Some((experiment_id,)) = row else { return Err(StoreError::not_found("trial", id)) };
            match state {
                None => {
                    sqlx::query("UPDATE trials SET last_activity = $2 WHERE id = $1").bind(id).bind(at).execute(&mut *tx).await?;
                }
                Some(state) => {
                    sqlx::query(
                        "UPDATE trials SET last_activity = $2, state = $3, \
                         end_time = CASE WHEN $4 THEN $2 ELSE NULL END WHERE id = $1",
                    )
                    .bind(id)
                    .bind(at)
                    .bind(state)
                    .bind(terminal)
                    .execute(&mut *tx)
                    .await?;
                    sqlx::query(
                        "UPDATE tasks SET end_time = CASE WHEN $2 THEN $3 ELSE NULL END \
                         WHERE task_id = (SELECT task_id FROM trials WHERE id = $1)",
                    )
                    .bind(id)
                    .bind(terminal)
                    .bind(at)
                    .execute(&mut *tx)
                    .await?;
                    sqlx::query(SETTLE_STATE).bind(experiment_id).execute(&mut *tx).await?;
                    sqlx::query(SETTLE_END_TIME).bind(experiment_id).bind(at).execute(&mut *tx).await?;
                }
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// Upstream's `MarkLostTrials`: RUNNING unmanaged trials without a heartbeat since `cutoff` end
    /// in ERROR at their last heartbeat; returns their ids.
    pub(crate) async fn mark_lost_unmanaged_trials_impl(&self, cutoff: DateTime<Utc>, at: DateTime<Utc>) -> StoreResult<Vec<i32>> {
        let lost = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let lost: Vec<(i32, i32)> = sqlx::query_as(
                "UPDATE trials SET state = 'STATE_ERROR', end_time = last_activity \
                 WHERE state = 'STATE_RUNNING' AND last_activity < $1 \
                 AND experiment_id IN (SELECT id FROM experiments WHERE unmanaged) \
                 RETURNING id, experiment_id",
            )
            .bind(cutoff)
            .fetch_all(&mut *tx)
            .await?;
            for (trial_id, _) in &lost {
                sqlx::query("UPDATE tasks SET end_time = $2 WHERE task_id = (SELECT task_id FROM trials WHERE id = $1)")
                    .bind(trial_id)
                    .bind(at)
                    .execute(&mut *tx)
                    .await?;
            }
            let mut experiments: Vec<i32> = lost.iter().map(|(_, e)| *e).collect();
            experiments.sort_unstable();
            experiments.dedup();
            for experiment_id in experiments {
                sqlx::query(SETTLE_STATE).bind(experiment_id).execute(&mut *tx).await?;
                sqlx::query(SETTLE_END_TIME).bind(experiment_id).bind(at).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            lost
        });
        let mut ids: Vec<i32> = lost.into_iter().map(|(t, _)| t).collect();
        ids.sort_unstable();
        Ok(ids)
    }
}
