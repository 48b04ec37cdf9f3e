//! What a running trial reports: metrics (validations also go to the searcher), progress, early
//! exits, its runner state, and the run's checkpoint storage. Writes what the store owns and
//! notifies the cluster loop, which decides what changes in the trial's lifecycle.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use resolute_store::{CurrentMetricReport, NewMetricReport, SearcherMetric, Store, StoreError, VALIDATION_GROUP, db_now};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Principal;
use super::experiments::searcher_metric;
use super::metric_reporters::{MetricReporter, MetricReporterCache, MetricsCaller};
use super::metrics_writer::MetricsWriter;
use super::trial_runtime_access::{Access, RuntimeCaller, ensure_owner};
use crate::auth::allocation_tokens::authenticate_allocation_token;
use crate::auth::token;
use crate::cluster::{ClusterEvent, ClusterHandle};
use crate::error::{ApiError, ApiResult};

/// The early-exit reasons of the `TrialEarlyExit` proto (the harness's
/// `EXITED_REASON_USER_REQUESTED_STOP` is not one: upstream answers 400, which the harness ignores).
pub const EARLY_EXIT_REASONS: &[&str] = &["EXITED_REASON_INVALID_HP", "EXITED_REASON_INIT_INVALID_HP"];

/// One metrics report as the harness sends it.
#[derive(Clone, Debug)]
pub struct MetricReport {
    pub trial_id: i32,
    pub trial_run_id: i32,
    pub steps_completed: Option<i64>,
    pub report_time: Option<DateTime<Utc>>,
    pub avg_metrics: Value,
    pub batch_metrics: Option<Vec<Value>>,
}

#[derive(Clone)]
pub struct TrialRuntimeService {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) cluster: ClusterHandle,
    metrics: MetricsWriter,
    reporters: Arc<MetricReporterCache>,
}

impl TrialRuntimeService {
    /// Starts the metrics writer task: call within a Tokio runtime.
    pub fn new(store: Arc<dyn Store>, cluster: ClusterHandle) -> Self {
        let reporters = Arc::new(MetricReporterCache::default());
        let metrics = MetricsWriter::spawn(store.clone(), cluster.clone(), reporters.clone());
        TrialRuntimeService { store, cluster, metrics, reporters }
    }

    /// Stores a report (through the group-commit writer). A report from a run that is not the
    /// trial's current one is stale (a previous allocation still talking) and is refused with
    /// 400, as upstream's run id check does; that and the token's allocation are checked in the
    /// transaction that writes it.
    pub async fn report_metrics(&self, caller: &MetricsCaller, path_trial_id: i32, group: &str, report: MetricReport) -> ApiResult<()> {
        if report.trial_id != path_trial_id {
            return Err(ApiError::invalid(format!(
                "metrics.trialId ({}) does not match the trial in the path ({path_trial_id})",
                report.trial_id
            )));
        }
        if group.trim().is_empty() {
            return Err(ApiError::invalid("group is required: \"training\", \"validation\" or a custom group name"));
        }
        super::input_limits::check_text("group", group, super::input_limits::METRIC_GROUP_BYTES)?;
        if group.contains('\0') {
            // Checked here, not in the store's batch, so it cannot fail other trials' reports.
            return Err(ApiError::invalid("invalid group: contains a NUL character; remove it"));
        }
        let Value::Object(avg_metrics) = report.avg_metrics else {
            return Err(ApiError::invalid("metrics.metrics.avgMetrics must be a JSON object of metric name to value"));
        };
        let steps_completed = report.steps_completed.unwrap_or(0);
        if steps_completed < 0 {
            return Err(ApiError::invalid(format!("metrics.stepsCompleted must not be negative, got {steps_completed}")));
        }
        let validation = group == VALIDATION_GROUP;
        let (reporter, searcher_metric) = match caller {
            MetricsCaller::Task(task) => {
                if task.trial_id != path_trial_id {
                    return Err(ApiError::forbidden(format!(
                        "an allocation token may only access its own trial (trial {}); use a user session for anything else",
                        task.trial_id
                    )));
                }
                (Some(task.clone()), task.searcher_metric.clone().filter(|_| validation))
            }
            MetricsCaller::User(user) => {
                let trial = self.trial_for(&RuntimeCaller::User(user.clone()), path_trial_id, Access::Write).await?;
                let searcher = if validation { self.searcher_metric_of(trial.experiment_id).await? } else { None };
                (None, searcher)
            }
        };
        let new = NewMetricReport {
            trial_id: path_trial_id,
            trial_run_id: report.trial_run_id,
            group: group.to_owned(),
            steps_completed,
            report_time: report.report_time.unwrap_or_else(db_now),
            avg_metrics,
            batch_metrics: report.batch_metrics.unwrap_or_default(),
            searcher_metric,
        };
        let allocation_session_id = reporter.as_ref().map(|r| r.session_id);
        self.metrics.write(CurrentMetricReport { report: new, allocation_session_id }, reporter).await
    }

    /// The reporter behind an allocation token, from the cache or (once per token) the store:
    /// 401 for an invalid or ended token, 403 for a task that is not a trial.
    pub async fn metric_reporter(&self, token: &str) -> ApiResult<Arc<MetricReporter>> {
        let token_hash = token::token_hash(token);
        if let Some(reporter) = self.reporters.get(&token_hash) {
            return Ok(reporter);
        }
        let task = authenticate_allocation_token(self.store.as_ref(), token).await?;
        let trial = self.own_trial(&task).await?;
        let reporter = Arc::new(MetricReporter {
            token_hash,
            session_id: task.session_id,
            allocation_id: task.allocation.allocation_id,
            trial_id: trial.id,
            searcher_metric: self.searcher_metric_of(trial.experiment_id).await?,
        });
        self.reporters.insert(reporter.clone());
        Ok(reporter)
    }

    async fn searcher_metric_of(&self, experiment_id: i32) -> ApiResult<Option<SearcherMetric>> {
        let experiment = self.store.experiment_by_id(experiment_id).await?;
        let (name, smaller_is_better) = searcher_metric(&experiment.config);
        Ok(name.map(|name| SearcherMetric { name: name.to_owned(), smaller_is_better }))
    }

    /// Progress in [0, 1] of the trial's searcher length.
    pub async fn report_progress(&self, caller: &RuntimeCaller, trial_id: i32, progress: f64) -> ApiResult<()> {
        if !progress.is_finite() || !(0.0..=1.0).contains(&progress) {
            return Err(ApiError::invalid(format!("progress must be between 0 and 1, got {progress}")));
        }
        let trial = self.trial_for(caller, trial_id, Access::Write).await?;
        self.store.set_trial_progress(trial.id, Some(progress)).await?;
        self.cluster.notify(ClusterEvent::ProgressReported { trial_id: trial.id, progress });
        Ok(())
    }

    pub async fn report_early_exit(&self, caller: &RuntimeCaller, trial_id: i32, reason: &str) -> ApiResult<()> {
        if !EARLY_EXIT_REASONS.contains(&reason) {
            return Err(ApiError::invalid(format!("reason must be one of {}, got {reason:?}", EARLY_EXIT_REASONS.join(", "))));
        }
        let trial = self.trial_for(caller, trial_id, Access::Write).await?;
        self.cluster.notify(ClusterEvent::EarlyExit { trial_id: trial.id, reason: reason.to_owned() });
        Ok(())
    }

    /// The short status text the web UI shows ("validating", ...).
    pub async fn set_runner_state(&self, caller: &RuntimeCaller, trial_id: i32, state: &str) -> ApiResult<()> {
        const MAX_CHARS: usize = 1024;
        if state.chars().count() > MAX_CHARS {
            return Err(ApiError::invalid(format!("state must be at most {MAX_CHARS} characters")));
        }
        let trial = self.trial_for(caller, trial_id, Access::Write).await?;
        Ok(self.store.set_trial_runner_state(trial.id, state).await?)
    }

    /// `POST /api/v1/trials/{id}/kill`: only the experiment's owner or an admin.
    pub async fn kill_trial(&self, caller: &Principal, trial_id: i32) -> ApiResult<()> {
        let trial = self.store.trial_by_id(trial_id).await?;
        let experiment = self.store.experiment_by_id(trial.experiment_id).await?;
        ensure_owner(caller, &experiment, &format!("kill trial {trial_id}"))?;
        if experiment.unmanaged {
            return Err(ApiError::new(
                resolute_api::error::ErrorCode::FailedPrecondition,
                format!("cannot kill trial {trial_id}: it is unmanaged (its script runs outside the cluster); stop the script instead"),
            ));
        }
        self.cluster.notify(ClusterEvent::KillTrial { trial_id });
        Ok(())
    }

    /// The best searcher-metric value validated so far across the experiment; 404 when none yet
    /// (the harness reads 404 as "no validations").
    pub async fn best_searcher_validation(&self, caller: &RuntimeCaller, experiment_id: i32) -> ApiResult<f64> {
        let experiment = self.experiment_for(caller, experiment_id).await?;
        let (Some(metric), smaller_is_better) = searcher_metric(&experiment.config) else {
            return Err(ApiError::not_found(format!("experiment {experiment_id} has no searcher metric")));
        };
        let best = self.store.best_validation_for_experiment(experiment_id, metric, smaller_is_better).await?;
        best.map(|b| b.value).ok_or_else(|| ApiError::not_found(format!("experiment {experiment_id} has no validation of {metric} yet")))
    }

    /// `POST /api/v1/runs/start`: the id the run's checkpoints name their storage by. Stable for
    /// equal storage configurations (key order does not matter), so reports from restarts agree.
    pub async fn prepare_run(&self, caller: &RuntimeCaller, run_id: i32, storage: Option<Value>) -> ApiResult<i32> {
        let trial = self.trial_for(caller, run_id, Access::Write).await?;
        let storage = match storage {
            Some(s) if !s.is_null() => s,
            _ => self.store.experiment_by_id(trial.experiment_id).await?.config["checkpoint_storage"].clone(),
        };
        Ok(storage_id(&storage))
    }

    /// The task's model definition (tar.gz); empty for tasks that have none.
    pub async fn context_directory(&self, caller: &RuntimeCaller, task_id: &str) -> ApiResult<Vec<u8>> {
        let task = self.task_for(caller, task_id, Access::Read).await?;
        match self.store.trial_by_task_id(&task.task_id).await {
            Ok(trial) => Ok(self.store.experiment_model_definition(trial.experiment_id).await?),
            Err(StoreError::NotFound { .. }) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }
}

/// A positive int32 derived from the canonical JSON of a storage configuration.
pub fn storage_id(storage: &Value) -> i32 {
    let digest = Sha256::digest(canonical_json(storage).as_bytes());
    let n = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) & 0x7fff_ffff;
    // 0 reads as "unset" in some clients.
    i32::try_from(n.max(1)).unwrap_or(1)
}

fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> =
                keys.into_iter().map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&map[k]))).collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn storage_id_ignores_key_order_and_differs_by_content() {
        let a = json!({"type": "shared_fs", "host_path": "/tmp", "save_trial_best": 1});
        let b = json!({"save_trial_best": 1, "host_path": "/tmp", "type": "shared_fs"});
        let c = json!({"type": "shared_fs", "host_path": "/data"});
        assert_eq!(storage_id(&a), storage_id(&b));
        assert_ne!(storage_id(&a), storage_id(&c));
        assert!(storage_id(&a) > 0);
    }
}
