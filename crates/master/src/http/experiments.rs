//! `/api/v1/experiments` and `/api/v1/experiments/{id}`: create, list, get, patch, delete, the
//! state actions and labels.

use axum::Json;
use axum::extract::{Path, State};
use chrono::DateTime;
use resolute_api::error::ErrorBody;
use resolute_api::experiments::{
    CreateExperimentRequest, CreateExperimentResponse, Experiment, ExperimentLabelsResponse, ExperimentSortBy, ExperimentState,
    GetExperimentResponse, GetExperimentsQuery, GetExperimentsResponse, PatchExperiment, PatchExperimentResponse,
};
use resolute_api::users::OrderBy;
use resolute_store::{ExperimentSort, OrderDirection};
use serde_json::{Value, json};

use super::experiment_wire as wire;
use super::extract::{JsonBody, QueryParams};
use super::sized_json::SizedJson;
use crate::domain::experiment_state::ExperimentAction;
use crate::error::{ApiError, ApiResult};
use crate::services::checkpoint_edits::{self, GcPolicyChange};
use crate::services::{ExperimentChanges, ExperimentListQuery, NewExperimentRequest, Principal};
use crate::state::AppState;

/// Largest `POST /api/v1/experiments` body: a 95 MiB context directory grows by a third in base64,
/// plus the JSON around each file.
pub const MAX_EXPERIMENT_BODY_BYTES: usize = 136 * 1024 * 1024;

/// A path id (`experimentId`, `trialId`), or a 400 naming it.
pub fn parse_id(raw: &str, name: &str) -> ApiResult<i32> {
    raw.parse().map_err(|_| ApiError::invalid(format!("{name} must be an integer, found {raw:?}")))
}

/// `ORDER_BY_DESC` is descending; unspecified and `ORDER_BY_ASC` ascending.
pub fn direction(order: Option<OrderBy>) -> OrderDirection {
    match order {
        Some(OrderBy::Desc) => OrderDirection::Desc,
        _ => OrderDirection::Asc,
    }
}

#[utoipa::path(post, path = "/api/v1/experiments", tag = "Experiments", request_body = CreateExperimentRequest,
    responses((status = 200, body = CreateExperimentResponse), (status = 400, description = "invalid config (every error with its field path) or model definition", body = ErrorBody),
        (status = 404, description = "project or parent experiment not found", body = ErrorBody), (status = 413, description = "upload over the size limit", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<CreateExperimentRequest>,
) -> ApiResult<Json<CreateExperimentResponse>> {
    let files = super::commands::context_files(req.model_definition.unwrap_or_default());
    let created = state
        .experiments
        .create(
            &caller,
            NewExperimentRequest {
                config_text: req.config,
                files,
                validate_only: req.validate_only,
                activate: req.activate,
                project_id: req.project_id,
                parent_id: req.parent_id,
                template: req.template,
                unmanaged: req.unmanaged.unwrap_or(false),
            },
        )
        .await?;
    let experiment = match created.experiment {
        Some(view) => wire::experiment(view),
        // Validation only: an empty experiment, as upstream (the Python bindings need one).
        None => empty_experiment(),
    };
    Ok(Json(CreateExperimentResponse {
        experiment,
        config: created.config,
        warnings: Vec::new(),
        config_warnings: created.config_warnings,
    }))
}

fn empty_experiment() -> Experiment {
    Experiment {
        id: 0,
        description: String::new(),
        labels: Vec::new(),
        start_time: DateTime::UNIX_EPOCH,
        end_time: None,
        state: ExperimentState::Unspecified,
        archived: false,
        num_trials: 0,
        trial_ids: Vec::new(),
        display_name: String::new(),
        user_id: 0,
        username: String::new(),
        resource_pool: String::new(),
        searcher_type: String::new(),
        searcher_metric: String::new(),
        hyperparameters: Default::default(),
        name: String::new(),
        notes: String::new(),
        job_id: String::new(),
        forked_from: None,
        progress: None,
        project_id: 0,
        project_name: String::new(),
        workspace_id: 0,
        workspace_name: String::new(),
        parent_archived: false,
        config: resolute_api::raw_json::RawJson::from(&Value::Null),
        original_config: String::new(),
        project_owner_id: 0,
        checkpoint_size: 0,
        checkpoint_count: 0,
        best_trial_searcher_metric: None,
        best_trial_id: None,
        unmanaged: false,
        external_experiment_id: None,
        model_definition_size: None,
    }
}

#[utoipa::path(get, path = "/api/v1/experiments", tag = "Experiments", params(GetExperimentsQuery),
    responses((status = 200, body = GetExperimentsResponse), (status = 400, body = ErrorBody), (status = 501, description = "a filter or sort not supported yet", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<GetExperimentsQuery>,
) -> ApiResult<SizedJson<GetExperimentsResponse>> {
    let id_filter_used = q.experiment_id_lt.is_some()
        || q.experiment_id_lte.is_some()
        || q.experiment_id_gt.is_some()
        || q.experiment_id_gte.is_some()
        || !q.experiment_id_in.is_empty()
        || !q.experiment_id_not_in.is_empty();
    if id_filter_used {
        return Err(ApiError::unimplemented("experimentIdFilter is not supported yet"));
    }
    if q.description.as_deref().is_some_and(|d| !d.is_empty()) {
        return Err(ApiError::unimplemented("filtering experiments by description is not supported yet"));
    }
    let sort = match q.sort_by.unwrap_or(ExperimentSortBy::Unspecified) {
        ExperimentSortBy::Unspecified | ExperimentSortBy::Id => ExperimentSort::Id,
        ExperimentSortBy::Name => ExperimentSort::Name,
        ExperimentSortBy::StartTime => ExperimentSort::StartTime,
        ExperimentSortBy::EndTime => ExperimentSort::EndTime,
        ExperimentSortBy::State => ExperimentSort::State,
        ExperimentSortBy::Progress => ExperimentSort::Progress,
        ExperimentSortBy::User => ExperimentSort::Owner,
        other => return Err(ApiError::unimplemented(format!("sortBy {other} is not supported yet"))),
    };
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(0));
    let page = state
        .experiments
        .list(ExperimentListQuery {
            archived: q.archived,
            usernames: q.users,
            user_ids: q.user_ids,
            states: q.states.iter().map(|s| s.name().to_owned()).collect(),
            name: q.name,
            labels: q.labels,
            project_id: q.project_id,
            sort,
            order: direction(q.order_by),
            offset: i64::from(offset),
            limit: i64::from(limit),
        })
        .await?;
    let pagination = wire::pagination(offset, limit, &page);
    // The stored configs are copied into the answer as they are (a list leaves `originalConfig`
    // empty, as upstream's); the other fields of a row take well under 1 KB.
    let capacity = page.items.iter().map(|v| v.record.config.raw().get().len() + 1024).sum();
    let value = GetExperimentsResponse { experiments: page.items.into_iter().map(wire::experiment).collect(), pagination };
    Ok(SizedJson { value, capacity })
}

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}", tag = "Experiments", params(("experimentId" = i32, Path)),
    responses((status = 200, body = GetExperimentResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, _caller: Principal, Path(id): Path<String>) -> ApiResult<Json<GetExperimentResponse>> {
    let view = state.experiments.get(parse_id(&id, "experimentId")?).await?;
    let config = resolute_api::raw_json::RawJson(view.record.config.to_raw());
    let job_summary = crate::services::jobs::summary_of(&state.cluster, &view.record.job_id).and_then(|summary| {
        Some(resolute_api::experiments::JobSummary {
            state: serde_json::from_value(serde_json::Value::String(summary.state)).ok()?,
            jobs_ahead: summary.jobs_ahead,
            wait_reason: summary.wait_reason,
        })
    });
    Ok(Json(GetExperimentResponse { experiment: wire::experiment(view), job_summary, config }))
}

#[utoipa::path(patch, path = "/api/v1/experiments/{experimentId}", tag = "Experiments", params(("experimentId" = i32, Path)),
    request_body = PatchExperiment,
    responses((status = 200, body = PatchExperimentResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn patch(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<PatchExperiment>,
) -> ApiResult<Json<PatchExperimentResponse>> {
    // `resources` (`det experiment set priority|weight|max-slots`) go through the job queue.
    let config_changes = Vec::new();
    let resources = req.resources.clone().filter(|r| r.max_slots.is_some() || r.weight.is_some() || r.priority.is_some());
    let id = parse_id(&id, "experimentId")?;
    let gc_policy = req.checkpoint_storage.as_ref().map_or_else(Default::default, |s| GcPolicyChange {
        save_experiment_best: s.save_experiment_best,
        save_trial_best: s.save_trial_best,
        save_trial_latest: s.save_trial_latest,
    });
    if !gc_policy.is_empty() && config_changes.is_empty() {
        // `det experiment set gc-policy`: stored, then collected at once.
        checkpoint_edits::change_gc_policy(&state.store, &caller, id, gc_policy).await?;
    }
    let changes = ExperimentChanges { name: req.name, description: req.description, notes: req.notes, labels: req.labels, config_changes };
    let mut view = state.experiments.patch(&caller, id, changes).await?;
    if let Some(r) = resources {
        crate::services::jobs::change_experiment_resources(&state.cluster, &view.record.job_id, r.priority, r.weight, r.max_slots).await?;
        view = state.experiments.get(id).await?;
    }
    Ok(Json(PatchExperimentResponse { experiment: wire::experiment(view) }))
}

#[utoipa::path(delete, path = "/api/v1/experiments/{experimentId}", tag = "Experiments", params(("experimentId" = i32, Path)),
    responses((status = 200, description = "deleted with its trials, checkpoint records and logs"), (status = 400, description = "not finished yet", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    state.experiments.delete(&caller, parse_id(&id, "experimentId")?).await?;
    Ok(Json(json!({})))
}

async fn act(state: &AppState, caller: &Principal, id: &str, action: ExperimentAction) -> ApiResult<Json<Value>> {
    let id = parse_id(id, "id")?;
    state.experiments.act(caller, id, action).await?;
    Ok(Json(json!({})))
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/activate", tag = "Experiments", params(("id" = i32, Path)),
    responses((status = 200, description = "active"), (status = 400, description = "stopping or finished", body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn activate(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    act(&state, &caller, &id, ExperimentAction::Activate).await
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/pause", tag = "Experiments", params(("id" = i32, Path)),
    responses((status = 200, description = "paused"), (status = 400, description = "stopping or finished", body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn pause(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    act(&state, &caller, &id, ExperimentAction::Pause).await
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/cancel", tag = "Experiments", params(("id" = i32, Path)),
    responses((status = 200, description = "stopping, or canceled when no trial runs"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn cancel(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    act(&state, &caller, &id, ExperimentAction::Cancel).await
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/kill", tag = "Experiments", params(("id" = i32, Path)),
    responses((status = 200, description = "stopping, or canceled when no trial runs"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn kill(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    act(&state, &caller, &id, ExperimentAction::Kill).await
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/archive", tag = "Experiments", params(("id" = i32, Path)),
    responses((status = 200, description = "archived"), (status = 400, description = "not finished yet", body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn archive(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    state.experiments.set_archived(&caller, parse_id(&id, "id")?, true).await?;
    Ok(Json(json!({})))
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/unarchive", tag = "Experiments", params(("id" = i32, Path)),
    responses((status = 200, description = "unarchived"), (status = 400, description = "not finished yet", body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn unarchive(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    state.experiments.set_archived(&caller, parse_id(&id, "id")?, false).await?;
    Ok(Json(json!({})))
}

#[utoipa::path(put, path = "/api/v1/experiments/{experimentId}/labels/{label}", tag = "Experiments",
    params(("experimentId" = i32, Path), ("label" = String, Path)),
    responses((status = 200, body = ExperimentLabelsResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn put_label(
    State(state): State<AppState>,
    caller: Principal,
    Path((id, label)): Path<(String, String)>,
) -> ApiResult<Json<ExperimentLabelsResponse>> {
    let labels = state.experiments.add_label(&caller, parse_id(&id, "experimentId")?, &label).await?;
    Ok(Json(ExperimentLabelsResponse { labels }))
}

#[utoipa::path(delete, path = "/api/v1/experiments/{experimentId}/labels/{label}", tag = "Experiments",
    params(("experimentId" = i32, Path), ("label" = String, Path)),
    responses((status = 200, body = ExperimentLabelsResponse), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn delete_label(
    State(state): State<AppState>,
    caller: Principal,
    Path((id, label)): Path<(String, String)>,
) -> ApiResult<Json<ExperimentLabelsResponse>> {
    let labels = state.experiments.remove_label(&caller, parse_id(&id, "experimentId")?, &label).await?;
    Ok(Json(ExperimentLabelsResponse { labels }))
}
