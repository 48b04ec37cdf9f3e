//! The runs API (0.38 calls a trial a run): the list (`POST /api/v1/runs`, `v1SearchRunsRequest`,
//! `v1FlatRun`) and the bulk actions (`/api/v1/runs/{kill,pause,resume,archive,unarchive,delete,
//! move}`, the bindings' `v1KillRunsRequest`… and their `v1RunActionResult`s).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The body of every run action but move (`v1KillRunsRequest`, `v1ArchiveRunsRequest`, …).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct RunActionRequest {
    pub run_ids: Vec<i32>,
    pub project_id: Option<i32>,
    /// The web UI's filter JSON, selecting the runs instead of `runIds` (then empty).
    pub filter: Option<String>,
}

/// `v1RunActionResult`: `error` is empty when the action succeeded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunActionResult {
    pub error: String,
    pub id: i32,
}

/// `v1KillRunsResponse` and its siblings.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct RunActionResponse {
    pub results: Vec<RunActionResult>,
}

/// `POST /api/v1/runs` (`v1SearchRunsRequest`, upstream's SearchRuns). `filter` is the web UI's
/// filter JSON (`{"filterGroup": {...}, "showArchived": bool}`), `sort` upstream's
/// `column=asc|desc,...` text.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SearchRunsRequest {
    pub project_id: Option<i32>,
    pub offset: Option<i32>,
    pub limit: Option<i32>,
    pub sort: Option<String>,
    pub filter: Option<String>,
}

/// `v1FlatRunExperiment`: the fields of the run's experiment a run row shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlatRunExperiment {
    pub id: i32,
    pub name: String,
    pub description: String,
    pub searcher_type: String,
    pub searcher_metric: String,
    pub resource_pool: String,
    pub progress: f64,
    pub unmanaged: bool,
    pub is_multitrial: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<i32>,
}

/// `v1FlatRun`: one row of the run table (a trial with its experiment's fields).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlatRun {
    pub id: i32,
    pub start_time: chrono::DateTime<chrono::Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<chrono::DateTime<chrono::Utc>>,
    pub state: crate::trials::TrialState,
    /// Bytes of completed checkpoints, as an int64 string.
    #[serde(with = "crate::int64")]
    #[schema(value_type = String, format = Int64)]
    pub checkpoint_size: i64,
    pub checkpoint_count: i32,
    pub archived: bool,
    /// The run's project or workspace is archived.
    pub parent_archived: bool,
    pub project_id: i32,
    pub project_name: String,
    pub workspace_id: i32,
    pub workspace_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub searcher_metric_value: Option<f64>,
    /// Seconds from start to end (or now).
    pub duration: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub hyperparameters: Option<serde_json::Value>,
    #[schema(value_type = Object)]
    pub summary_metrics: serde_json::Value,
    pub user_id: i32,
    pub labels: Vec<String>,
    pub experiment: FlatRunExperiment,
}

/// `v1SearchRunsResponse`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct SearchRunsResponse {
    pub runs: Vec<FlatRun>,
    pub pagination: crate::pagination::Pagination,
}

/// `v1MoveRunsRequest`: each run moves with its experiment (a run never lives apart from it);
/// with `skipMultitrial` the runs of a search are skipped instead.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct MoveRunsRequest {
    pub run_ids: Vec<i32>,
    pub source_project_id: i32,
    pub destination_project_id: i32,
    pub filter: Option<String>,
    pub skip_multitrial: Option<bool>,
}
