//! `GET /api/v1/experiments/{experimentId}/searcher/state` (a Resolute addition): the search's
//! brackets and rungs and each trial's rung and searcher decision.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::searcher_state::{GetSearcherStateResponse, SearcherBracket, SearcherRung, SearcherTrial};
use resolute_searcher::TrialState;

use super::experiments::parse_id;
use crate::error::ApiResult;
use crate::services::{Principal, SearcherStateView};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}/searcher/state", tag = "Experiments",
    params(("experimentId" = i32, Path)),
    responses((status = 200, body = GetSearcherStateResponse), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn searcher_state(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<GetSearcherStateResponse>> {
    let view = state.experiments.searcher_state(parse_id(&id, "experimentId")?).await?;
    Ok(Json(render(view)))
}

fn render(view: SearcherStateView) -> GetSearcherStateResponse {
    let brackets = view
        .plan
        .brackets
        .iter()
        .enumerate()
        .map(|(b, plan)| SearcherBracket {
            bracket: b,
            max_trials: plan.max_trials,
            max_concurrent_trials: plan.max_concurrent_trials,
            rungs: plan
                .rungs
                .iter()
                .enumerate()
                .map(|(r, rung)| SearcherRung {
                    rung: r,
                    length: rung.length,
                    planned_trials: rung.trials,
                    recorded: view.rung_counts.get(b).and_then(|counts| counts.get(r)).copied(),
                })
                .collect(),
        })
        .collect();
    let trials = view
        .trials
        .into_iter()
        .map(|t| SearcherTrial {
            request_id: t.info.request_id.0,
            trial_id: t.trial_id,
            bracket: t.info.bracket,
            rung: t.info.rung,
            state: match t.info.state {
                TrialState::Requested => "requested",
                TrialState::Running => "running",
                TrialState::Stopping => "stopping",
                TrialState::Closed => "closed",
            }
            .to_owned(),
            decision: t.decision.to_owned(),
            time_progress: t.info.time_progress,
            last_metric: t.info.last_metric.filter(|m| m.is_finite()),
            parent_trial_id: t.parent_trial_id,
        })
        .collect();
    let status = match view.shutdown {
        None => "running",
        Some(false) => "completed",
        Some(true) => "failed",
    };
    GetSearcherStateResponse {
        experiment_id: view.experiment_id,
        method: view.plan.method.to_owned(),
        unit: view.plan.unit.clone(),
        progress: view.progress,
        status: status.to_owned(),
        brackets,
        trials,
    }
}
