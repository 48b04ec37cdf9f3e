//! `POST /api/v1/generic-tasks` and `/api/v1/tasks/{taskId}/{kill,pause,unpause,config}`
//! (upstream's generic-task RPCs, which `det task create|kill|pause|unpause|config` call).

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::generic_tasks::{
    CreateGenericTaskRequest, CreateGenericTaskResponse, EmptyResponse, GenericTaskFields, GenericTaskState, GetGenericTaskConfigResponse,
    KillGenericTaskRequest,
};

use super::commands::context_files;
use super::extract::JsonBody;
use crate::domain::generic_task::GenericTaskState as State_;
use crate::error::ApiResult;
use crate::services::{GenericTaskInfo, NewGenericTask, Principal};
use crate::state::AppState;

#[utoipa::path(post, path = "/api/v1/generic-tasks", tag = "Tasks", request_body = CreateGenericTaskRequest,
    responses((status = 200, body = CreateGenericTaskResponse), (status = 400, description = "invalid config, every field named", body = ErrorBody),
        (status = 404, description = "unknown project or parent task", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<CreateGenericTaskRequest>,
) -> ApiResult<Json<CreateGenericTaskResponse>> {
    let new = NewGenericTask {
        config_text: req.config,
        files: context_files(req.context_directory),
        project_id: req.project_id,
        forked_from: req.forked_from,
        parent_id: req.parent_id,
        inherit_context: req.inherit_context.unwrap_or(false),
        no_pause: req.no_pause,
    };
    let view = state.commands.create_generic(&caller, new).await?;
    Ok(Json(CreateGenericTaskResponse { task_id: view.record.task_id, warnings: Vec::new() }))
}

#[utoipa::path(post, path = "/api/v1/tasks/{taskId}/kill", tag = "Tasks", params(("taskId" = String, Path)), request_body = KillGenericTaskRequest,
    responses((status = 200, body = EmptyResponse), (status = 400, description = "the task has ended", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn kill(
    State(state): State<AppState>,
    caller: Principal,
    Path(task_id): Path<String>,
    JsonBody(body): JsonBody<KillGenericTaskRequest>,
) -> ApiResult<Json<EmptyResponse>> {
    let from_root = body.kill_from_root.unwrap_or(false);
    state.commands.kill_generic(&caller, &task_id, from_root).await?;
    Ok(Json(EmptyResponse {}))
}

#[utoipa::path(post, path = "/api/v1/tasks/{taskId}/pause", tag = "Tasks", params(("taskId" = String, Path)),
    responses((status = 200, body = EmptyResponse), (status = 400, description = "not running, or created with no_pause", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn pause(State(state): State<AppState>, caller: Principal, Path(task_id): Path<String>) -> ApiResult<Json<EmptyResponse>> {
    state.commands.pause_generic(&caller, &task_id).await?;
    Ok(Json(EmptyResponse {}))
}

#[utoipa::path(post, path = "/api/v1/tasks/{taskId}/unpause", tag = "Tasks", params(("taskId" = String, Path)),
    responses((status = 200, body = EmptyResponse), (status = 400, description = "not paused", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn unpause(State(state): State<AppState>, caller: Principal, Path(task_id): Path<String>) -> ApiResult<Json<EmptyResponse>> {
    state.commands.unpause_generic(&caller, &task_id).await?;
    Ok(Json(EmptyResponse {}))
}

#[utoipa::path(get, path = "/api/v1/tasks/{taskId}/config", tag = "Tasks", params(("taskId" = String, Path)),
    responses((status = 200, body = GetGenericTaskConfigResponse), (status = 404, description = "not a generic task", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn config(
    State(state): State<AppState>,
    _caller: Principal,
    Path(task_id): Path<String>,
) -> ApiResult<Json<GetGenericTaskConfigResponse>> {
    let info = state.commands.generic_info(&task_id).await?;
    Ok(Json(GetGenericTaskConfigResponse { config: info.config.to_string() }))
}

/// The `v1Task` fields only generic tasks have.
pub(super) fn fields(info: GenericTaskInfo) -> GenericTaskFields {
    let task_state = match info.state {
        State_::Active => GenericTaskState::Active,
        State_::StoppingPaused => GenericTaskState::StoppingPaused,
        State_::Paused => GenericTaskState::Paused,
        State_::Canceled => GenericTaskState::Canceled,
        State_::Completed => GenericTaskState::Completed,
        State_::Error => GenericTaskState::Error,
    };
    GenericTaskFields {
        config: Some(info.config.to_string()),
        forked_from: info.forked_from,
        parent_id: info.parent_id,
        task_state: Some(task_state),
        no_pause: info.no_pause,
    }
}
