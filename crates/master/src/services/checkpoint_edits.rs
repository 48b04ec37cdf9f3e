//! What a user changes about existing checkpoints: their metadata
//! (`POST /api/v1/checkpoints/{uuid}/metadata`, the SDK's `add_metadata`/`remove_metadata`),
//! their files (`POST /api/v1/checkpoints/rm`, the SDK's `remove_files(globs)`), and an
//! experiment's retention policy (`PATCH /api/v1/experiments/{id}` with `checkpointStorage`,
//! `det experiment set gc-policy`), which collects at once what the new policy no longer keeps.
//!
//! Only the owner of the checkpoint's experiment or an admin may change it, as for deletion.

use std::collections::BTreeMap;
use std::sync::Arc;

use resolute_api::error::ErrorCode;
use resolute_storage::{FileGlobs, StorageError};
use resolute_store::{CheckpointRecord, ExperimentRecord, Store, TrialFilter};
use serde_json::{Value, json};

use super::Principal;
use super::checkpoint_gc::{CheckpointGc, gc_policy};
use super::checkpoint_storage::{experiment_store, storage_api_error};
use crate::domain::{CheckpointState, TrialState};
use crate::error::{ApiError, ApiResult};

/// The new `save_*` counts of a GC policy change; `None` keeps the current one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcPolicyChange {
    pub save_experiment_best: Option<i32>,
    pub save_trial_best: Option<i32>,
    pub save_trial_latest: Option<i32>,
}

impl GcPolicyChange {
    pub fn is_empty(&self) -> bool {
        *self == GcPolicyChange::default()
    }
}

/// The checkpoint's experiment, if `caller` may change the checkpoint: 404 for an unknown uuid,
/// 400 for one of no experiment, 403 unless the caller owns the experiment or is an admin.
async fn editable_checkpoint(
    store: &dyn Store,
    caller: &Principal,
    uuid: &str,
    what: &str,
) -> ApiResult<(CheckpointRecord, ExperimentRecord)> {
    let checkpoint = store.checkpoint_by_uuid(uuid).await?;
    let Some(experiment_id) = checkpoint.experiment_id else {
        return Err(ApiError::invalid(format!("checkpoint {uuid} belongs to no experiment; only trial checkpoints can be {what}")));
    };
    let experiment = store.experiment_by_id(experiment_id).await?;
    if !caller.user.admin && experiment.owner_id != caller.user.id {
        return Err(ApiError::forbidden(format!(
            "only the owner of experiment {experiment_id} ({}) or an admin may change its checkpoints",
            experiment.owner_username
        )));
    }
    Ok((checkpoint, experiment))
}

/// Replaces the checkpoint's user metadata with `metadata` (a JSON object; the SDK sends the
/// whole new dictionary). `body_uuid`, when given, must name the same checkpoint as the path.
pub async fn set_metadata(
    store: &dyn Store,
    caller: &Principal,
    uuid: &str,
    body_uuid: Option<&str>,
    metadata: Option<Value>,
) -> ApiResult<()> {
    if let Some(other) = body_uuid.filter(|u| !u.is_empty() && *u != uuid) {
        return Err(ApiError::invalid(format!("checkpoint.uuid {other:?} does not match the checkpoint {uuid:?} of the path")));
    }
    let metadata = match metadata {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(object @ Value::Object(_)) => object,
        Some(other) => return Err(ApiError::invalid(format!("checkpoint.metadata must be a JSON object, got {other}"))),
    };
    editable_checkpoint(store, caller, uuid, "changed").await?;
    store.set_checkpoint_metadata(uuid, &metadata).await?;
    Ok(())
}

/// What removing files from one checkpoint did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal {
    pub uuid: String,
    pub removed: Vec<String>,
    pub state: String,
}

/// Removes the files of each checkpoint that `globs` select, through its experiment's storage,
/// then records the files left as its resources: none left ⇒ `STATE_DELETED`, fewer ⇒
/// `STATE_PARTIALLY_DELETED`. No globs only refreshes the resources from storage, as upstream.
/// Every uuid and pattern is checked (400 naming it, 404 for an unknown checkpoint, 403) before
/// any file is touched.
pub async fn remove_files(store: &dyn Store, caller: &Principal, uuids: &[String], globs: &[String]) -> ApiResult<Vec<Removal>> {
    if uuids.is_empty() {
        return Err(ApiError::invalid("checkpointUuids must name at least one checkpoint"));
    }
    let selection = FileGlobs::parse(globs).map_err(|bad| ApiError::invalid(format!("checkpointGlobs[{}]: {}", bad.index, bad.reason)))?;
    let mut plans = Vec::with_capacity(uuids.len());
    for (i, uuid) in uuids.iter().enumerate() {
        resolute_storage::validate_uuid(uuid).map_err(|e| ApiError::invalid(format!("checkpointUuids[{i}]: {e}")))?;
        if uuids[..i].contains(uuid) {
            continue;
        }
        let (checkpoint, experiment) = editable_checkpoint(store, caller, uuid, "changed").await?;
        match CheckpointState::parse(&checkpoint.state) {
            Some(CheckpointState::Completed | CheckpointState::PartiallyDeleted) => {}
            _ => {
                return Err(ApiError::new(
                    ErrorCode::FailedPrecondition,
                    format!(
                        "checkpoint {uuid} is {}: only COMPLETED or PARTIALLY_DELETED checkpoints have files to remove",
                        checkpoint.state
                    ),
                ));
            }
        }
        plans.push((checkpoint, experiment.config));
    }
    let mut done = Vec::with_capacity(plans.len());
    for (checkpoint, config) in plans {
        let files = experiment_store(&config).map_err(storage_api_error)?;
        let uuid = checkpoint.uuid.as_str();
        let listed = files.list_files(uuid).await.map_err(storage_api_error)?;
        let (doomed, mut kept): (Vec<_>, Vec<_>) = listed.into_iter().partition(|(path, _)| selection.selects(path));
        if files.lists_directory_markers() {
            // Empty objects in a bucket are (or cannot be told from) directory markers.
            kept.retain(|(_, size)| *size > 0);
        }
        let removed: Vec<String> = doomed.into_iter().map(|(path, _)| path).collect();
        if !removed.is_empty() {
            files.remove_files(uuid, &removed).await.map_err(storage_api_error)?;
        }
        let remaining: BTreeMap<String, i64> =
            kept.into_iter().map(|(path, size)| (path, i64::try_from(size).unwrap_or(i64::MAX))).collect();
        let state = if remaining.is_empty() {
            CheckpointState::Deleted.as_str().to_owned()
        } else if removed.is_empty() && remaining_matches(&checkpoint.resources, &remaining) {
            checkpoint.state.clone()
        } else {
            CheckpointState::PartiallyDeleted.as_str().to_owned()
        };
        store.set_checkpoint_resources(uuid, &remaining, &state).await?;
        tracing::info!(checkpoint = uuid, removed = removed.len(), left = remaining.len(), state = %state, "removed checkpoint files");
        done.push(Removal { uuid: uuid.to_owned(), removed, state });
    }
    Ok(done)
}

/// Whether the files in storage are those the checkpoint reported (its directory entries, which
/// end in `/`, are not files).
fn remaining_matches(reported: &BTreeMap<String, i64>, remaining: &BTreeMap<String, i64>) -> bool {
    reported.iter().filter(|(path, _)| !path.ends_with('/')).eq(remaining.iter())
}

/// The experiment's config with the change applied: 400 naming a negative count, 400 when it has
/// no `checkpoint_storage`.
fn config_with_policy(mut config: Value, experiment_id: i32, change: GcPolicyChange) -> ApiResult<Value> {
    for (field, value) in [
        ("checkpointStorage.saveExperimentBest", change.save_experiment_best),
        ("checkpointStorage.saveTrialBest", change.save_trial_best),
        ("checkpointStorage.saveTrialLatest", change.save_trial_latest),
    ] {
        if let Some(n) = value.filter(|n| *n < 0) {
            return Err(ApiError::invalid(format!("{field} must be 0 or more, got {n}")));
        }
    }
    let Some(storage) = config.get_mut("checkpoint_storage").and_then(Value::as_object_mut) else {
        return Err(ApiError::new(
            ErrorCode::FailedPrecondition,
            format!("experiment {experiment_id} has no checkpoint_storage to change the policy of"),
        ));
    };
    for (key, value) in [
        ("save_experiment_best", change.save_experiment_best),
        ("save_trial_best", change.save_trial_best),
        ("save_trial_latest", change.save_trial_latest),
    ] {
        if let Some(n) = value {
            storage.insert(key.to_owned(), n.into());
        }
    }
    Ok(config)
}

/// What a policy change would delete now (`det experiment set gc-policy` without `--yes`): the
/// completed checkpoints the changed policy does not keep, each with the validation reported at
/// its step, and the searcher metric's name. Nothing is changed.
pub async fn preview_gc(store: &dyn Store, experiment_id: i32, change: GcPolicyChange) -> ApiResult<(Vec<Value>, String)> {
    let experiment = store.experiment_by_id(experiment_id).await?;
    let config = config_with_policy(experiment.config.into_value(), experiment_id, change)?;
    let doomed = store.checkpoints_to_gc(experiment_id, &gc_policy(&config)).await?;
    let mut rows = Vec::with_capacity(doomed.len());
    for uuid in doomed {
        let c = store.checkpoint_by_uuid(&uuid).await?;
        let validation = match c.trial_id {
            Some(trial_id) => super::reports_at_step(store, trial_id, c.steps_completed).await?.1.map(|v| Value::Object(v.avg_metrics)),
            None => None,
        };
        let mut row = json!({
            "UUID": c.uuid,
            "TrialID": c.trial_id,
            "StepsCompleted": c.steps_completed,
            "State": c.state.trim_start_matches("STATE_"),
            "ReportTime": c.report_time,
            "Resources": c.resources,
            "ValidationMetrics": validation.clone().unwrap_or_else(|| json!({})),
        });
        if let Some(metrics) = validation {
            row["step"] = json!({"validation": {"metrics": {"validation_metrics": metrics}}});
        }
        rows.push(row);
    }
    Ok((rows, super::experiments::searcher_metric(&config).0.unwrap_or_default().to_owned()))
}

/// Applies a GC policy change to the experiment's stored config (400 naming a negative count),
/// then collects what the new policy no longer keeps, off the request. Checkpoints that
/// unfinished trials start from are spared, as the cluster's own collections spare them.
pub async fn change_gc_policy(store: &Arc<dyn Store>, caller: &Principal, experiment_id: i32, change: GcPolicyChange) -> ApiResult<()> {
    let experiment = store.experiment_by_id(experiment_id).await?;
    if !caller.user.admin && experiment.owner_id != caller.user.id {
        return Err(ApiError::forbidden(format!(
            "only the owner ({}) or an admin can change the checkpoint policy of experiment {experiment_id}",
            experiment.owner_username
        )));
    }
    let config = config_with_policy(experiment.config.into_value(), experiment_id, change)?;
    // The storage must be one the master can collect from before the policy is stored.
    if let Err(e) = experiment_store(&config)
        && !matches!(e, StorageError::Unsupported(_))
    {
        return Err(storage_api_error(e));
    }
    store.set_experiment_config(experiment_id, &config).await?;
    let trials = store.list_trials(&TrialFilter { experiment_id, ..Default::default() }).await?.trials;
    let protected =
        trials.into_iter().filter(|t| !TrialState::is_terminal_name(&t.state)).filter_map(|t| t.warm_start_checkpoint_uuid).collect();
    tracing::info!(experiment = experiment_id, ?change, "checkpoint GC policy changed; collecting");
    CheckpointGc::new(store.clone()).spawn(experiment_id, config, protected);
    Ok(())
}
