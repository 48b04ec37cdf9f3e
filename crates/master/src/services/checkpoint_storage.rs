//! Checkpoint files as the API serves them: which checkpoints may be downloaded, and what a
//! storage failure means to a client. Where the files are is `resolute-storage`'s.

use resolute_api::error::ErrorCode;
use resolute_storage::{CheckpointFiles, CheckpointStore, StorageConfig, StorageError};
use resolute_store::Store;
use serde_json::Value;

use crate::domain::CheckpointState;
use crate::error::{ApiError, ApiResult};

/// The store of an experiment's checkpoints, from its stored config.
pub fn experiment_store(config: &Value) -> Result<Box<dyn CheckpointStore>, StorageError> {
    StorageConfig::from_experiment_config(config)?.open()
}

/// A storage failure as a client sees it: 501 for an unknown storage type, 400 for a config,
/// uuid or bucket the master cannot use (the message names it), 500 (logged) for a failing file
/// system.
pub fn storage_api_error(e: StorageError) -> ApiError {
    match e {
        StorageError::Unsupported(_) => ApiError::unimplemented(e.to_string()),
        StorageError::Cloud { .. } => {
            tracing::warn!(error = %e, "checkpoint object storage failed");
            ApiError::new(ErrorCode::FailedPrecondition, e.to_string())
        }
        StorageError::Io { .. } => {
            tracing::error!(error = %e, "checkpoint storage failed");
            ApiError::internal()
        }
        other => ApiError::new(ErrorCode::FailedPrecondition, other.to_string()),
    }
}

/// The files of a checkpoint that can be downloaded (a directory, or objects in a bucket): 404
/// for an unknown uuid or deleted files, 400 for a checkpoint still being written or that failed.
pub async fn locate_checkpoint(store: &dyn Store, uuid: &str) -> ApiResult<CheckpointFiles> {
    let checkpoint = store.checkpoint_by_uuid(uuid).await?;
    match CheckpointState::parse(&checkpoint.state) {
        Some(CheckpointState::Completed | CheckpointState::PartiallyDeleted) => {}
        Some(CheckpointState::Deleted) => return Err(ApiError::not_found(format!("checkpoint {uuid} was deleted; its files are gone"))),
        _ => {
            let other = &checkpoint.state;
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!("checkpoint {uuid} is {other}; only COMPLETED or PARTIALLY_DELETED checkpoints can be downloaded"),
            ));
        }
    }
    let Some(experiment_id) = checkpoint.experiment_id else {
        return Err(ApiError::unimplemented(format!(
            "checkpoint {uuid} belongs to no experiment; only trial checkpoints can be downloaded"
        )));
    };
    let experiment = store.experiment_by_id(experiment_id).await?;
    let files = experiment_store(&experiment.config).map_err(storage_api_error)?;
    match files.files(uuid).await.map_err(storage_api_error)? {
        Some(dir) => Ok(dir),
        None => Err(ApiError::not_found(format!(
            "the files of checkpoint {uuid} are not in storage at {}",
            files.describe(uuid).map_err(storage_api_error)?
        ))),
    }
}
