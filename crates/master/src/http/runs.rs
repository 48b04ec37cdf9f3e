//! `POST /api/v1/runs/{kill,pause,resume}` (`services/run_actions.rs`): one result per run.

use axum::Json;
use axum::extract::State;
use resolute_api::error::ErrorBody;
use resolute_api::runs::{RunActionRequest, RunActionResponse};

use super::AppState;
use super::extract::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::services::{Principal, RunAction};

async fn act(state: &AppState, caller: &Principal, req: RunActionRequest, action: RunAction) -> ApiResult<Json<RunActionResponse>> {
    if req.filter.as_deref().is_some_and(|f| !f.trim().is_empty()) {
        return Err(ApiError::invalid("filter: selecting runs by a filter expression is not supported; name them in runIds"));
    }
    if req.run_ids.is_empty() {
        return Err(ApiError::invalid("runIds: name at least one run"));
    }
    let results = state.experiments.run_action(caller, req.project_id, &req.run_ids, action).await?;
    Ok(Json(RunActionResponse { results }))
}

macro_rules! run_route {
    ($name:ident, $path:literal, $action:expr, $what:literal) => {
        #[utoipa::path(post, path = $path, tag = "Runs", request_body = RunActionRequest,
                            responses((status = 200, description = $what, body = RunActionResponse), (status = 400, body = ErrorBody)),
                            security(("bearer" = [])))]
        pub async fn $name(
            State(state): State<AppState>,
            caller: Principal,
            JsonBody(req): JsonBody<RunActionRequest>,
        ) -> ApiResult<Json<RunActionResponse>> {
            act(&state, &caller, req, $action).await
        }
    };
}

run_route!(kill, "/api/v1/runs/kill", RunAction::Kill, "kill each run");
run_route!(pause, "/api/v1/runs/pause", RunAction::Pause, "pause each run's (single-trial) experiment");
run_route!(resume, "/api/v1/runs/resume", RunAction::Resume, "resume each run's (single-trial) experiment");
