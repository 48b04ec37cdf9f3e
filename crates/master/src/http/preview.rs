//! `POST /api/v1/preview-hp-search`: the trials a search plans and how long each trains, in the
//! shape the upstream CLI's `det preview-search` renders.

use axum::Json;
use axum::extract::State;
use resolute_api::error::ErrorBody;
use resolute_api::preview::{PreviewHpSearchRequest, PreviewHpSearchResponse, SearchSummary, SearchUnit, TrialSummary};
use resolute_searcher::Plan;
use serde_json::Value;

use super::extract::JsonBody;
use crate::error::ApiResult;
use crate::services::Principal;
use crate::state::AppState;

#[utoipa::path(post, path = "/api/v1/preview-hp-search", tag = "Experiments", request_body = PreviewHpSearchRequest,
    responses((status = 200, body = PreviewHpSearchResponse),
        (status = 400, description = "invalid config (every error with its field path)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn preview_hp_search(
    State(state): State<AppState>,
    _caller: Principal,
    JsonBody(req): JsonBody<PreviewHpSearchRequest>,
) -> ApiResult<Json<PreviewHpSearchResponse>> {
    let config = req.config.unwrap_or(Value::Null);
    let preview = state.experiments.preview_search(&config, req.seed)?;
    Ok(Json(PreviewHpSearchResponse { summary: SearchSummary { config: preview.searcher, trials: trial_summaries(&preview.plan) } }))
}

/// One row per bracket and rung: how many trials stop at that length (ASHA keeps only the best
/// for the next rung; a PBT round closes the replaced trials). A search without a length of its own
/// trains to completion (`maxLength`).
pub fn trial_summaries(plan: &Plan) -> Vec<TrialSummary> {
    let unit = |length: u64| {
        if length == 0 {
            SearchUnit { name: None, value: None, max_length: true }
        } else {
            SearchUnit { name: Some(plan.unit.clone()), value: Some(to_i32(length)), max_length: false }
        }
    };
    let mut rows = Vec::new();
    for bracket in &plan.brackets {
        let last = bracket.rungs.len().saturating_sub(1);
        // PBT rounds all hold the whole population; the trials created beyond it replace the
        // ones closed at the end of each earlier round.
        let replaced_per_round =
            if plan.method == "pbt" && last > 0 { bracket.max_trials.saturating_sub(bracket.max_concurrent_trials) / last } else { 0 };
        for (k, rung) in bracket.rungs.iter().enumerate() {
            let stopped_here = match bracket.rungs.get(k + 1) {
                None => rung.trials,
                Some(_) if plan.method == "pbt" => replaced_per_round,
                Some(next) => rung.trials.saturating_sub(next.trials),
            };
            if stopped_here > 0 {
                rows.push(TrialSummary { count: to_i32(stopped_here as u64), unit: unit(rung.length) });
            }
        }
    }
    rows
}

fn to_i32(n: u64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use resolute_searcher::{BracketPlan, RungPlan};

    use super::*;

    fn plan(method: &'static str, unit: &str, brackets: Vec<BracketPlan>) -> Plan {
        let total_trials = brackets.iter().map(|b| b.max_trials).sum();
        Plan { method, unit: unit.into(), brackets, total_trials }
    }

    fn row(count: i32, length: i32) -> TrialSummary {
        TrialSummary { count, unit: SearchUnit { name: Some("batches".into()), value: Some(length), max_length: false } }
    }

    #[test]
    fn asha_rows_count_the_trials_stopped_at_each_rung() {
        let rungs = vec![RungPlan { length: 10, trials: 9 }, RungPlan { length: 40, trials: 3 }, RungPlan { length: 160, trials: 1 }];
        let p = plan("adaptive_asha", "batches", vec![BracketPlan { max_trials: 9, max_concurrent_trials: 9, rungs }]);
        assert_eq!(trial_summaries(&p), vec![row(6, 10), row(2, 40), row(1, 160)]);
    }

    #[test]
    fn pbt_rows_close_the_replaced_trials_each_round() {
        let rungs = vec![RungPlan { length: 8, trials: 3 }, RungPlan { length: 16, trials: 3 }];
        let p = plan("pbt", "batches", vec![BracketPlan { max_trials: 4, max_concurrent_trials: 3, rungs }]);
        assert_eq!(trial_summaries(&p), vec![row(1, 8), row(3, 16)]);
    }

    #[test]
    fn a_search_without_length_trains_to_completion() {
        let p = plan(
            "random",
            "units",
            vec![BracketPlan { max_trials: 5, max_concurrent_trials: 5, rungs: vec![RungPlan { length: 0, trials: 5 }] }],
        );
        assert_eq!(trial_summaries(&p), vec![TrialSummary { count: 5, unit: SearchUnit { name: None, value: None, max_length: true } }]);
    }
}
