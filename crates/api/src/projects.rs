//! Projects (`/api/v1/workspaces/{id}/projects`, `/api/v1/projects/{id}…`) and moving
//! experiments between them, in the shapes `det project …`, `det e move` and the SDK read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::pagination::Pagination;
use crate::users::OrderBy;
use crate::wire_enum::wire_enum;
use crate::workspaces::WorkspaceState;

/// `v1Note`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Note {
    pub name: String,
    pub contents: String,
}

/// `v1Project`. The bindings index every field but `description`, `lastExperimentStartedAt` and
/// `workspaceName` directly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: i32,
    pub name: String,
    pub workspace_id: i32,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_experiment_started_at: Option<DateTime<Utc>>,
    pub notes: Vec<Note>,
    pub num_active_experiments: i32,
    pub num_experiments: i32,
    pub num_runs: i32,
    pub archived: bool,
    pub username: String,
    pub immutable: bool,
    pub user_id: i32,
    pub workspace_name: String,
    pub state: WorkspaceState,
    pub error_message: String,
    pub key: String,
}

/// `POST /api/v1/workspaces/{workspaceId}/projects`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostProjectRequest {
    pub name: String,
    #[serde(default, alias = "workspace_id")]
    pub workspace_id: Option<i32>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub key: Option<String>,
}

/// `GET/POST/PATCH` answers carrying one project.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProjectResponse {
    pub project: Project,
}

/// `PATCH /api/v1/projects/{id}`: absent fields stay.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PatchProject {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub key: Option<String>,
}

wire_enum! {
    /// `sortBy` of `GET /api/v1/workspaces/{id}/projects`.
    pub enum ProjectSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        CreationTime = "SORT_BY_CREATION_TIME",
        LastExperimentStartTime = "SORT_BY_LAST_EXPERIMENT_START_TIME",
        Id = "SORT_BY_ID",
        Name = "SORT_BY_NAME",
        Description = "SORT_BY_DESCRIPTION",
    }
}

/// Query parameters of `GET /api/v1/workspaces/{id}/projects`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetWorkspaceProjectsQuery {
    #[serde(default, alias = "sort_by", skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<ProjectSortBy>,
    #[serde(default, alias = "order_by", skip_serializing_if = "Option::is_none")]
    pub order_by: Option<OrderBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    #[serde(default, alias = "user_ids", skip_serializing_if = "Vec::is_empty")]
    pub user_ids: Vec<i32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetWorkspaceProjectsResponse {
    pub projects: Vec<Project>,
    pub pagination: Pagination,
}

/// `POST /api/v1/experiments/{experimentId}/move`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoveExperimentRequest {
    #[serde(alias = "destination_project_id")]
    pub destination_project_id: i32,
    #[serde(default, alias = "experiment_id")]
    pub experiment_id: Option<i32>,
}

/// `POST /api/v1/projects/{projectId}/experiments/move` (upstream's bulk move). `filters`
/// selects the project's experiments instead of `experimentIds`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoveExperimentsRequest {
    #[serde(alias = "destination_project_id")]
    pub destination_project_id: i32,
    #[serde(default, alias = "experiment_ids")]
    pub experiment_ids: Vec<i32>,
    #[serde(default, alias = "project_id")]
    pub project_id: Option<i32>,
    #[serde(default)]
    pub filters: Option<crate::experiment_bulk::BulkExperimentFilters>,
}

/// `v1ExperimentActionResult`: `error` is empty on success.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MoveResult {
    pub error: String,
    pub id: i32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MoveExperimentsResponse {
    pub results: Vec<MoveResult>,
}

/// `PUT /api/v1/projects/{projectId}/notes` (`v1PutProjectNotesRequest`): the whole list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PutProjectNotesRequest {
    pub notes: Vec<Note>,
    #[serde(default)]
    pub project_id: Option<i32>,
}

/// `v1PutProjectNotesResponse`: the notes as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PutProjectNotesResponse {
    pub notes: Vec<Note>,
}
