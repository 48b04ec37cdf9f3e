//! The runs API's actions (`/api/v1/runs/{kill,pause,resume}`): 0.38 calls a trial a run; the
//! bindings' `v1KillRunsRequest`/`v1PauseRunsRequest`/`v1ResumeRunsRequest` and their results.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The body of every run action.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct RunActionRequest {
    pub run_ids: Vec<i32>,
    pub project_id: Option<i32>,
    /// The web UI's filter expression (JSON text); not supported: name the runs in `runIds`.
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
