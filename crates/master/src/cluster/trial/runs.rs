//! What the trial kind keeps in memory about experiments and trials. The store is
//! the record; these hold what the store does not (searcher objects, connections, flags that only
//! matter while a process runs).

use std::collections::BTreeMap;
use std::sync::Arc;

use resolute_expconf::ExperimentConfig;
use resolute_searcher::{LengthUnit, RequestId, Searcher};
use serde_json::Value;

use crate::domain::ExperimentState;

pub(in crate::cluster) struct ExperimentRun {
    pub id: i32,
    pub state: ExperimentState,
    pub config: ExperimentConfig,
    pub config_json: Value,
    pub owner: String,
    pub owner_id: i32,
    pub job_id: String,
    pub searcher: Searcher,
    pub length_unit: Option<LengthUnit>,
    /// The whole training length a trial of this search gets, in `length_unit` (`None` for PBT,
    /// whose stops are all early, and for searches without a length).
    pub full_length: Option<u64>,
    /// Each trial's latest validated progress, in `length_unit`.
    pub progress: BTreeMap<RequestId, u64>,
    /// Set once the searcher said `Shutdown`: whether the search failed.
    pub search_over: Option<bool>,
    /// `initial_operations` ran (now or before a master restart).
    pub search_started: bool,
    pub trials: BTreeMap<RequestId, i32>,
    /// Loaded on first launch.
    pub model_definition_b64: Option<Arc<String>>,
    /// The search progress last written to the store.
    pub stored_progress: Option<f64>,
    /// The searcher moved since its snapshot was last stored; the loop stores it once per batch
    /// of events (`flush_searchers`), before it launches anything the searcher created.
    pub snapshot_dirty: bool,
}

impl ExperimentRun {
    /// The searcher's progress when it moved enough since the last write to be worth storing
    /// (every tenth of a percent, and always the end): progress reports arrive many times per
    /// trial, and each write contends for the store.
    pub fn progress_to_store(&mut self) -> Option<f64> {
        if !progress_moves(self.state) {
            return None;
        }
        let now = self.searcher.progress();
        let moved = self.stored_progress.is_none_or(|before| (now - before).abs() >= 0.001 || (now >= 1.0 && before < 1.0));
        moved.then(|| {
            self.stored_progress = Some(now);
            now
        })
    }

    pub fn slots(&self) -> u32 {
        self.config.resources.slots_per_trial
    }

    /// The pool the experiment names; empty: the resource manager's default.
    pub fn resource_pool(&self) -> String {
        self.config.resources.resource_pool.clone()
    }
}

/// Whether the search's progress is still worth recording in `state`. A canceled or killed
/// experiment keeps the progress it had: its trials closing early would otherwise read as a
/// finished search (100 %).
fn progress_moves(state: ExperimentState) -> bool {
    !matches!(state, ExperimentState::StoppingCanceled | ExperimentState::StoppingKilled | ExperimentState::Canceled)
}

pub(in crate::cluster) struct TrialRun {
    pub experiment_id: i32,
    pub request_id: RequestId,
    pub task_id: String,
    pub run_id: i32,
    pub restarts: u32,
    pub hparams: Value,
    pub seed: i64,
    /// The current allocation (queued or running).
    pub allocation: Option<String>,
    /// A user killed it.
    pub killed: bool,
    /// The searcher stopped it early.
    pub searcher_stopped: bool,
    /// It reported invalid hyperparameters.
    pub invalid_hp: bool,
    /// The checkpoint the trial starts from until it has its own (`searcher.source_*`, or a PBT
    /// child's parent's checkpoint at the round's end); GC keeps it while the trial lives.
    pub warm_start: Option<String>,
    /// The trial this one was copied from (PBT).
    pub warm_start_parent: Option<i32>,
    /// A PBT child whose parent has not yet stored its checkpoint at the round's end: the parent's
    /// steps at that end. The child is not queued until the checkpoint is known.
    pub awaiting_checkpoint_at: Option<i64>,
    /// PBT: the trial finished a round the population has not; it waits, checkpointed, for the
    /// round's decision instead of training on.
    pub held_for_round: bool,
    /// PBT: the steps of the first validation at or past each round's end (index = round).
    pub round_steps: Vec<i64>,
    /// What its `log_policies` decided (`log_policy.rs`).
    pub log_policy: super::log_policy::LogPolicyState,
}

impl TrialRun {
    /// Whether the trial may be queued now.
    pub fn may_run(&self) -> bool {
        !self.held_for_round && self.awaiting_checkpoint_at.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::progress_moves;
    use crate::domain::ExperimentState;

    #[test]
    fn a_canceled_or_killed_search_keeps_its_progress() {
        for state in [ExperimentState::StoppingCanceled, ExperimentState::StoppingKilled, ExperimentState::Canceled] {
            assert!(!progress_moves(state), "{state:?}");
        }
        for state in [ExperimentState::Active, ExperimentState::Paused, ExperimentState::StoppingCompleted, ExperimentState::Completed] {
            assert!(progress_moves(state), "{state:?}");
        }
    }
}
