//! Checkpoints: reports (idempotent per uuid), lookup, listing, state changes after deletion
//! from storage, and the garbage-collection selection.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args, direction};
use super::{SqlStore, expect_row, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model_checkpoints::{
    CHECKPOINT_COMPLETED, CheckpointFilter, CheckpointGcPolicy, CheckpointPage, CheckpointRecord, CheckpointSort, NewCheckpoint,
};

pub(crate) const CHECKPOINT_COLUMNS: &str = "uuid, task_id, allocation_id, trial_id, experiment_id, report_time, state, resources, metadata, \
     steps_completed, storage_id, size, searcher_metric";

/// A second report of the same uuid (e.g. after a retry) replaces the first.
const UPSERT: &str = "INSERT INTO checkpoints (uuid, task_id, allocation_id, trial_id, experiment_id, report_time, state, \
     resources, metadata, steps_completed, storage_id, size, searcher_metric) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
     ON CONFLICT (uuid) DO UPDATE SET task_id = excluded.task_id, allocation_id = excluded.allocation_id, \
     trial_id = excluded.trial_id, experiment_id = excluded.experiment_id, report_time = excluded.report_time, \
     state = excluded.state, resources = excluded.resources, metadata = excluded.metadata, \
     steps_completed = excluded.steps_completed, storage_id = excluded.storage_id, size = excluded.size, \
     searcher_metric = excluded.searcher_metric";

/// Points the trial at this checkpoint unless its current latest one has more steps.
const ADVANCE_LATEST: &str = "UPDATE trials SET latest_checkpoint_uuid = $2 WHERE id = $1 AND (latest_checkpoint_uuid IS NULL \
     OR NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.uuid = trials.latest_checkpoint_uuid AND c.steps_completed > $3))";

#[derive(sqlx::FromRow)]
pub(crate) struct CheckpointRow {
    uuid: String,
    task_id: String,
    allocation_id: Option<String>,
    trial_id: Option<i32>,
    experiment_id: Option<i32>,
    report_time: DateTime<Utc>,
    state: String,
    resources: String,
    metadata: String,
    steps_completed: i64,
    storage_id: Option<i32>,
    size: i64,
    searcher_metric: Option<f64>,
}

impl CheckpointRow {
    pub(crate) fn into_record(self) -> StoreResult<CheckpointRecord> {
        Ok(CheckpointRecord {
            uuid: self.uuid,
            task_id: self.task_id,
            allocation_id: self.allocation_id,
            trial_id: self.trial_id,
            experiment_id: self.experiment_id,
            report_time: self.report_time,
            state: self.state,
            resources: serde_json::from_str(&self.resources).map_err(|e| StoreError::corrupt("resources", e))?,
            metadata: parse_json("metadata", &self.metadata)?,
            steps_completed: self.steps_completed,
            storage_id: self.storage_id,
            size: self.size,
            searcher_metric: self.searcher_metric,
        })
    }
}

fn resources_text(resources: &BTreeMap<String, i64>) -> String {
    serde_json::Value::from(resources.iter().map(|(k, v)| (k.clone(), (*v).into())).collect::<serde_json::Map<_, _>>()).to_string()
}

fn total_size(resources: &BTreeMap<String, i64>) -> i64 {
    resources.values().copied().fold(0i64, i64::saturating_add)
}

impl SqlStore {
    pub(crate) async fn report_checkpoints_impl(&self, checkpoints: &[NewCheckpoint]) -> StoreResult<()> {
        for c in checkpoints {
            for (field, value) in [("checkpoint uuid", &c.uuid), ("task id", &c.task_id), ("checkpoint state", &c.state)] {
                crate::error::StoreError::reject_nul(field, value)?;
            }
            if let Some(allocation_id) = &c.allocation_id {
                crate::error::StoreError::reject_nul("allocation id", allocation_id)?;
            }
        }
        let failure = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let mut seen = HashSet::new();
            let mut failure = None;
            for (i, c) in checkpoints.iter().enumerate() {
                if !seen.insert(c.uuid.as_str()) {
                    // Two reports of one uuid in a batch: ambiguous, so the batch is refused.
                    return Err(StoreError::Conflict { entity: "checkpoint", key: c.uuid.clone() });
                }
                let upserted = sqlx::query(UPSERT)
                    .bind(&c.uuid)
                    .bind(&c.task_id)
                    .bind(&c.allocation_id)
                    .bind(c.trial_id)
                    .bind(c.experiment_id)
                    .bind(c.report_time)
                    .bind(&c.state)
                    .bind(resources_text(&c.resources))
                    .bind(c.metadata.to_string())
                    .bind(c.steps_completed)
                    .bind(c.storage_id)
                    .bind(total_size(&c.resources))
                    .bind(c.searcher_metric)
                    .execute(&mut *tx)
                    .await;
                if let Err(err) = upserted {
                    failure = Some((i, err));
                    break;
                }
                if let (Some(trial_id), true) = (c.trial_id, c.state == CHECKPOINT_COMPLETED) {
                    sqlx::query(ADVANCE_LATEST).bind(trial_id).bind(&c.uuid).bind(c.steps_completed).execute(&mut *tx).await?;
                }
            }
            if failure.is_none() {
                tx.commit().await?;
            }
            failure
        });
        // The transaction is rolled back by now; name what was missing.
        match failure {
            None => Ok(()),
            Some((i, sqlx::Error::Database(db))) if db.is_foreign_key_violation() => {
                let c = &checkpoints[i];
                if let Some(trial_id) = c.trial_id
                    && self.trial_by_id_impl(trial_id).await.is_err()
                {
                    return Err(StoreError::not_found("trial", trial_id));
                }
                Err(StoreError::not_found("experiment", c.experiment_id.map_or_else(String::new, |e| e.to_string())))
            }
            Some((i, err)) => Err(StoreError::from_write("checkpoint", &checkpoints[i].uuid, err)),
        }
    }

    pub(crate) async fn checkpoint_by_uuid_impl(&self, uuid: &str) -> StoreResult<CheckpointRecord> {
        super::findable("checkpoint", uuid)?;
        let sql = format!("SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE uuid = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, CheckpointRow>(AssertSqlSafe(sql.as_str())).bind(uuid).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("checkpoint", uuid))?.into_record()
    }

    pub(crate) async fn list_checkpoints_impl(&self, filter: &CheckpointFilter) -> StoreResult<CheckpointPage> {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        if let Some(id) = filter.experiment_id {
            cond.and(format!("experiment_id = {}", args.push(id)));
        }
        if let Some(id) = filter.trial_id {
            cond.and(format!("trial_id = {}", args.push(id)));
        }
        cond.and_in(&mut args, "state", &filter.states);
        let where_sql = cond.sql();
        let count_sql = format!("SELECT COUNT(*) FROM checkpoints WHERE {where_sql}");
        let count_args = args.clone();
        let column = match filter.sort {
            CheckpointSort::Uuid => "uuid",
            CheckpointSort::TrialId => "trial_id",
            CheckpointSort::BatchNumber => "steps_completed",
            CheckpointSort::EndTime => "report_time",
            CheckpointSort::State => "state",
            CheckpointSort::SearcherMetric => "searcher_metric",
        };
        let dir = direction(filter.order);
        let limit = args.push(filter.limit.unwrap_or(i64::MAX));
        let offset = args.push(filter.offset);
        let list_sql = format!(
            "SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE {where_sql} \
             ORDER BY {column} {dir} NULLS LAST, uuid {dir} LIMIT {limit} OFFSET {offset}"
        );
        let (rows, total) = on_pool!(self, pool => {
            let rows = bind_args!(sqlx::query_as::<_, CheckpointRow>(AssertSqlSafe(list_sql.as_str())), args).fetch_all(pool).await?;
            let total: i64 = bind_args!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())), count_args).fetch_one(pool).await?;
            (rows, total)
        });
        let checkpoints = rows.into_iter().map(CheckpointRow::into_record).collect::<StoreResult<_>>()?;
        Ok(CheckpointPage { checkpoints, total })
    }

    pub(crate) async fn set_checkpoints_state_impl(&self, uuids: &[String], state: &str) -> StoreResult<u64> {
        if uuids.is_empty() {
            return Ok(0);
        }
        let mut args = Args::default();
        args.push(state);
        let sql = format!("UPDATE checkpoints SET state = $1 WHERE uuid IN ({})", args.push_list(uuids.iter()));
        let done = on_pool!(self, pool => {
            bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), args).execute(pool).await?.rows_affected()
        });
        Ok(done)
    }

    pub(crate) async fn set_checkpoint_resources_impl(
        &self,
        uuid: &str,
        resources: &BTreeMap<String, i64>,
        state: &str,
    ) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE checkpoints SET resources = $2, size = $3, state = $4 WHERE uuid = $1")
                .bind(uuid)
                .bind(resources_text(resources))
                .bind(total_size(resources))
                .bind(state)
                .execute(pool)
                .await?
                .rows_affected()
        });
        expect_row(done, "checkpoint", uuid)
    }

    pub(crate) async fn checkpoints_to_gc_impl(&self, experiment_id: i32, policy: &CheckpointGcPolicy) -> StoreResult<Vec<String>> {
        // Upstream's rule: rank the experiment's completed checkpoints by searcher metric (best
        // first, no metric last) across the experiment and within each trial, and by steps within
        // each trial; delete those outside the kept best of both rankings (or without a metric)
        // that are not among the trial's latest. A checkpoint registered in the model registry is
        // never collected (it still counts in the rankings, as upstream).
        let best_first = if policy.smaller_is_better { "ASC" } else { "DESC" };
        let sql = format!(
            "SELECT uuid FROM (SELECT uuid, searcher_metric, \
               ROW_NUMBER() OVER (ORDER BY searcher_metric {best_first} NULLS LAST, steps_completed DESC, uuid) AS experiment_rank, \
               ROW_NUMBER() OVER (PARTITION BY trial_id ORDER BY searcher_metric {best_first} NULLS LAST, steps_completed DESC, uuid) \
                 AS trial_rank, \
               ROW_NUMBER() OVER (PARTITION BY trial_id ORDER BY steps_completed DESC, report_time DESC, uuid) AS trial_order_rank \
             FROM checkpoints WHERE experiment_id = $1 AND state = $2) ranked \
             WHERE ((experiment_rank > $3 AND trial_rank > $4) OR searcher_metric IS NULL) AND trial_order_rank > $5 \
               AND uuid NOT IN (SELECT checkpoint_uuid FROM model_versions) \
             ORDER BY uuid"
        );
        let uuids = on_pool!(self, pool => {
            sqlx::query_scalar::<_, String>(AssertSqlSafe(sql.as_str()))
                .bind(experiment_id)
                .bind(CHECKPOINT_COMPLETED)
                .bind(policy.save_experiment_best)
                .bind(policy.save_trial_best)
                .bind(policy.save_trial_latest)
                .fetch_all(pool)
                .await?
        });
        Ok(uuids)
    }
}
