//! The runs API (0.38's name for trials): `POST /api/v1/runs` (the run list, upstream's
//! SearchRuns) and the bulk actions `POST /api/v1/runs/{kill,pause,resume,archive,unarchive,
//! delete,move}`, each by ids or by filter with one result per run (`services/runs.rs`,
//! `services/run_actions.rs`).

use axum::Json;
use axum::extract::State;
use resolute_api::error::ErrorBody;
use resolute_api::pagination::Pagination;
use resolute_api::runs::{
    FlatRun, FlatRunExperiment, MoveRunsRequest, RunActionRequest, RunActionResponse, SearchRunsRequest, SearchRunsResponse,
};
use resolute_api::trials::TrialState;
use resolute_store::RunRecord;

use super::AppState;
use super::experiment_wire::upstream_summary;
use super::extract::JsonBody;
use crate::error::ApiResult;
use crate::services::{Principal, RunAction, RunSelection};

fn selection(req: &RunActionRequest) -> RunSelection<'_> {
    RunSelection { project_id: req.project_id, ids: &req.run_ids, filter: req.filter.as_deref() }
}

async fn act(state: &AppState, caller: &Principal, req: RunActionRequest, action: RunAction) -> ApiResult<Json<RunActionResponse>> {
    let ids = state.experiments.run_ids_for_action(&selection(&req)).await?;
    if ids.is_empty() && req.filter.as_deref().is_none_or(|f| f.trim().is_empty()) {
        return Err(crate::error::ApiError::invalid("runIds: name at least one run, or set filter"));
    }
    let results = state.experiments.run_action(caller, req.project_id, &ids, action).await?;
    Ok(Json(RunActionResponse { results }))
}

macro_rules! run_route {
    ($name:ident, $path:literal, $action:expr, $what:literal) => {
        #[utoipa::path(post, path = $path, tag = "Runs", request_body = RunActionRequest,
                            responses((status = 200, description = $what, body = RunActionResponse), (status = 400, body = ErrorBody)),
                            security(("bearer" = [])))]
        pub async fn $name(
            State(state): State<AppState>,
            caller: Principal,
            JsonBody(req): JsonBody<RunActionRequest>,
        ) -> ApiResult<Json<RunActionResponse>> {
            act(&state, &caller, req, $action).await
        }
    };
}

run_route!(kill, "/api/v1/runs/kill", RunAction::Kill, "kill each run");
run_route!(pause, "/api/v1/runs/pause", RunAction::Pause, "pause each run's (single-trial) experiment");
run_route!(resume, "/api/v1/runs/resume", RunAction::Resume, "resume each run's (single-trial) experiment");

fn to_wire(r: RunRecord) -> FlatRun {
    let config = &r.experiment_config;
    let text = |path: &str| config.pointer(path).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
    let t = r.trial;
    let end = t.end_time.unwrap_or_else(chrono::Utc::now);
    let duration = i32::try_from((end - t.start_time).num_seconds().max(0)).unwrap_or(i32::MAX);
    FlatRun {
        id: t.id,
        start_time: t.start_time,
        end_time: t.end_time,
        state: TrialState::from_name(&t.state).unwrap_or(TrialState::Unspecified),
        checkpoint_size: r.checkpoint_size,
        checkpoint_count: i32::try_from(r.checkpoint_count).unwrap_or(i32::MAX),
        archived: r.archived,
        parent_archived: r.project_archived || r.workspace_archived,
        project_id: r.project_id,
        project_name: r.project_name,
        workspace_id: r.workspace_id,
        workspace_name: r.workspace_name,
        searcher_metric_value: t.best_validation,
        duration,
        hyperparameters: (!t.hparams.is_null()).then_some(t.hparams),
        summary_metrics: upstream_summary(t.summary_metrics),
        user_id: r.owner_id,
        labels: r.experiment_labels,
        experiment: FlatRunExperiment {
            id: t.experiment_id,
            name: r.experiment_name,
            description: r.experiment_description,
            searcher_type: text("/searcher/name"),
            searcher_metric: text("/searcher/metric"),
            resource_pool: text("/resources/resource_pool"),
            progress: r.experiment_progress.unwrap_or(0.0),
            unmanaged: r.experiment_unmanaged,
            is_multitrial: r.experiment_trials > 1,
            forked_from: r.experiment_parent_id,
        },
    }
}

/// The run list: filtered, sorted and paged in the database.
#[utoipa::path(post, path = "/api/v1/runs", tag = "Runs", request_body = SearchRunsRequest,
    responses((status = 200, body = SearchRunsResponse), (status = 400, description = "a bad filter or sort, naming where", body = ErrorBody),
        (status = 404, description = "unknown projectId", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn search(
    State(state): State<AppState>,
    _caller: Principal,
    JsonBody(req): JsonBody<SearchRunsRequest>,
) -> ApiResult<Json<SearchRunsResponse>> {
    let limit = req.limit.unwrap_or(0);
    let (page, offset) =
        state.experiments.search_runs(req.project_id, req.filter.as_deref(), req.sort.as_deref(), req.offset.unwrap_or(0), limit).await?;
    let pagination = Pagination::of_page(offset, limit, page.total, page.runs.len());
    Ok(Json(SearchRunsResponse { runs: page.runs.into_iter().map(to_wire).collect(), pagination }))
}

macro_rules! archive_route {
    ($name:ident, $path:literal, $archive:expr, $what:literal) => {
        #[utoipa::path(post, path = $path, tag = "Runs", request_body = RunActionRequest,
                            responses((status = 200, description = $what, body = RunActionResponse), (status = 400, body = ErrorBody)),
                            security(("bearer" = [])))]
        pub async fn $name(
            State(state): State<AppState>,
            caller: Principal,
            JsonBody(req): JsonBody<RunActionRequest>,
        ) -> ApiResult<Json<RunActionResponse>> {
            let results = state.experiments.archive_runs(&caller, &selection(&req), $archive).await?;
            Ok(Json(RunActionResponse { results }))
        }
    };
}

archive_route!(archive, "/api/v1/runs/archive", true, "archive each (terminal) run");
archive_route!(unarchive, "/api/v1/runs/unarchive", false, "unarchive each run");

/// Deletes terminal runs of ended experiments.
#[utoipa::path(post, path = "/api/v1/runs/delete", tag = "Runs", request_body = RunActionRequest,
    responses((status = 200, description = "one result per run", body = RunActionResponse), (status = 400, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<RunActionRequest>,
) -> ApiResult<Json<RunActionResponse>> {
    let results = state.experiments.delete_runs(&caller, &selection(&req)).await?;
    Ok(Json(RunActionResponse { results }))
}

/// Moves runs (with their experiments) to another project.
#[utoipa::path(post, path = "/api/v1/runs/move", tag = "Runs", request_body = MoveRunsRequest,
    responses((status = 200, description = "one result per run", body = RunActionResponse), (status = 400, body = ErrorBody),
        (status = 404, description = "unknown source or destination project", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn move_runs(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<MoveRunsRequest>,
) -> ApiResult<Json<RunActionResponse>> {
    let sel = RunSelection { project_id: Some(req.source_project_id), ids: &req.run_ids, filter: req.filter.as_deref() };
    let results = state.experiments.move_runs(&caller, &sel, req.destination_project_id, req.skip_multitrial.unwrap_or(false)).await?;
    Ok(Json(RunActionResponse { results }))
}
