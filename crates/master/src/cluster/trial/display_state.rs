//! The QUEUED / STARTING / RUNNING substates of an active trial and experiment, as upstream
//! reports them: a trial is QUEUED while its allocation waits for resources, STARTING once placed,
//! RUNNING once its process runs; an active experiment shows the most advanced of its trials'
//! (RUNNING over STARTING over QUEUED; ACTIVE when none has an allocation). The loop keeps reasoning
//! with `ACTIVE` (`ExperimentState::intent`); these states are written to the store after every
//! event, only when they change, and only over another active state, so they never undo a pause or
//! a stop the API stored meanwhile.

use std::collections::HashMap;

use crate::cluster::orchestrator::{LoopResult, Orchestrator};
use crate::domain::{ACTIVE_STATE_NAMES, ExperimentState, TrialState};

/// What the loop last wrote, so an unchanged state costs no store write.
#[derive(Default)]
pub(in crate::cluster) struct DisplayStates {
    experiments: HashMap<i32, ExperimentState>,
    trials: HashMap<i32, TrialState>,
}

/// How far a substate has come, for picking an experiment's most advanced trial.
fn rank(state: TrialState) -> u8 {
    match state {
        TrialState::Running => 4,
        TrialState::Starting => 3,
        TrialState::Pulling => 2,
        TrialState::Queued => 1,
        _ => 0,
    }
}

fn experiment_state_of(trial: TrialState) -> ExperimentState {
    match trial {
        TrialState::Running => ExperimentState::Running,
        TrialState::Starting => ExperimentState::Starting,
        TrialState::Pulling => ExperimentState::Pulling,
        TrialState::Queued => ExperimentState::Queued,
        _ => ExperimentState::Active,
    }
}

impl DisplayStates {
    /// The store's state of `experiment_id` may have been written by someone else since the loop
    /// last wrote it: write it again at the next sync.
    pub(in crate::cluster) fn forget_experiment(&mut self, experiment_id: i32) {
        self.experiments.remove(&experiment_id);
    }

    /// The loop wrote `trial_id`'s state itself: write its substate again at the next sync.
    pub(in crate::cluster) fn forget_trial(&mut self, trial_id: i32) {
        self.trials.remove(&trial_id);
    }
}

impl Orchestrator {
    /// A trial's substate from its allocation: `None` without one (paused, between runs).
    fn trial_substate(&self, trial_id: i32) -> Option<TrialState> {
        let allocation_id = self.trials.get(&trial_id)?.allocation.as_ref()?;
        let allocation = self.allocations.get(allocation_id)?;
        Some(if allocation.running {
            TrialState::Running
        } else if allocation.started() {
            TrialState::Starting
        } else {
            TrialState::Queued
        })
    }

    /// Writes every live trial's and active experiment's substate that changed since the last call.
    pub(in crate::cluster) async fn sync_display_states(&mut self) {
        if let Err(e) = self.try_sync_display_states().await {
            tracing::error!(error = %e, "recording trial and experiment states failed");
        }
    }

    async fn try_sync_display_states(&mut self) -> LoopResult<()> {
        let mut trials: Vec<(i32, i32, Option<TrialState>)> = self.trials.iter().map(|(id, t)| (*id, t.experiment_id, None)).collect();
        for entry in &mut trials {
            entry.2 = self.trial_substate(entry.0);
        }
        let mut best: HashMap<i32, TrialState> = HashMap::new();
        for &(trial_id, experiment_id, substate) in &trials {
            let Some(substate) = substate else {
                // Paused or between runs: the next allocation writes its state afresh.
                self.display.trials.remove(&trial_id);
                continue;
            };
            let top = best.entry(experiment_id).or_insert(substate);
            if rank(substate) > rank(*top) {
                *top = substate;
            }
            if self.display.trials.get(&trial_id) != Some(&substate) {
                self.store.update_trial_state_if(trial_id, &ACTIVE_STATE_NAMES, substate.as_str(), None).await?;
                self.display.trials.insert(trial_id, substate);
            }
        }
        let live_trials: std::collections::HashSet<i32> = trials.iter().map(|t| t.0).collect();
        self.display.trials.retain(|id, _| live_trials.contains(id));

        let experiments: Vec<(i32, ExperimentState)> = self.experiments.values().map(|e| (e.id, e.state)).collect();
        for (experiment_id, state) in &experiments {
            if *state != ExperimentState::Active {
                self.display.experiments.remove(experiment_id);
                continue;
            }
            let wanted = best.get(experiment_id).map_or(ExperimentState::Active, |t| experiment_state_of(*t));
            if self.display.experiments.get(experiment_id) != Some(&wanted) {
                self.store.update_experiment_state_if(*experiment_id, &ACTIVE_STATE_NAMES, wanted.as_str(), None).await?;
                self.display.experiments.insert(*experiment_id, wanted);
            }
        }
        self.display.experiments.retain(|id, _| self.experiments.contains_key(id));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_experiment_shows_its_most_advanced_trial() {
        let mut states = [TrialState::Queued, TrialState::Running, TrialState::Starting];
        states.sort_by_key(|s| std::cmp::Reverse(rank(*s)));
        assert_eq!(experiment_state_of(states[0]), ExperimentState::Running);
        assert_eq!(experiment_state_of(TrialState::Queued), ExperimentState::Queued);
        assert_eq!(experiment_state_of(TrialState::Paused), ExperimentState::Active);
    }
}
