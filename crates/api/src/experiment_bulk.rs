//! Experiments over time: bulk experiment actions (`/api/v1/projects/{projectId}/experiments/{pause,activate,cancel,
//! kill,archive,unarchive,delete}`): the experiments named by id, or every one a filter selects
//! in the project, each with its own result, as 0.38's `v1*ExperimentsRequest` send them; and continuing one.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `v1BulkExperimentFilters`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct BulkExperimentFilters {
    /// Case-insensitive substring of the name.
    pub name: Option<String>,
    /// Substring of the description.
    pub description: Option<String>,
    /// Experiments carrying every one of these labels.
    pub labels: Option<Vec<String>>,
    pub archived: Option<bool>,
    /// `STATE_*` names.
    pub states: Option<Vec<String>>,
    /// Owners.
    pub user_ids: Option<Vec<i32>>,
    pub project_id: Option<i32>,
    pub excluded_experiment_ids: Option<Vec<i32>>,
}

/// The body of every bulk action (`v1PauseExperimentsRequest` and its siblings).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct BulkExperimentsRequest {
    pub experiment_ids: Vec<i32>,
    pub project_id: i32,
    /// When set, the experiments it selects instead of `experimentIds`.
    pub filters: Option<BulkExperimentFilters>,
}

/// `v1ExperimentActionResult`: `error` is empty when the action succeeded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ExperimentActionResult {
    pub error: String,
    pub id: i32,
}

/// `v1PauseExperimentsResponse` and its siblings.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct BulkExperimentsResponse {
    pub results: Vec<ExperimentActionResult>,
}

/// `POST /api/v1/experiments/continue` (`v1ContinueExperimentRequest`): `overrideConfig` is YAML
/// merged over the experiment's config.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ContinueExperimentRequest {
    pub id: i32,
    pub override_config: Option<String>,
}

/// `v1ContinueExperimentResponse`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ContinueExperimentResponse {
    pub experiment: crate::experiments::Experiment,
    #[serde(default)]
    pub warnings: Vec<crate::experiments::LaunchWarning>,
}
