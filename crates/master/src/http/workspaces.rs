//! `/api/v1/workspaces…`: list (filters, pins, archived), create, describe, edit, archive,
//! pin, delete — what `det workspace …` and the SDK call. Rules live in `services::workspaces`.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::pagination::Pagination;
use resolute_api::users::AgentUserGroup;
use resolute_api::workspaces::{
    DeleteResponse, EmptyWorkspaceResponse, GetWorkspacesQuery, GetWorkspacesResponse, PatchWorkspace, PostWorkspaceRequest,
    PostWorkspaceResponse, Workspace, WorkspaceResponse, WorkspaceState,
};
use resolute_store::WorkspaceRecord;
use serde_json::json;

use super::experiments::parse_id;
use super::extract::{JsonBody, QueryParams};
use crate::error::ApiResult;
use crate::services::Principal;
use crate::state::AppState;

pub fn to_wire(w: WorkspaceRecord) -> Workspace {
    Workspace {
        id: w.id,
        name: w.name,
        archived: w.archived,
        username: w.username,
        immutable: w.immutable,
        num_projects: i32::try_from(w.num_projects).unwrap_or(i32::MAX),
        pinned: w.pinned,
        user_id: w.user_id.unwrap_or_default(),
        num_experiments: i32::try_from(w.num_experiments).unwrap_or(i32::MAX),
        state: WorkspaceState::from_name(&w.state).unwrap_or(WorkspaceState::Unspecified),
        error_message: w.error_message,
        agent_user_group: w.agent_user_group.map(|g| AgentUserGroup {
            agent_uid: Some(i64::from(g.uid)),
            agent_gid: Some(i64::from(g.gid)),
            agent_user: Some(g.user),
            agent_group: Some(g.group),
        }),
        checkpoint_storage_config: w.checkpoint_storage_config,
        pinned_at: w.pinned_at,
        default_compute_pool: w.default_compute_pool,
        default_aux_pool: w.default_aux_pool,
        auto_created_namespace: None,
    }
}

#[utoipa::path(get, path = "/api/v1/workspaces", tag = "Workspaces", params(GetWorkspacesQuery),
    responses((status = 200, body = GetWorkspacesResponse)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Principal,
    QueryParams(q): QueryParams<GetWorkspacesQuery>,
) -> ApiResult<Json<GetWorkspacesResponse>> {
    let (rows, total, offset) = state.workspaces.list(&caller, &q).await?;
    let pagination = Pagination::of_page(offset, q.limit.unwrap_or(0), total, rows.len());
    Ok(Json(GetWorkspacesResponse { workspaces: rows.into_iter().map(to_wire).collect(), pagination }))
}

#[utoipa::path(post, path = "/api/v1/workspaces", tag = "Workspaces", request_body = PostWorkspaceRequest,
    responses((status = 200, body = PostWorkspaceResponse), (status = 400, body = ErrorBody), (status = 403, description = "agent user group set by a non-admin", body = ErrorBody),
        (status = 409, description = "name taken", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn post(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<PostWorkspaceRequest>,
) -> ApiResult<Json<PostWorkspaceResponse>> {
    let created = state.workspaces.create(&caller, req).await?;
    Ok(Json(PostWorkspaceResponse { workspace: to_wire(created), namespace_bindings: json!({}) }))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}", tag = "Workspaces", params(("id" = i32, Path)),
    responses((status = 200, body = WorkspaceResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<WorkspaceResponse>> {
    let w = state.workspaces.get(&caller, parse_id(&id, "id")?).await?;
    Ok(Json(WorkspaceResponse { workspace: to_wire(w) }))
}

#[utoipa::path(patch, path = "/api/v1/workspaces/{id}", tag = "Workspaces", params(("id" = i32, Path)), request_body = PatchWorkspace,
    responses((status = 200, body = WorkspaceResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "name taken", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn patch(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<PatchWorkspace>,
) -> ApiResult<Json<WorkspaceResponse>> {
    let w = state.workspaces.patch(&caller, parse_id(&id, "id")?, req).await?;
    Ok(Json(WorkspaceResponse { workspace: to_wire(w) }))
}

#[utoipa::path(delete, path = "/api/v1/workspaces/{id}", tag = "Workspaces", params(("id" = i32, Path)),
    responses((status = 200, description = "`completed: false`: refused, the workspace's state and errorMessage say why", body = DeleteResponse),
        (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<DeleteResponse>> {
    let completed = state.workspaces.delete(&caller, parse_id(&id, "id")?).await?;
    Ok(Json(DeleteResponse { completed }))
}

macro_rules! workspace_action {
    ($name:ident, $path:literal, $call:ident, $value:expr) => {
        #[utoipa::path(post, path = $path, tag = "Workspaces", params(("id" = i32, Path)),
            responses((status = 200, body = EmptyWorkspaceResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
            security(("bearer" = [])))]
        pub async fn $name(
            State(state): State<AppState>,
            caller: Principal,
            Path(id): Path<String>,
        ) -> ApiResult<Json<EmptyWorkspaceResponse>> {
            state.workspaces.$call(&caller, parse_id(&id, "id")?, $value).await?;
            Ok(Json(EmptyWorkspaceResponse {}))
        }
    };
}

workspace_action!(archive, "/api/v1/workspaces/{id}/archive", set_archived, true);
workspace_action!(unarchive, "/api/v1/workspaces/{id}/unarchive", set_archived, false);
workspace_action!(pin, "/api/v1/workspaces/{id}/pin", set_pinned, true);
workspace_action!(unpin, "/api/v1/workspaces/{id}/unpin", set_pinned, false);
