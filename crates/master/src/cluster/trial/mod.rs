//! The trial kind: experiments and their searchers (`experiment_flow`), a trial's allocations
//! (`trial_flow`), the environment its harness process gets (`task_env`) and what its exit means
//! (`exit`), where a trial starts from (`warm_start`: `searcher.source_*`, PBT children and
//! the rounds PBT members wait at), what its log policies decided (`log_policy`). The loop calls into it through the `AllocationOwner::Trial` arms in `allocations.rs`.

pub(super) mod display_state;
mod exit;
mod experiment_flow;
pub(super) mod log_policy;
pub(super) mod runs;
mod task_env;
mod trial_flow;
mod warm_start;
