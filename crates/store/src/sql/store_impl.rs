//! Wires the per-concept query modules into the [`Store`] trait.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::lifecycle::Lifecycle;
use super::{Pool, SqlStore, UnmanagedStart};
use crate::Store;
use crate::error::StoreResult;
use crate::log_chunk::NewLogChunk;
use crate::model::{
    AuthenticatedSession, NewSession, NewUser, SessionRecord, TaskUserGroups, TaskWorkspaceOf, UserFilter, UserPage, UserPatch, UserRecord,
};
use crate::model_checkpoints::{CheckpointFilter, CheckpointGcPolicy, CheckpointPage, CheckpointRecord, NewCheckpoint};
use crate::model_commands::{CommandTaskFilter, CommandTaskRecord, NewCommandTask, NewTemplate, TemplateFilter, TemplateRecord};
use crate::model_experiments::{ExperimentFilter, ExperimentPage, ExperimentPatch, ExperimentRecord, NewExperiment};
use crate::model_logs::{LogFields, LogFilter, LogRecord, NewLogLine};
use crate::model_metrics::{BestValidation, CurrentMetricReport, MetricAdmission, MetricRecord, NewMetricReport};
use crate::model_registry::{
    ModelFilter, ModelPatch, ModelRecord, ModelVersionFilter, ModelVersionPatch, ModelVersionRecord, NewModel, NewModelVersion,
};
use crate::model_runs::{RunDeletion, RunPage, RunQuery};
use crate::model_tasks::{
    AllocationPatch, AllocationRecord, AllocationSessionRecord, AuthenticatedAllocation, NewAllocation, NewAllocationSession, NewTask,
    TaskFilter, TaskRecord, TaskWithAllocations,
};
use crate::model_trials::{NewTrial, NewUnmanagedTrial, TrialFilter, TrialPage, TrialRecord, TrialRunStart};
use crate::model_workloads::{MetricPageQuery, WorkloadFilter, WorkloadPage};
use crate::model_workspaces::{
    Deletion, NewProject, NewWorkspace, ProjectFilter, ProjectPatch, ProjectRecord, ProjectSummary, WorkspaceFilter, WorkspacePatch,
    WorkspaceRecord,
};

#[async_trait]
impl Store for SqlStore {
    fn backend(&self) -> &'static str {
        match self.pool {
            Pool::Sqlite(_) => "sqlite",
            Pool::Postgres(_) => "postgres",
        }
    }

    async fn cluster_id(&self) -> StoreResult<String> {
        self.cluster_id_impl().await
    }

    async fn create_user(&self, user: NewUser) -> StoreResult<UserRecord> {
        let username = user.username.clone();
        self.insert_user(user, false).await?.ok_or(crate::StoreError::Conflict { entity: "user", key: username })
    }

    async fn create_user_if_absent(&self, user: NewUser) -> StoreResult<bool> {
        Ok(self.insert_user(user, true).await?.is_some())
    }

    async fn user_by_id(&self, id: i32) -> StoreResult<UserRecord> {
        self.user_by_id_impl(id).await
    }

    async fn user_by_name(&self, username: &str) -> StoreResult<UserRecord> {
        self.user_by_name_impl(username).await
    }

    async fn list_users(&self, filter: &UserFilter) -> StoreResult<UserPage> {
        self.list_users_impl(filter).await
    }

    async fn update_user(&self, id: i32, patch: &UserPatch) -> StoreResult<UserRecord> {
        self.update_user_impl(id, patch).await
    }

    async fn record_login(&self, user_id: i32, at: DateTime<Utc>) -> StoreResult<()> {
        self.record_login_impl(user_id, at).await
    }

    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord> {
        self.create_session_impl(session).await
    }

    async fn session_by_token_hash(&self, token_hash: &str) -> StoreResult<Option<AuthenticatedSession>> {
        self.session_by_token_hash_impl(token_hash).await
    }

    async fn delete_session(&self, id: i64) -> StoreResult<()> {
        self.delete_session_impl(id).await
    }

    async fn delete_expired_sessions(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        self.delete_expired_sessions_impl(now).await
    }

    async fn project_by_id(&self, id: i32) -> StoreResult<ProjectRecord> {
        self.project_by_id_impl(id).await
    }

    async fn project_by_names(&self, workspace: &str, project: &str) -> StoreResult<ProjectRecord> {
        self.project_by_names_impl(workspace, project).await
    }

    async fn list_workspaces(&self) -> StoreResult<Vec<WorkspaceRecord>> {
        self.list_workspaces_impl().await
    }

    async fn workspace_by_id(&self, id: i32, viewer_id: i32) -> StoreResult<WorkspaceRecord> {
        self.workspace_by_id_impl(id, viewer_id).await
    }

    async fn task_user_groups(&self, of: TaskWorkspaceOf<'_>, owner_id: Option<i32>) -> StoreResult<TaskUserGroups> {
        self.task_user_groups_impl(of, owner_id).await
    }

    async fn workspace_page(&self, filter: &WorkspaceFilter) -> StoreResult<(Vec<WorkspaceRecord>, i64)> {
        self.workspace_page_impl(filter).await
    }

    async fn create_workspace(&self, workspace: NewWorkspace) -> StoreResult<WorkspaceRecord> {
        self.create_workspace_impl(workspace).await
    }

    async fn patch_workspace(&self, id: i32, patch: &WorkspacePatch) -> StoreResult<()> {
        self.patch_workspace_impl(id, patch).await
    }

    async fn set_workspace_archived(&self, id: i32, archived: bool) -> StoreResult<()> {
        self.set_workspace_archived_impl(id, archived).await
    }

    async fn set_workspace_pinned(&self, id: i32, user_id: i32, pinned: Option<DateTime<Utc>>) -> StoreResult<()> {
        self.set_workspace_pinned_impl(id, user_id, pinned).await
    }

    async fn delete_workspace(&self, id: i32) -> StoreResult<Deletion> {
        self.delete_workspace_impl(id).await
    }

    async fn begin_workspace_deletion(&self, id: i32) -> StoreResult<Option<String>> {
        self.begin_workspace_deletion_impl(id).await
    }

    async fn create_project(&self, project: NewProject) -> StoreResult<ProjectRecord> {
        self.create_project_impl(project).await
    }

    async fn project_summary(&self, id: i32) -> StoreResult<ProjectSummary> {
        self.project_summary_impl(id).await
    }

    async fn project_page(&self, filter: &ProjectFilter) -> StoreResult<(Vec<ProjectSummary>, i64)> {
        self.project_page_impl(filter).await
    }

    async fn patch_project(&self, id: i32, patch: &ProjectPatch) -> StoreResult<ProjectRecord> {
        self.patch_project_impl(id, patch).await
    }

    async fn set_project_archived(&self, id: i32, archived: bool) -> StoreResult<()> {
        self.set_project_archived_impl(id, archived).await
    }

    async fn delete_project(&self, id: i32) -> StoreResult<Deletion> {
        self.delete_project_impl(id).await
    }

    async fn move_experiment(&self, experiment_id: i32, project_id: i32) -> StoreResult<()> {
        self.move_experiment_impl(experiment_id, project_id).await
    }

    async fn set_project_notes(&self, id: i32, notes: &Value) -> StoreResult<()> {
        self.set_project_notes_impl(id, notes).await
    }

    async fn create_experiment(&self, experiment: NewExperiment) -> StoreResult<ExperimentRecord> {
        self.create_experiment_impl(experiment).await
    }

    async fn experiment_by_id(&self, id: i32) -> StoreResult<ExperimentRecord> {
        self.experiment_by_id_impl(id).await
    }

    async fn experiment_model_definition(&self, id: i32) -> StoreResult<Vec<u8>> {
        self.experiment_model_definition_impl(id).await
    }

    async fn list_experiments(&self, filter: &ExperimentFilter) -> StoreResult<ExperimentPage> {
        self.list_experiments_impl(filter).await
    }

    async fn update_experiment_state(&self, id: i32, state: &str, end_time: Option<DateTime<Utc>>) -> StoreResult<()> {
        self.set_experiment_state_queuing(id, None, state, end_time).await.map(|_| ())
    }

    async fn update_experiment_state_if(&self, id: i32, from: &[&str], to: &str, end_time: Option<DateTime<Utc>>) -> StoreResult<bool> {
        self.set_experiment_state_queuing(id, Some(from), to, end_time).await
    }

    async fn set_experiment_archived(&self, id: i32, archived: bool) -> StoreResult<()> {
        self.set_experiment_archived_impl(id, archived).await
    }

    async fn set_experiment_labels(&self, id: i32, labels: &[String]) -> StoreResult<()> {
        self.set_experiment_labels_impl(id, labels).await
    }

    async fn patch_experiment(&self, id: i32, patch: &ExperimentPatch) -> StoreResult<ExperimentRecord> {
        self.patch_experiment_impl(id, patch).await
    }

    async fn save_searcher_snapshot(&self, id: i32, snapshot: &str) -> StoreResult<()> {
        self.save_searcher_snapshot_impl(id, snapshot).await
    }

    async fn searcher_snapshot(&self, id: i32) -> StoreResult<Option<Value>> {
        self.searcher_snapshot_impl(id).await
    }

    async fn set_experiment_progress(&self, id: i32, progress: Option<f64>) -> StoreResult<()> {
        self.set_experiment_progress_impl(id, progress).await
    }

    async fn set_experiment_end_reason(&self, id: i32, reason: Option<&str>) -> StoreResult<()> {
        self.set_experiment_end_reason_impl(id, reason).await
    }

    async fn delete_experiment(&self, id: i32) -> StoreResult<()> {
        self.delete_experiment_impl(id).await
    }

    async fn create_trial(&self, trial: NewTrial) -> StoreResult<TrialRecord> {
        self.create_trial_impl(trial).await
    }

    async fn trial_by_id(&self, id: i32) -> StoreResult<TrialRecord> {
        self.trial_by_id_impl(id).await
    }

    async fn trial_by_task_id(&self, task_id: &str) -> StoreResult<TrialRecord> {
        self.trial_by_task_id_impl(task_id).await
    }

    async fn experiment_trial_ids(&self, experiment_id: i32) -> StoreResult<Vec<i32>> {
        self.experiment_trial_ids_impl(experiment_id).await
    }

    async fn search_runs(&self, query: &RunQuery) -> StoreResult<RunPage> {
        self.search_runs_impl(query).await
    }

    async fn set_runs_archived(&self, ids: &[i32], archived: bool) -> StoreResult<Vec<i32>> {
        self.set_runs_archived_impl(ids, archived).await
    }

    async fn delete_runs(&self, ids: &[i32]) -> StoreResult<RunDeletion> {
        self.delete_runs_impl(ids).await
    }

    async fn list_trials(&self, filter: &TrialFilter) -> StoreResult<TrialPage> {
        self.list_trials_impl(filter).await
    }

    async fn best_validations(&self, experiments: &[(i32, bool)]) -> StoreResult<Vec<crate::BestTrialValue>> {
        self.best_validations_impl(experiments).await
    }

    async fn update_trial_state(&self, id: i32, state: &str, end_time: Option<DateTime<Utc>>) -> StoreResult<()> {
        self.set_state(Lifecycle::Trial, id, state, end_time).await
    }

    async fn update_trial_state_if(&self, id: i32, from: &[&str], to: &str, end_time: Option<DateTime<Utc>>) -> StoreResult<bool> {
        self.set_state_if(Lifecycle::Trial, id, from, to, end_time).await
    }

    async fn update_trial_states_if(&self, ids: &[i32], from: &[&str], to: &str) -> StoreResult<u64> {
        self.set_states_if(Lifecycle::Trial, ids, from, to).await
    }

    async fn record_trial_restart(&self, id: i32) -> StoreResult<TrialRecord> {
        self.record_trial_restart_impl(id).await
    }

    async fn advance_trial_run(&self, id: i32) -> StoreResult<TrialRecord> {
        self.advance_trial_run_impl(id).await
    }

    async fn set_trial_runner_state(&self, id: i32, runner_state: &str) -> StoreResult<()> {
        self.set_trial_runner_state_impl(id, runner_state).await
    }

    async fn set_trial_progress(&self, id: i32, progress: Option<f64>) -> StoreResult<()> {
        self.set_trial_progress_impl(id, progress).await
    }

    async fn set_trial_end_reason(&self, id: i32, reason: Option<&str>) -> StoreResult<()> {
        self.set_trial_end_reason_impl(id, reason).await
    }

    async fn continue_experiment(
        &self,
        id: i32,
        from_state: &str,
        to_state: &str,
        config: &serde_json::Value,
        reopen: &[i32],
        reopened_state: &str,
    ) -> StoreResult<()> {
        self.continue_experiment_impl(id, from_state, to_state, config, reopen, reopened_state).await
    }

    async fn set_trial_warm_start(&self, id: i32, checkpoint_uuid: &str) -> StoreResult<()> {
        self.set_trial_warm_start_impl(id, checkpoint_uuid).await
    }

    async fn set_checkpoint_metadata(&self, uuid: &str, metadata: &serde_json::Value) -> StoreResult<()> {
        self.set_checkpoint_metadata_impl(uuid, metadata).await
    }

    async fn set_experiment_config(&self, id: i32, config: &serde_json::Value) -> StoreResult<()> {
        self.set_experiment_config_impl(id, config).await
    }

    async fn start_trial_run(&self, id: i32, at: DateTime<Utc>) -> StoreResult<TrialRunStart> {
        self.start_trial_run_impl(id, at).await
    }

    async fn experiment_id_by_external_id(&self, external_id: &str) -> StoreResult<Option<(i32, bool)>> {
        self.experiment_id_by_external_id_impl(external_id).await
    }

    async fn set_experiment_external_id(&self, id: i32, external_id: &str) -> StoreResult<()> {
        self.set_experiment_external_id_impl(id, external_id).await
    }

    async fn experiment_external_id(&self, id: i32) -> StoreResult<Option<String>> {
        self.experiment_external_id_impl(id).await
    }

    async fn set_unmanaged_experiment_config(&self, id: i32, config: &serde_json::Value, name: &str) -> StoreResult<()> {
        self.set_unmanaged_experiment_config_impl(id, config, name).await
    }

    async fn create_unmanaged_trial(&self, trial: NewUnmanagedTrial) -> StoreResult<TrialRecord> {
        self.create_unmanaged_trial_impl(trial).await
    }

    async fn trial_id_by_external_ids(&self, external_experiment_id: &str, external_trial_id: &str) -> StoreResult<i32> {
        self.trial_id_by_external_ids_impl(external_experiment_id, external_trial_id).await
    }

    async fn start_unmanaged_trial(&self, id: i32, resume: bool, at: DateTime<Utc>) -> StoreResult<UnmanagedStart> {
        self.start_unmanaged_trial_impl(id, resume, at).await
    }

    async fn touch_unmanaged_trial(&self, id: i32, state: Option<&str>, at: DateTime<Utc>) -> StoreResult<()> {
        self.touch_unmanaged_trial_impl(id, state, at).await
    }

    async fn mark_lost_unmanaged_trials(&self, cutoff: DateTime<Utc>, at: DateTime<Utc>) -> StoreResult<Vec<i32>> {
        self.mark_lost_unmanaged_trials_impl(cutoff, at).await
    }

    async fn insert_metrics(&self, reports: &[NewMetricReport]) -> StoreResult<()> {
        let result = self.insert_metrics_impl(reports).await;
        reports.iter().for_each(|r| self.series.invalidate(r.trial_id));
        result
    }

    async fn insert_metrics_if_current(&self, reports: &[CurrentMetricReport]) -> StoreResult<Vec<MetricAdmission>> {
        let result = self.insert_metrics_if_current_impl(reports).await;
        reports.iter().for_each(|r| self.series.invalidate(r.report.trial_id));
        result
    }

    async fn flush_metric_summaries(&self, force: bool) -> StoreResult<u64> {
        self.flush_metric_summaries_impl(force).await
    }

    async fn archive_metrics_after(&self, trial_id: i32, run_id: i32, steps_completed: i64, group: Option<&str>) -> StoreResult<u64> {
        let result = self.archive_metrics_after_impl(trial_id, run_id, steps_completed, group).await;
        self.series.invalidate(trial_id);
        result
    }

    async fn metrics_for_trial(&self, trial_id: i32, group: Option<&str>, include_archived: bool) -> StoreResult<Vec<MetricRecord>> {
        self.metrics_for_trial_impl(trial_id, group, include_archived).await
    }

    async fn metrics_page(&self, query: &MetricPageQuery) -> StoreResult<Vec<MetricRecord>> {
        self.metrics_page_impl(query).await
    }

    async fn metric_series(&self, trial_id: i32, group: &str) -> StoreResult<std::sync::Arc<crate::MetricSeries>> {
        self.metric_series_impl(trial_id, group).await
    }

    async fn trial_workloads(&self, trial_id: i32, filter: &WorkloadFilter) -> StoreResult<WorkloadPage> {
        self.trial_workloads_impl(trial_id, filter).await
    }

    fn metric_rows_decoded(&self) -> u64 {
        self.decoded_metric_rows.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn latest_validation(&self, trial_id: i32) -> StoreResult<Option<MetricRecord>> {
        self.latest_validation_impl(trial_id).await
    }

    async fn best_validation_for_experiment(
        &self,
        experiment_id: i32,
        metric_name: &str,
        smaller_is_better: bool,
    ) -> StoreResult<Option<BestValidation>> {
        self.best_validation_for_experiment_impl(experiment_id, metric_name, smaller_is_better).await
    }

    async fn report_checkpoint(&self, checkpoint: NewCheckpoint) -> StoreResult<CheckpointRecord> {
        let uuid = checkpoint.uuid.clone();
        self.report_checkpoints_impl(std::slice::from_ref(&checkpoint)).await?;
        self.checkpoint_by_uuid_impl(&uuid).await
    }

    async fn report_checkpoints(&self, checkpoints: &[NewCheckpoint]) -> StoreResult<()> {
        self.report_checkpoints_impl(checkpoints).await
    }

    async fn checkpoint_by_uuid(&self, uuid: &str) -> StoreResult<CheckpointRecord> {
        self.checkpoint_by_uuid_impl(uuid).await
    }

    async fn checkpoint_totals(&self, experiment_id: i32, state: &str) -> StoreResult<(i64, i64)> {
        self.checkpoint_totals_impl(experiment_id, state).await
    }

    async fn list_checkpoints(&self, filter: &CheckpointFilter) -> StoreResult<CheckpointPage> {
        self.list_checkpoints_impl(filter).await
    }

    async fn set_checkpoints_state(&self, uuids: &[String], state: &str) -> StoreResult<u64> {
        self.set_checkpoints_state_impl(uuids, state).await
    }

    async fn set_checkpoint_resources(&self, uuid: &str, resources: &BTreeMap<String, i64>, state: &str) -> StoreResult<()> {
        self.set_checkpoint_resources_impl(uuid, resources, state).await
    }

    async fn checkpoints_to_gc(&self, experiment_id: i32, policy: &CheckpointGcPolicy) -> StoreResult<Vec<String>> {
        self.checkpoints_to_gc_impl(experiment_id, policy).await
    }

    async fn checkpoints_missing_metric(&self, experiment_id: i32) -> StoreResult<Vec<(String, i32, i64)>> {
        self.checkpoints_missing_metric_impl(experiment_id).await
    }

    async fn set_checkpoint_searcher_metric(&self, uuid: &str, value: f64) -> StoreResult<()> {
        self.set_checkpoint_searcher_metric_impl(uuid, value).await
    }

    async fn insert_logs(&self, lines: &[NewLogLine]) -> StoreResult<()> {
        self.insert_logs_impl(lines).await
    }

    async fn insert_log_chunks(&self, chunks: Vec<NewLogChunk>) -> StoreResult<()> {
        self.insert_log_chunks_impl(chunks).await
    }

    async fn task_logs(&self, task_id: &str, filter: &LogFilter) -> StoreResult<Vec<LogRecord>> {
        self.task_logs_impl(task_id, filter).await
    }

    async fn task_log_fields(&self, task_id: &str) -> StoreResult<LogFields> {
        self.task_log_fields_impl(task_id).await
    }

    async fn create_task(&self, task: NewTask) -> StoreResult<TaskRecord> {
        self.create_task_impl(task).await
    }

    async fn task_by_id(&self, task_id: &str) -> StoreResult<TaskWithAllocations> {
        self.task_by_id_impl(task_id).await
    }

    async fn list_tasks(&self, filter: &TaskFilter) -> StoreResult<Vec<TaskWithAllocations>> {
        self.list_tasks_impl(filter).await
    }

    async fn end_task(&self, task_id: &str, end_time: DateTime<Utc>) -> StoreResult<()> {
        self.end_task_impl(task_id, end_time).await
    }

    async fn create_allocation(&self, allocation: NewAllocation) -> StoreResult<AllocationRecord> {
        self.create_allocation_impl(allocation).await
    }

    async fn allocation_by_id(&self, allocation_id: &str) -> StoreResult<AllocationRecord> {
        self.allocation_by_id_impl(allocation_id).await
    }

    async fn update_allocation(&self, allocation_id: &str, patch: &AllocationPatch) -> StoreResult<AllocationRecord> {
        self.update_allocation_impl(allocation_id, patch).await
    }

    async fn create_allocation_session(&self, session: NewAllocationSession) -> StoreResult<AllocationSessionRecord> {
        self.create_allocation_session_impl(session).await
    }

    async fn allocation_session_by_token_hash(&self, token_hash: &str) -> StoreResult<Option<AuthenticatedAllocation>> {
        self.allocation_session_by_token_hash_impl(token_hash).await
    }

    async fn delete_allocation_sessions(&self, allocation_id: &str) -> StoreResult<u64> {
        self.delete_allocation_sessions_impl(allocation_id).await
    }

    async fn create_command_task(&self, task: NewCommandTask) -> StoreResult<CommandTaskRecord> {
        self.create_command_task_impl(task).await
    }

    async fn command_task_by_id(&self, task_id: &str) -> StoreResult<CommandTaskRecord> {
        self.command_task_by_id_impl(task_id).await
    }

    async fn command_task_context(&self, task_id: &str) -> StoreResult<Vec<u8>> {
        self.command_task_context_impl(task_id).await
    }

    async fn list_command_tasks(&self, filter: &CommandTaskFilter) -> StoreResult<Vec<CommandTaskRecord>> {
        self.list_command_tasks_impl(filter).await
    }

    async fn end_command_task(&self, task_id: &str, exit_status: &str, end_time: DateTime<Utc>) -> StoreResult<()> {
        self.end_command_task_impl(task_id, exit_status, end_time).await
    }

    async fn set_command_task_extra(&self, task_id: &str, extra: &Value) -> StoreResult<()> {
        self.set_command_task_extra_impl(task_id, extra).await
    }

    async fn set_command_task_priority(&self, task_id: &str, priority: i32) -> StoreResult<()> {
        self.set_command_task_priority_impl(task_id, priority).await
    }

    async fn put_template(&self, template: NewTemplate) -> StoreResult<TemplateRecord> {
        self.put_template_impl(template).await
    }

    async fn template_by_name(&self, name: &str) -> StoreResult<TemplateRecord> {
        self.template_by_name_impl(name).await
    }

    async fn list_templates(&self, filter: &TemplateFilter) -> StoreResult<(Vec<TemplateRecord>, i64)> {
        self.list_templates_impl(filter).await
    }

    async fn delete_template(&self, name: &str) -> StoreResult<()> {
        self.delete_template_impl(name).await
    }

    async fn create_model(&self, model: NewModel) -> StoreResult<ModelRecord> {
        self.create_model_impl(model).await
    }

    async fn model_by_name(&self, name: &str) -> StoreResult<ModelRecord> {
        self.model_by_name_impl(name).await
    }

    async fn model_by_id(&self, id: i32) -> StoreResult<ModelRecord> {
        self.model_by_id_impl(id).await
    }

    async fn list_models(&self, filter: &ModelFilter) -> StoreResult<(Vec<ModelRecord>, i64)> {
        self.list_models_impl(filter).await
    }

    async fn update_model(&self, id: i32, patch: &ModelPatch) -> StoreResult<ModelRecord> {
        self.update_model_impl(id, patch).await
    }

    async fn delete_model(&self, id: i32) -> StoreResult<()> {
        self.delete_model_impl(id).await
    }

    async fn create_model_version(&self, version: NewModelVersion) -> StoreResult<ModelVersionRecord> {
        self.create_model_version_impl(version).await
    }

    async fn model_version(&self, model_id: i32, version: i32) -> StoreResult<ModelVersionRecord> {
        self.model_version_impl(model_id, version).await
    }

    async fn list_model_versions(&self, model_id: i32, filter: &ModelVersionFilter) -> StoreResult<(Vec<ModelVersionRecord>, i64)> {
        self.list_model_versions_impl(model_id, filter).await
    }

    async fn update_model_version(&self, model_id: i32, version: i32, patch: &ModelVersionPatch) -> StoreResult<ModelVersionRecord> {
        self.update_model_version_impl(model_id, version, patch).await
    }

    async fn delete_model_version(&self, model_id: i32, version: i32) -> StoreResult<()> {
        self.delete_model_version_impl(model_id, version).await
    }

    async fn registered_checkpoints(&self, uuids: &[String]) -> StoreResult<Vec<String>> {
        self.registered_checkpoints_impl(uuids).await
    }

    async fn experiment_registered_checkpoints(&self, experiment_id: i32) -> StoreResult<Vec<String>> {
        self.experiment_registered_checkpoints_impl(experiment_id).await
    }
}
