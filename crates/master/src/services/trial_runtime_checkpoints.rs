//! Checkpoints as tasks report them: a report after upload, lookup by uuid (with the training
//! context the SDK shows), and the remaining files after deletion from storage.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use resolute_store::{CheckpointRecord, NewCheckpoint, StoreError, db_now};
use serde_json::Value;

use super::CheckpointView;
use super::experiments::searcher_metric;
use super::trial_runtime::TrialRuntimeService;
use super::trial_runtime_access::{Access, RuntimeCaller};
use crate::domain::{CheckpointState, TaskType};
use crate::error::{ApiError, ApiResult};

/// `POST /api/v1/checkpoints`, as the harness sends it.
#[derive(Clone, Debug)]
pub struct CheckpointReport {
    pub uuid: String,
    pub task_id: Option<String>,
    pub allocation_id: Option<String>,
    pub report_time: Option<DateTime<Utc>>,
    /// `STATE_COMPLETED`, ...
    pub state: String,
    pub resources: BTreeMap<String, i64>,
    pub metadata: Value,
    pub storage_id: Option<i32>,
}

/// One entry of `PATCH /api/v1/checkpoints`: `None` resources change nothing; `Some` are the
/// files left (empty: all deleted).
#[derive(Clone, Debug)]
pub struct CheckpointPatch {
    pub uuid: String,
    pub remaining: Option<BTreeMap<String, i64>>,
}

impl TrialRuntimeService {
    pub async fn report_checkpoint(&self, caller: &RuntimeCaller, report: CheckpointReport) -> ApiResult<()> {
        if uuid::Uuid::parse_str(&report.uuid).is_err() {
            return Err(ApiError::invalid(format!("uuid must be a UUID, got {:?}", report.uuid)));
        }
        if CheckpointState::parse(&report.state) == Some(CheckpointState::Unspecified) {
            return Err(ApiError::invalid("state is required (e.g. STATE_COMPLETED)"));
        }
        if let Some((path, size)) = report.resources.iter().find(|(_, size)| **size < 0) {
            return Err(ApiError::invalid(format!("resources[{path:?}] must be a size in bytes, got {size}")));
        }
        if !report.metadata.is_object() {
            return Err(ApiError::invalid("metadata must be a JSON object"));
        }
        super::input_limits::check_config("metadata", &report.metadata)?;
        let task_id = match (&report.task_id, caller.task()) {
            (Some(id), _) if !id.is_empty() => id.clone(),
            (_, Some(own)) => own.task.task_id.clone(),
            _ => return Err(ApiError::invalid("taskId is required")),
        };
        let task = self.task_for(caller, &task_id, Access::Write).await?;
        if let (Some(own), Some(allocation_id)) = (caller.task(), &report.allocation_id)
            && !allocation_id.is_empty()
            && *allocation_id != own.allocation.allocation_id
        {
            return Err(ApiError::forbidden(format!(
                "allocationId {allocation_id} is not the caller's allocation ({})",
                own.allocation.allocation_id
            )));
        }
        let trial = match self.store.trial_by_task_id(&task.task_id).await {
            Ok(trial) => Some(trial),
            Err(StoreError::NotFound { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        let steps = report.metadata.get("steps_completed");
        let steps_completed = match (steps.and_then(Value::as_i64), &trial) {
            (Some(n), _) if n >= 0 => n,
            (_, None) if steps.is_none() => 0,
            _ => return Err(ApiError::invalid("metadata.steps_completed must be a non-negative integer for a trial's checkpoint")),
        };
        let searcher_value = match &trial {
            Some(trial) => self.searcher_value_at(trial.experiment_id, trial.id, steps_completed).await?,
            None => None,
        };
        let new = NewCheckpoint {
            uuid: report.uuid,
            task_id: task.task_id,
            allocation_id: report
                .allocation_id
                .filter(|a| !a.is_empty())
                .or_else(|| caller.task().map(|t| t.allocation.allocation_id.clone())),
            trial_id: trial.as_ref().map(|t| t.id),
            experiment_id: trial.as_ref().map(|t| t.experiment_id),
            report_time: report.report_time.unwrap_or_else(db_now),
            state: report.state,
            resources: report.resources,
            metadata: report.metadata,
            steps_completed,
            storage_id: report.storage_id,
            searcher_metric: searcher_value,
        };
        let completed = CheckpointState::parse(&new.state) == Some(CheckpointState::Completed);
        self.store.report_checkpoint(new).await?;
        if let (Some(trial), true) = (&trial, completed) {
            self.cluster.notify(crate::cluster::ClusterEvent::CheckpointReported { trial_id: trial.id });
        }
        Ok(())
    }

    /// The searcher metric of the trial's live validation at exactly this step, if any (what the
    /// GC policy ranks checkpoints by, as upstream).
    async fn searcher_value_at(&self, experiment_id: i32, trial_id: i32, steps_completed: i64) -> ApiResult<Option<f64>> {
        let experiment = self.store.experiment_by_id(experiment_id).await?;
        let (Some(metric), _) = searcher_metric(&experiment.config) else { return Ok(None) };
        let (_, validation) = super::reports_at_step(self.store.as_ref(), trial_id, steps_completed).await?;
        Ok(validation.and_then(|m| m.avg_metrics.get(metric)?.as_f64()))
    }

    /// A checkpoint with its training context. Tasks may read their own experiment's checkpoints
    /// (a restarted or PBT-spawned trial restores from a sibling's).
    pub async fn checkpoint(&self, caller: &RuntimeCaller, uuid: &str) -> ApiResult<CheckpointView> {
        let record = self.store.checkpoint_by_uuid(uuid).await?;
        if let Some(own) = caller.task()
            && record.task_id != own.task.task_id
        {
            let own_experiment = self.own_trial(own).await.ok().map(|t| t.experiment_id);
            if own_experiment.is_none() || own_experiment != record.experiment_id {
                return Err(ApiError::forbidden(format!(
                    "an allocation token may only read its own experiment's checkpoints; checkpoint {uuid} belongs to task {}",
                    record.task_id
                )));
            }
        }
        self.checkpoint_view(record).await
    }

    async fn checkpoint_view(&self, record: CheckpointRecord) -> ApiResult<CheckpointView> {
        let mut view = CheckpointView { record, experiment_config: None, hparams: None, training_metrics: None, validation_metrics: None };
        let Some(trial_id) = view.record.trial_id else { return Ok(view) };
        let trial = self.store.trial_by_id(trial_id).await?;
        let experiment = self.store.experiment_by_id(trial.experiment_id).await?;
        let (training, validation) = super::reports_at_step(self.store.as_ref(), trial_id, view.record.steps_completed).await?;
        view.training_metrics = training;
        view.validation_metrics = validation;
        view.experiment_config = Some(experiment.config.into_value());
        view.hparams = Some(trial.hparams);
        Ok(view)
    }

    /// Records the files left after deletions: none left ⇒ `STATE_DELETED`, some ⇒
    /// `STATE_PARTIALLY_DELETED`, all ⇒ unchanged. Every entry is checked before any is written.
    pub async fn patch_checkpoints(&self, caller: &RuntimeCaller, patches: Vec<CheckpointPatch>) -> ApiResult<()> {
        let mut changes = Vec::with_capacity(patches.len());
        for patch in patches {
            let Some(remaining) = patch.remaining else { continue };
            let record = self.store.checkpoint_by_uuid(&patch.uuid).await?;
            if caller.task().is_none_or(|own| TaskType::parse(&own.task.task_type) != Some(TaskType::CheckpointGc)) {
                self.task_for(caller, &record.task_id, Access::Write).await?;
            }
            if let Some((path, size)) = remaining.iter().find(|(_, size)| **size < 0) {
                return Err(ApiError::invalid(format!(
                    "resources[{path:?}] of checkpoint {} must be a size in bytes, got {size}",
                    patch.uuid
                )));
            }
            let state = if remaining.is_empty() {
                CheckpointState::Deleted.as_str().to_owned()
            } else if remaining == record.resources {
                record.state.clone()
            } else {
                CheckpointState::PartiallyDeleted.as_str().to_owned()
            };
            changes.push((patch.uuid, remaining, state));
        }
        for (uuid, remaining, state) in changes {
            self.store.set_checkpoint_resources(&uuid, &remaining, &state).await?;
        }
        Ok(())
    }
}
