//! `/api/v1/{commands,notebooks,shells,tensorboards}`: launch, list, get, kill and set_priority,
//! rendered from the command service's views as upstream's `v1Command`/`v1Notebook`/….

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::commands::{
    Command, Container, ContainerState, GetCommandResponse, GetCommandsResponse, GetNotebookResponse, GetNotebooksResponse, GetNtscQuery,
    GetShellResponse, GetShellsResponse, GetTensorboardResponse, GetTensorboardsResponse, KillCommandResponse, KillNotebookResponse,
    KillShellResponse, KillTensorboardResponse, LaunchCommandResponse, LaunchNotebookResponse, LaunchNtscRequest, LaunchShellResponse,
    LaunchTensorboardRequest, LaunchTensorboardResponse, Notebook, NtscBase, Shell, Tensorboard,
};
use resolute_api::error::ErrorBody;
use resolute_api::files::File;
use resolute_api::tasks::TaskState;
use serde::Deserialize;

use super::extract::{JsonBody, QueryParams};
use crate::domain::{AllocationState, TaskType};
use crate::error::{ApiError, ApiResult};
use crate::services::model_def::ContextFile;
use crate::services::{CommandView, LaunchTask, Principal};
use crate::state::AppState;

pub(super) fn context_files(files: Vec<File>) -> Vec<ContextFile> {
    files
        .into_iter()
        .map(|f| ContextFile {
            path: f.path,
            type_flag: f.file_type,
            content: f.content,
            mtime: f.mtime,
            mode: f.mode,
            uid: f.uid,
            gid: f.gid,
        })
        .collect()
}

pub(super) fn base(view: &CommandView) -> NtscBase {
    let state = match view.state {
        AllocationState::Queued => TaskState::Queued,
        AllocationState::Pulling => TaskState::Pulling,
        AllocationState::Starting => TaskState::Starting,
        AllocationState::Running => TaskState::Running,
        AllocationState::Terminating => TaskState::Terminating,
        AllocationState::Terminated => TaskState::Terminated,
        AllocationState::Waiting => TaskState::Waiting,
    };
    let container = view.containers.first().map(|c| Container {
        id: c.id.clone(),
        state: if c.state == AllocationState::Running.as_str() { ContainerState::Running } else { ContainerState::Starting },
        devices: Vec::new(),
        parent: c.agent_id.clone(),
        permission_denied: None,
    });
    let r = &view.record;
    NtscBase {
        id: r.task_id.clone(),
        description: r.description.clone(),
        state,
        start_time: r.start_time,
        container,
        display_name: r.owner_username.clone(),
        user_id: r.owner_id,
        username: r.owner_username.clone(),
        resource_pool: view.resource_pool.clone(),
        exit_status: r.exit_status.clone(),
        job_id: r.job_id.clone(),
        workspace_id: r.workspace_id,
    }
}

/// The proxied address of a notebook's or TensorBoard's service.
pub(super) fn service_address(view: &CommandView) -> String {
    format!("/proxy/{}/", view.record.task_id)
}

pub(super) fn command(view: &CommandView) -> Command {
    Command { base: base(view) }
}

pub(super) fn notebook(view: &CommandView) -> Notebook {
    Notebook { base: base(view), service_address: service_address(view) }
}

pub(super) fn shell(view: &CommandView) -> Shell {
    let extra = &view.record.extra;
    let text = |k: &str| extra.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
    Shell {
        base: base(view),
        private_key: text("privateKey"),
        public_key: text("publicKey"),
        agent_user_group: Some(agent_user_group(view)),
        addresses: extra.get("addresses").and_then(|a| a.as_array().cloned()).unwrap_or_default(),
    }
}

/// Who `det shell open` logs in as (upstream's CLI reads `agentUserGroup.user`, falling back to
/// root): the account the shell's sshd runs as — its owner's agent user (or the default task
/// user) on an agent running as root, else the agent's own account.
fn agent_user_group(view: &CommandView) -> serde_json::Value {
    match &view.agent_user {
        Some(u) => serde_json::json!({"user": u.user, "uid": u.uid, "group": u.group, "gid": u.gid}),
        None => serde_json::json!({"user": "root", "uid": 0, "group": "root", "gid": 0}),
    }
}

pub(super) fn tensorboard(view: &CommandView) -> Tensorboard {
    let ids = |k: &str| -> Vec<i32> {
        view.record
            .extra
            .get(k)
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|i| i.as_i64()?.try_into().ok()).collect())
            .unwrap_or_default()
    };
    Tensorboard {
        base: base(view),
        experiment_ids: ids("experimentIds"),
        trial_ids: ids("trialIds"),
        service_address: service_address(view),
    }
}

#[utoipa::path(post, path = "/api/v1/commands", tag = "Commands", request_body = LaunchNtscRequest,
    responses((status = 200, body = LaunchCommandResponse), (status = 400, description = "invalid config, every field named", body = ErrorBody),
        (status = 404, description = "unknown template", body = ErrorBody), (status = 412, description = "request unfulfillable", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn launch_command(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<LaunchNtscRequest>,
) -> ApiResult<Json<LaunchCommandResponse>> {
    let view = launch(&state, &caller, TaskType::Command, req, serde_json::json!({})).await?;
    let config = view.record.config.clone();
    Ok(Json(LaunchCommandResponse { command: command(&view), config, warnings: Vec::new() }))
}

#[utoipa::path(post, path = "/api/v1/notebooks", tag = "Notebooks", request_body = LaunchNtscRequest,
    responses((status = 200, body = LaunchNotebookResponse), (status = 400, description = "invalid config, every field named", body = ErrorBody),
        (status = 404, description = "unknown template", body = ErrorBody), (status = 412, description = "request unfulfillable", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn launch_notebook(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<LaunchNtscRequest>,
) -> ApiResult<Json<LaunchNotebookResponse>> {
    let view = launch(&state, &caller, TaskType::Notebook, req, serde_json::json!({})).await?;
    let config = view.record.config.clone();
    Ok(Json(LaunchNotebookResponse { notebook: notebook(&view), config, warnings: Vec::new() }))
}

#[utoipa::path(post, path = "/api/v1/shells", tag = "Shells", request_body = LaunchNtscRequest,
    responses((status = 200, body = LaunchShellResponse), (status = 400, description = "invalid config, every field named", body = ErrorBody),
        (status = 404, description = "unknown template", body = ErrorBody), (status = 412, description = "request unfulfillable", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn launch_shell(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<LaunchNtscRequest>,
) -> ApiResult<Json<LaunchShellResponse>> {
    let view = launch(&state, &caller, TaskType::Shell, req, serde_json::json!({})).await?;
    let config = view.record.config.clone();
    Ok(Json(LaunchShellResponse { shell: shell(&view), config, warnings: Vec::new() }))
}

#[utoipa::path(post, path = "/api/v1/tensorboards", tag = "TensorBoards", request_body = LaunchTensorboardRequest,
    responses((status = 200, body = LaunchTensorboardResponse),
        (status = 400, description = "no experiments or trials named, filters given, or an invalid config", body = ErrorBody),
        (status = 404, description = "unknown experiment, trial or template", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn launch_tensorboard(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<LaunchTensorboardRequest>,
) -> ApiResult<Json<LaunchTensorboardResponse>> {
    if req.filters.is_some() && req.experiment_ids.is_empty() && req.trial_ids.is_empty() {
        return Err(ApiError::invalid("choosing experiments by filters is not supported yet; name them with experimentIds or trialIds"));
    }
    let launch = LaunchTask {
        kind: TaskType::Tensorboard,
        config: req.config.unwrap_or_default(),
        template_name: req.template_name,
        files: context_files(req.files),
        workspace_id: req.workspace_id,
        extra: serde_json::json!({}),
    };
    let view = state.commands.launch_tensorboard(&caller, launch, &req.experiment_ids, &req.trial_ids).await?;
    let config = view.record.config.clone();
    Ok(Json(LaunchTensorboardResponse { tensorboard: tensorboard(&view), config, warnings: Vec::new() }))
}

async fn launch(
    state: &AppState,
    caller: &Principal,
    kind: TaskType,
    req: LaunchNtscRequest,
    extra: serde_json::Value,
) -> ApiResult<CommandView> {
    state
        .commands
        .launch(
            caller,
            LaunchTask {
                kind,
                config: req.config.unwrap_or_default(),
                template_name: req.template_name,
                files: context_files(req.files),
                workspace_id: req.workspace_id,
                extra,
            },
        )
        .await
}

async fn list(state: &AppState, kind: TaskType, q: GetNtscQuery) -> ApiResult<Vec<CommandView>> {
    state.commands.list(kind, &q.users, q.workspace_id).await
}

#[utoipa::path(get, path = "/api/v1/commands", tag = "Commands", params(GetNtscQuery), responses((status = 200, body = GetCommandsResponse)),
    security(("bearer" = [])))]
pub async fn list_commands(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<GetNtscQuery>,
) -> ApiResult<Json<GetCommandsResponse>> {
    let views = list(&state, TaskType::Command, q).await?;
    Ok(Json(GetCommandsResponse { commands: views.iter().map(command).collect(), pagination: None }))
}

#[utoipa::path(get, path = "/api/v1/notebooks", tag = "Notebooks", params(GetNtscQuery), responses((status = 200, body = GetNotebooksResponse)),
    security(("bearer" = [])))]
pub async fn list_notebooks(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<GetNtscQuery>,
) -> ApiResult<Json<GetNotebooksResponse>> {
    let views = list(&state, TaskType::Notebook, q).await?;
    Ok(Json(GetNotebooksResponse { notebooks: views.iter().map(notebook).collect(), pagination: None }))
}

#[utoipa::path(get, path = "/api/v1/shells", tag = "Shells", params(GetNtscQuery), responses((status = 200, body = GetShellsResponse)),
    security(("bearer" = [])))]
pub async fn list_shells(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<GetNtscQuery>,
) -> ApiResult<Json<GetShellsResponse>> {
    let views = list(&state, TaskType::Shell, q).await?;
    Ok(Json(GetShellsResponse { shells: views.iter().map(shell).collect(), pagination: None }))
}

#[utoipa::path(get, path = "/api/v1/tensorboards", tag = "TensorBoards", params(GetNtscQuery), responses((status = 200, body = GetTensorboardsResponse)),
    security(("bearer" = [])))]
pub async fn list_tensorboards(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<GetNtscQuery>,
) -> ApiResult<Json<GetTensorboardsResponse>> {
    let views = list(&state, TaskType::Tensorboard, q).await?;
    Ok(Json(GetTensorboardsResponse { tensorboards: views.iter().map(tensorboard).collect(), pagination: None }))
}

#[utoipa::path(get, path = "/api/v1/commands/{commandId}", tag = "Commands", params(("commandId" = String, Path)),
    responses((status = 200, body = GetCommandResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get_command(State(state): State<AppState>, _caller: Principal, Path(id): Path<String>) -> ApiResult<Json<GetCommandResponse>> {
    let view = state.commands.get(TaskType::Command, &id).await?;
    Ok(Json(GetCommandResponse { command: command(&view), config: view.record.config.clone() }))
}

#[utoipa::path(get, path = "/api/v1/notebooks/{notebookId}", tag = "Notebooks", params(("notebookId" = String, Path)),
    responses((status = 200, body = GetNotebookResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get_notebook(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<GetNotebookResponse>> {
    let view = state.commands.get(TaskType::Notebook, &id).await?;
    Ok(Json(GetNotebookResponse { notebook: notebook(&view), config: view.record.config.clone() }))
}

#[utoipa::path(get, path = "/api/v1/shells/{shellId}", tag = "Shells", params(("shellId" = String, Path)),
    responses((status = 200, body = GetShellResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get_shell(State(state): State<AppState>, _caller: Principal, Path(id): Path<String>) -> ApiResult<Json<GetShellResponse>> {
    let view = state.commands.get(TaskType::Shell, &id).await?;
    Ok(Json(GetShellResponse { shell: shell(&view), config: view.record.config.clone() }))
}

#[utoipa::path(get, path = "/api/v1/tensorboards/{tensorboardId}", tag = "TensorBoards", params(("tensorboardId" = String, Path)),
    responses((status = 200, body = GetTensorboardResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get_tensorboard(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<GetTensorboardResponse>> {
    let view = state.commands.get(TaskType::Tensorboard, &id).await?;
    Ok(Json(GetTensorboardResponse { tensorboard: tensorboard(&view), config: view.record.config.clone() }))
}

#[utoipa::path(post, path = "/api/v1/commands/{commandId}/kill", tag = "Commands", params(("commandId" = String, Path)),
    responses((status = 200, body = KillCommandResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn kill_command(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<KillCommandResponse>> {
    let view = state.commands.kill(&caller, TaskType::Command, &id).await?;
    Ok(Json(KillCommandResponse { command: Some(command(&view)) }))
}

#[utoipa::path(post, path = "/api/v1/notebooks/{notebookId}/kill", tag = "Notebooks", params(("notebookId" = String, Path)),
    responses((status = 200, body = KillNotebookResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn kill_notebook(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<KillNotebookResponse>> {
    let view = state.commands.kill(&caller, TaskType::Notebook, &id).await?;
    Ok(Json(KillNotebookResponse { notebook: Some(notebook(&view)) }))
}

#[utoipa::path(post, path = "/api/v1/shells/{shellId}/kill", tag = "Shells", params(("shellId" = String, Path)),
    responses((status = 200, body = KillShellResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn kill_shell(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<KillShellResponse>> {
    let view = state.commands.kill(&caller, TaskType::Shell, &id).await?;
    Ok(Json(KillShellResponse { shell: Some(shell(&view)) }))
}

#[utoipa::path(post, path = "/api/v1/tensorboards/{tensorboardId}/kill", tag = "TensorBoards", params(("tensorboardId" = String, Path)),
    responses((status = 200, body = KillTensorboardResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn kill_tensorboard(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<KillTensorboardResponse>> {
    let view = state.commands.kill(&caller, TaskType::Tensorboard, &id).await?;
    Ok(Json(KillTensorboardResponse { tensorboard: Some(tensorboard(&view)) }))
}

#[derive(Debug, Deserialize)]
pub struct PriorityBody {
    #[serde(default)]
    priority: Option<i32>,
}

#[utoipa::path(post, path = "/api/v1/commands/{commandId}/set_priority", tag = "Commands", params(("commandId" = String, Path)),
    responses((status = 200, body = KillCommandResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn set_command_priority(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<PriorityBody>,
) -> ApiResult<Json<KillCommandResponse>> {
    let priority = body.priority.ok_or_else(|| ApiError::invalid("priority is required (1 highest … 99)"))?;
    let view = state.commands.set_priority(&caller, TaskType::Command, &id, priority).await?;
    Ok(Json(KillCommandResponse { command: Some(command(&view)) }))
}
