//! Store records and service views of experiments, trials and checkpoints → wire types.

use resolute_api::checkpoints::{Checkpoint, CheckpointState, CheckpointTrainingMetadata};
use resolute_api::experiments::{Experiment, ExperimentState};
use resolute_api::pagination::Pagination;
use resolute_api::trials::{Metrics, MetricsWorkload, Trial, TrialState};
use resolute_store::{MetricRecord, TrialRecord};
use serde_json::Value;

use crate::services::{CheckpointView, ExperimentView, ListPage};

fn int32(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX })
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

pub fn experiment(view: ExperimentView) -> Experiment {
    let ExperimentView { record: r, project, num_trials, trial_ids, checkpoints, best_validation, external_id, summary } = view;
    let text_of = |v: &Option<Value>| v.as_ref().map(text).unwrap_or_default();
    Experiment {
        id: r.id,
        description: r.description,
        labels: r.labels,
        start_time: r.start_time,
        end_time: r.end_time,
        state: ExperimentState::from_name(&r.state).unwrap_or(ExperimentState::Unspecified),
        archived: r.archived,
        num_trials: int32(num_trials),
        trial_ids,
        display_name: r.owner_username.clone(),
        user_id: r.owner_id,
        username: r.owner_username,
        resource_pool: text_of(&summary.resources.resource_pool),
        searcher_type: text_of(&summary.searcher.name),
        searcher_metric: text_of(&summary.searcher.metric),
        hyperparameters: summary.hyperparameters.map(resolute_api::raw_json::RawJson).unwrap_or_default(),
        name: r.name,
        notes: r.notes,
        job_id: r.job_id,
        forked_from: r.parent_id,
        progress: r.progress,
        project_id: r.project_id,
        project_name: project.name,
        workspace_id: project.workspace_id,
        workspace_name: project.workspace_name,
        parent_archived: project.archived,
        original_config: r.original_config,
        project_owner_id: project.user_id.unwrap_or(0),
        checkpoint_size: checkpoints.1,
        checkpoint_count: int32(checkpoints.0),
        best_trial_searcher_metric: best_validation.as_ref().map(|b| b.value),
        best_trial_id: best_validation.map(|b| b.trial_id),
        unmanaged: r.unmanaged,
        external_experiment_id: external_id,
        model_definition_size: None,
        config: resolute_api::raw_json::RawJson(r.config.into_raw()),
    }
}

fn metrics(record: &MetricRecord) -> Metrics {
    Metrics {
        avg_metrics: Value::Object(record.avg_metrics.clone()),
        batch_metrics: (!record.batch_metrics.is_empty()).then(|| record.batch_metrics.clone()),
    }
}

fn metrics_workload(record: &MetricRecord) -> MetricsWorkload {
    MetricsWorkload {
        end_time: Some(record.report_time),
        metrics: metrics(record),
        num_inputs: 0,
        total_batches: int32(record.steps_completed),
    }
}

pub fn trial(t: TrialRecord, latest_validation: Option<MetricRecord>) -> Trial {
    Trial {
        id: t.id,
        experiment_id: t.experiment_id,
        start_time: t.start_time,
        end_time: t.end_time,
        state: TrialState::from_name(&t.state).unwrap_or(TrialState::Unspecified),
        restarts: t.restarts,
        hparams: t.hparams,
        total_batches_processed: int32(t.total_batches),
        latest_validation: latest_validation.as_ref().map(metrics_workload),
        searcher_metric_value: t.best_validation,
        runner_state: t.runner_state,
        task_ids: vec![t.task_id.clone()],
        task_id: t.task_id,
        summary_metrics: upstream_summary(t.summary_metrics),
        warm_start_checkpoint_uuid: t.warm_start_checkpoint_uuid,
        end_reason: t.end_reason,
    }
}

pub fn checkpoint(view: CheckpointView) -> Checkpoint {
    let CheckpointView { record: c, experiment_config, hparams, training_metrics, validation_metrics } = view;
    let training = if c.trial_id.is_some() {
        CheckpointTrainingMetadata {
            trial_id: c.trial_id,
            experiment_id: c.experiment_id,
            experiment_config,
            hparams,
            training_metrics: training_metrics.as_ref().map(metrics),
            validation_metrics: validation_metrics.as_ref().map(metrics),
            searcher_metric: c.searcher_metric,
        }
    } else {
        CheckpointTrainingMetadata::default()
    };
    Checkpoint {
        task_id: Some(c.task_id),
        allocation_id: c.allocation_id,
        uuid: c.uuid,
        report_time: Some(c.report_time),
        resources: c.resources,
        metadata: c.metadata,
        state: CheckpointState::from_name(&c.state).unwrap_or(CheckpointState::Unspecified),
        training,
        storage_id: c.storage_id,
    }
}

/// The `pagination` of a list response for a request's `offset`/`limit`.
pub fn pagination<T>(offset: i32, limit: i32, page: &ListPage<T>) -> Pagination {
    Pagination { offset, limit, start_index: int32(page.start), end_index: int32(page.end), total: int32(page.total) }
}

/// The stored summary (`{"<group>": {...}}`) under upstream's keys: training under `avg_metrics`,
/// validation under `validation_metrics`, custom groups under their own name.
pub fn upstream_summary(summary: Value) -> Value {
    match summary {
        Value::Object(groups) => Value::Object(
            groups
                .into_iter()
                .map(|(group, metrics)| {
                    let key = match group.as_str() {
                        resolute_store::TRAINING_GROUP => "avg_metrics".to_owned(),
                        resolute_store::VALIDATION_GROUP => "validation_metrics".to_owned(),
                        _ => group,
                    };
                    (key, metrics)
                })
                .collect(),
        ),
        other => other,
    }
}
