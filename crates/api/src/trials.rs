//! Trials (`/api/v1/trials/{id}`, `/api/v1/experiments/{id}/trials`) and the metric workloads
//! they carry.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::experiments::ExperimentState;
use crate::pagination::Pagination;
use crate::users::OrderBy;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `trialv1.State`. `QUEUED`..`RUNNING` are display substates of `ACTIVE`.
    pub enum TrialState {
        Unspecified = "STATE_UNSPECIFIED",
        Active = "STATE_ACTIVE",
        Paused = "STATE_PAUSED",
        StoppingCanceled = "STATE_STOPPING_CANCELED",
        StoppingKilled = "STATE_STOPPING_KILLED",
        StoppingCompleted = "STATE_STOPPING_COMPLETED",
        StoppingError = "STATE_STOPPING_ERROR",
        Canceled = "STATE_CANCELED",
        Completed = "STATE_COMPLETED",
        Error = "STATE_ERROR",
        Queued = "STATE_QUEUED",
        Pulling = "STATE_PULLING",
        Starting = "STATE_STARTING",
        Running = "STATE_RUNNING",
    }
}

wire_enum! {
    /// `sortBy` of `GET /api/v1/experiments/{id}/trials`.
    pub enum TrialSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        Id = "SORT_BY_ID",
        StartTime = "SORT_BY_START_TIME",
        EndTime = "SORT_BY_END_TIME",
        State = "SORT_BY_STATE",
        BestValidationMetric = "SORT_BY_BEST_VALIDATION_METRIC",
        LatestValidationMetric = "SORT_BY_LATEST_VALIDATION_METRIC",
        BatchesProcessed = "SORT_BY_BATCHES_PROCESSED",
        Duration = "SORT_BY_DURATION",
        Restarts = "SORT_BY_RESTARTS",
        CheckpointSize = "SORT_BY_CHECKPOINT_SIZE",
        LogRetentionDays = "SORT_BY_LOG_RETENTION_DAYS",
    }
}

/// `v1Metrics`: one report's averaged metrics and, when kept, its per-batch metrics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    #[schema(value_type = Object)]
    pub avg_metrics: Value,
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub batch_metrics: Option<Vec<Value>>,
}

/// `v1MetricsWorkload`: a training or validation report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricsWorkload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    pub metrics: Metrics,
    #[serde(default)]
    pub num_inputs: i32,
    pub total_batches: i32,
}

/// `trialv1.Trial`. The Python bindings require `id, experimentId, startTime, state, restarts,
/// hparams, totalBatchesProcessed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trial {
    pub id: i32,
    pub experiment_id: i32,
    pub start_time: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    pub state: TrialState,
    pub restarts: i32,
    #[schema(value_type = Object)]
    pub hparams: Value,
    pub total_batches_processed: i32,
    /// `null` unless fetched one trial at a time.
    #[serde(default)]
    pub latest_validation: Option<MetricsWorkload>,
    /// The best value of the searcher metric so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub searcher_metric_value: Option<f64>,
    #[serde(default)]
    pub runner_state: String,
    #[serde(default)]
    pub task_id: String,
    #[serde(default)]
    pub task_ids: Vec<String>,
    /// Per group and metric: count, last, min, max, sum, type.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub summary_metrics: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_start_checkpoint_uuid: Option<String>,
    /// Why the trial ended when it was not by finishing its own training (e.g. "stopped early by
    /// the searcher"). Not an upstream field; upstream clients ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
}

/// Query parameters of `GET /api/v1/experiments/{id}/trials`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetExperimentTrialsQuery {
    #[serde(default, alias = "sort_by")]
    pub sort_by: Option<TrialSortBy>,
    #[serde(default, alias = "order_by")]
    pub order_by: Option<OrderBy>,
    #[serde(default)]
    pub offset: Option<i32>,
    /// 0 or absent: all.
    #[serde(default)]
    pub limit: Option<i32>,
    /// Typed as experiment states upstream (trial state names are a subset of them).
    #[serde(default)]
    pub states: Vec<ExperimentState>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetExperimentTrialsResponse {
    pub trials: Vec<Trial>,
    pub pagination: Pagination,
}

/// `GET /api/v1/trials/{trialId}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetTrialResponse {
    pub trial: Trial,
}
