//! What an experiment holds: `…/trials`, `…/checkpoints`, `…/model_def`, and
//! `/api/v1/trials/{trialId}`.

use axum::Json;
use axum::extract::{Path, State};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use resolute_api::checkpoints::{CheckpointSortBy, GetExperimentCheckpointsQuery, GetExperimentCheckpointsResponse};
use resolute_api::error::ErrorBody;
use resolute_api::experiments::GetModelDefResponse;
use resolute_api::trials::{GetExperimentTrialsQuery, GetExperimentTrialsResponse, GetTrialResponse, TrialSortBy};
use resolute_api::users::OrderBy;
use resolute_store::{CheckpointSort, OrderDirection, TrialSort};

use super::experiment_wire as wire;
use super::experiments::{direction, parse_id};
use super::extract::QueryParams;
use crate::error::{ApiError, ApiResult};
use crate::services::{CheckpointListQuery, CheckpointView, ListPage, Principal, RuntimeCaller, TrialListQuery};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}/trials", tag = "Experiments",
    params(("experimentId" = i32, Path), GetExperimentTrialsQuery),
    responses((status = 200, body = GetExperimentTrialsResponse), (status = 404, body = ErrorBody), (status = 501, description = "a sort not supported yet", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn trials(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<GetExperimentTrialsQuery>,
) -> ApiResult<Json<GetExperimentTrialsResponse>> {
    let sort = match q.sort_by.unwrap_or(TrialSortBy::Unspecified) {
        TrialSortBy::Unspecified | TrialSortBy::Id => TrialSort::Id,
        TrialSortBy::StartTime => TrialSort::StartTime,
        TrialSortBy::EndTime => TrialSort::EndTime,
        TrialSortBy::State => TrialSort::State,
        TrialSortBy::BestValidationMetric => TrialSort::BestValidation,
        TrialSortBy::BatchesProcessed => TrialSort::TotalBatches,
        other => return Err(ApiError::unimplemented(format!("sortBy {other} is not supported yet"))),
    };
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(0));
    let query = TrialListQuery {
        states: q.states.iter().map(|s| s.name().to_owned()).collect(),
        sort,
        order: direction(q.order_by),
        offset: i64::from(offset),
        limit: i64::from(limit),
    };
    let page = state.experiments.trials(parse_id(&id, "experimentId")?, query).await?;
    let pagination = wire::pagination(offset, limit, &page);
    Ok(Json(GetExperimentTrialsResponse { trials: page.items.into_iter().map(|t| wire::trial(t, None)).collect(), pagination }))
}

#[utoipa::path(get, path = "/api/v1/trials/{trialId}", tag = "Trials", params(("trialId" = i32, Path)),
    responses((status = 200, body = GetTrialResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn trial(State(state): State<AppState>, caller: RuntimeCaller, Path(id): Path<String>) -> ApiResult<Json<GetTrialResponse>> {
    // The harness reads its own trial with its allocation token (`_get_last_validation`).
    let id = state.runtime.readable_trial(&caller, parse_id(&id, "trialId")?).await?.id;
    let view = state.experiments.trial(id).await?;
    Ok(Json(GetTrialResponse { trial: wire::trial(view.record, view.latest_validation) }))
}

#[utoipa::path(get, path = "/api/v1/experiments/{id}/checkpoints", tag = "Experiments",
    params(("id" = i32, Path), GetExperimentCheckpointsQuery),
    responses((status = 200, body = GetExperimentCheckpointsResponse), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn checkpoints(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<GetExperimentCheckpointsQuery>,
) -> ApiResult<Json<GetExperimentCheckpointsResponse>> {
    let (query, offset, limit) = checkpoint_query(q);
    let page = state.experiments.checkpoints(parse_id(&id, "id")?, query).await?;
    Ok(Json(checkpoints_response(page, offset, limit)))
}

/// `GET /api/v1/trials/{trialId}/checkpoints` (the SDK's `Trial.list_checkpoints`): same query and
/// response shape as the experiment's.
#[utoipa::path(get, path = "/api/v1/trials/{trialId}/checkpoints", tag = "Trials",
    params(("trialId" = i32, Path), GetExperimentCheckpointsQuery),
    responses((status = 200, body = GetExperimentCheckpointsResponse), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn trial_checkpoints(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<GetExperimentCheckpointsQuery>,
) -> ApiResult<Json<GetExperimentCheckpointsResponse>> {
    let (query, offset, limit) = checkpoint_query(q);
    let page = state.experiments.trial_checkpoints(parse_id(&id, "trialId")?, query).await?;
    Ok(Json(checkpoints_response(page, offset, limit)))
}

fn checkpoints_response(page: ListPage<CheckpointView>, offset: i32, limit: i32) -> GetExperimentCheckpointsResponse {
    let pagination = wire::pagination(offset, limit, &page);
    GetExperimentCheckpointsResponse { checkpoints: page.items.into_iter().map(wire::checkpoint).collect(), pagination }
}

fn checkpoint_query(q: GetExperimentCheckpointsQuery) -> (CheckpointListQuery, i32, i32) {
    let sort = match q.sort_by_attr {
        None | Some(CheckpointSortBy::Unspecified) => None,
        Some(CheckpointSortBy::Uuid) => Some(CheckpointSort::Uuid),
        Some(CheckpointSortBy::TrialId) => Some(CheckpointSort::TrialId),
        Some(CheckpointSortBy::BatchNumber) => Some(CheckpointSort::BatchNumber),
        Some(CheckpointSortBy::EndTime) => Some(CheckpointSort::EndTime),
        Some(CheckpointSortBy::State) => Some(CheckpointSort::State),
        Some(CheckpointSortBy::SearcherMetric) => Some(CheckpointSort::SearcherMetric),
    };
    let order = match q.order_by {
        None | Some(OrderBy::Unspecified) => None,
        Some(OrderBy::Asc) => Some(OrderDirection::Asc),
        Some(OrderBy::Desc) => Some(OrderDirection::Desc),
    };
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(0));
    let query = CheckpointListQuery {
        sort,
        sort_by_metric: q.sort_by_metric,
        order,
        states: q.states.iter().map(|s| s.name().to_owned()).collect(),
        offset: i64::from(offset),
        limit: i64::from(limit),
        trial_id: None,
    };
    (query, offset, limit)
}

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}/model_def", tag = "Experiments", params(("experimentId" = i32, Path)),
    responses((status = 200, body = GetModelDefResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn model_def(State(state): State<AppState>, _caller: Principal, Path(id): Path<String>) -> ApiResult<Json<GetModelDefResponse>> {
    let archive = state.experiments.model_definition(parse_id(&id, "experimentId")?).await?;
    Ok(Json(GetModelDefResponse { b64_tgz: BASE64.encode(archive) }))
}
