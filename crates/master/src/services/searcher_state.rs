//! Where an experiment's search stands, for `det experiment describe`: rebuilt from the stored
//! config and searcher snapshot (the state the cluster loop saves after every decision), so reading
//! it never waits on the loop.

use std::collections::HashMap;

use resolute_expconf::{Defaults, parse_experiment_config};
use resolute_searcher::{ExitReason, Plan, RequestId, Searcher, TrialInfo, TrialState, preview};
use resolute_store::TrialFilter;

use super::ExperimentService;
use crate::domain::search_config::{full_length, searcher_config};
use crate::error::{ApiError, ApiResult};

/// One trial as the searcher sees it, joined with the master's trial ids.
pub struct SearcherTrialView {
    pub info: TrialInfo,
    pub trial_id: Option<i32>,
    pub parent_trial_id: Option<i32>,
    pub decision: &'static str,
}

pub struct SearcherStateView {
    pub experiment_id: i32,
    pub plan: Plan,
    pub progress: f64,
    /// `None` while searching; `Some(failed)` once the searcher shut the search down.
    pub shutdown: Option<bool>,
    /// ASHA: metrics recorded per rung, per bracket.
    pub rung_counts: Vec<Vec<usize>>,
    pub trials: Vec<SearcherTrialView>,
}

impl ExperimentService {
    pub async fn searcher_state(&self, experiment_id: i32) -> ApiResult<SearcherStateView> {
        let record = self.store.experiment_by_id(experiment_id).await?;
        if record.unmanaged {
            return Err(ApiError::new(
                resolute_api::error::ErrorCode::FailedPrecondition,
                format!("experiment {experiment_id} is unmanaged: its script runs its own trials, so it has no searcher state"),
            ));
        }
        let config = parse_experiment_config(&record.config.to_string(), &Defaults::new(0))
            .map_err(|errors| internal(experiment_id, format!("its stored config no longer validates: {errors:?}")))?
            .config;
        let search = searcher_config(&config);
        let full = full_length(&search);
        // A search the searcher refuses (a grid over today's limit, accepted before there was
        // one) is the config's fault, not a fault of the master: say so.
        let plan = preview(&search).map_err(|e| unplannable(experiment_id, &e))?;
        let searcher = match self.store.searcher_snapshot(experiment_id).await? {
            Some(snapshot) => Searcher::restore(search, &snapshot),
            // Created paused: the search has not started.
            None => Searcher::new(search),
        }
        .map_err(|e| internal(experiment_id, format!("its searcher snapshot cannot be restored: {e}")))?;

        let trials = self.store.list_trials(&TrialFilter { experiment_id, ..Default::default() }).await?;
        let ids: HashMap<RequestId, i32> =
            trials.trials.iter().filter_map(|t| t.request_id.parse::<u64>().ok().map(|r| (RequestId(r), t.id))).collect();
        let trials = searcher
            .trials()
            .map(|info| SearcherTrialView {
                trial_id: ids.get(&info.request_id).copied(),
                parent_trial_id: info.parent.and_then(|p| ids.get(&p).copied()),
                decision: decision(&info, full),
                info,
            })
            .collect();
        Ok(SearcherStateView {
            experiment_id,
            plan,
            progress: searcher.progress(),
            shutdown: searcher.shutdown(),
            rung_counts: searcher.rung_counts(),
            trials,
        })
    }
}

fn unplannable(experiment_id: i32, e: &dyn std::fmt::Display) -> ApiError {
    ApiError::new(
        resolute_api::error::ErrorCode::FailedPrecondition,
        format!("experiment {experiment_id}'s search cannot run: {e}; create it again with a smaller search"),
    )
}

/// Stored state the master itself wrote and can no longer read: a bug, logged, shown as a 500.
fn internal(experiment_id: i32, what: String) -> ApiError {
    tracing::error!(experiment = experiment_id, "searcher state: {what}");
    ApiError::internal()
}

/// What the searcher decided about a trial, in one word. A trial told to stop (or closed) before
/// the full length was stopped early; PBT, which has no full length, ends every trial at a round.
fn decision(info: &TrialInfo, full_length: Option<u64>) -> &'static str {
    if let Some(reason) = info.exit_reason {
        return match reason {
            ExitReason::InvalidHp => "invalid_hp",
            ExitReason::Errored => "errored",
            ExitReason::UserCanceled => "user_canceled",
        };
    }
    match info.state {
        TrialState::Requested => "requested",
        TrialState::Running => "training",
        TrialState::Stopping | TrialState::Closed => match full_length {
            Some(full) if info.time_progress < full => "stopped_early",
            _ => "completed",
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn info(state: TrialState, time_progress: u64, exit_reason: Option<ExitReason>) -> TrialInfo {
        TrialInfo {
            request_id: RequestId(1),
            hparams: json!({}),
            parent: None,
            bracket: Some(0),
            rung: Some(0),
            state,
            exit_reason,
            time_progress,
            last_metric: None,
        }
    }

    #[test]
    fn decisions_name_what_the_searcher_did() {
        assert_eq!(decision(&info(TrialState::Requested, 0, None), Some(100)), "requested");
        assert_eq!(decision(&info(TrialState::Running, 10, None), Some(100)), "training");
        assert_eq!(decision(&info(TrialState::Stopping, 10, None), Some(100)), "stopped_early");
        assert_eq!(decision(&info(TrialState::Closed, 10, None), Some(100)), "stopped_early");
        assert_eq!(decision(&info(TrialState::Closed, 100, None), Some(100)), "completed");
        assert_eq!(decision(&info(TrialState::Closed, 10, None), None), "completed");
        assert_eq!(decision(&info(TrialState::Closed, 10, Some(ExitReason::Errored)), Some(100)), "errored");
        assert_eq!(decision(&info(TrialState::Closed, 0, Some(ExitReason::InvalidHp)), Some(100)), "invalid_hp");
    }
}
