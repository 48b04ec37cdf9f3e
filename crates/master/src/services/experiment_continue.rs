//! `det experiment continue`: a finished experiment runs again, as upstream's
//! `ContinueExperiment`. The override config is merged over the experiment's and validated; a
//! single-trial experiment reruns its trial from its latest checkpoint (so a longer `max_length`
//! trains on), a search reruns the trials that did not complete (a completed search whose
//! trials all completed cannot be continued). Restart counters start again at 0; trials keep
//! their start time. The store does it in one transaction (`sql/experiment_continue.rs`), then
//! the loop picks the experiment up as it does after a restart.

use resolute_api::error::ErrorCode;
use resolute_expconf::merge_under;
use resolute_store::{StoreError, TrialFilter};

use super::experiments::{ExperimentService, ExperimentView};
use crate::cluster::ClusterEvent;
use crate::domain::TrialState;
use crate::domain::experiment_state::ExperimentState;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;

impl ExperimentService {
    pub async fn continue_experiment(&self, caller: &Principal, id: i32, override_config: Option<&str>) -> ApiResult<ExperimentView> {
        let record = self.store.experiment_by_id(id).await?;
        if !(caller.user.admin || caller.user.id == record.owner_id) {
            return Err(ApiError::forbidden(format!(
                "only the owner ({}) or an admin can continue experiment {id}",
                record.owner_username
            )));
        }
        if record.unmanaged {
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!("cannot continue experiment {id}: it is unmanaged; run its script again with the same external ids to resume it"),
            ));
        }
        let state = ExperimentState::parse(&record.state).ok_or_else(ApiError::internal)?;
        if !state.is_terminal() {
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!("experiment in non terminal state '{}', try again later", state.as_str().trim_start_matches("STATE_")),
            ));
        }
        let mut merged = match override_config.map(str::trim).filter(|t| !t.is_empty() && *t != "{}") {
            Some(text) => {
                resolute_expconf::yaml_to_json(text).map_err(|e| ApiError::invalid(format!("overrideConfig: not valid YAML: {e}")))?
            }
            None => serde_json::json!({}),
        };
        if !merged.is_object() {
            return Err(ApiError::invalid("overrideConfig: expected a YAML mapping of config keys"));
        }
        let stored = record.config.clone();
        let single = |c: &serde_json::Value| c.pointer("/searcher/name").and_then(serde_json::Value::as_str) == Some("single");
        let was_single = single(&stored);
        if let Some(name) = merged.pointer("/searcher/name").and_then(serde_json::Value::as_str)
            && Some(name) != stored.pointer("/searcher/name").and_then(serde_json::Value::as_str)
        {
            return Err(ApiError::invalid(format!(
                "overrideConfig: searcher.name cannot change when continuing (it is {:?})",
                stored["searcher"]["name"]
            )));
        }
        merge_under(&mut merged, &stored);
        let config = self.validate_config(&merged.to_string())?;
        let trials = self.store.list_trials(&TrialFilter { experiment_id: id, ..Default::default() }).await?.trials;
        let completed = TrialState::Completed.as_str();
        let reopen: Vec<i32> = if was_single {
            trials.iter().map(|t| t.id).collect()
        } else {
            if state == ExperimentState::Completed && trials.iter().all(|t| t.state == completed) {
                return Err(ApiError::new(ErrorCode::FailedPrecondition, "experiment has been completed, cannot continue this experiment"));
            }
            trials.iter().filter(|t| t.state != completed).map(|t| t.id).collect()
        };
        let done = self
            .store
            .continue_experiment(
                id,
                state.as_str(),
                ExperimentState::Active.as_str(),
                &config.to_json(),
                &reopen,
                TrialState::Paused.as_str(),
            )
            .await;
        match done {
            Ok(()) => {}
            Err(StoreError::NotFound { .. }) => {
                return Err(ApiError::new(ErrorCode::FailedPrecondition, format!("experiment {id} changed state meanwhile; try again")));
            }
            Err(e) => return Err(e.into()),
        }
        tracing::info!(experiment = id, by = %caller.user.username, trials = ?reopen, "continued experiment");
        self.cluster.notify(ClusterEvent::ExperimentChanged { experiment_id: id });
        let record = self.store.experiment_by_id(id).await?;
        self.view(record).await
    }
}
