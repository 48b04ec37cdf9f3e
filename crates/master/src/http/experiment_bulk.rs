//! `/api/v1/projects/{projectId}/experiments/{pause,activate,cancel,kill,archive,unarchive}`
//! (POST) and `.../delete` (DELETE): 0.38's bulk experiment actions, by ids or by filter, one
//! result per experiment (`services/experiment_bulk.rs`).

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::experiment_bulk::{
    BulkExperimentsRequest, BulkExperimentsResponse, ContinueExperimentRequest, ContinueExperimentResponse,
};

use super::AppState;
use super::experiments::parse_id;
use super::extract::JsonBody;
use crate::domain::experiment_state::ExperimentAction;
use crate::error::{ApiError, ApiResult};
use crate::services::{BulkAction, Principal};

async fn bulk(
    state: &AppState,
    caller: &Principal,
    project: &str,
    req: BulkExperimentsRequest,
    action: BulkAction,
) -> ApiResult<Json<BulkExperimentsResponse>> {
    let project_id = parse_id(project, "projectId")?;
    if req.project_id != 0 && req.project_id != project_id {
        return Err(ApiError::invalid(format!("projectId: the body says {}, the path {project_id}", req.project_id)));
    }
    if req.filters.is_none() && req.experiment_ids.is_empty() {
        return Err(ApiError::invalid("experimentIds: name at least one experiment, or set filters"));
    }
    let results = state.experiments.bulk(caller, project_id, &req.experiment_ids, req.filters.as_ref(), action).await?;
    Ok(Json(BulkExperimentsResponse { results }))
}

macro_rules! bulk_route {
    ($name:ident, $method:ident, $path:literal, $action:expr, $what:literal) => {
        #[utoipa::path($method, path = $path, tag = "Experiments", params(("projectId" = i32, Path)),
            request_body = BulkExperimentsRequest,
            responses((status = 200, description = $what, body = BulkExperimentsResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
            security(("bearer" = [])))]
        pub async fn $name(
            State(state): State<AppState>,
            caller: Principal,
            Path(project): Path<String>,
            JsonBody(req): JsonBody<BulkExperimentsRequest>,
        ) -> ApiResult<Json<BulkExperimentsResponse>> {
            bulk(&state, &caller, &project, req, $action).await
        }
    };
}

bulk_route!(
    pause,
    post,
    "/api/v1/projects/{projectId}/experiments/pause",
    BulkAction::State(ExperimentAction::Pause),
    "pause each experiment"
);
bulk_route!(
    activate,
    post,
    "/api/v1/projects/{projectId}/experiments/activate",
    BulkAction::State(ExperimentAction::Activate),
    "activate each experiment"
);
bulk_route!(
    cancel,
    post,
    "/api/v1/projects/{projectId}/experiments/cancel",
    BulkAction::State(ExperimentAction::Cancel),
    "cancel each experiment"
);
bulk_route!(kill, post, "/api/v1/projects/{projectId}/experiments/kill", BulkAction::State(ExperimentAction::Kill), "kill each experiment");
bulk_route!(archive, post, "/api/v1/projects/{projectId}/experiments/archive", BulkAction::Archive(true), "archive each experiment");
bulk_route!(unarchive, post, "/api/v1/projects/{projectId}/experiments/unarchive", BulkAction::Archive(false), "unarchive each experiment");
bulk_route!(delete, delete, "/api/v1/projects/{projectId}/experiments/delete", BulkAction::Delete, "delete each experiment");

/// `det experiment continue` (`services/experiment_continue.rs`).
#[utoipa::path(post, path = "/api/v1/experiments/continue", tag = "Experiments", request_body = ContinueExperimentRequest,
    responses((status = 200, body = ContinueExperimentResponse), (status = 400, description = "not finished, nothing to continue, or an invalid override", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn continue_experiment(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<ContinueExperimentRequest>,
) -> ApiResult<Json<ContinueExperimentResponse>> {
    let view = state.experiments.continue_experiment(&caller, req.id, req.override_config.as_deref()).await?;
    Ok(Json(ContinueExperimentResponse { experiment: super::experiment_wire::experiment(view), warnings: Vec::new() }))
}
