//! The model definition's files for the web UI's Model code tab (upstream's WebUI calls):
//! `GET /api/v1/experiments/{experimentId}/file_tree` and
//! `POST /api/v1/experiments/{experimentId}/file` with `{path}`; both read the stored tar.gz
//! through `services::model_def_files`.

use axum::Json;
use axum::extract::{Path, State};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use resolute_api::error::ErrorBody;
use resolute_api::model_def_files::{GetModelDefFileRequest, GetModelDefFileResponse, GetModelDefTreeResponse};

use super::experiments::parse_id;
use super::extract::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::services::model_def_files::{file_tree, read_file};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}/file_tree", tag = "Experiments", params(("experimentId" = i32, Path)),
    responses((status = 200, body = GetModelDefTreeResponse), (status = 400, description = "a malformed id", body = ErrorBody),
        (status = 404, description = "unknown experiment", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn tree(State(state): State<AppState>, _caller: Principal, Path(id): Path<String>) -> ApiResult<Json<GetModelDefTreeResponse>> {
    let archive = state.experiments.model_definition(parse_id(&id, "experimentId")?).await?;
    Ok(Json(GetModelDefTreeResponse { files: file_tree(&archive)? }))
}

#[utoipa::path(post, path = "/api/v1/experiments/{experimentId}/file", tag = "Experiments", params(("experimentId" = i32, Path)),
    request_body = GetModelDefFileRequest,
    responses((status = 200, body = GetModelDefFileResponse),
        (status = 400, description = "no path, a directory's path, or a body experimentId other than the path's", body = ErrorBody),
        (status = 404, description = "unknown experiment, or no such file", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn file(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<GetModelDefFileRequest>,
) -> ApiResult<Json<GetModelDefFileResponse>> {
    let experiment = parse_id(&id, "experimentId")?;
    if let Some(other) = req.experiment_id.filter(|&e| e != 0 && e != experiment) {
        return Err(ApiError::invalid(format!("experimentId: the body names experiment {other}, the path {experiment}")));
    }
    let archive = state.experiments.model_definition(experiment).await?;
    let bytes = read_file(&archive, req.path.as_deref().unwrap_or(""), experiment)?;
    Ok(Json(GetModelDefFileResponse { file: BASE64.encode(bytes) }))
}
