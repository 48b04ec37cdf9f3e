//! Actions on runs (0.38's name for trials) by id: kill any of them; pause and resume only a
//! single-trial experiment's run (the experiment pauses or activates), as upstream, which
//! refuses the runs of a search with "Cannot pause/unpause run '<id>' (part of multi-trial).".

use resolute_api::runs::RunActionResult;
use resolute_store::StoreError;

use super::experiments::ExperimentService;
use crate::cluster::ClusterEvent;
use crate::domain::TrialState;
use crate::domain::experiment_state::ExperimentAction;
use crate::error::ApiResult;
use crate::services::Principal;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunAction {
    Kill,
    Pause,
    Resume,
}

impl ExperimentService {
    pub async fn run_action(
        &self,
        caller: &Principal,
        project_id: Option<i32>,
        run_ids: &[i32],
        action: RunAction,
    ) -> ApiResult<Vec<RunActionResult>> {
        let mut results = Vec::new();
        for &id in run_ids {
            let error = self.one_run_action(caller, project_id, id, action).await?;
            results.push(RunActionResult { id, error });
        }
        Ok(results)
    }

    /// The run's error message ("" when done); `Err` only for a failure of the master itself.
    async fn one_run_action(&self, caller: &Principal, project_id: Option<i32>, id: i32, action: RunAction) -> ApiResult<String> {
        let not_found = || match project_id {
            Some(p) => format!("run {id} not found in project {p}"),
            None => format!("run {id} not found"),
        };
        let trial = match self.store.trial_by_id(id).await {
            Ok(t) => t,
            Err(StoreError::NotFound { .. }) => return Ok(not_found()),
            Err(e) => return Err(e.into()),
        };
        let experiment = self.store.experiment_by_id(trial.experiment_id).await?;
        if project_id.is_some_and(|p| p != 0 && p != experiment.project_id) {
            return Ok(not_found());
        }
        let verb = match action {
            RunAction::Kill => "kill",
            RunAction::Pause => "pause",
            RunAction::Resume => "resume",
        };
        if !(caller.user.admin || caller.user.id == experiment.owner_id) {
            return Ok(format!("only the owner ({}) or an admin can {verb} run {id}", experiment.owner_username));
        }
        let single = experiment.config.pointer("/searcher/name").and_then(serde_json::Value::as_str) == Some("single");
        let outcome = match action {
            RunAction::Kill => {
                if !TrialState::is_terminal_name(&trial.state) {
                    self.cluster.notify(ClusterEvent::KillTrial { trial_id: id });
                }
                Ok(())
            }
            RunAction::Pause | RunAction::Resume if !single => {
                return Ok(format!("Cannot pause/unpause run '{id}' (part of multi-trial)."));
            }
            RunAction::Pause => self.act(caller, experiment.id, ExperimentAction::Pause).await.map(|_| ()),
            RunAction::Resume => self.act(caller, experiment.id, ExperimentAction::Activate).await.map(|_| ()),
        };
        match outcome {
            Ok(()) => Ok(String::new()),
            Err(e) if e.status.is_server_error() => Err(e),
            Err(e) => Ok(e.message),
        }
    }
}
