//! `/api/v1/models*`: the model registry as the upstream CLI (`det model …`) and SDK
//! (`client.create_model`, `Model`, `ModelVersion`) call it. `{modelName}` is a name or a numeric id.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::models::{
    GetModelVersionsQuery, GetModelVersionsResponse, GetModelsQuery, GetModelsResponse, Model, ModelEmptyResponse, ModelResponse,
    ModelSortBy, ModelVersion, ModelVersionResponse, ModelVersionSortBy, PatchModel, PatchModelVersion, PostModelRequest,
    PostModelVersionRequest,
};
use resolute_api::pagination::Pagination;
use resolute_store::{
    ModelFilter, ModelPatch, ModelRecord, ModelSort, ModelVersionFilter, ModelVersionPatch, ModelVersionSort, NewModelVersion,
};

use super::experiment_wire;
use super::experiments::{direction, parse_id};
use super::extract::{JsonBody, QueryParams};
use crate::error::ApiResult;
use crate::services::Principal;
use crate::services::models::{ModelChanges, ModelVersionView, NewModelRequest};
use crate::services::paging::{MAX_UNPAGED_LIST, page_limit, page_window};
use crate::state::AppState;

fn model_wire(m: ModelRecord) -> Model {
    Model {
        id: m.id,
        name: m.name,
        description: m.description,
        metadata: m.metadata,
        creation_time: m.creation_time,
        last_updated_time: m.last_updated_time,
        num_versions: m.num_versions,
        labels: m.labels,
        username: m.username,
        user_id: m.user_id,
        workspace_id: m.workspace_id,
        archived: m.archived,
        notes: m.notes,
    }
}

fn version_wire(view: ModelVersionView) -> ModelVersion {
    let ModelVersionView { model, version: v, checkpoint } = view;
    ModelVersion {
        id: v.id,
        model: model_wire(model),
        checkpoint: experiment_wire::checkpoint(checkpoint),
        version: v.version,
        creation_time: v.creation_time,
        last_updated_time: v.last_updated_time,
        name: v.name,
        metadata: v.metadata,
        comment: v.comment,
        username: v.username,
        user_id: v.user_id,
        labels: v.labels,
        notes: v.notes,
    }
}

fn clamp(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// `(offset, limit)` for the store and the `pagination` to answer, for a requested offset
/// (negative: from the end) and limit (0: all, up to the unpaged maximum).
fn window(offset: i32, limit: i32, total: i64) -> (i64, i64, Pagination) {
    let rows = page_limit(i64::from(limit), MAX_UNPAGED_LIST);
    let (start, end) = page_window(i64::from(offset), rows, total);
    let pagination = Pagination { offset, limit, start_index: clamp(start), end_index: clamp(end), total: clamp(total) };
    (start, end - start, pagination)
}

#[utoipa::path(post, path = "/api/v1/models", tag = "Models", request_body = PostModelRequest,
    responses((status = 200, body = ModelResponse), (status = 400, body = ErrorBody), (status = 404, description = "workspace not found", body = ErrorBody),
        (status = 409, description = "name taken", body = ErrorBody)), security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<PostModelRequest>,
) -> ApiResult<Json<ModelResponse>> {
    let req = NewModelRequest {
        name: req.name,
        description: req.description,
        metadata: req.metadata,
        labels: req.labels,
        notes: req.notes,
        workspace_id: req.workspace_id,
        workspace_name: req.workspace_name,
    };
    Ok(Json(ModelResponse { model: model_wire(state.models.create(&caller, req).await?) }))
}

#[utoipa::path(get, path = "/api/v1/models", tag = "Models", params(GetModelsQuery),
    responses((status = 200, body = GetModelsResponse), (status = 400, body = ErrorBody)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<GetModelsQuery>,
) -> ApiResult<Json<GetModelsResponse>> {
    let sort = match q.sort_by.unwrap_or(ModelSortBy::Unspecified) {
        ModelSortBy::Unspecified => ModelSort::Id,
        ModelSortBy::Name => ModelSort::Name,
        ModelSortBy::Description => ModelSort::Description,
        ModelSortBy::CreationTime => ModelSort::CreationTime,
        ModelSortBy::LastUpdatedTime => ModelSort::LastUpdatedTime,
        ModelSortBy::NumVersions => ModelSort::NumVersions,
        ModelSortBy::Workspace => ModelSort::Workspace,
    };
    let mut filter = ModelFilter {
        name_contains: q.name,
        description_contains: q.description,
        id: q.id,
        archived: q.archived,
        labels: q.labels,
        user_ids: q.user_ids,
        usernames: q.users,
        workspace_ids: q.workspace_ids,
        workspace_names: q.workspace_names,
        sort,
        order: direction(q.order_by),
        offset: 0,
        limit: Some(0),
    };
    let offset = q.offset.unwrap_or(0);
    let limit = q.limit.unwrap_or(0);
    // A negative offset counts from the end: the total comes first.
    let total = if offset < 0 { state.models.list(filter.clone()).await?.1 } else { i64::MAX };
    let (start, rows, _) = window(offset, limit, total);
    filter.offset = start;
    filter.limit = Some(rows);
    let (models, total) = state.models.list(filter).await?;
    let (_, _, mut pagination) = window(offset, limit, total);
    pagination.end_index = clamp(start.min(total) + models.len() as i64);
    Ok(Json(GetModelsResponse { models: models.into_iter().map(model_wire).collect(), pagination }))
}

#[utoipa::path(get, path = "/api/v1/models/{modelName}", tag = "Models", params(("modelName" = String, Path, description = "name or numeric id")),
    responses((status = 200, body = ModelResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, _caller: Principal, Path(name): Path<String>) -> ApiResult<Json<ModelResponse>> {
    Ok(Json(ModelResponse { model: model_wire(state.models.get(&name).await?) }))
}

#[utoipa::path(patch, path = "/api/v1/models/{modelName}", tag = "Models", params(("modelName" = String, Path, description = "name or numeric id")),
    request_body = PatchModel,
    responses((status = 200, body = ModelResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "new name taken", body = ErrorBody)), security(("bearer" = [])))]
pub async fn patch(
    State(state): State<AppState>,
    caller: Principal,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<PatchModel>,
) -> ApiResult<Json<ModelResponse>> {
    let changes = ModelChanges {
        patch: ModelPatch {
            name: req.name,
            description: req.description,
            notes: req.notes,
            metadata: req.metadata,
            labels: req.labels,
            workspace_id: req.workspace_id,
            archived: None,
        },
        workspace_name: req.workspace_name,
    };
    Ok(Json(ModelResponse { model: model_wire(state.models.patch(&caller, &name, changes).await?) }))
}

#[utoipa::path(delete, path = "/api/v1/models/{modelName}", tag = "Models", params(("modelName" = String, Path, description = "name or numeric id")),
    responses((status = 200, body = ModelEmptyResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn delete(State(state): State<AppState>, caller: Principal, Path(name): Path<String>) -> ApiResult<Json<ModelEmptyResponse>> {
    state.models.delete(&caller, &name).await?;
    Ok(Json(ModelEmptyResponse {}))
}

#[utoipa::path(post, path = "/api/v1/models/{modelName}/archive", tag = "Models", params(("modelName" = String, Path, description = "name or numeric id")),
    responses((status = 200, body = ModelEmptyResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn archive(State(state): State<AppState>, caller: Principal, Path(name): Path<String>) -> ApiResult<Json<ModelEmptyResponse>> {
    state.models.set_archived(&caller, &name, true).await?;
    Ok(Json(ModelEmptyResponse {}))
}

#[utoipa::path(post, path = "/api/v1/models/{modelName}/unarchive", tag = "Models", params(("modelName" = String, Path, description = "name or numeric id")),
    responses((status = 200, body = ModelEmptyResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn unarchive(State(state): State<AppState>, caller: Principal, Path(name): Path<String>) -> ApiResult<Json<ModelEmptyResponse>> {
    state.models.set_archived(&caller, &name, false).await?;
    Ok(Json(ModelEmptyResponse {}))
}

#[utoipa::path(post, path = "/api/v1/models/{modelName}/versions", tag = "Models", params(("modelName" = String, Path, description = "name or numeric id")),
    request_body = PostModelVersionRequest,
    responses((status = 200, body = ModelVersionResponse), (status = 400, body = ErrorBody), (status = 404, description = "model or checkpoint not found", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create_version(
    State(state): State<AppState>,
    caller: Principal,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<PostModelVersionRequest>,
) -> ApiResult<Json<ModelVersionResponse>> {
    let new = NewModelVersion {
        model_id: 0,
        checkpoint_uuid: req.checkpoint_uuid,
        name: req.name.unwrap_or_default(),
        comment: req.comment.unwrap_or_default(),
        notes: req.notes.unwrap_or_default(),
        metadata: req.metadata.filter(|m| !m.is_null()).unwrap_or_else(|| serde_json::json!({})),
        labels: req.labels.unwrap_or_default(),
        user_id: caller.user.id,
    };
    let view = state.models.register_version(&caller, &name, new).await?;
    Ok(Json(ModelVersionResponse { model_version: version_wire(view) }))
}

#[utoipa::path(get, path = "/api/v1/models/{modelName}/versions", tag = "Models", params(("modelName" = String, Path, description = "name or numeric id"), GetModelVersionsQuery),
    responses((status = 200, body = GetModelVersionsResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn list_versions(
    State(state): State<AppState>,
    _caller: Principal,
    Path(name): Path<String>,
    QueryParams(q): QueryParams<GetModelVersionsQuery>,
) -> ApiResult<Json<GetModelVersionsResponse>> {
    let sort = match q.sort_by.unwrap_or(ModelVersionSortBy::Unspecified) {
        ModelVersionSortBy::Unspecified | ModelVersionSortBy::Version => ModelVersionSort::Version,
        ModelVersionSortBy::CreationTime => ModelVersionSort::CreationTime,
    };
    let offset = q.offset.unwrap_or(0);
    let limit = q.limit.unwrap_or(0);
    let mut filter = ModelVersionFilter { sort, order: direction(q.order_by), offset: 0, limit: Some(0) };
    let total = if offset < 0 { state.models.versions(&name, filter.clone()).await?.2 } else { i64::MAX };
    let (start, rows, _) = window(offset, limit, total);
    filter.offset = start;
    filter.limit = Some(rows);
    let (model, versions, total) = state.models.versions(&name, filter).await?;
    let (_, _, mut pagination) = window(offset, limit, total);
    pagination.end_index = clamp(start.min(total) + versions.len() as i64);
    Ok(Json(GetModelVersionsResponse {
        model: model_wire(model),
        model_versions: versions.into_iter().map(version_wire).collect(),
        pagination,
    }))
}

#[utoipa::path(get, path = "/api/v1/models/{modelName}/versions/{modelVersionNum}", tag = "Models",
    params(("modelName" = String, Path, description = "name or numeric id"), ("modelVersionNum" = i32, Path)),
    responses((status = 200, body = ModelVersionResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get_version(
    State(state): State<AppState>,
    _caller: Principal,
    Path((name, number)): Path<(String, String)>,
) -> ApiResult<Json<ModelVersionResponse>> {
    let number = parse_id(&number, "modelVersionNum")?;
    Ok(Json(ModelVersionResponse { model_version: version_wire(state.models.version(&name, number).await?) }))
}

#[utoipa::path(patch, path = "/api/v1/models/{modelName}/versions/{modelVersionNum}", tag = "Models",
    params(("modelName" = String, Path, description = "name or numeric id"), ("modelVersionNum" = i32, Path)), request_body = PatchModelVersion,
    responses((status = 200, body = ModelVersionResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn patch_version(
    State(state): State<AppState>,
    caller: Principal,
    Path((name, number)): Path<(String, String)>,
    JsonBody(req): JsonBody<PatchModelVersion>,
) -> ApiResult<Json<ModelVersionResponse>> {
    let number = parse_id(&number, "modelVersionNum")?;
    let patch = ModelVersionPatch { name: req.name, comment: req.comment, notes: req.notes, metadata: req.metadata, labels: req.labels };
    Ok(Json(ModelVersionResponse { model_version: version_wire(state.models.patch_version(&caller, &name, number, patch).await?) }))
}

#[utoipa::path(delete, path = "/api/v1/models/{modelName}/versions/{modelVersionNum}", tag = "Models",
    params(("modelName" = String, Path, description = "name or numeric id"), ("modelVersionNum" = i32, Path)),
    responses((status = 200, body = ModelEmptyResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_version(
    State(state): State<AppState>,
    caller: Principal,
    Path((name, number)): Path<(String, String)>,
) -> ApiResult<Json<ModelEmptyResponse>> {
    let number = parse_id(&number, "modelVersionNum")?;
    state.models.delete_version(&caller, &name, number).await?;
    Ok(Json(ModelEmptyResponse {}))
}
