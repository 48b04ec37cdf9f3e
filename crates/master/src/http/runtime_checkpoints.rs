//! Checkpoints from inside a task: report, look up by uuid, record deletions.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::checkpoints::Checkpoint;
use resolute_api::error::ErrorBody;
use resolute_api::runtime::{Empty, GetCheckpointResponse, PatchCheckpointsRequest};

use super::experiment_wire;
use super::extract::JsonBody;
use crate::error::ApiResult;
use crate::services::RuntimeCaller;
use crate::services::trial_runtime_checkpoints::{CheckpointPatch, CheckpointReport};
use crate::state::AppState;

#[utoipa::path(post, path = "/api/v1/checkpoints", tag = "Checkpoints", request_body = Checkpoint,
    responses((status = 200, body = Empty), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)), security(("bearer" = [])))]
pub async fn report(State(state): State<AppState>, caller: RuntimeCaller, JsonBody(c): JsonBody<Checkpoint>) -> ApiResult<Json<Empty>> {
    let report = CheckpointReport {
        uuid: c.uuid,
        task_id: c.task_id,
        allocation_id: c.allocation_id,
        report_time: c.report_time,
        state: c.state.name().to_owned(),
        resources: c.resources,
        metadata: c.metadata,
        storage_id: c.storage_id,
    };
    state.runtime.report_checkpoint(&caller, report).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(get, path = "/api/v1/checkpoints/{checkpointUuid}", tag = "Checkpoints", params(("checkpointUuid" = String, Path)),
    responses((status = 200, body = GetCheckpointResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, caller: RuntimeCaller, Path(uuid): Path<String>) -> ApiResult<Json<GetCheckpointResponse>> {
    let view = state.runtime.checkpoint(&caller, &uuid).await?;
    Ok(Json(GetCheckpointResponse { checkpoint: experiment_wire::checkpoint(view) }))
}

#[utoipa::path(patch, path = "/api/v1/checkpoints", tag = "Checkpoints", request_body = PatchCheckpointsRequest,
    responses((status = 200, body = Empty), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn patch(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    JsonBody(req): JsonBody<PatchCheckpointsRequest>,
) -> ApiResult<Json<Empty>> {
    let patches = req
        .checkpoints
        .into_iter()
        .map(|c| CheckpointPatch { uuid: c.uuid, remaining: c.resources.map(|r| r.resources.unwrap_or_default()) })
        .collect();
    state.runtime.patch_checkpoints(&caller, patches).await?;
    Ok(Json(Empty {}))
}
