//! Checkpoint garbage collection: deletes the files of checkpoints the experiment's
//! `checkpoint_storage` retention policy (`save_experiment_best`, `save_trial_best`,
//! `save_trial_latest`) no longer keeps, and the user-requested `DELETE /api/v1/checkpoints`.
//!
//! Files go first, then the row becomes `STATE_DELETED` with no resources: a crash between the two
//! leaves a COMPLETED row whose files are (partly) gone, which the next run deletes again —
//! removing a directory that is already gone is not an error.

use std::collections::BTreeMap;
use std::path::PathBuf;

use resolute_store::{CHECKPOINT_COMPLETED, CheckpointGcPolicy, Store, StoreError};
use serde_json::Value;
use thiserror::Error;

use super::Principal;
use super::checkpoint_storage::{StorageError, checkpoint_dir, experiment_storage};
use super::experiments::searcher_metric;
use crate::error::{ApiError, ApiResult};

pub const CHECKPOINT_DELETED: &str = "STATE_DELETED";
const CHECKPOINT_PARTIALLY_DELETED: &str = "STATE_PARTIALLY_DELETED";

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
    #[error("cannot delete checkpoint {uuid} at {}: {source}", path.display())]
    Io { uuid: String, path: PathBuf, source: std::io::Error },
}

impl From<GcError> for ApiError {
    fn from(e: GcError) -> Self {
        match e {
            GcError::Store(e) => e.into(),
            GcError::Storage(e @ StorageError::Unsupported(_)) => ApiError::unimplemented(e.to_string()),
            GcError::Storage(e) => ApiError::new(resolute_api::error::ErrorCode::FailedPrecondition, e.to_string()),
            GcError::Io { .. } => {
                tracing::error!(error = %e, "checkpoint deletion failed");
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

/// Deletes the experiment's completed checkpoints its policy does not keep (files, then state),
/// except those in `protected` (checkpoints live trials start from, as upstream excludes warm-start
/// sources). Idempotent; call it when a trial or the experiment ends. `config` is the
/// experiment's stored (defaulted) config.
pub async fn collect_experiment_checkpoints(
    store: &dyn Store,
    experiment_id: i32,
    config: &Value,
    protected: &[String],
) -> Result<GcReport, GcError> {
    let mut doomed = store.checkpoints_to_gc(experiment_id, &gc_policy(config)).await?;
    doomed.retain(|uuid| !protected.contains(uuid));
    if doomed.is_empty() {
        return Ok(GcReport::default());
    }
    delete_checkpoints_in(store, experiment_storage(config)?, &doomed).await
}

/// Deletes each checkpoint's directory under `storage` (tolerating missing ones), then marks it
/// `STATE_DELETED` with no resources.
pub async fn delete_checkpoints_in(store: &dyn Store, storage: &Value, uuids: &[String]) -> Result<GcReport, GcError> {
    let dirs = uuids.iter().map(|u| checkpoint_dir(storage, u).map(|d| (u.clone(), d))).collect::<Result<Vec<_>, _>>()?;
    let mut report = GcReport::default();
    for (uuid, dir) in dirs {
        let path = dir.clone();
        let removed = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&path))
            .await
            .unwrap_or_else(|join| Err(std::io::Error::other(join.to_string())));
        match removed {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => report.already_missing.push(uuid.clone()),
            Err(source) => return Err(GcError::Io { uuid, path: dir, source }),
        }
        store.set_checkpoint_resources(&uuid, &BTreeMap::new(), CHECKPOINT_DELETED).await?;
        report.deleted.push(uuid);
    }
    Ok(report)
}

/// `DELETE /api/v1/checkpoints`: the owner of each checkpoint's experiment, or an admin, deletes
/// its files and marks it deleted. Nothing is deleted unless every checkpoint may be.
pub async fn delete_checkpoints(store: &dyn Store, caller: &Principal, uuids: &[String]) -> ApiResult<GcReport> {
    if uuids.is_empty() {
        return Err(ApiError::invalid("checkpointUuids must name at least one checkpoint"));
    }
    let mut by_experiment: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for uuid in uuids {
        let checkpoint = store.checkpoint_by_uuid(uuid).await?;
        let Some(experiment_id) = checkpoint.experiment_id else {
            return Err(ApiError::invalid(format!("checkpoint {uuid} belongs to no experiment; only trial checkpoints can be deleted")));
        };
        match checkpoint.state.as_str() {
            CHECKPOINT_DELETED => continue,
            CHECKPOINT_COMPLETED | CHECKPOINT_PARTIALLY_DELETED | "STATE_ERROR" => {}
            other => {
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
        let storage = experiment_storage(&config).map_err(GcError::from)?;
        let done = delete_checkpoints_in(store, storage, &uuids).await?;
        report.deleted.extend(done.deleted);
        report.already_missing.extend(done.already_missing);
    }
    Ok(report)
}
