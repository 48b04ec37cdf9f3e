//! Where a checkpoint's files live on this host, from the experiment config's
//! `checkpoint_storage`: `shared_fs` is `host_path[/storage_path]/<uuid>` (as the harness's
//! `_full_storage_path` computes it), `directory` is `container_path/<uuid>`. Cloud storages are
//! not read by this master.

use std::path::{Component, Path, PathBuf};

use resolute_store::Store;
use serde_json::Value;
use thiserror::Error;

use crate::error::{ApiError, ApiResult};

#[derive(Debug, Error, PartialEq, Eq)]
pub enum StorageError {
    #[error("the experiment config has no checkpoint_storage")]
    Missing,
    #[error(
        "checkpoint storage type {0:?} is not supported by this master yet (only shared_fs and directory are); \
         download the checkpoint directly from the storage instead (det checkpoint download --mode direct)"
    )]
    Unsupported(String),
    #[error("checkpoint_storage.{field} must be an absolute path, found {value:?}")]
    NotAbsolute { field: &'static str, value: String },
    #[error("checkpoint_storage.storage_path {storage_path:?} must be a subdirectory of host_path {host_path:?}")]
    OutsideHostPath { host_path: String, storage_path: String },
    #[error("{0:?} is not a checkpoint uuid")]
    BadUuid(String),
}

/// The directory holding every checkpoint of a storage config.
pub fn storage_root(storage: &Value) -> Result<PathBuf, StorageError> {
    let kind = storage.get("type").and_then(Value::as_str).ok_or(StorageError::Missing)?;
    match kind {
        "shared_fs" => {
            let host_path = absolute(storage, "host_path")?;
            // Legacy `checkpoint_path` stands in for a missing `storage_path`, as in the harness.
            let storage_path =
                ["storage_path", "checkpoint_path"].iter().find_map(|k| storage.get(*k).and_then(Value::as_str)).filter(|s| !s.is_empty());
            let Some(storage_path) = storage_path else { return Ok(host_path) };
            // As `os.path.join`: an absolute storage_path replaces host_path, yet must lie below it.
            let full = normalize(&host_path.join(storage_path));
            if !full.starts_with(&host_path) {
                return Err(StorageError::OutsideHostPath {
                    host_path: host_path.display().to_string(),
                    storage_path: storage_path.to_owned(),
                });
            }
            Ok(full)
        }
        "directory" => absolute(storage, "container_path"),
        other => Err(StorageError::Unsupported(other.to_owned())),
    }
}

/// A checkpoint's directory. The uuid names one directory entry, never a path.
pub fn checkpoint_dir(storage: &Value, uuid: &str) -> Result<PathBuf, StorageError> {
    let valid = !uuid.is_empty()
        && uuid.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && uuid != "."
        && uuid != "..";
    if !valid {
        return Err(StorageError::BadUuid(uuid.to_owned()));
    }
    Ok(storage_root(storage)?.join(uuid))
}

/// The `checkpoint_storage` of an experiment config, if any.
pub fn experiment_storage(config: &Value) -> Result<&Value, StorageError> {
    config.get("checkpoint_storage").filter(|s| s.is_object()).ok_or(StorageError::Missing)
}

/// The directory of a checkpoint that can be downloaded: 404 for an unknown uuid or deleted
/// files, 400 for a checkpoint still being written or that failed, 501 for cloud storage.
pub async fn locate_checkpoint(store: &dyn Store, uuid: &str) -> ApiResult<PathBuf> {
    let checkpoint = store.checkpoint_by_uuid(uuid).await?;
    match checkpoint.state.as_str() {
        "STATE_COMPLETED" | "STATE_PARTIALLY_DELETED" => {}
        "STATE_DELETED" => return Err(ApiError::not_found(format!("checkpoint {uuid} was deleted; its files are gone"))),
        other => {
            return Err(ApiError::new(
                resolute_api::error::ErrorCode::FailedPrecondition,
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
    let storage_error = |e: StorageError| match e {
        StorageError::Unsupported(_) => ApiError::unimplemented(e.to_string()),
        other => ApiError::new(resolute_api::error::ErrorCode::FailedPrecondition, other.to_string()),
    };
    let dir = checkpoint_dir(experiment_storage(&experiment.config).map_err(storage_error)?, uuid).map_err(storage_error)?;
    if !tokio::fs::metadata(&dir).await.is_ok_and(|m| m.is_dir()) {
        return Err(ApiError::not_found(format!("the files of checkpoint {uuid} are not in storage at {}", dir.display())));
    }
    Ok(dir)
}

fn absolute(storage: &Value, field: &'static str) -> Result<PathBuf, StorageError> {
    let value = storage.get(field).and_then(Value::as_str).unwrap_or_default();
    if !Path::new(value).is_absolute() {
        return Err(StorageError::NotAbsolute { field, value: value.to_owned() });
    }
    Ok(normalize(Path::new(value)))
}

/// Lexical normalisation (`a/./b/../c` → `a/c`), as `os.path.normpath`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn resolves_shared_fs_and_directory() {
        let shared = json!({"type": "shared_fs", "host_path": "/mnt/ckpt"});
        assert_eq!(checkpoint_dir(&shared, "abc-1").unwrap(), PathBuf::from("/mnt/ckpt/abc-1"));
        let sub = json!({"type": "shared_fs", "host_path": "/mnt/ckpt", "storage_path": "team/a"});
        assert_eq!(storage_root(&sub).unwrap(), PathBuf::from("/mnt/ckpt/team/a"));
        let abs = json!({"type": "shared_fs", "host_path": "/mnt/ckpt", "storage_path": "/mnt/ckpt/x"});
        assert_eq!(storage_root(&abs).unwrap(), PathBuf::from("/mnt/ckpt/x"));
        let escape = json!({"type": "shared_fs", "host_path": "/mnt/ckpt", "storage_path": "../etc"});
        assert!(matches!(storage_root(&escape), Err(StorageError::OutsideHostPath { .. })));
        let dir = json!({"type": "directory", "container_path": "/data/c"});
        assert_eq!(checkpoint_dir(&dir, "u").unwrap(), PathBuf::from("/data/c/u"));
    }

    #[test]
    fn rejects_cloud_storage_relative_paths_and_path_uuids() {
        let s3 = json!({"type": "s3", "bucket": "b"});
        assert!(storage_root(&s3).unwrap_err().to_string().contains("not supported by this master yet"));
        assert!(matches!(storage_root(&json!({"type": "shared_fs", "host_path": "rel"})), Err(StorageError::NotAbsolute { .. })));
        let shared = json!({"type": "shared_fs", "host_path": "/mnt"});
        for bad in ["", "..", "a/b", "../x"] {
            assert!(matches!(checkpoint_dir(&shared, bad), Err(StorageError::BadUuid(_))), "{bad}");
        }
    }
}
