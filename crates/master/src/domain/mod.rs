//! The master's domain vocabulary: the lifecycle states of experiments, trials, allocations and
//! checkpoints, and the kinds of task. Both `services` and `cluster` speak these types; the
//! upstream `STATE_*` / `TASK_TYPE_*` strings appear only at the edges (store rows, wire types),
//! through `as_str` and `parse`.

pub mod experiment_state;
pub mod generic_task;
pub mod hp_importance;
pub mod search_config;
mod states;
pub mod task_container_defaults;
pub mod task_service;

pub use experiment_state::{ExperimentAction, ExperimentState};
pub use resolute_api::task_type::TaskType;
pub use states::{ACTIVE_STATE_NAMES, AllocationState, CheckpointState, TrialState, is_active_state_name, widen_active_filter};
