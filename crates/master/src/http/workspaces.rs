//! `GET /api/v1/workspaces`: the listing clients use to name workspaces (`det cmd list` shows each
//! task's workspace). Creating and changing workspaces comes with the workspaces issue.

use axum::Json;
use axum::extract::State;
use resolute_api::pagination::Pagination;
use resolute_api::workspaces::{GetWorkspacesQuery, GetWorkspacesResponse, Workspace, WorkspaceState};

use super::extract::QueryParams;
use crate::error::ApiResult;
use crate::services::Principal;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/workspaces", tag = "Workspaces", params(GetWorkspacesQuery),
    responses((status = 200, body = GetWorkspacesResponse)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<GetWorkspacesQuery>,
) -> ApiResult<Json<GetWorkspacesResponse>> {
    let mut workspaces: Vec<Workspace> = state
        .store
        .list_workspaces()
        .await?
        .into_iter()
        .filter(|w| q.name.as_deref().is_none_or(|n| w.name.eq_ignore_ascii_case(n)))
        .filter(|w| q.archived.is_none_or(|a| w.archived == a))
        .map(|w| Workspace {
            id: w.id,
            name: w.name,
            archived: w.archived,
            username: w.username,
            immutable: w.immutable,
            num_projects: i32::try_from(w.num_projects).unwrap_or(i32::MAX),
            pinned: false,
            user_id: w.user_id.unwrap_or_default(),
            num_experiments: i32::try_from(w.num_experiments).unwrap_or(i32::MAX),
            state: WorkspaceState::Unspecified,
            error_message: String::new(),
            agent_user_group: None,
            checkpoint_storage_config: None,
            pinned_at: None,
            default_compute_pool: String::new(),
            default_aux_pool: String::new(),
            auto_created_namespace: None,
        })
        .collect();
    let total = i32::try_from(workspaces.len()).unwrap_or(i32::MAX);
    let offset = q.offset.unwrap_or(0).clamp(0, total);
    workspaces.drain(..offset as usize);
    if let Some(limit) = q.limit.filter(|l| *l > 0) {
        workspaces.truncate(limit as usize);
    }
    let end = offset + i32::try_from(workspaces.len()).unwrap_or(0);
    let pagination = Pagination { offset, limit: q.limit.unwrap_or(0), start_index: offset, end_index: end, total };
    Ok(Json(GetWorkspacesResponse { workspaces, pagination }))
}
