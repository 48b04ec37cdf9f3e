//! `/api/v1/templates`: list, get, create (POST), create-or-replace (PUT), replace the config
//! (PATCH, the body is the config itself) and delete, as the upstream CLI and SDK call them.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::pagination::Pagination;
use resolute_api::templates::{
    DeleteTemplateResponse, GetTemplateResponse, GetTemplatesQuery, GetTemplatesResponse, PatchTemplateConfigResponse,
    PostTemplateResponse, PutTemplateResponse, Template,
};
use resolute_store::{TemplateFilter, TemplateRecord};
use serde_json::Value;

use super::extract::{JsonBody, QueryParams};
use crate::error::ApiResult;
use crate::services::Principal;
use crate::services::paging::{MAX_UNPAGED_LIST, page_limit};
use crate::state::AppState;

fn wire(t: TemplateRecord) -> Template {
    Template { name: t.name, config: t.config, workspace_id: t.workspace_id }
}

#[utoipa::path(get, path = "/api/v1/templates", tag = "Templates", params(GetTemplatesQuery),
    responses((status = 200, body = GetTemplatesResponse)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<GetTemplatesQuery>,
) -> ApiResult<Json<GetTemplatesResponse>> {
    let offset = i64::from(q.offset.unwrap_or(0).max(0));
    // `det template list` reads them unpaged.
    let limit = page_limit(i64::from(q.limit.unwrap_or(0)), MAX_UNPAGED_LIST);
    let filter = TemplateFilter { name_contains: q.name.filter(|n| !n.is_empty()), workspace_ids: q.workspace_ids, offset, limit };
    let (templates, total) = state.templates.list(&filter).await?;
    let pagination = Pagination::of_page(offset, q.limit.unwrap_or(0), total, templates.len());
    Ok(Json(GetTemplatesResponse { templates: templates.into_iter().map(wire).collect(), pagination }))
}

#[utoipa::path(get, path = "/api/v1/templates/{templateName}", tag = "Templates", params(("templateName" = String, Path)),
    responses((status = 200, body = GetTemplateResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, _caller: Principal, Path(name): Path<String>) -> ApiResult<Json<GetTemplateResponse>> {
    Ok(Json(GetTemplateResponse { template: wire(state.templates.get(&name).await?) }))
}

#[utoipa::path(post, path = "/api/v1/templates/{templateName}", tag = "Templates", params(("templateName" = String, Path)), request_body = Template,
    responses((status = 200, body = PostTemplateResponse), (status = 400, body = ErrorBody)), security(("bearer" = [])))]
pub async fn post(
    State(state): State<AppState>,
    _caller: Principal,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<Template>,
) -> ApiResult<Json<PostTemplateResponse>> {
    Ok(Json(PostTemplateResponse { template: wire(state.templates.put(&name, body.config, body.workspace_id).await?) }))
}

#[utoipa::path(put, path = "/api/v1/templates/{templateName}", tag = "Templates", params(("templateName" = String, Path)), request_body = Template,
    responses((status = 200, body = PutTemplateResponse), (status = 400, body = ErrorBody)), security(("bearer" = [])))]
pub async fn put(
    State(state): State<AppState>,
    _caller: Principal,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<Template>,
) -> ApiResult<Json<PutTemplateResponse>> {
    Ok(Json(PutTemplateResponse { template: Some(wire(state.templates.put(&name, body.config, body.workspace_id).await?)) }))
}

#[utoipa::path(patch, path = "/api/v1/templates/{templateName}", tag = "Templates", params(("templateName" = String, Path)),
    responses((status = 200, body = PatchTemplateConfigResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn patch(
    State(state): State<AppState>,
    _caller: Principal,
    Path(name): Path<String>,
    JsonBody(config): JsonBody<Value>,
) -> ApiResult<Json<PatchTemplateConfigResponse>> {
    Ok(Json(PatchTemplateConfigResponse { template: wire(state.templates.patch_config(&name, config).await?) }))
}

#[utoipa::path(delete, path = "/api/v1/templates/{templateName}", tag = "Templates", params(("templateName" = String, Path)),
    responses((status = 200, body = DeleteTemplateResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn delete(
    State(state): State<AppState>,
    _caller: Principal,
    Path(name): Path<String>,
) -> ApiResult<Json<DeleteTemplateResponse>> {
    state.templates.delete(&name).await?;
    Ok(Json(DeleteTemplateResponse {}))
}
