//! `shared_fs` storage without containers.
//!
//! The harness maps a `shared_fs` storage to the hard-coded in-container path
//! `/determined_shared_fs` (where upstream bind-mounts `host_path`). Our tasks run on the host,
//! and creating that path would need root and would be one global path for experiments that use
//! different host paths. Instead, the storage config a task sees is rewritten to the harness's
//! `directory` storage, which reads and writes straight to `container_path`:
//!
//! ```text
//! {type: shared_fs, host_path: H, storage_path: S, save_*: …}
//!   → {type: directory, container_path: <root>, save_*: …}
//! ```
//!
//! `<root>` is [`StorageConfig::root`], the same directory the master deletes and downloads
//! from. TensorBoard files land in the same place (`<container_path>/<cluster_id>/tensorboard/…`)
//! as with `shared_fs`.

use serde_json::{Map, Value};

use crate::config::StorageConfig;
use crate::error::StorageError;

/// Keys of `checkpoint_storage` that keep their meaning across the rewrite (the GC policy).
const KEPT_KEYS: [&str; 3] = ["save_experiment_best", "save_trial_best", "save_trial_latest"];

/// The `directory` storage config equivalent to a `shared_fs` one on this host, or `None` when
/// `storage` is not `shared_fs` (then it needs no rewrite, whatever else it holds).
pub fn shared_fs_to_directory(storage: &Value) -> Result<Option<Value>, StorageError> {
    if storage.get("type").and_then(Value::as_str) != Some("shared_fs") {
        return Ok(None);
    }
    let root = StorageConfig::from_json(storage)?.root()?;
    let mut rewritten = Map::new();
    rewritten.insert("type".to_string(), Value::from("directory"));
    rewritten.insert("container_path".to_string(), Value::from(root.to_string_lossy().into_owned()));
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shared_fs_becomes_a_directory_with_the_same_root_and_policy() {
        let storage =
            json!({"type": "shared_fs", "host_path": "/mnt/ckpt/", "storage_path": "exp", "propagation": "rprivate", "save_trial_best": 2});
        let rewritten = shared_fs_to_directory(&storage).unwrap().unwrap();
        assert_eq!(rewritten, json!({"type": "directory", "container_path": "/mnt/ckpt/exp", "save_trial_best": 2}));
        assert_eq!(
            StorageConfig::from_json(&rewritten).unwrap().root().unwrap(),
            StorageConfig::from_json(&storage).unwrap().root().unwrap()
        );
        let mut config = json!({"name": "x", "checkpoint_storage": storage});
        assert!(rewrite_experiment_config(&mut config).unwrap());
        assert_eq!(config["checkpoint_storage"], rewritten);
        assert_eq!(config["name"], "x");
    }

    #[test]
    fn other_configs_pass_through_unchanged() {
        for storage in [json!({"type": "s3", "bucket": "b"}), json!({"type": "hdfs"}), json!({"host_path": "/h"}), json!("text")] {
            assert_eq!(shared_fs_to_directory(&storage).unwrap(), None, "{storage}");
        }
        let mut config = json!({"name": "x"});
        assert!(!rewrite_experiment_config(&mut config).unwrap());
        assert!(matches!(
            shared_fs_to_directory(&json!({"type": "shared_fs", "host_path": "/h", "storage_path": "../x"})),
            Err(StorageError::OutsideHostPath { .. })
        ));
        assert!(matches!(shared_fs_to_directory(&json!({"type": "shared_fs"})), Err(StorageError::NotAbsolute { value: None, .. })));
    }
}
