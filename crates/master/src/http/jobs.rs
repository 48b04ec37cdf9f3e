//! The job queue: `GET /api/v1/job-queues` (`det job list` before 0.27), `GET
//! /api/v1/job-queues-v2` (`det job list`, the WebUI) and `POST /api/v1/job-queues`
//! (`det job update`, `update-batch`). The rules are `services/jobs.rs`'.

use axum::Json;
use axum::extract::State;
use resolute_api::error::ErrorBody;
use serde::Deserialize;
use serde_json::{Value, json};

use super::extract::{JsonBody, QueryParams};
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::services::jobs::{self, JobListQuery, QueueAction};
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct JobsQuery {
    #[serde(default)]
    offset: i32,
    #[serde(default)]
    limit: i32,
    /// Only this pool's jobs (all pools when empty).
    #[serde(default)]
    resource_pool: Option<String>,
    /// `ORDER_BY_ASC` (queue order, the default) or `ORDER_BY_DESC`.
    #[serde(default)]
    order_by: Option<String>,
    /// `STATE_QUEUED`, `STATE_SCHEDULED`, `STATE_SCHEDULED_BACKFILLED`; repeatable.
    #[serde(default)]
    states: Vec<String>,
}

fn parse_query(q: JobsQuery) -> ApiResult<JobListQuery> {
    let descending = match q.order_by.as_deref() {
        None | Some("") | Some("ORDER_BY_UNSPECIFIED") | Some("ORDER_BY_ASC") => false,
        Some("ORDER_BY_DESC") => true,
        Some(other) => return Err(ApiError::invalid(format!("orderBy: unknown order {other:?}; use ORDER_BY_ASC or ORDER_BY_DESC"))),
    };
    Ok(JobListQuery { resource_pool: q.resource_pool, states: q.states, descending, offset: q.offset, limit: q.limit })
}

/// `GET /api/v1/job-queues`: `v1GetJobsResponse`.
#[utoipa::path(get, path = "/api/v1/job-queues", tag = "Cluster", params(JobsQuery),
    responses((status = 200, description = "`v1GetJobsResponse`: `{jobs: [v1Job], pagination}`; each job also has `waitReason` while it waits", body = Object),
        (status = 400, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(State(state): State<AppState>, _caller: Principal, QueryParams(q): QueryParams<JobsQuery>) -> ApiResult<Json<Value>> {
    let (jobs, pagination) = jobs::list(&state.store, &state.cluster, &parse_query(q)?).await?;
    Ok(Json(json!({"jobs": jobs, "pagination": pagination})))
}

/// `GET /api/v1/job-queues-v2`: `v1GetJobsV2Response`, every job `full`.
#[utoipa::path(get, path = "/api/v1/job-queues-v2", tag = "Cluster", params(JobsQuery),
    responses((status = 200, description = "`v1GetJobsV2Response`: `{jobs: [{full: v1Job}], pagination}`", body = Object),
        (status = 400, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_v2(State(state): State<AppState>, _caller: Principal, QueryParams(q): QueryParams<JobsQuery>) -> ApiResult<Json<Value>> {
    let (jobs, pagination) = jobs::list(&state.store, &state.cluster, &parse_query(q)?).await?;
    let jobs: Vec<Value> = jobs.into_iter().map(|j| json!({"full": j})).collect();
    Ok(Json(json!({"jobs": jobs, "pagination": pagination})))
}

/// `v1QueueControl`: a job and exactly one action.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueControl {
    pub job_id: String,
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub weight: Option<f64>,
    #[serde(default)]
    pub ahead_of: Option<String>,
    #[serde(default)]
    pub behind_of: Option<String>,
    #[serde(default)]
    pub resource_pool: Option<String>,
}

/// `v1UpdateJobQueueRequest`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UpdateJobQueueRequest {
    pub updates: Vec<QueueControl>,
}

fn action(index: usize, c: QueueControl) -> ApiResult<(String, QueueAction)> {
    let field = format!("updates[{index}]");
    if c.job_id.trim().is_empty() {
        return Err(ApiError::invalid(format!("{field}.jobId: name the job to change")));
    }
    let mut actions = Vec::new();
    if let Some(p) = c.priority {
        actions.push(QueueAction::Priority(i64::from(p)));
    }
    if let Some(w) = c.weight {
        actions.push(QueueAction::Weight(w));
    }
    if let Some(a) = c.ahead_of {
        actions.push(QueueAction::AheadOf(a));
    }
    if let Some(b) = c.behind_of {
        actions.push(QueueAction::BehindOf(b));
    }
    if let Some(p) = c.resource_pool {
        actions.push(QueueAction::ResourcePool(p));
    }
    match actions.len() {
        1 => Ok((c.job_id, actions.remove(0))),
        0 => Err(ApiError::invalid(format!("{field}: set one of priority, weight, aheadOf, behindOf or resourcePool"))),
        _ => Err(ApiError::invalid(format!("{field}: set only one of priority, weight, aheadOf, behindOf or resourcePool per update"))),
    }
}

/// `POST /api/v1/job-queues`: `v1UpdateJobQueueRequest` → `{}`. Updates apply in order; the
/// first refused one stops the rest.
#[utoipa::path(post, path = "/api/v1/job-queues", tag = "Cluster", request_body = UpdateJobQueueRequest,
    responses((status = 200, description = "applied", body = Object), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn update(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<UpdateJobQueueRequest>,
) -> ApiResult<Json<Value>> {
    if req.updates.is_empty() {
        return Err(ApiError::invalid("updates: name at least one job to change"));
    }
    let updates = req.updates.into_iter().enumerate().map(|(i, c)| action(i, c)).collect::<ApiResult<Vec<_>>>()?;
    jobs::update(&state.store, &caller, &state.cluster, updates).await?;
    Ok(Json(json!({})))
}
