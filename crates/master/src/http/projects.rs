//! Projects: `/api/v1/workspaces/{id}/projects` (list, create), `/api/v1/projects/{id}` (get,
//! edit, delete, archive), and experiments moved between projects (`det e move`, the bulk move).
//! Rules live in `services::projects`.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::pagination::Pagination;
use resolute_api::projects::{
    GetWorkspaceProjectsQuery, GetWorkspaceProjectsResponse, MoveExperimentRequest, MoveExperimentsRequest, MoveExperimentsResponse, Note,
    PatchProject, PostProjectRequest, Project, ProjectResponse, PutProjectNotesRequest, PutProjectNotesResponse,
};
use resolute_api::workspaces::{DeleteResponse, EmptyWorkspaceResponse, WorkspaceState};
use resolute_store::ProjectSummary;

use super::experiments::parse_id;
use super::extract::{JsonBody, QueryParams};
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::state::AppState;

pub fn to_wire(s: ProjectSummary) -> Project {
    let p = s.project;
    let count = |n: i64| i32::try_from(n).unwrap_or(i32::MAX);
    let notes = serde_json::from_value::<Vec<Note>>(p.notes).unwrap_or_default();
    Project {
        id: p.id,
        name: p.name,
        workspace_id: p.workspace_id,
        description: p.description,
        last_experiment_started_at: s.last_experiment_started_at,
        notes,
        num_active_experiments: count(s.num_active_experiments),
        num_experiments: count(s.num_experiments),
        // A trial is a run; counting them is not needed by any client we serve.
        num_runs: 0,
        archived: p.archived,
        username: p.username,
        immutable: p.immutable,
        user_id: p.user_id.unwrap_or_default(),
        workspace_name: p.workspace_name,
        state: WorkspaceState::from_name(&p.state).unwrap_or(WorkspaceState::Unspecified),
        error_message: p.error_message,
        key: p.key,
    }
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/projects", tag = "Projects", params(("id" = i32, Path), GetWorkspaceProjectsQuery),
    responses((status = 200, body = GetWorkspaceProjectsResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<GetWorkspaceProjectsQuery>,
) -> ApiResult<Json<GetWorkspaceProjectsResponse>> {
    let (rows, total, offset) = state.projects.list(&caller, parse_id(&id, "id")?, &q).await?;
    let pagination = Pagination::of_page(offset, q.limit.unwrap_or(0), total, rows.len());
    Ok(Json(GetWorkspaceProjectsResponse { projects: rows.into_iter().map(to_wire).collect(), pagination }))
}

// Upstream names the path parameter `workspaceId` here and `id` on the listing; one name keeps
// the two methods on one documented path.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/projects", tag = "Projects", params(("id" = i32, Path)),
    request_body = PostProjectRequest,
    responses((status = 200, body = ProjectResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, description = "name or key taken", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn post(
    State(state): State<AppState>,
    caller: Principal,
    Path(workspace_id): Path<String>,
    JsonBody(req): JsonBody<PostProjectRequest>,
) -> ApiResult<Json<ProjectResponse>> {
    let created = state.projects.create(&caller, parse_id(&workspace_id, "workspaceId")?, req).await?;
    Ok(Json(ProjectResponse { project: to_wire(created) }))
}

#[utoipa::path(get, path = "/api/v1/projects/{id}", tag = "Projects", params(("id" = i32, Path)),
    responses((status = 200, body = ProjectResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, _caller: Principal, Path(id): Path<String>) -> ApiResult<Json<ProjectResponse>> {
    Ok(Json(ProjectResponse { project: to_wire(state.projects.get(parse_id(&id, "id")?).await?) }))
}

#[utoipa::path(patch, path = "/api/v1/projects/{id}", tag = "Projects", params(("id" = i32, Path)), request_body = PatchProject,
    responses((status = 200, body = ProjectResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "name or key taken", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn patch(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<PatchProject>,
) -> ApiResult<Json<ProjectResponse>> {
    Ok(Json(ProjectResponse { project: to_wire(state.projects.patch(&caller, parse_id(&id, "id")?, req).await?) }))
}

#[utoipa::path(delete, path = "/api/v1/projects/{id}", tag = "Projects", params(("id" = i32, Path)),
    responses((status = 200, description = "`completed: false`: refused, the project's state and errorMessage say why", body = DeleteResponse),
        (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<DeleteResponse>> {
    Ok(Json(DeleteResponse { completed: state.projects.delete(&caller, parse_id(&id, "id")?).await? }))
}

#[utoipa::path(post, path = "/api/v1/projects/{id}/archive", tag = "Projects", params(("id" = i32, Path)),
    responses((status = 200, body = EmptyWorkspaceResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn archive(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<EmptyWorkspaceResponse>> {
    state.projects.set_archived(&caller, parse_id(&id, "id")?, true).await?;
    Ok(Json(EmptyWorkspaceResponse {}))
}

#[utoipa::path(post, path = "/api/v1/projects/{id}/unarchive", tag = "Projects", params(("id" = i32, Path)),
    responses((status = 200, body = EmptyWorkspaceResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn unarchive(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<EmptyWorkspaceResponse>> {
    state.projects.set_archived(&caller, parse_id(&id, "id")?, false).await?;
    Ok(Json(EmptyWorkspaceResponse {}))
}

#[utoipa::path(post, path = "/api/v1/experiments/{experimentId}/move", tag = "Experiments", params(("experimentId" = i32, Path)),
    request_body = MoveExperimentRequest,
    responses((status = 200, body = EmptyWorkspaceResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn move_experiment(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<MoveExperimentRequest>,
) -> ApiResult<Json<EmptyWorkspaceResponse>> {
    let id = parse_id(&id, "experimentId")?;
    if let Some(body_id) = req.experiment_id.filter(|b| *b != 0 && *b != id) {
        return Err(ApiError::invalid(format!("experimentId: the body names experiment {body_id}, the path {id}")));
    }
    state.projects.move_experiment(&caller, id, req.destination_project_id).await?;
    Ok(Json(EmptyWorkspaceResponse {}))
}

#[utoipa::path(post, path = "/api/v1/projects/{projectId}/experiments/move", tag = "Experiments", params(("projectId" = i32, Path)),
    request_body = MoveExperimentsRequest,
    responses((status = 200, description = "one result per experiment; `error` empty on success", body = MoveExperimentsResponse),
        (status = 400, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn move_experiments(
    State(state): State<AppState>,
    caller: Principal,
    Path(project_id): Path<String>,
    JsonBody(mut req): JsonBody<MoveExperimentsRequest>,
) -> ApiResult<Json<MoveExperimentsResponse>> {
    req.project_id = Some(parse_id(&project_id, "projectId")?);
    Ok(Json(MoveExperimentsResponse { results: state.projects.move_experiments(&caller, req).await? }))
}

/// Replaces the project's notes (the SDK's `Project.add_note`/`remove_note` put the whole list).
#[utoipa::path(put, path = "/api/v1/projects/{projectId}/notes", tag = "Projects", params(("projectId" = i32, Path)),
    request_body = PutProjectNotesRequest,
    responses((status = 200, body = PutProjectNotesResponse), (status = 400, description = "an archived project, or notes too large", body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_notes(
    State(state): State<AppState>,
    caller: Principal,
    Path(project_id): Path<String>,
    JsonBody(req): JsonBody<PutProjectNotesRequest>,
) -> ApiResult<Json<PutProjectNotesResponse>> {
    let id = parse_id(&project_id, "projectId")?;
    if let Some(body_id) = req.project_id.filter(|b| *b != 0 && *b != id) {
        return Err(ApiError::invalid(format!("projectId: the body names project {body_id}, the path {id}")));
    }
    let stored = state.projects.set_notes(&caller, id, req.notes).await?;
    let notes = serde_json::from_value::<Vec<Note>>(stored.project.notes).unwrap_or_default();
    Ok(Json(PutProjectNotesResponse { notes }))
}
