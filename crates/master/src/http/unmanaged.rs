//! The unmanaged (detached) experiment endpoints the Core API v2 calls from outside the cluster:
//! create-or-get an experiment by external id, create (or put by external id) a trial, start it,
//! and heartbeat / report its state; and `POST /task-logs`, where it ships the script's output.
//! Metrics and checkpoints use the runtime endpoints.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::experiments::CreateExperimentRequest;
use resolute_api::runtime::Empty;
use resolute_api::unmanaged::{
    CreateTrialRequest, LegacyTaskLog, PatchTrialRequest, PutExperimentResponse, PutTrialRequest, StartTrialRequest, StartTrialResponse,
    UnmanagedTrialResponse,
};

use super::experiment_wire as wire;
use super::experiments::parse_id;
use super::extract::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::services::trial_runtime_allocations::LogLineIn;
use crate::services::{Principal, RuntimeCaller, TrialView, UnmanagedExperimentRequest};
use crate::state::AppState;

fn trial_response(view: TrialView) -> Json<UnmanagedTrialResponse> {
    Json(UnmanagedTrialResponse { trial: wire::trial(view.record, view.latest_validation) })
}

/// A body's `trialId`, when given, must be the path's.
fn check_body_trial_id(path_id: i32, body_id: Option<i32>) -> ApiResult<()> {
    match body_id {
        Some(id) if id != 0 && id != path_id => Err(ApiError::invalid(format!("trialId: the body names trial {id}, the path {path_id}"))),
        _ => Ok(()),
    }
}

#[utoipa::path(put, path = "/api/v1/experiments/by-external-id/{externalExperimentId}", tag = "Experiments",
    params(("externalExperimentId" = String, Path, description = "the caller's own id for the experiment")),
    request_body = CreateExperimentRequest,
    responses((status = 200, description = "the experiment with that external id, created if new", body = PutExperimentResponse),
        (status = 400, description = "not `unmanaged`, a fork, an invalid config (each error with its field path), or the id names a managed experiment", body = ErrorBody),
        (status = 403, description = "the experiment belongs to another user", body = ErrorBody),
        (status = 404, description = "project not found", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_experiment(
    State(state): State<AppState>,
    caller: Principal,
    Path(external_id): Path<String>,
    JsonBody(req): JsonBody<CreateExperimentRequest>,
) -> ApiResult<Json<PutExperimentResponse>> {
    if req.unmanaged != Some(true) {
        return Err(ApiError::invalid("unmanaged: must be true; only unmanaged experiments are put by external id"));
    }
    let (view, config) = state
        .experiments
        .put_unmanaged(
            &caller,
            UnmanagedExperimentRequest {
                config_text: req.config,
                project_id: req.project_id,
                parent_id: req.parent_id,
                external_id: Some(external_id),
            },
        )
        .await?;
    Ok(Json(PutExperimentResponse { experiment: wire::experiment(view), config }))
}

#[utoipa::path(post, path = "/api/v1/trials", tag = "Trials", request_body = CreateTrialRequest,
    responses((status = 200, body = UnmanagedTrialResponse),
        (status = 400, description = "not `unmanaged`, bad `hparams`, or a managed experiment", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, description = "experiment not found", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create_trial(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<CreateTrialRequest>,
) -> ApiResult<Json<UnmanagedTrialResponse>> {
    let view = state.experiments.create_unmanaged_trial(&caller, req.experiment_id, req.hparams, req.unmanaged, None).await?;
    Ok(trial_response(view))
}

#[utoipa::path(put, path = "/api/v1/trials", tag = "Trials", request_body = PutTrialRequest,
    responses((status = 200, description = "the trial with that external id in the experiment, created if new", body = UnmanagedTrialResponse),
        (status = 400, description = "`createTrialRequest` or `externalTrialId` missing or invalid", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, description = "experiment not found", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_trial(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<PutTrialRequest>,
) -> ApiResult<Json<UnmanagedTrialResponse>> {
    let Some(create) = req.create_trial_request else {
        return Err(ApiError::invalid("createTrialRequest: required (the trial to create)"));
    };
    let Some(external) = req.external_trial_id else {
        return Err(ApiError::invalid("externalTrialId: required (the caller's own id for the trial)"));
    };
    let view =
        state.experiments.create_unmanaged_trial(&caller, create.experiment_id, create.hparams, create.unmanaged, Some(external)).await?;
    Ok(trial_response(view))
}

#[utoipa::path(get, path = "/api/v1/trials/by-external-id/{externalExperimentId}/{externalTrialId}", tag = "Trials",
    params(("externalExperimentId" = String, Path), ("externalTrialId" = String, Path)),
    responses((status = 200, body = UnmanagedTrialResponse), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn trial_by_external_id(
    State(state): State<AppState>,
    _caller: Principal,
    Path((external_experiment_id, external_trial_id)): Path<(String, String)>,
) -> ApiResult<Json<UnmanagedTrialResponse>> {
    Ok(trial_response(state.experiments.trial_by_external_ids(&external_experiment_id, &external_trial_id).await?))
}

#[utoipa::path(post, path = "/api/v1/trials/{trialId}/start", tag = "Trials", params(("trialId" = i32, Path)),
    request_body = StartTrialRequest,
    responses((status = 200, body = StartTrialResponse),
        (status = 400, description = "a managed trial, or already started without `resume`", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, description = "trial not found", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn start_trial(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<StartTrialRequest>,
) -> ApiResult<Json<StartTrialResponse>> {
    let id = parse_id(&id, "trialId")?;
    check_body_trial_id(id, req.trial_id)?;
    let start = state.experiments.start_unmanaged_trial(&caller, id, req.resume).await?;
    Ok(Json(StartTrialResponse {
        trial_run_id: start.run_id,
        latest_checkpoint: start.latest_checkpoint,
        steps_completed: i32::try_from(start.steps_completed).unwrap_or(i32::MAX),
    }))
}

#[utoipa::path(patch, path = "/api/v1/trials/{trialId}", tag = "Trials", params(("trialId" = i32, Path)),
    request_body = PatchTrialRequest,
    responses((status = 200, description = "without `state` a heartbeat; with it, the state the script reports", body = UnmanagedTrialResponse),
        (status = 400, description = "a managed trial, or a state a script cannot report", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, description = "trial not found", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn patch_trial(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<PatchTrialRequest>,
) -> ApiResult<Json<UnmanagedTrialResponse>> {
    let id = parse_id(&id, "trialId")?;
    check_body_trial_id(id, req.trial_id)?;
    let state_name = req.state.and_then(|s| serde_json::to_value(s).ok()).and_then(|v| v.as_str().map(str::to_owned));
    Ok(trial_response(state.experiments.patch_unmanaged_trial(&caller, id, state_name.as_deref()).await?))
}

/// `rank` as the shipper sends it: a number or its decimal text; anything else is a 400.
fn legacy_rank(line: &LegacyTaskLog, index: usize) -> ApiResult<Option<i32>> {
    let invalid = || ApiError::invalid(format!("[{index}].rank: expected a rank number (or its decimal text)"));
    match &line.rank {
        None | Some(serde_json::Value::Null) => Ok(line.rank_id),
        Some(serde_json::Value::Number(n)) => n.as_i64().and_then(|r| i32::try_from(r).ok()).map(Some).ok_or_else(invalid),
        Some(serde_json::Value::String(s)) => s.trim().parse().map(Some).map_err(|_| invalid()),
        Some(_) => Err(invalid()),
    }
}

#[utoipa::path(post, path = "/task-logs", tag = "Internal", request_body = Vec<LegacyTaskLog>,
    responses((status = 200, body = Empty), (status = 400, description = "a line's field is malformed (named by index)", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, description = "a line names an unknown task", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn post_legacy_logs(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    JsonBody(lines): JsonBody<Vec<LegacyTaskLog>>,
) -> ApiResult<Json<Empty>> {
    let mut converted = Vec::with_capacity(lines.len());
    for (index, line) in lines.into_iter().enumerate() {
        let rank_id = legacy_rank(&line, index)?;
        converted.push(LogLineIn {
            task_id: line.task_id,
            allocation_id: line.allocation_id,
            agent_id: line.agent_id,
            container_id: line.container_id,
            rank_id,
            timestamp: line.timestamp,
            level: line.level,
            log: line.log,
            source: line.source,
            stdtype: line.stdtype,
        });
    }
    state.runtime.post_logs(&caller, converted).await?;
    state.task_logs.notify_new_lines();
    Ok(Json(Empty {}))
}
