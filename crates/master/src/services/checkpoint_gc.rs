//! Checkpoint garbage collection: deletes the files of checkpoints the experiment's
//! `checkpoint_storage` retention policy (`save_experiment_best`, `save_trial_best`,
//! `save_trial_latest`) no longer keeps, and the user-requested `DELETE /api/v1/checkpoints`.
//!
//! The policy's collection runs as upstream runs it, as a task of its own
//! (`TASK_TYPE_CHECKPOINT_GC`, [`CheckpointGc`]) off the cluster loop, whose logs say what it
//! deleted. Files go first, then the row becomes `STATE_DELETED` with no resources: a crash
//! between the two leaves a COMPLETED row whose files are (partly) gone, which the next run
//! deletes again — removing a directory that is already gone is not an error.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use resolute_storage::{CheckpointStore, Deletion, StorageError, validate_uuid};
use resolute_store::{CheckpointGcPolicy, NewLogLine, NewTask, Store, StoreError, db_now};
use serde_json::Value;
use thiserror::Error;

use super::Principal;
use super::checkpoint_storage::{experiment_store, storage_api_error};
use super::experiments::searcher_metric;
use crate::domain::{CheckpointState, TaskType};
use crate::error::{ApiError, ApiResult};

/// Upstream's defaults: no experiment-wide best, the best and the latest of each trial.
const DEFAULT_POLICY: CheckpointGcPolicy =
    CheckpointGcPolicy { save_experiment_best: 0, save_trial_best: 1, save_trial_latest: 1, smaller_is_better: true };

/// What a collection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Checkpoints now `STATE_DELETED`, by uuid.
    pub deleted: Vec<String>,
    /// Those among them whose directory was already gone.
    pub already_missing: Vec<String>,
}

#[derive(Debug, Error)]
pub enum GcError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("cannot read a checkpoint's validation: {0}")]
    Lookup(String),
}

impl From<GcError> for ApiError {
    fn from(e: GcError) -> Self {
        match e {
            GcError::Store(e) => e.into(),
            GcError::Storage(e) => storage_api_error(e),
            GcError::Lookup(e) => {
                tracing::error!(error = %e, "checkpoint GC lookup failed");
                ApiError::internal()
            }
        }
    }
}

/// The retention policy of an experiment config (`checkpoint_storage.save_*`, the searcher's
/// `smaller_is_better`), upstream's defaults for what is missing.
pub fn gc_policy(config: &Value) -> CheckpointGcPolicy {
    let storage = &config["checkpoint_storage"];
    let count = |key: &str, default: i64| storage[key].as_i64().filter(|n| *n >= 0).unwrap_or(default);
    CheckpointGcPolicy {
        save_experiment_best: count("save_experiment_best", DEFAULT_POLICY.save_experiment_best),
        save_trial_best: count("save_trial_best", DEFAULT_POLICY.save_trial_best),
        save_trial_latest: count("save_trial_latest", DEFAULT_POLICY.save_trial_latest),
        smaller_is_better: searcher_metric(config).1,
    }
}

/// The experiment's completed checkpoints its policy does not keep, except those in `protected`
/// (checkpoints live trials start from, as upstream excludes warm-start sources).
async fn checkpoints_to_collect(
    store: &dyn Store,
    experiment_id: i32,
    config: &Value,
    protected: &[String],
) -> Result<Vec<String>, GcError> {
    settle_searcher_metrics(store, experiment_id, config).await?;
    let mut doomed = store.checkpoints_to_gc(experiment_id, &gc_policy(config)).await?;
    doomed.retain(|uuid| !protected.contains(uuid));
    Ok(doomed)
}

/// Gives each completed checkpoint without a searcher metric the value of its step's validation,
/// when there is one, so that GC ranks it as upstream does (by the validation at the
/// checkpoint's step, joined when GC runs). A checkpoint reported while that validation was
/// being committed misses both the value at its report and the validation's backfill; ranked
/// as having no metric, it was deleted although it was among the trial's best.
async fn settle_searcher_metrics(store: &dyn Store, experiment_id: i32, config: &Value) -> Result<(), GcError> {
    let (Some(metric), _) = searcher_metric(config) else { return Ok(()) };
    for (uuid, trial_id, steps) in store.checkpoints_missing_metric(experiment_id).await? {
        let (_, validation) = super::reports_at_step(store, trial_id, steps).await.map_err(|e| GcError::Lookup(e.message))?;
        if let Some(value) = validation.and_then(|m| m.avg_metrics.get(metric)?.as_f64()) {
            store.set_checkpoint_searcher_metric(&uuid, value).await?;
        }
    }
    Ok(())
}

/// Deletes the experiment's completed checkpoints its policy does not keep (files, then state),
/// except those in `protected`, right away. Idempotent. `config` is the experiment's stored
/// (defaulted) config. The cluster goes through [`CheckpointGc::spawn`] instead.
pub async fn collect_experiment_checkpoints(
    store: &dyn Store,
    experiment_id: i32,
    config: &Value,
    protected: &[String],
) -> Result<GcReport, GcError> {
    let doomed = checkpoints_to_collect(store, experiment_id, config, protected).await?;
    if doomed.is_empty() {
        return Ok(GcReport::default());
    }
    delete_checkpoints_in(store, experiment_store(config)?.as_ref(), &doomed).await
}

/// Deletes each checkpoint's files from `files` (tolerating missing ones), then marks it
/// `STATE_DELETED` with no resources. Every uuid is checked before anything is deleted.
pub async fn delete_checkpoints_in(store: &dyn Store, files: &dyn CheckpointStore, uuids: &[String]) -> Result<GcReport, GcError> {
    uuids.iter().try_for_each(|uuid| validate_uuid(uuid))?;
    let mut report = GcReport::default();
    for uuid in uuids {
        if files.delete(uuid).await? == Deletion::AlreadyMissing {
            report.already_missing.push(uuid.clone());
        }
        store.set_checkpoint_resources(uuid, &BTreeMap::new(), CheckpointState::Deleted.as_str()).await?;
        report.deleted.push(uuid.clone());
    }
    Ok(report)
}

/// Runs retention-policy collections as `TASK_TYPE_CHECKPOINT_GC` tasks on their own tokio
/// tasks. Cheap to clone, and to make: the queue of waiting collections is process-wide, keyed
/// by the store and the experiment, so any `CheckpointGc` over the same store shares it.
#[derive(Clone)]
pub struct CheckpointGc {
    store: Arc<dyn Store>,
}

/// One experiment of one store: the store by address, which cannot be reused while a worker
/// holds its `Arc`.
type WorkerKey = (usize, i32);

/// A collection to run: the experiment's config and the checkpoints to spare.
struct GcRequest {
    config: Value,
    protected: Vec<String>,
}

/// Experiments whose collection is running, each with the request waiting behind it. Requests
/// that arrive while one runs coalesce into that one waiting request (the latest wins: it
/// reflects the newest state of the experiment's trials).
static WORKERS: LazyLock<Mutex<HashMap<WorkerKey, Option<GcRequest>>>> = LazyLock::new(Mutex::default);

fn workers() -> std::sync::MutexGuard<'static, HashMap<WorkerKey, Option<GcRequest>>> {
    // The map stays consistent whatever panicked while holding it: every update is one call.
    WORKERS.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CheckpointGc {
    pub fn new(store: Arc<dyn Store>) -> Self {
        CheckpointGc { store }
    }

    /// Collects the experiment's checkpoints its policy no longer keeps, sparing `protected`,
    /// on a tokio task; returns at once. Collections of one experiment never overlap: a request
    /// made while one runs waits for it, and a burst of requests becomes one more run. A
    /// collection that finds something to delete is a `TASK_TYPE_CHECKPOINT_GC` task whose logs
    /// name the checkpoints, or the failure. Failures are logged; GC is idempotent and runs again
    /// the next time it is requested.
    pub fn spawn(&self, experiment_id: i32, config: Value, protected: Vec<String>) {
        let key = (Arc::as_ptr(&self.store).cast::<()>() as usize, experiment_id);
        let request = GcRequest { config, protected };
        {
            let mut workers = workers();
            if let Some(waiting) = workers.get_mut(&key) {
                *waiting = Some(request);
                return;
            }
            workers.insert(key, None);
        }
        let worker = Worker { store: self.store.clone(), key, registered: true };
        tokio::spawn(worker.run(request));
    }
}

/// Runs one experiment's collections until none waits; unregisters itself when it ends, even
/// when its runtime drops it halfway.
struct Worker {
    store: Arc<dyn Store>,
    key: WorkerKey,
    registered: bool,
}

impl Worker {
    async fn run(mut self, mut request: GcRequest) {
        let experiment_id = self.key.1;
        loop {
            // Its own task, so that a panic ends this collection, not the worker.
            if let Err(e) = tokio::spawn(collect_as_task(self.store.clone(), experiment_id, request)).await {
                tracing::error!(experiment = experiment_id, error = %e, "checkpoint GC task panicked");
            }
            let mut workers = workers();
            match workers.get_mut(&self.key).and_then(Option::take) {
                Some(next) => request = next,
                None => {
                    workers.remove(&self.key);
                    self.registered = false;
                    return;
                }
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.registered {
            workers().remove(&self.key);
        }
    }
}

/// One collection; a task row and its logs only when there is something to delete, as upstream.
async fn collect_as_task(store: Arc<dyn Store>, experiment_id: i32, mut request: GcRequest) {
    // The stored config is the truth: a policy changed through `PATCH /api/v1/experiments/{id}`
    // after the caller took its copy (the cluster loop keeps one per live experiment) wins.
    if let Ok(experiment) = store.experiment_by_id(experiment_id).await {
        request.config = experiment.config.into_value();
    }
    let doomed = match checkpoints_to_collect(store.as_ref(), experiment_id, &request.config, &request.protected).await {
        Ok(doomed) if doomed.is_empty() => return,
        Ok(doomed) => doomed,
        Err(e) => {
            tracing::warn!(experiment = experiment_id, error = %e, "checkpoint GC failed");
            return;
        }
    };
    let task_id = uuid::Uuid::new_v4().to_string();
    let task = NewTask {
        task_id: task_id.clone(),
        task_type: TaskType::CheckpointGc.as_str().to_owned(),
        start_time: db_now(),
        job_id: None,
        owner_id: None,
    };
    if let Err(e) = store.create_task(task).await {
        tracing::warn!(experiment = experiment_id, error = %e, "cannot create the checkpoint GC task");
        return;
    }
    let log = TaskLog { store: store.as_ref(), task_id: &task_id };
    log.write("LOG_LEVEL_INFO", format!("deleting {} checkpoint(s) of experiment {experiment_id}: {}", doomed.len(), doomed.join(", ")))
        .await;
    let deleted = match experiment_store(&request.config) {
        Ok(files) => delete_checkpoints_in(store.as_ref(), files.as_ref(), &doomed).await,
        Err(e) => Err(e.into()),
    };
    match deleted {
        Ok(report) => {
            let mut line = format!("deleted {} checkpoint(s)", report.deleted.len());
            if !report.already_missing.is_empty() {
                line.push_str(&format!("; the files of {} were already gone", report.already_missing.join(", ")));
            }
            log.write("LOG_LEVEL_INFO", line).await;
            tracing::info!(experiment = experiment_id, task = %task_id, deleted = report.deleted.len(), "checkpoint GC deleted checkpoints");
        }
        Err(e) => {
            log.write("LOG_LEVEL_ERROR", format!("checkpoint GC failed: {e}")).await;
            tracing::warn!(experiment = experiment_id, task = %task_id, error = %e, "checkpoint GC failed");
        }
    }
    if let Err(e) = store.end_task(&task_id, db_now()).await {
        tracing::warn!(task = %task_id, error = %e, "cannot end the checkpoint GC task");
    }
}

/// The GC task's own log lines, for `det task logs`.
struct TaskLog<'a> {
    store: &'a dyn Store,
    task_id: &'a str,
}

impl TaskLog<'_> {
    async fn write(&self, level: &str, text: String) {
        let line = NewLogLine {
            task_id: self.task_id.to_owned(),
            allocation_id: None,
            agent_id: None,
            container_id: None,
            rank_id: None,
            timestamp: db_now(),
            level: Some(level.to_owned()),
            log: format!("{text}\n"),
            source: None,
            stdtype: None,
        };
        if let Err(e) = self.store.insert_logs(&[line]).await {
            tracing::warn!(task = %self.task_id, error = %e, "cannot store a checkpoint GC log line");
        }
    }
}

/// `DELETE /api/v1/checkpoints`: the owner of each checkpoint's experiment, or an admin, deletes
/// its files and marks it deleted. Nothing is deleted unless every checkpoint may be.
pub async fn delete_checkpoints(store: &dyn Store, caller: &Principal, uuids: &[String]) -> ApiResult<GcReport> {
    if uuids.is_empty() {
        return Err(ApiError::invalid("checkpointUuids must name at least one checkpoint"));
    }
    // As upstream: a checkpoint a model version references is never deleted.
    let registered = store.registered_checkpoints(uuids).await?;
    if !registered.is_empty() {
        return Err(ApiError::invalid(format!(
            "checkpoints {} are registered in the model registry and cannot be deleted; delete their model versions first",
            registered.join(", ")
        )));
    }
    let mut by_experiment: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for uuid in uuids {
        let checkpoint = store.checkpoint_by_uuid(uuid).await?;
        let Some(experiment_id) = checkpoint.experiment_id else {
            return Err(ApiError::invalid(format!("checkpoint {uuid} belongs to no experiment; only trial checkpoints can be deleted")));
        };
        match CheckpointState::parse(&checkpoint.state) {
            Some(CheckpointState::Deleted) => continue,
            Some(CheckpointState::Completed | CheckpointState::PartiallyDeleted | CheckpointState::Error) => {}
            _ => {
                let other = &checkpoint.state;
                return Err(ApiError::new(
                    resolute_api::error::ErrorCode::FailedPrecondition,
                    format!("checkpoint {uuid} is {other}: only completed, partially deleted or errored checkpoints can be deleted"),
                ));
            }
        }
        by_experiment.entry(experiment_id).or_default().push(uuid.clone());
    }
    let mut plans = Vec::new();
    for (experiment_id, uuids) in by_experiment {
        let experiment = store.experiment_by_id(experiment_id).await?;
        if !caller.user.admin && experiment.owner_id != caller.user.id {
            return Err(ApiError::forbidden(format!(
                "only the owner of experiment {experiment_id} or an admin may delete its checkpoints"
            )));
        }
        plans.push((experiment.config, uuids));
    }
    let mut report = GcReport::default();
    for (config, uuids) in plans {
        let files = experiment_store(&config).map_err(storage_api_error)?;
        let done = delete_checkpoints_in(store, files.as_ref(), &uuids).await?;
        report.deleted.extend(done.deleted);
        report.already_missing.extend(done.already_missing);
    }
    Ok(report)
}
