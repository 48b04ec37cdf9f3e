//! Trial runtime endpoints: metric reports, progress, early exit, runner state, kill, the best
//! validation so far, run preparation, and the task's context directory.

use axum::Json;
use axum::extract::{Path, State};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use resolute_api::error::ErrorBody;
use resolute_api::runtime::{
    Empty, GetBestSearcherValidationMetricResponse, GetTaskContextDirectoryResponse, ReportTrialMetricsRequest, ReportTrialProgressRequest,
    RunPrepareForReportingRequest, RunPrepareForReportingResponse, TrialEarlyExit, TrialMetrics, TrialRunnerMetadataRequest,
};
use resolute_store::{TRAINING_GROUP, VALIDATION_GROUP};

use super::experiments::parse_id;
use super::extract::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::services::trial_runtime::MetricReport;
use crate::services::{MetricsCaller, Principal, RuntimeCaller};
use crate::state::AppState;

fn report(m: TrialMetrics) -> MetricReport {
    MetricReport {
        trial_id: m.trial_id,
        trial_run_id: m.trial_run_id,
        steps_completed: m.steps_completed,
        report_time: m.report_time,
        avg_metrics: m.metrics.avg_metrics,
        batch_metrics: m.metrics.batch_metrics,
    }
}

#[utoipa::path(post, path = "/api/v1/trials/{trialId}/metrics", tag = "Internal", params(("trialId" = i32, Path)),
    request_body = ReportTrialMetricsRequest,
    responses((status = 200, body = Empty), (status = 400, description = "invalid or stale report", body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn report_metrics(
    State(state): State<AppState>,
    caller: MetricsCaller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<ReportTrialMetricsRequest>,
) -> ApiResult<Json<Empty>> {
    let trial_id = parse_id(&id, "trialId")?;
    state.runtime.report_metrics(&caller, trial_id, &req.group, report(req.metrics)).await?;
    Ok(Json(Empty {}))
}

/// Legacy `…/training_metrics`: the body is the report itself.
#[utoipa::path(post, path = "/api/v1/trials/{trialId}/training_metrics", tag = "Internal", params(("trialId" = i32, Path)),
    request_body = TrialMetrics,
    responses((status = 200, body = Empty), (status = 400, description = "invalid or stale report", body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn report_training_metrics(
    State(state): State<AppState>,
    caller: MetricsCaller,
    Path(id): Path<String>,
    JsonBody(metrics): JsonBody<TrialMetrics>,
) -> ApiResult<Json<Empty>> {
    state.runtime.report_metrics(&caller, parse_id(&id, "trialId")?, TRAINING_GROUP, report(metrics)).await?;
    Ok(Json(Empty {}))
}

/// Legacy `…/validation_metrics`: the body is the report itself.
#[utoipa::path(post, path = "/api/v1/trials/{trialId}/validation_metrics", tag = "Internal", params(("trialId" = i32, Path)),
    request_body = TrialMetrics,
    responses((status = 200, body = Empty), (status = 400, description = "invalid or stale report", body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn report_validation_metrics(
    State(state): State<AppState>,
    caller: MetricsCaller,
    Path(id): Path<String>,
    JsonBody(metrics): JsonBody<TrialMetrics>,
) -> ApiResult<Json<Empty>> {
    state.runtime.report_metrics(&caller, parse_id(&id, "trialId")?, VALIDATION_GROUP, report(metrics)).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(post, path = "/api/v1/trials/{trialId}/progress", tag = "Internal", params(("trialId" = i32, Path)),
    request_body = ReportTrialProgressRequest, responses((status = 200, body = Empty), (status = 400, body = ErrorBody)), security(("bearer" = [])))]
pub async fn report_progress(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<ReportTrialProgressRequest>,
) -> ApiResult<Json<Empty>> {
    state.runtime.report_progress(&caller, parse_id(&id, "trialId")?, req.progress()).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(post, path = "/api/v1/trials/{trialId}/early_exit", tag = "Internal", params(("trialId" = i32, Path)),
    request_body = TrialEarlyExit, responses((status = 200, body = Empty), (status = 400, body = ErrorBody)), security(("bearer" = [])))]
pub async fn early_exit(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<TrialEarlyExit>,
) -> ApiResult<Json<Empty>> {
    state.runtime.report_early_exit(&caller, parse_id(&id, "trialId")?, &req.reason).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(post, path = "/api/v1/trials/{trialId}/runner/metadata", tag = "Internal", params(("trialId" = i32, Path)),
    request_body = TrialRunnerMetadataRequest, responses((status = 200, body = Empty), (status = 400, body = ErrorBody)), security(("bearer" = [])))]
pub async fn runner_metadata(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<TrialRunnerMetadataRequest>,
) -> ApiResult<Json<Empty>> {
    let runner_state = req
        .metadata
        .map(|m| m.state)
        .or(req.state)
        .ok_or_else(|| ApiError::invalid("state is required: {\"state\": \"<short status>\"}"))?;
    state.runtime.set_runner_state(&caller, parse_id(&id, "trialId")?, &runner_state).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(post, path = "/api/v1/trials/{id}/kill", tag = "Trials", params(("id" = i32, Path)),
    responses((status = 200, body = Empty), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn kill(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Empty>> {
    state.runtime.kill_trial(&caller, parse_id(&id, "id")?).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}/searcher/best_searcher_validation_metric", tag = "Internal",
    params(("experimentId" = i32, Path)),
    responses((status = 200, body = GetBestSearcherValidationMetricResponse), (status = 404, description = "no validation yet", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn best_searcher_validation_metric(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
) -> ApiResult<Json<GetBestSearcherValidationMetricResponse>> {
    let metric = state.runtime.best_searcher_validation(&caller, parse_id(&id, "experimentId")?).await?;
    Ok(Json(GetBestSearcherValidationMetricResponse { metric }))
}

#[utoipa::path(post, path = "/api/v1/runs/start", tag = "Internal", request_body = RunPrepareForReportingRequest,
    responses((status = 200, body = RunPrepareForReportingResponse), (status = 403, body = ErrorBody)), security(("bearer" = [])))]
pub async fn prepare_run(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    JsonBody(req): JsonBody<RunPrepareForReportingRequest>,
) -> ApiResult<Json<RunPrepareForReportingResponse>> {
    let storage_id = state.runtime.prepare_run(&caller, req.run_id, req.checkpoint_storage).await?;
    Ok(Json(RunPrepareForReportingResponse { storage_id: Some(storage_id) }))
}

#[utoipa::path(get, path = "/api/v1/tasks/{taskId}/context_directory", tag = "Tasks", params(("taskId" = String, Path)),
    responses((status = 200, body = GetTaskContextDirectoryResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn context_directory(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(task_id): Path<String>,
) -> ApiResult<Json<GetTaskContextDirectoryResponse>> {
    let archive = state.runtime.context_directory(&caller, &task_id).await?;
    Ok(Json(GetTaskContextDirectoryResponse { b64_tgz: BASE64.encode(archive) }))
}
