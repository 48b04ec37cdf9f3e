//! Checkpoints (`/api/v1/experiments/{id}/checkpoints`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::pagination::Pagination;
use crate::trials::Metrics;
use crate::users::OrderBy;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `checkpointv1.State`.
    pub enum CheckpointState {
        Unspecified = "STATE_UNSPECIFIED",
        Active = "STATE_ACTIVE",
        Completed = "STATE_COMPLETED",
        Error = "STATE_ERROR",
        Deleted = "STATE_DELETED",
        PartiallyDeleted = "STATE_PARTIALLY_DELETED",
    }
}

wire_enum! {
    /// `sortByAttr` of checkpoint lists.
    pub enum CheckpointSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        Uuid = "SORT_BY_UUID",
        TrialId = "SORT_BY_TRIAL_ID",
        BatchNumber = "SORT_BY_BATCH_NUMBER",
        EndTime = "SORT_BY_END_TIME",
        State = "SORT_BY_STATE",
        SearcherMetric = "SORT_BY_SEARCHER_METRIC",
    }
}

/// `v1CheckpointTrainingMetadata`: where a trial's checkpoint came from. All fields are unset for
/// checkpoints of other tasks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointTrainingMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_id: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment_id: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub experiment_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub hparams: Option<Value>,
    #[serde(default)]
    pub training_metrics: Option<Metrics>,
    #[serde(default)]
    pub validation_metrics: Option<Metrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub searcher_metric: Option<f64>,
}

/// `v1Checkpoint`. The Python bindings require `uuid, resources, metadata, training, state`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_id: Option<String>,
    pub uuid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_time: Option<DateTime<Utc>>,
    /// Relative path → size in bytes (int64 strings); directories end in `/`.
    #[serde(with = "crate::int64::map")]
    #[schema(value_type = BTreeMap<String, String>)]
    pub resources: BTreeMap<String, i64>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub state: CheckpointState,
    pub training: CheckpointTrainingMetadata,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_id: Option<i32>,
}

/// Query parameters of `GET /api/v1/experiments/{id}/checkpoints`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetExperimentCheckpointsQuery {
    #[serde(default, alias = "sort_by_attr")]
    pub sort_by_attr: Option<CheckpointSortBy>,
    /// Sort by this validation metric (of the validation at each checkpoint's step); unspecified
    /// order: ascending, except for the searcher metric (best first). Checkpoints without it come last.
    #[serde(default, alias = "sort_by_metric")]
    pub sort_by_metric: Option<String>,
    /// Unspecified with a searcher-metric sort: best first (by `smaller_is_better`).
    #[serde(default, alias = "order_by")]
    pub order_by: Option<OrderBy>,
    #[serde(default)]
    pub offset: Option<i32>,
    /// 0 or absent: all.
    #[serde(default)]
    pub limit: Option<i32>,
    #[serde(default)]
    pub states: Vec<CheckpointState>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetExperimentCheckpointsResponse {
    pub checkpoints: Vec<Checkpoint>,
    pub pagination: Pagination,
}

/// `DELETE /api/v1/checkpoints`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteCheckpointsRequest {
    #[serde(default, alias = "checkpoint_uuids")]
    pub checkpoint_uuids: Vec<String>,
}

/// `DELETE /api/v1/checkpoints` answers `{}` once the files are gone and the rows say DELETED.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct DeleteCheckpointsResponse {}

/// The checkpoint of a `POST /api/v1/checkpoints/{checkpointUuid}/metadata`: the SDK sends a
/// whole `v1Checkpoint` with empty `resources` and `training`; only `uuid` and `metadata` count.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointMetadataUpdate {
    /// When given, the checkpoint of the path.
    #[serde(default)]
    pub uuid: Option<String>,
    /// The new metadata, replacing the old (a JSON object).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub resources: Option<Value>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub training: Option<Value>,
    #[serde(default)]
    pub state: Option<CheckpointState>,
}

/// `POST /api/v1/checkpoints/{checkpointUuid}/metadata` (the SDK's `add_metadata`/`remove_metadata`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct PostCheckpointMetadataRequest {
    #[serde(default)]
    pub checkpoint: Option<CheckpointMetadataUpdate>,
}

/// The checkpoint after the change.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PostCheckpointMetadataResponse {
    pub checkpoint: Checkpoint,
}

/// `POST /api/v1/checkpoints/rm` (the SDK's `Checkpoint.remove_files(globs)`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointsRemoveFilesRequest {
    /// Patterns relative to each checkpoint (`*`, `?`, `[…]` within a path segment, `**` across
    /// them); a pattern naming a directory removes all below it. Empty: only refresh resources.
    #[serde(default, alias = "checkpoint_globs")]
    pub checkpoint_globs: Vec<String>,
    #[serde(default, alias = "checkpoint_uuids")]
    pub checkpoint_uuids: Vec<String>,
}

/// `POST /api/v1/checkpoints/rm` answers `{}` once the files are removed and the rows updated.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct CheckpointsRemoveFilesResponse {}

/// Query of `GET /experiments/{id}/preview_gc` (outside `/api/v1`, as the 0.38 CLI's
/// `det experiment set gc-policy` asks it): the policy to preview; absent counts keep the
/// experiment's.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PreviewGcQuery {
    #[serde(default)]
    pub save_experiment_best: Option<i32>,
    #[serde(default)]
    pub save_trial_best: Option<i32>,
    #[serde(default)]
    pub save_trial_latest: Option<i32>,
}

/// The checkpoints that policy would delete, in the legacy shape the CLI tabulates (`TrialID`,
/// `StepsCompleted`, `State`, `ValidationMetrics`, `UUID`, `Resources`, `ReportTime`, and `step`
/// with its `validation` when one was reported at the checkpoint's step), and the searcher metric.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PreviewGcResponse {
    #[schema(value_type = Vec<Object>)]
    pub checkpoints: Vec<Value>,
    pub metric_name: String,
}
