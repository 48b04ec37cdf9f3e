//! What can go wrong between a `checkpoint_storage` config and a checkpoint's files.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StorageError {
    #[error("the experiment config has no checkpoint_storage")]
    Missing,
    #[error(
        "checkpoint storage type {0:?} is not supported by this master yet (only shared_fs and directory are); \
         download the checkpoint directly from the storage instead (det checkpoint download --mode direct)"
    )]
    Unsupported(String),
    /// `value` is `None` when the field is missing or not a string.
    #[error("checkpoint_storage.{field} must be an absolute path, found {:?}", .value.as_deref().unwrap_or_default())]
    NotAbsolute { field: &'static str, value: Option<String> },
    #[error("checkpoint_storage.storage_path {storage_path:?} must be a subdirectory of host_path {host_path:?}")]
    OutsideHostPath { host_path: String, storage_path: String },
    #[error("checkpoint_storage.prefix {0:?} must not contain a `..` segment")]
    BadPrefix(String),
    #[error("{0:?} is not a checkpoint uuid")]
    BadUuid(String),
    #[error("checkpoint_storage ({kind}): {reason}")]
    CloudConfig { kind: &'static str, reason: String },
    #[error("checkpoint {uuid} at {location}: {reason}")]
    Cloud { uuid: String, location: String, reason: String },
    #[error("cannot delete checkpoint {uuid} at {}: {source}", path.display())]
    Io { uuid: String, path: PathBuf, source: std::io::Error },
}
