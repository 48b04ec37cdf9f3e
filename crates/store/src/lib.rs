//! Persistence for the master, behind one trait.
//!
//! [`Store`] is the only way the master touches durable state. [`SqlStore`] implements it for
//! embedded SQLite (the zero-set-up default) and for PostgreSQL: queries are written once in the
//! SQL both dialects share and run against whichever pool is configured; the schema lives in
//! per-dialect migration folders applied at start-up. `tests/conformance.rs` runs the same suite
//! against both backends.
//!
//! Invariants: no SQL text or driver error ever leaves this crate except inside
//! [`StoreError::Backend`], whose `Display` is deliberately generic; callers map it to a 500
//! without showing details to clients.

mod agent_control_store;
mod cluster_store;
mod config_summary;
mod error;
mod idle_hook;
mod job_queue_store;
mod log_chunk;
mod model;
mod model_checkpoints;
mod model_commands;
mod model_experiments;
mod model_logs;
mod model_metrics;
mod model_registry;
mod model_runs;
mod model_series;
mod model_tasks;
mod model_trials;
mod model_webhooks;
mod model_workloads;
mod model_workspaces;
mod sql;
mod stored_json;
mod summary;
mod webhook_store;

pub use agent_control_store::{AgentControlRecord, AgentControlStore};
pub use cluster_store::{
    ALLOCATION_USAGE_LIMIT, AllocationUsageRecord, ClusterMessageRecord, ClusterStore, NewClusterMessage, StateCount, StateCounts,
};
pub use config_summary::config_summary_text;
pub use error::{StoreError, StoreResult};
pub use idle_hook::set_thread_idle_hook;
pub use job_queue_store::{JobQueuePositionRecord, JobQueueStore};
pub use log_chunk::{LOG_LEVELS, NewLogChunk};
pub use model::{
    AgentUserGroup, AuthenticatedSession, NewSession, NewUser, OrderDirection, RevokeSessions, SessionRecord, TaskUserGroups,
    TaskWorkspaceOf, UserFilter, UserPage, UserPatch, UserRecord, UserSort,
};
pub use model_checkpoints::{
    CHECKPOINT_COMPLETED, CheckpointFilter, CheckpointGcPolicy, CheckpointPage, CheckpointRecord, CheckpointSort, NewCheckpoint,
};
pub use model_commands::{CommandTaskFilter, CommandTaskRecord, NewCommandTask, NewTemplate, TemplateFilter, TemplateRecord};
pub use model_experiments::{
    DEFAULT_PROJECT_ID, DEFAULT_WORKSPACE_ID, ExperimentFilter, ExperimentPage, ExperimentPatch, ExperimentRecord, ExperimentSort,
    NewExperiment,
};
pub use model_logs::{LogFields, LogFilter, LogRecord, NewLogLine};
pub use model_metrics::{
    BestValidation, CurrentMetricReport, MetricAdmission, MetricRecord, NewMetricReport, SearcherMetric, TRAINING_GROUP, VALIDATION_GROUP,
};
pub use model_registry::{
    ModelFilter, ModelPatch, ModelRecord, ModelSort, ModelVersionFilter, ModelVersionPatch, ModelVersionRecord, ModelVersionSort, NewModel,
    NewModelVersion,
};
pub use model_runs::{RunColumn, RunDeletion, RunFilterExpr, RunFilterOp, RunFilterValue, RunPage, RunQuery, RunRecord, RunSortKey};
pub use model_series::{MetricSeries, MetricSeriesBuilder, Reported, SeriesColumn};
pub use model_tasks::{
    AllocationPatch, AllocationRecord, AllocationSessionRecord, AuthenticatedAllocation, NewAllocation, NewAllocationSession, NewTask,
    TaskFilter, TaskRecord, TaskWithAllocations,
};
pub use model_trials::{NewTrial, NewUnmanagedTrial, TrialFilter, TrialPage, TrialRecord, TrialRunStart, TrialSort};
pub use model_webhooks::{
    DeliveryOutcome, NewLogEvent, NewWebhook, NewWebhookTrigger, TRIGGER_CUSTOM, TRIGGER_EXPERIMENT_STATE_CHANGE, TRIGGER_TASK_LOG,
    WebhookEventRecord, WebhookEventStatus, WebhookRecord, WebhookTriggerRecord,
};
pub use model_workloads::{MetricPageQuery, WorkloadFilter, WorkloadPage, WorkloadRecord};
pub use model_workspaces::{
    Deletion, NewProject, NewWorkspace, ProjectFilter, ProjectPatch, ProjectRecord, ProjectSort, ProjectSummary,
    WORKSPACE_STATE_DELETE_FAILED, WORKSPACE_STATE_DELETING, WORKSPACE_STATE_UNSPECIFIED, WorkspaceFilter, WorkspacePatch, WorkspaceRecord,
    WorkspaceSort,
};
pub use sql::BestTrialValue;
pub use sql::UnmanagedStart;
pub use sql::{PoolLifetime, PostgresOptions, SqlStore};
pub use stored_json::StoredJson;
pub use webhook_store::WebhookStore;

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Everything the master persists. Implementations must be safe to share across tasks.
#[async_trait]
pub trait Store: WebhookStore + ClusterStore + AgentControlStore + JobQueueStore + Send + Sync + 'static {
    /// Which backend this is, for logs ("sqlite" or "postgres").
    fn backend(&self) -> &'static str;

    /// The cluster's identity, created on first start and stable afterwards.
    async fn cluster_id(&self) -> StoreResult<String>;

    // ---- users ----

    /// Creates a user; `StoreError::Conflict` when the username is taken.
    async fn create_user(&self, user: NewUser) -> StoreResult<UserRecord>;
    /// Creates the user unless one with that name exists; returns whether it was created.
    async fn create_user_if_absent(&self, user: NewUser) -> StoreResult<bool>;
    async fn user_by_id(&self, id: i32) -> StoreResult<UserRecord>;
    async fn user_by_name(&self, username: &str) -> StoreResult<UserRecord>;
    async fn list_users(&self, filter: &UserFilter) -> StoreResult<UserPage>;
    /// Applies the fields set in `patch`, and ends the sessions `patch.revoke_sessions` names, in
    /// one transaction; `Conflict` on a taken new username; `Precondition` (nothing written) when
    /// the change would leave no active admin (demoting or deactivating the last one).
    async fn update_user(&self, id: i32, patch: &UserPatch) -> StoreResult<UserRecord>;
    async fn record_login(&self, user_id: i32, at: DateTime<Utc>) -> StoreResult<()>;

    // ---- sessions ----

    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord>;
    /// The session with this token hash and its user, if any (expired ones included: the caller
    /// decides).
    async fn session_by_token_hash(&self, token_hash: &str) -> StoreResult<Option<AuthenticatedSession>>;
    async fn delete_session(&self, id: i64) -> StoreResult<()>;
    /// Removes sessions that expired before `now`; returns how many.
    async fn delete_expired_sessions(&self, now: DateTime<Utc>) -> StoreResult<u64>;

    // ---- workspaces and projects ----

    async fn project_by_id(&self, id: i32) -> StoreResult<ProjectRecord>;
    async fn project_by_names(&self, workspace: &str, project: &str) -> StoreResult<ProjectRecord>;
    /// Every workspace, by id, with its project and experiment counts.
    async fn list_workspaces(&self) -> StoreResult<Vec<WorkspaceRecord>>;
    /// One workspace; `pinned` as `viewer_id` sees it.
    async fn workspace_by_id(&self, id: i32, viewer_id: i32) -> StoreResult<WorkspaceRecord>;
    /// The agent user groups a task's processes may run as: its workspace's (the workspace of
    /// `of`) and its owner's (`owner_id`'s link), read in one statement when the task is launched.
    async fn task_user_groups(&self, of: TaskWorkspaceOf<'_>, owner_id: Option<i32>) -> StoreResult<TaskUserGroups>;
    /// A page of workspaces and the total matching the filter.
    async fn workspace_page(&self, filter: &WorkspaceFilter) -> StoreResult<(Vec<WorkspaceRecord>, i64)>;
    /// `Conflict` for a taken name, `NotFound` for an unknown creator.
    async fn create_workspace(&self, workspace: NewWorkspace) -> StoreResult<WorkspaceRecord>;
    /// `Precondition` for the built-in workspace, `Conflict` for a taken name.
    async fn patch_workspace(&self, id: i32, patch: &WorkspacePatch) -> StoreResult<()>;
    async fn set_workspace_archived(&self, id: i32, archived: bool) -> StoreResult<()>;
    /// Pins (`Some(time)`) or unpins the workspace for one user.
    async fn set_workspace_pinned(&self, id: i32, user_id: i32, pinned: Option<DateTime<Utc>>) -> StoreResult<()>;
    /// Deletes it with everything in it, or records why not (see [`Deletion`]).
    async fn delete_workspace(&self, id: i32) -> StoreResult<Deletion>;
    /// Starts a background deletion: refused (recorded as [`delete_workspace`](Store::delete_workspace)
    /// records it) while an experiment is unfinished or a task open, else the workspace is marked
    /// `WORKSPACE_STATE_DELETING`. Returns the refusal, or `None` once marked.
    async fn begin_workspace_deletion(&self, id: i32) -> StoreResult<Option<String>>;
    /// `Conflict` for a name taken in the workspace or a taken key.
    async fn create_project(&self, project: NewProject) -> StoreResult<ProjectRecord>;
    async fn project_summary(&self, id: i32) -> StoreResult<ProjectSummary>;
    /// A page of one workspace's projects and the total matching the filter.
    async fn project_page(&self, filter: &ProjectFilter) -> StoreResult<(Vec<ProjectSummary>, i64)>;
    async fn patch_project(&self, id: i32, patch: &ProjectPatch) -> StoreResult<ProjectRecord>;
    async fn set_project_archived(&self, id: i32, archived: bool) -> StoreResult<()>;
    async fn delete_project(&self, id: i32) -> StoreResult<Deletion>;
    /// `NotFound` names the experiment or the destination project.
    async fn move_experiment(&self, experiment_id: i32, project_id: i32) -> StoreResult<()>;
    /// Replaces the project's notes (`[{"name", "contents"}]`); the built-in project too, as
    /// upstream. `NotFound` for an unknown project.
    async fn set_project_notes(&self, id: i32, notes: &Value) -> StoreResult<()>;

    // ---- experiments ----
    // State changes write `end_time` as given: a terminal state sets it, any other clears it.

    /// `NotFound` names the missing project, owner or parent experiment.
    async fn create_experiment(&self, experiment: NewExperiment) -> StoreResult<ExperimentRecord>;
    async fn experiment_by_id(&self, id: i32) -> StoreResult<ExperimentRecord>;
    /// The model definition as stored (tar.gz bytes).
    async fn experiment_model_definition(&self, id: i32) -> StoreResult<Vec<u8>>;
    /// Records without `original_config` (empty): `experiment_by_id` reads it.
    async fn list_experiments(&self, filter: &ExperimentFilter) -> StoreResult<ExperimentPage>;
    /// Writes the state unconditionally; the caller has checked the transition.
    async fn update_experiment_state(&self, id: i32, state: &str, end_time: Option<DateTime<Utc>>) -> StoreResult<()>;
    /// Compare-and-set: moves to `to` only from one of `from`; returns whether it did.
    async fn update_experiment_state_if(&self, id: i32, from: &[&str], to: &str, end_time: Option<DateTime<Utc>>) -> StoreResult<bool>;
    async fn set_experiment_archived(&self, id: i32, archived: bool) -> StoreResult<()>;
    async fn set_experiment_labels(&self, id: i32, labels: &[String]) -> StoreResult<()>;
    async fn patch_experiment(&self, id: i32, patch: &ExperimentPatch) -> StoreResult<ExperimentRecord>;
    /// Stores the searcher's snapshot, given as JSON text (`Searcher::snapshot_json`).
    async fn save_searcher_snapshot(&self, id: i32, snapshot: &str) -> StoreResult<()>;
    /// The last saved searcher snapshot, if any.
    async fn searcher_snapshot(&self, id: i32) -> StoreResult<Option<Value>>;
    async fn set_experiment_progress(&self, id: i32, progress: Option<f64>) -> StoreResult<()>;
    async fn set_experiment_end_reason(&self, id: i32, reason: Option<&str>) -> StoreResult<()>;
    /// Deletes the experiment with its trials, metrics, checkpoint rows, and its trials' tasks,
    /// allocations and logs, in one transaction.
    async fn delete_experiment(&self, id: i32) -> StoreResult<()>;

    // ---- trials ----

    /// `Conflict` on a reused request id (per experiment) or task id.
    async fn create_trial(&self, trial: NewTrial) -> StoreResult<TrialRecord>;
    async fn trial_by_id(&self, id: i32) -> StoreResult<TrialRecord>;
    async fn trial_by_task_id(&self, task_id: &str) -> StoreResult<TrialRecord>;
    async fn list_trials(&self, filter: &TrialFilter) -> StoreResult<TrialPage>;
    /// The experiment's trial ids, ascending (an experiment's describe: no trial row read whole).
    async fn experiment_trial_ids(&self, experiment_id: i32) -> StoreResult<Vec<i32>>;
    /// Each listed experiment's best searcher-metric validation (`trials.best_validation`) and its
    /// trial, given `(experiment id, smaller_is_better)`; experiments without one are left out
    /// (`sql/best_validations.rs`). One query for a page of experiments.
    async fn best_validations(&self, experiments: &[(i32, bool)]) -> StoreResult<Vec<BestTrialValue>>;

    // ---- runs (the runs API's view of trials) ----

    /// A page of runs with their experiment's, project's and workspace's fields, and the total.
    async fn search_runs(&self, query: &RunQuery) -> StoreResult<RunPage>;
    /// Sets a run's own `archived` flag; returns the ids changed, ascending.
    async fn set_runs_archived(&self, ids: &[i32], archived: bool) -> StoreResult<Vec<i32>>;
    /// Deletes runs (metrics, checkpoint rows, tasks, logs) in one transaction, keeping those
    /// holding a registered checkpoint.
    async fn delete_runs(&self, ids: &[i32]) -> StoreResult<RunDeletion>;
    async fn update_trial_state(&self, id: i32, state: &str, end_time: Option<DateTime<Utc>>) -> StoreResult<()>;
    /// Compare-and-set: moves to `to` only from one of `from`; returns whether it did.
    async fn update_trial_state_if(&self, id: i32, from: &[&str], to: &str, end_time: Option<DateTime<Utc>>) -> StoreResult<bool>;
    /// The compare-and-set of many trials at once (end time cleared): those of `ids` in one of
    /// `from` move to `to`; the others, and ids of no trial, are left alone. Returns how many moved.
    async fn update_trial_states_if(&self, ids: &[i32], from: &[&str], to: &str) -> StoreResult<u64>;
    /// A failed run is replaced: `restarts` and `run_id` both go up by one.
    async fn record_trial_restart(&self, id: i32) -> StoreResult<TrialRecord>;
    /// A new run that is not a failure (resume after pause or preemption): `run_id` + 1.
    async fn advance_trial_run(&self, id: i32) -> StoreResult<TrialRecord>;
    async fn set_trial_runner_state(&self, id: i32, runner_state: &str) -> StoreResult<()>;
    async fn set_trial_progress(&self, id: i32, progress: Option<f64>) -> StoreResult<()>;
    async fn set_trial_end_reason(&self, id: i32, reason: Option<&str>) -> StoreResult<()>;
    /// Continues a finished experiment in one transaction (`sql/experiment_continue.rs`): only
    /// from `from_state` (`NotFound` otherwise), to `to_state` with `config`, progress 0 and no
    /// end time; every trial's restarts zeroed and end time cleared; the `reopen` trials set to
    /// `reopened_state` on a new run with their tasks open again.
    async fn continue_experiment(
        &self,
        id: i32,
        from_state: &str,
        to_state: &str,
        config: &serde_json::Value,
        reopen: &[i32],
        reopened_state: &str,
    ) -> StoreResult<()>;
    /// Records the checkpoint the trial starts from (a warm start; `sql/trial_warm_start.rs`).
    async fn set_trial_warm_start(&self, id: i32, checkpoint_uuid: &str) -> StoreResult<()>;
    /// A run of the trial is being placed at `at`: sets the trial's start time unless one of its
    /// task's allocations was already placed on an agent (call it before recording this
    /// placement), and reads where the run resumes (the trial's latest checkpoint).
    async fn start_trial_run(&self, id: i32, at: DateTime<Utc>) -> StoreResult<TrialRunStart>;

    // ---- unmanaged (detached) experiments and trials: `sql/unmanaged.rs` ----
    /// The experiment with this external id, and whether it is unmanaged.
    async fn experiment_id_by_external_id(&self, external_id: &str) -> StoreResult<Option<(i32, bool)>>;
    /// Gives the experiment its external id; `Conflict` when another one has it.
    async fn set_experiment_external_id(&self, id: i32, external_id: &str) -> StoreResult<()>;
    /// The experiment's external id, if it has one.
    async fn experiment_external_id(&self, id: i32) -> StoreResult<Option<String>>;
    /// Replaces an unmanaged experiment's config and name (a re-run sends its config again).
    async fn set_unmanaged_experiment_config(&self, id: i32, config: &serde_json::Value, name: &str) -> StoreResult<()>;
    /// Creates an unmanaged trial and its task, or returns the one with the same external id.
    async fn create_unmanaged_trial(&self, trial: NewUnmanagedTrial) -> StoreResult<TrialRecord>;
    /// The trial with these external ids.
    async fn trial_id_by_external_ids(&self, external_experiment_id: &str, external_trial_id: &str) -> StoreResult<i32>;
    /// Starts an unmanaged trial on a new run (RUNNING); the experiment's state follows.
    async fn start_unmanaged_trial(&self, id: i32, resume: bool, at: DateTime<Utc>) -> StoreResult<UnmanagedStart>;
    /// A heartbeat, or a state its script reports; the experiment's state follows.
    async fn touch_unmanaged_trial(&self, id: i32, state: Option<&str>, at: DateTime<Utc>) -> StoreResult<()>;
    /// RUNNING unmanaged trials without a heartbeat since `cutoff` end in ERROR; their ids.
    async fn mark_lost_unmanaged_trials(&self, cutoff: DateTime<Utc>, at: DateTime<Utc>) -> StoreResult<Vec<i32>>;

    // ---- metrics ----

    /// Inserts the reports in one transaction, applying the restart rollback rule per trial,
    /// group and run, and updating each trial's `summary_metrics`, `total_batches` and
    /// `best_validation`. `NotFound` (and nothing written) when a trial does not exist.
    async fn insert_metrics(&self, reports: &[NewMetricReport]) -> StoreResult<()>;
    /// Like `insert_metrics`, for reports from running tasks (one transaction for many callers):
    /// each report is checked in the transaction (its trial exists, its run is the trial's
    /// current one, its allocation session is still open) and only admitted ones are stored.
    /// Returns one admission per report, in order; an `Err` means nothing was written.
    async fn insert_metrics_if_current(&self, reports: &[CurrentMetricReport]) -> StoreResult<Vec<MetricAdmission>>;
    /// Metric batches may leave a trial's summary columns behind for a moment (readers see the
    /// current values regardless): writes those that have been behind for an interval (all of
    /// them with `force`). Call periodically and before shutting down; returns rows written.
    async fn flush_metric_summaries(&self, force: bool) -> StoreResult<u64>;
    /// Archives the trial's live metrics (of `group`, or all) from runs before `run_id` with
    /// more than `steps_completed` steps, as when a run restores a checkpoint; returns how many.
    async fn archive_metrics_after(&self, trial_id: i32, run_id: i32, steps_completed: i64, group: Option<&str>) -> StoreResult<u64>;
    /// The trial's reports (of `group`, or all) by steps completed.
    async fn metrics_for_trial(&self, trial_id: i32, group: Option<&str>, include_archived: bool) -> StoreResult<Vec<MetricRecord>>;
    /// A keyset page of the trial's live reports by `(steps_completed, id)`: reads only the
    /// rows it returns.
    async fn metrics_page(&self, query: &MetricPageQuery) -> StoreResult<Vec<MetricRecord>>;
    /// The trial's live reports of `group` in step order as columns (what a metric chart
    /// downsamples). Repeated reads of an unchanged series are answered from memory.
    async fn metric_series(&self, trial_id: i32, group: &str) -> StoreResult<std::sync::Arc<MetricSeries>>;
    /// A page of the trial's workloads (live reports of the filter's groups and checkpoints),
    /// ordered and cut in SQL; only the page's rows are read whole. Ties in the order go by
    /// batches, then training before validation before checkpoint, then report time.
    async fn trial_workloads(&self, trial_id: i32, filter: &WorkloadFilter) -> StoreResult<WorkloadPage>;
    /// Metric rows this store has decoded since it opened (a cost counter for tests and
    /// benchmarks: a paged read must not grow it by more than its page).
    fn metric_rows_decoded(&self) -> u64 {
        0
    }
    /// The live validation report with the most steps.
    async fn latest_validation(&self, trial_id: i32) -> StoreResult<Option<MetricRecord>>;
    /// The best live validation value of `metric_name` across the experiment's trials.
    async fn best_validation_for_experiment(
        &self,
        experiment_id: i32,
        metric_name: &str,
        smaller_is_better: bool,
    ) -> StoreResult<Option<BestValidation>>;

    // ---- checkpoints ----

    /// Records a checkpoint (a repeated uuid replaces the earlier report) and, when completed,
    /// makes it its trial's latest unless that one has more steps.
    async fn report_checkpoint(&self, checkpoint: NewCheckpoint) -> StoreResult<CheckpointRecord>;
    /// `report_checkpoint` for many, in one transaction: all or nothing. `Conflict` when the
    /// batch repeats a uuid; `NotFound` when a trial or experiment does not exist.
    async fn report_checkpoints(&self, checkpoints: &[NewCheckpoint]) -> StoreResult<()>;
    async fn checkpoint_by_uuid(&self, uuid: &str) -> StoreResult<CheckpointRecord>;
    async fn list_checkpoints(&self, filter: &CheckpointFilter) -> StoreResult<CheckpointPage>;
    /// How many of the experiment's checkpoints are in `state`, and their total size, in one
    /// aggregate (no row read whole).
    async fn checkpoint_totals(&self, experiment_id: i32, state: &str) -> StoreResult<(i64, i64)>;
    /// Sets the state of every listed checkpoint that exists; returns how many.
    async fn set_checkpoints_state(&self, uuids: &[String], state: &str) -> StoreResult<u64>;
    /// After files were deleted from storage: the remaining resources (size follows) and state.
    async fn set_checkpoint_resources(&self, uuid: &str, resources: &BTreeMap<String, i64>, state: &str) -> StoreResult<()>;
    /// The completed checkpoints of the experiment that `policy` does not keep, by uuid.
    async fn checkpoints_to_gc(&self, experiment_id: i32, policy: &CheckpointGcPolicy) -> StoreResult<Vec<String>>;
    /// The experiment's completed trial checkpoints without a searcher metric, as
    /// `(uuid, trial id, steps completed)`, by uuid.
    async fn checkpoints_missing_metric(&self, experiment_id: i32) -> StoreResult<Vec<(String, i32, i64)>>;
    /// Sets a checkpoint's searcher metric (what GC ranks by).
    async fn set_checkpoint_searcher_metric(&self, uuid: &str, value: f64) -> StoreResult<()>;
    /// Replaces a checkpoint's user metadata (`sql/checkpoint_edits.rs`).
    async fn set_checkpoint_metadata(&self, uuid: &str, metadata: &serde_json::Value) -> StoreResult<()>;
    /// Replaces an experiment's stored (defaulted) config, as after a GC policy change.
    async fn set_experiment_config(&self, id: i32, config: &serde_json::Value) -> StoreResult<()>;

    // ---- task logs ----

    /// Appends the lines in one transaction, grouped into chunks of lines that share their ids
    /// and source.
    async fn insert_logs(&self, lines: &[NewLogLine]) -> StoreResult<()>;
    /// Appends the chunks in one transaction; each task's lines are numbered in the order given.
    /// Concurrent appends may share a transaction (group commit); each fails or succeeds whole.
    async fn insert_log_chunks(&self, chunks: Vec<NewLogChunk>) -> StoreResult<()>;
    async fn task_logs(&self, task_id: &str, filter: &LogFilter) -> StoreResult<Vec<LogRecord>>;
    /// The distinct values of a task's lines that filters can select on.
    async fn task_log_fields(&self, task_id: &str) -> StoreResult<LogFields>;

    // ---- tasks and allocations ----

    async fn create_task(&self, task: NewTask) -> StoreResult<TaskRecord>;
    async fn task_by_id(&self, task_id: &str) -> StoreResult<TaskWithAllocations>;
    /// Tasks by start time, each with its allocations.
    async fn list_tasks(&self, filter: &TaskFilter) -> StoreResult<Vec<TaskWithAllocations>>;
    async fn end_task(&self, task_id: &str, end_time: DateTime<Utc>) -> StoreResult<()>;
    async fn create_allocation(&self, allocation: NewAllocation) -> StoreResult<AllocationRecord>;
    async fn allocation_by_id(&self, allocation_id: &str) -> StoreResult<AllocationRecord>;
    async fn update_allocation(&self, allocation_id: &str, patch: &AllocationPatch) -> StoreResult<AllocationRecord>;
    async fn create_allocation_session(&self, session: NewAllocationSession) -> StoreResult<AllocationSessionRecord>;
    /// The session with this token hash, with its allocation and task, if any.
    async fn allocation_session_by_token_hash(&self, token_hash: &str) -> StoreResult<Option<AuthenticatedAllocation>>;
    /// Revokes every token of the allocation (when it ends); returns how many.
    async fn delete_allocation_sessions(&self, allocation_id: &str) -> StoreResult<u64>;

    // ---- command tasks (commands, notebooks, shells, TensorBoards, generic tasks) ----
    // Text with a NUL character is refused with `InvalidInput` (PostgreSQL cannot store it); a
    // lookup by such a key is `NotFound`. `NotFound` names the entity "task".

    /// Creates the `tasks` row and the command row in one transaction. `Conflict` when the task
    /// id is taken (by any task), `NotFound` for a missing owner or workspace; nothing is written
    /// on any failure.
    async fn create_command_task(&self, task: NewCommandTask) -> StoreResult<CommandTaskRecord>;
    /// `NotFound` for unknown ids and for tasks that are not command tasks (trials).
    async fn command_task_by_id(&self, task_id: &str) -> StoreResult<CommandTaskRecord>;
    /// The context archive as uploaded (empty when there was none).
    async fn command_task_context(&self, task_id: &str) -> StoreResult<Vec<u8>>;
    /// By start time, then task id.
    async fn list_command_tasks(&self, filter: &CommandTaskFilter) -> StoreResult<Vec<CommandTaskRecord>>;
    /// Sets the exit status and the `tasks` row's end time, in one transaction.
    async fn end_command_task(&self, task_id: &str, exit_status: &str, end_time: DateTime<Utc>) -> StoreResult<()>;
    async fn set_command_task_extra(&self, task_id: &str, extra: &Value) -> StoreResult<()>;
    async fn set_command_task_priority(&self, task_id: &str, priority: i32) -> StoreResult<()>;

    // ---- config templates ----

    /// Creates the template or replaces the one with that name; `NotFound` for a missing workspace.
    async fn put_template(&self, template: NewTemplate) -> StoreResult<TemplateRecord>;
    /// `NotFound` names the template.
    async fn template_by_name(&self, name: &str) -> StoreResult<TemplateRecord>;
    /// The page by name (bytewise) and the total matching the filter.
    async fn list_templates(&self, filter: &TemplateFilter) -> StoreResult<(Vec<TemplateRecord>, i64)>;
    /// `NotFound` when there is no template of that name.
    async fn delete_template(&self, name: &str) -> StoreResult<()>;

    // ---- model registry ----

    /// `Conflict` for a taken name, `NotFound` for a missing workspace.
    async fn create_model(&self, model: NewModel) -> StoreResult<ModelRecord>;
    async fn model_by_name(&self, name: &str) -> StoreResult<ModelRecord>;
    async fn model_by_id(&self, id: i32) -> StoreResult<ModelRecord>;
    /// The page and the total matching the filter.
    async fn list_models(&self, filter: &ModelFilter) -> StoreResult<(Vec<ModelRecord>, i64)>;
    /// `Conflict` when a new name is taken; sets `last_updated_time`.
    async fn update_model(&self, id: i32, patch: &ModelPatch) -> StoreResult<ModelRecord>;
    /// Deletes the model with its versions.
    async fn delete_model(&self, id: i32) -> StoreResult<()>;
    /// Registers the checkpoint as the model's next version (1 for the first); `NotFound` names
    /// a missing checkpoint.
    async fn create_model_version(&self, version: NewModelVersion) -> StoreResult<ModelVersionRecord>;
    async fn model_version(&self, model_id: i32, version: i32) -> StoreResult<ModelVersionRecord>;
    async fn list_model_versions(&self, model_id: i32, filter: &ModelVersionFilter) -> StoreResult<(Vec<ModelVersionRecord>, i64)>;
    async fn update_model_version(&self, model_id: i32, version: i32, patch: &ModelVersionPatch) -> StoreResult<ModelVersionRecord>;
    async fn delete_model_version(&self, model_id: i32, version: i32) -> StoreResult<()>;
    /// Those of `uuids` that a model version references (sorted): such checkpoints are never
    /// garbage-collected and their deletion is refused.
    async fn registered_checkpoints(&self, uuids: &[String]) -> StoreResult<Vec<String>>;
    /// The experiment's checkpoints that a model version references (sorted).
    async fn experiment_registered_checkpoints(&self, experiment_id: i32) -> StoreResult<Vec<String>>;
}

/// The current time at the precision both backends keep (microseconds), so a value written and
/// read back compares equal.
pub fn db_now() -> DateTime<Utc> {
    use chrono::{DurationRound, TimeDelta};
    let now = Utc::now();
    now.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(now)
}
