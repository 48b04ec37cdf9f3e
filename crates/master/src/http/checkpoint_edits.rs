//! `POST /api/v1/checkpoints/{uuid}/metadata` and `POST /api/v1/checkpoints/rm`: a user's
//! changes to existing checkpoints; `GET /experiments/{id}/preview_gc`: what a GC policy change
//! would delete (`services::checkpoint_edits`).

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::checkpoints::{
    CheckpointsRemoveFilesRequest, CheckpointsRemoveFilesResponse, PostCheckpointMetadataRequest, PostCheckpointMetadataResponse,
    PreviewGcQuery, PreviewGcResponse,
};
use resolute_api::error::ErrorBody;

use super::experiment_wire;
use super::experiments::parse_id;
use super::extract::{JsonBody, QueryParams};
use crate::error::ApiResult;
use crate::services::{Principal, RuntimeCaller, checkpoint_edits};
use crate::state::AppState;

#[utoipa::path(post, path = "/api/v1/checkpoints/{checkpointUuid}/metadata", tag = "Checkpoints",
    params(("checkpointUuid" = String, Path)), request_body = PostCheckpointMetadataRequest,
    responses((status = 200, body = PostCheckpointMetadataResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn metadata(
    State(state): State<AppState>,
    caller: Principal,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<PostCheckpointMetadataRequest>,
) -> ApiResult<Json<PostCheckpointMetadataResponse>> {
    let update = req.checkpoint.unwrap_or_default();
    checkpoint_edits::set_metadata(state.store.as_ref(), &caller, &uuid, update.uuid.as_deref(), update.metadata).await?;
    let view = state.runtime.checkpoint(&RuntimeCaller::User(caller), &uuid).await?;
    Ok(Json(PostCheckpointMetadataResponse { checkpoint: experiment_wire::checkpoint(view) }))
}

#[utoipa::path(post, path = "/api/v1/checkpoints/rm", tag = "Checkpoints", request_body = CheckpointsRemoveFilesRequest,
    responses((status = 200, body = CheckpointsRemoveFilesResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 501, description = "an unknown storage type", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove_files(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<CheckpointsRemoveFilesRequest>,
) -> ApiResult<Json<CheckpointsRemoveFilesResponse>> {
    checkpoint_edits::remove_files(state.store.as_ref(), &caller, &req.checkpoint_uuids, &req.checkpoint_globs).await?;
    Ok(Json(CheckpointsRemoveFilesResponse {}))
}

#[utoipa::path(get, path = "/experiments/{experimentId}/preview_gc", tag = "Experiments", params(("experimentId" = i32, Path), PreviewGcQuery),
    responses((status = 200, body = PreviewGcResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn preview_gc(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<PreviewGcQuery>,
) -> ApiResult<Json<PreviewGcResponse>> {
    let change = checkpoint_edits::GcPolicyChange {
        save_experiment_best: q.save_experiment_best,
        save_trial_best: q.save_trial_best,
        save_trial_latest: q.save_trial_latest,
    };
    let (checkpoints, metric_name) = checkpoint_edits::preview_gc(state.store.as_ref(), parse_id(&id, "experimentId")?, change).await?;
    Ok(Json(PreviewGcResponse { checkpoints, metric_name }))
}
