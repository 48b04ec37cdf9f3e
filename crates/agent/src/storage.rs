//! `shared_fs` checkpoint storage without containers.
//!
//! The harness maps a `shared_fs` storage to the hard-coded in-container path
//! `/determined_shared_fs` (where upstream bind-mounts `host_path`). Our tasks run on the host,
//! and creating that path would need root and would be one global path for experiments that use
//! different host paths. Instead, the storage config a task sees is rewritten to the harness's
//! `directory` storage, which reads and writes straight to `container_path`:
//!
//! ```text
//! {type: shared_fs, host_path: H, storage_path: S, save_*: …}
//!   → {type: directory, container_path: H/S, save_*: …}
//! ```
//!
//! `H/S` is computed as the harness's `_full_storage_path` does (S may be absolute but must lie
//! under H; legacy `checkpoint_path`/`tensorboard_path` stand in for a missing S). TensorBoard
//! files land in the same place (`<container_path>/<cluster_id>/tensorboard/…`) as with
//! `shared_fs`. The runtime applies this to `DET_EXPERIMENT_CONFIG` when it starts a task; the
//! master must apply [`shared_fs_to_directory`] itself to storage configs it hands a task in other
//! ways (checkpoint GC's storage config), and should treat the `directory` config a trial reports
//! in `POST /api/v1/runs/start` as the experiment's own storage.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

/// Keys of `checkpoint_storage` that keep their meaning across the rewrite (the GC policy).
const KEPT_KEYS: [&str; 3] = ["save_experiment_best", "save_trial_best", "save_trial_latest"];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StorageError {
    #[error("DET_EXPERIMENT_CONFIG is not valid JSON: {0}")]
    ConfigNotJson(String),
    #[error("shared_fs checkpoint storage has no host_path")]
    MissingHostPath,
    #[error("shared_fs host_path {0:?} must be an absolute path")]
    RelativeHostPath(String),
    #[error("shared_fs storage_path {storage_path:?} must be a subdirectory of host_path {host_path:?}")]
    StoragePathOutsideHostPath { host_path: String, storage_path: String },
}

/// The host directory a `shared_fs` storage config points at (`host_path` joined with
/// `storage_path`), or `None` for any other storage type.
pub fn shared_fs_host_directory(storage: &Value) -> Result<Option<PathBuf>, StorageError> {
    if storage.get("type").and_then(Value::as_str) != Some("shared_fs") {
        return Ok(None);
    }
    let host_path = storage.get("host_path").and_then(Value::as_str).ok_or(StorageError::MissingHostPath)?;
    if !Path::new(host_path).is_absolute() {
        return Err(StorageError::RelativeHostPath(host_path.to_string()));
    }
    let host = normalize(Path::new(host_path));
    let storage_path = ["storage_path", "checkpoint_path", "tensorboard_path"]
        .iter()
        .find_map(|key| storage.get(*key).and_then(Value::as_str))
        .filter(|s| !s.is_empty());
    let Some(storage_path) = storage_path else { return Ok(Some(host)) };
    // Like `os.path.join`, an absolute storage_path replaces host_path; either way it must end up below it.
    let full = normalize(&host.join(storage_path));
    if !full.starts_with(&host) {
        return Err(StorageError::StoragePathOutsideHostPath { host_path: host_path.to_string(), storage_path: storage_path.to_string() });
    }
    Ok(Some(full))
}

/// The `directory` storage config equivalent to a `shared_fs` one on this host, or `None` when
/// `storage` is not `shared_fs` (then it needs no rewrite).
pub fn shared_fs_to_directory(storage: &Value) -> Result<Option<Value>, StorageError> {
    let Some(dir) = shared_fs_host_directory(storage)? else { return Ok(None) };
    let mut rewritten = Map::new();
    rewritten.insert("type".to_string(), Value::from("directory"));
    rewritten.insert("container_path".to_string(), Value::from(dir.to_string_lossy().into_owned()));
    for key in KEPT_KEYS {
        if let Some(value) = storage.get(key) {
            rewritten.insert(key.to_string(), value.clone());
        }
    }
    Ok(Some(Value::Object(rewritten)))
}

/// Rewrites the `checkpoint_storage` of an experiment config in place; returns whether it changed.
pub fn rewrite_experiment_config(config: &mut Value) -> Result<bool, StorageError> {
    let Some(storage) = config.get_mut("checkpoint_storage") else { return Ok(false) };
    match shared_fs_to_directory(storage)? {
        Some(rewritten) => {
            *storage = rewritten;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// [`rewrite_experiment_config`] on the JSON text of `DET_EXPERIMENT_CONFIG`; `None` when the
/// text needs no change (so it is passed on byte for byte).
pub fn rewrite_experiment_config_json(text: &str) -> Result<Option<String>, StorageError> {
    let mut config: Value = serde_json::from_str(text).map_err(|e| StorageError::ConfigNotJson(e.to_string()))?;
    if !rewrite_experiment_config(&mut config)? {
        return Ok(None);
    }
    Ok(Some(config.to_string()))
}

/// `os.path.normpath` for absolute paths: drops `.`, applies `..` (never above `/`).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn host_directory_follows_the_harness_rules() {
        let dir = |v: Value| shared_fs_host_directory(&v);
        assert_eq!(dir(json!({"type":"shared_fs","host_path":"/h/"})).unwrap(), Some(PathBuf::from("/h")));
        assert_eq!(dir(json!({"type":"shared_fs","host_path":"/h","storage_path":"a/./b"})).unwrap(), Some(PathBuf::from("/h/a/b")));
        assert_eq!(dir(json!({"type":"shared_fs","host_path":"/h","storage_path":"/h/x"})).unwrap(), Some(PathBuf::from("/h/x")));
        assert_eq!(dir(json!({"type":"shared_fs","host_path":"/h","checkpoint_path":"old"})).unwrap(), Some(PathBuf::from("/h/old")));
        assert_eq!(dir(json!({"type":"s3","bucket":"b"})).unwrap(), None);
        assert!(matches!(
            dir(json!({"type":"shared_fs","host_path":"/h","storage_path":"../x"})),
            Err(StorageError::StoragePathOutsideHostPath { .. })
        ));
        assert!(matches!(
            dir(json!({"type":"shared_fs","host_path":"/h","storage_path":"/etc"})),
            Err(StorageError::StoragePathOutsideHostPath { .. })
        ));
        assert_eq!(dir(json!({"type":"shared_fs","host_path":"h"})), Err(StorageError::RelativeHostPath("h".to_string())));
        assert_eq!(dir(json!({"type":"shared_fs"})), Err(StorageError::MissingHostPath));
    }

    #[test]
    fn non_shared_fs_configs_pass_through_unchanged() {
        let text = r#"{"checkpoint_storage":{"type":"s3","bucket":"b"}}"#;
        assert_eq!(rewrite_experiment_config_json(text).unwrap(), None);
        assert_eq!(rewrite_experiment_config_json(r#"{"name":"x"}"#).unwrap(), None);
        assert!(matches!(rewrite_experiment_config_json("{"), Err(StorageError::ConfigNotJson(_))));
    }
}
