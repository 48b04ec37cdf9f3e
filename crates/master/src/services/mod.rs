//! Business rules, independent of HTTP: handlers parse and render, services decide.

pub mod allocation_tokens;
mod auth;
pub mod checkpoint_gc;
pub mod checkpoint_storage;
mod experiment_changes;
mod experiment_items;
pub mod experiment_state;
mod experiments;
pub mod metric_reporters;
mod metrics_writer;
pub mod model_def;
mod search_preview;
mod session_cache;
mod task_logs;
mod tasks;
pub mod trial_runtime;
mod trial_runtime_access;
pub mod trial_runtime_allocations;
pub mod trial_runtime_checkpoints;
mod users;
mod workloads;

pub use allocation_tokens::{AllocationPrincipal, authenticate_allocation_token, issue_allocation_token};
pub use auth::{AuthService, Principal};
pub use experiment_changes::ExperimentChanges;
pub use experiment_items::{CheckpointListQuery, CheckpointView, TrialListQuery, TrialView};
pub use experiments::{CreatedExperiment, ExperimentListQuery, ExperimentService, ExperimentView, ListPage, NewExperimentRequest};
pub use metric_reporters::MetricsCaller;
pub use search_preview::SearchPreview;
pub use session_cache::SessionCache;
pub use task_logs::{LogBatches, LogStreamRequest, LogSubject, TaskLogService};
pub use tasks::{ActiveTaskCounts, OpenAllocation, TaskService};
pub use trial_runtime::TrialRuntimeService;
pub use trial_runtime_access::{Access, RuntimeCaller};
pub use users::{NewUserRequest, UserChanges, UserListQuery, UserService, validate_username};
pub use workloads::{Workload, WorkloadKinds, WorkloadQuery, trial_workloads};
