//! `shared_fs` checkpoint storage without containers: the runtime hands the harness a
//! `DET_EXPERIMENT_CONFIG` whose `shared_fs` storage is rewritten to a `directory` one pointing
//! at the same host directory. Where that directory is, and why, is `resolute-storage`'s
//! ([`resolute_storage::shared_fs_to_directory`]); this module applies it to the variable's text
//! and words its failures as a task start failure.

use serde_json::Value;

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
    /// Anything else the storage seam refuses (not produced for `shared_fs` today).
    #[error("{0}")]
    Other(String),
}

impl From<resolute_storage::StorageError> for StorageError {
    fn from(e: resolute_storage::StorageError) -> Self {
        use resolute_storage::StorageError as Seam;
        match e {
            Seam::NotAbsolute { field: "host_path", value: None } => StorageError::MissingHostPath,
            Seam::NotAbsolute { field: "host_path", value: Some(value) } => StorageError::RelativeHostPath(value),
            Seam::OutsideHostPath { host_path, storage_path } => StorageError::StoragePathOutsideHostPath { host_path, storage_path },
            other => StorageError::Other(other.to_string()),
        }
    }
}

/// [`resolute_storage::rewrite_experiment_config`] on the JSON text of `DET_EXPERIMENT_CONFIG`;
/// `None` when the text needs no change (so it is passed on byte for byte).
pub fn rewrite_experiment_config_json(text: &str) -> Result<Option<String>, StorageError> {
    let mut config: Value = serde_json::from_str(text).map_err(|e| StorageError::ConfigNotJson(e.to_string()))?;
    if !resolute_storage::rewrite_experiment_config(&mut config)? {
        return Ok(None);
    }
    Ok(Some(config.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_keep_the_agent_wording() {
        let config = |storage: &str| format!(r#"{{"checkpoint_storage":{storage}}}"#);
        let rewrite = |storage: &str| rewrite_experiment_config_json(&config(storage));
        assert_eq!(rewrite(r#"{"type":"shared_fs"}"#), Err(StorageError::MissingHostPath));
        assert_eq!(rewrite(r#"{"type":"shared_fs","host_path":"h"}"#), Err(StorageError::RelativeHostPath("h".to_string())));
        let outside = rewrite(r#"{"type":"shared_fs","host_path":"/h","storage_path":"/etc"}"#).unwrap_err();
        assert_eq!(outside.to_string(), r#"shared_fs storage_path "/etc" must be a subdirectory of host_path "/h""#);
    }

    #[test]
    fn non_shared_fs_configs_pass_through_unchanged() {
        let text = r#"{"checkpoint_storage":{"type":"s3","bucket":"b"}}"#;
        assert_eq!(rewrite_experiment_config_json(text).unwrap(), None);
        assert_eq!(rewrite_experiment_config_json(r#"{"name":"x"}"#).unwrap(), None);
        assert!(matches!(rewrite_experiment_config_json("{"), Err(StorageError::ConfigNotJson(_))));
        let rewritten = rewrite_experiment_config_json(r#"{"checkpoint_storage":{"type":"shared_fs","host_path":"/h/./a"}}"#).unwrap();
        assert_eq!(rewritten.as_deref(), Some(r#"{"checkpoint_storage":{"container_path":"/h/a","type":"directory"}}"#));
    }
}
