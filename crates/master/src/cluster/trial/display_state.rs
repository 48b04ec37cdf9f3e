//! The QUEUED / STARTING / RUNNING substates of an active trial and experiment, as upstream
//! reports them: a trial is QUEUED while its allocation waits for resources, STARTING once placed,
//! RUNNING once its process runs; an active experiment shows the most advanced of its trials'
//! (RUNNING over STARTING over QUEUED; ACTIVE when none has an allocation). The loop keeps reasoning
//! with `ACTIVE` (`ExperimentState::intent`); these states are written to the store after every
//! event, only when they change, and only over another active state, so they never undo a pause or
//! a stop the API stored meanwhile.

use std::collections::{HashMap, HashSet};

use crate::cluster::allocations::AllocationOwner;
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
    /// Every trial with a current allocation, with its substate (QUEUED, STARTING or RUNNING) and
    /// its experiment. A trial without one (paused, between runs) has none. Visits the
    /// allocations, not every trial the loop knows: a cluster with thousands of paused
    /// experiments pays nothing for them after each event.
    fn trial_substates(&self) -> Vec<(i32, i32, TrialState)> {
        let mut out = Vec::with_capacity(self.allocations.len());
        for (allocation_id, allocation) in &self.allocations {
            let AllocationOwner::Trial(trial_id) = allocation.owner else { continue };
            let Some(trial) = self.trials.get(&trial_id) else { continue };
            // An allocation the trial has moved on from (ending) says nothing of its state.
            if trial.allocation.as_deref() != Some(allocation_id.as_str()) {
                continue;
            }
            let substate = if allocation.running {
                TrialState::Running
            } else if allocation.started() {
                TrialState::Starting
            } else {
                TrialState::Queued
            };
            out.push((trial_id, trial.experiment_id, substate));
        }
        out
    }

    /// Writes every live trial's and active experiment's substate that changed since the last call.
    pub(in crate::cluster) async fn sync_display_states(&mut self) {
        if let Err(e) = self.try_sync_display_states().await {
            tracing::error!(error = %e, "recording trial and experiment states failed");
        }
    }

    async fn try_sync_display_states(&mut self) -> LoopResult<()> {
        let trials = self.trial_substates();
        // Paused or between runs (or gone): the next allocation writes its state afresh.
        let with_substate: HashSet<i32> = trials.iter().map(|t| t.0).collect();
        self.display.trials.retain(|id, _| with_substate.contains(id));
        let mut best: HashMap<i32, TrialState> = HashMap::new();
        // The trials that changed, by substate: one store write per substate, not per trial (a
        // wave of 64 launches changes 64 trials in one batch).
        let mut changed: Vec<(TrialState, Vec<i32>)> = Vec::new();
        for &(trial_id, experiment_id, substate) in &trials {
            let top = best.entry(experiment_id).or_insert(substate);
            if rank(substate) > rank(*top) {
                *top = substate;
            }
            if self.display.trials.get(&trial_id) != Some(&substate) {
                match changed.iter_mut().find(|(state, _)| *state == substate) {
                    Some((_, ids)) => ids.push(trial_id),
                    None => changed.push((substate, vec![trial_id])),
                }
            }
        }
        for (substate, ids) in changed {
            self.store.update_trial_states_if(&ids, &ACTIVE_STATE_NAMES, substate.as_str()).await?;
            self.display.trials.extend(ids.into_iter().map(|id| (id, substate)));
        }

        // Only an active experiment shows a substate; any other (or a gone one) is forgotten.
        let experiments = &self.experiments;
        self.display.experiments.retain(|id, _| experiments.get(id).is_some_and(|e| e.state == ExperimentState::Active));
        let active: Vec<i32> = self.experiments.values().filter(|e| e.state == ExperimentState::Active).map(|e| e.id).collect();
        for experiment_id in active {
            let wanted = best.get(&experiment_id).map_or(ExperimentState::Active, |t| experiment_state_of(*t));
            if self.display.experiments.get(&experiment_id) != Some(&wanted) {
                self.store.update_experiment_state_if(experiment_id, &ACTIVE_STATE_NAMES, wanted.as_str(), None).await?;
                self.display.experiments.insert(experiment_id, wanted);
            }
        }
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
