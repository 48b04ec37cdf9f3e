//! Experiments (`/api/v1/experiments*`): the experiment object, create/get/list/patch, labels and
//! the model definition download.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::files::File;
use crate::pagination::Pagination;
use crate::users::OrderBy;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `experimentv1.State`. `QUEUED`..`RUNNING` are display substates of `ACTIVE`.
    pub enum ExperimentState {
        Unspecified = "STATE_UNSPECIFIED",
        Active = "STATE_ACTIVE",
        Paused = "STATE_PAUSED",
        StoppingCompleted = "STATE_STOPPING_COMPLETED",
        StoppingCanceled = "STATE_STOPPING_CANCELED",
        StoppingError = "STATE_STOPPING_ERROR",
        Completed = "STATE_COMPLETED",
        Canceled = "STATE_CANCELED",
        Error = "STATE_ERROR",
        Deleted = "STATE_DELETED",
        Deleting = "STATE_DELETING",
        DeleteFailed = "STATE_DELETE_FAILED",
        StoppingKilled = "STATE_STOPPING_KILLED",
        Queued = "STATE_QUEUED",
        Pulling = "STATE_PULLING",
        Starting = "STATE_STARTING",
        Running = "STATE_RUNNING",
    }
}

wire_enum! {
    /// `jobv1.State`.
    pub enum JobState {
        Unspecified = "STATE_UNSPECIFIED",
        Queued = "STATE_QUEUED",
        Scheduled = "STATE_SCHEDULED",
        ScheduledBackfilled = "STATE_SCHEDULED_BACKFILLED",
    }
}

wire_enum! {
    /// `v1LaunchWarning`.
    pub enum LaunchWarning {
        Unspecified = "LAUNCH_WARNING_UNSPECIFIED",
        CurrentSlotsExceeded = "LAUNCH_WARNING_CURRENT_SLOTS_EXCEEDED",
    }
}

wire_enum! {
    /// `sortBy` of `GET /api/v1/experiments`.
    pub enum ExperimentSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        Id = "SORT_BY_ID",
        Description = "SORT_BY_DESCRIPTION",
        StartTime = "SORT_BY_START_TIME",
        EndTime = "SORT_BY_END_TIME",
        State = "SORT_BY_STATE",
        NumTrials = "SORT_BY_NUM_TRIALS",
        Progress = "SORT_BY_PROGRESS",
        User = "SORT_BY_USER",
        Name = "SORT_BY_NAME",
        ForkedFrom = "SORT_BY_FORKED_FROM",
        ResourcePool = "SORT_BY_RESOURCE_POOL",
        ProjectId = "SORT_BY_PROJECT_ID",
        CheckpointSize = "SORT_BY_CHECKPOINT_SIZE",
        CheckpointCount = "SORT_BY_CHECKPOINT_COUNT",
        SearcherMetricVal = "SORT_BY_SEARCHER_METRIC_VAL",
    }
}

/// `v1Experiment`. The Python bindings index `id, name, startTime, state, archived, numTrials,
/// username, jobId, searcherType, projectId, originalConfig, projectOwnerId, config` directly, so
/// those are always present.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Experiment {
    pub id: i32,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub labels: Vec<String>,
    pub start_time: DateTime<Utc>,
    /// Omitted while the experiment runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    pub state: ExperimentState,
    pub archived: bool,
    pub num_trials: i32,
    /// Sorted ascending. Empty in list responses (as upstream, for speed).
    #[serde(default)]
    pub trial_ids: Vec<i32>,
    /// The owner's display name, else their username.
    #[serde(default)]
    pub display_name: String,
    #[serde(default)]
    pub user_id: i32,
    pub username: String,
    #[serde(default)]
    pub resource_pool: String,
    pub searcher_type: String,
    #[serde(default)]
    pub searcher_metric: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub hyperparameters: crate::raw_json::RawJson,
    pub name: String,
    #[serde(default)]
    pub notes: String,
    pub job_id: String,
    /// The parent experiment of a fork; `null` when none.
    #[serde(default)]
    pub forked_from: Option<i32>,
    /// 0..1; `null` when unknown.
    #[serde(default)]
    pub progress: Option<f64>,
    pub project_id: i32,
    #[serde(default)]
    pub project_name: String,
    #[serde(default)]
    pub workspace_id: i32,
    #[serde(default)]
    pub workspace_name: String,
    #[serde(default)]
    pub parent_archived: bool,
    /// The fully defaulted configuration (passed through as stored: lists carry one per row).
    #[schema(value_type = Object)]
    pub config: crate::raw_json::RawJson,
    /// The YAML as submitted; empty in list responses (as upstream's).
    pub original_config: String,
    pub project_owner_id: i32,
    /// Bytes of completed checkpoints, as an int64 string.
    #[serde(default, with = "crate::int64")]
    #[schema(value_type = String, format = Int64)]
    pub checkpoint_size: i64,
    #[serde(default)]
    pub checkpoint_count: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_trial_searcher_metric: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_trial_id: Option<i32>,
    #[serde(default)]
    pub unmanaged: bool,
    /// An unmanaged experiment's external id (the one its script gave); single reads only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_experiment_id: Option<String>,
    /// Size of the stored model definition (tar.gz bytes), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_definition_size: Option<i32>,
}

/// `POST /api/v1/experiments`. `activate` defaults to false, as upstream: the CLI always sends it
/// (false only with `--paused`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateExperimentRequest {
    /// The context directory, file by file.
    #[serde(default, alias = "model_definition")]
    pub model_definition: Option<Vec<File>>,
    /// The experiment configuration as YAML (or JSON) text.
    #[serde(default)]
    pub config: String,
    /// Validate the configuration only; nothing is stored.
    #[serde(default, alias = "validate_only")]
    pub validate_only: bool,
    /// Fork of this experiment.
    #[serde(default, alias = "parent_id")]
    pub parent_id: Option<i32>,
    #[serde(default)]
    pub activate: bool,
    /// 0 or absent: the config's `workspace`/`project`, else the default project.
    #[serde(default, alias = "project_id")]
    pub project_id: Option<i32>,
    /// A config template to merge under the config; not supported yet.
    #[serde(default)]
    pub template: Option<String>,
    /// Detached-mode experiments; not supported yet.
    #[serde(default)]
    pub unmanaged: Option<bool>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateExperimentResponse {
    pub experiment: Experiment,
    /// The fully defaulted configuration.
    #[schema(value_type = Object)]
    pub config: Value,
    #[serde(default)]
    pub warnings: Vec<LaunchWarning>,
    /// Resolute extension: the config's warnings as text (`path: message`): ignored keys,
    /// deprecated forms, defaults filled in. Upstream's `warnings` is an enum its CLI maps to
    /// fixed messages (an unknown value would break its parser), so they travel beside it.
    #[serde(default, rename = "configWarnings")]
    pub config_warnings: Vec<String>,
}

/// `v1JobSummary`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSummary {
    pub state: JobState,
    pub jobs_ahead: i32,
    /// Why the job waits, in words (a Resolute addition; absent while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_reason: Option<String>,
}

/// `GET /api/v1/experiments/{experimentId}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetExperimentResponse {
    pub experiment: Experiment,
    /// Queue position of an active experiment's job; `null` until jobs are scheduled.
    #[serde(default)]
    pub job_summary: Option<JobSummary>,
    #[schema(value_type = Object)]
    pub config: crate::raw_json::RawJson,
}

/// Query parameters of `GET /api/v1/experiments`. Repeated keys (`states=A&states=B`) give lists.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetExperimentsQuery {
    #[serde(default, alias = "sort_by")]
    pub sort_by: Option<ExperimentSortBy>,
    #[serde(default, alias = "order_by")]
    pub order_by: Option<OrderBy>,
    #[serde(default)]
    pub offset: Option<i32>,
    /// 0 or absent: 100; -1: all; -2: only the pagination.
    #[serde(default)]
    pub limit: Option<i32>,
    /// Case-insensitive substring of the name.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Experiments carrying every one of these labels.
    #[serde(default)]
    pub labels: Vec<String>,
    #[serde(default)]
    pub archived: Option<bool>,
    #[serde(default)]
    pub states: Vec<ExperimentState>,
    /// Owners by username.
    #[serde(default)]
    pub users: Vec<String>,
    /// Owners by id.
    #[serde(default, alias = "user_ids")]
    pub user_ids: Vec<i32>,
    /// 0 or absent: all projects.
    #[serde(default, alias = "project_id")]
    pub project_id: Option<i32>,
    #[serde(default, alias = "show_trial_data")]
    pub show_trial_data: Option<bool>,
    #[serde(default, rename = "experimentIdFilter.lt")]
    pub experiment_id_lt: Option<i32>,
    #[serde(default, rename = "experimentIdFilter.lte")]
    pub experiment_id_lte: Option<i32>,
    #[serde(default, rename = "experimentIdFilter.gt")]
    pub experiment_id_gt: Option<i32>,
    #[serde(default, rename = "experimentIdFilter.gte")]
    pub experiment_id_gte: Option<i32>,
    #[serde(default, rename = "experimentIdFilter.incl")]
    pub experiment_id_in: Vec<i32>,
    #[serde(default, rename = "experimentIdFilter.notIn")]
    pub experiment_id_not_in: Vec<i32>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetExperimentsResponse {
    pub experiments: Vec<Experiment>,
    pub pagination: Pagination,
}

/// `resources` of a PATCH: scheduling knobs of a running experiment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchExperimentResources {
    /// Absent: unchanged; `null`: cleared (`det experiment set max-slots ID none`); a number:
    /// the new cap.
    #[serde(default, alias = "max_slots", deserialize_with = "present_or_null", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i32>, nullable)]
    pub max_slots: Option<Option<i32>>,
    #[serde(default)]
    pub weight: Option<f64>,
    #[serde(default)]
    pub priority: Option<i32>,
}

/// A field that is present, `null` included: `Some(None)` for `null`, so that clearing a value
/// differs from leaving it out (with `#[serde(default)]`, an absent field stays `None`).
fn present_or_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Option<i32>>, D::Error> {
    Option::<i32>::deserialize(deserializer).map(Some)
}

/// `checkpointStorage` of a PATCH: the GC policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchExperimentCheckpointStorage {
    #[serde(default, alias = "save_experiment_best")]
    pub save_experiment_best: Option<i32>,
    #[serde(default, alias = "save_trial_best")]
    pub save_trial_best: Option<i32>,
    #[serde(default, alias = "save_trial_latest")]
    pub save_trial_latest: Option<i32>,
}

/// `PATCH /api/v1/experiments/{experimentId}`: absent fields are left alone. The upstream CLI
/// sends the whole experiment's `id, name, description, labels, notes` back with one changed.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchExperiment {
    /// Ignored: the path names the experiment.
    #[serde(default)]
    pub id: Option<i32>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub notes: Option<String>,
    /// Replaces the labels.
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    #[serde(default)]
    pub resources: Option<PatchExperimentResources>,
    #[serde(default, alias = "checkpoint_storage")]
    pub checkpoint_storage: Option<PatchExperimentCheckpointStorage>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PatchExperimentResponse {
    pub experiment: Experiment,
}

/// `PUT`/`DELETE /api/v1/experiments/{experimentId}/labels/{label}`: the labels afterwards.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ExperimentLabelsResponse {
    pub labels: Vec<String>,
}

/// `GET /api/v1/experiments/{experimentId}/model_def`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetModelDefResponse {
    /// Base64 of the model definition as a tar.gz archive.
    pub b64_tgz: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_by_name() {
        for state in ExperimentState::ALL {
            assert_eq!(ExperimentState::from_name(state.name()), Some(*state));
            assert_eq!(serde_json::to_value(state).unwrap(), Value::String(state.name().to_owned()));
        }
        assert_eq!(ExperimentState::from_name("ACTIVE"), None);
    }

    #[test]
    fn create_request_reads_the_cli_shape() {
        let body = r#"{"activate":true,"config":"name: x\n","modelDefinition":[{"path":"a.py","type":48,
            "content":"eA==","mtime":"1710000000","mode":33188,"uid":0,"gid":0}],"projectId":0,"validateOnly":false}"#;
        let req: CreateExperimentRequest = serde_json::from_str(body).unwrap();
        let files = req.model_definition.unwrap();
        assert_eq!(files[0].mtime, 1_710_000_000);
        assert_eq!(files[0].file_type, 48);
        assert!(req.activate);
        assert_eq!(req.project_id, Some(0));
    }
}
