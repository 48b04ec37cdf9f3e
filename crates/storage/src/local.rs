//! [`CheckpointStore`]: what the master does with checkpoint files, and [`LocalDirectory`], the
//! store of `shared_fs` and `directory` storage (a directory on the master's host).

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::config::validate_uuid;
use crate::error::StorageError;

/// What deleting a checkpoint found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deletion {
    Deleted,
    /// Nothing was there (deleted before, or never written): not an error, so GC is idempotent.
    AlreadyMissing,
}

/// A storage's checkpoint files, by uuid. Implementations validate the uuid
/// ([`StorageError::BadUuid`]) before touching anything.
#[async_trait]
pub trait CheckpointStore: Send + Sync + std::fmt::Debug {
    /// Removes every file of the checkpoint.
    async fn delete(&self, uuid: &str) -> Result<Deletion, StorageError>;

    /// The local directory holding the checkpoint's files, to stream them out; `None` when they
    /// are not there.
    async fn locate(&self, uuid: &str) -> Result<Option<PathBuf>, StorageError>;

    /// Where the checkpoint's files are or would be, for messages.
    fn describe(&self, uuid: &str) -> Result<String, StorageError>;
}

/// Checkpoints as directories `<root>/<uuid>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalDirectory {
    root: PathBuf,
}

impl LocalDirectory {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LocalDirectory { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn dir(&self, uuid: &str) -> Result<PathBuf, StorageError> {
        validate_uuid(uuid)?;
        Ok(self.root.join(uuid))
    }
}

#[async_trait]
impl CheckpointStore for LocalDirectory {
    async fn delete(&self, uuid: &str) -> Result<Deletion, StorageError> {
        let dir = self.dir(uuid)?;
        let path = dir.clone();
        let removed = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&path))
            .await
            .unwrap_or_else(|join| Err(std::io::Error::other(join.to_string())));
        match removed {
            Ok(()) => Ok(Deletion::Deleted),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Deletion::AlreadyMissing),
            Err(source) => Err(StorageError::Io { uuid: uuid.to_owned(), path: dir, source }),
        }
    }

    async fn locate(&self, uuid: &str) -> Result<Option<PathBuf>, StorageError> {
        let dir = self.dir(uuid)?;
        Ok(tokio::fs::metadata(&dir).await.is_ok_and(|m| m.is_dir()).then_some(dir))
    }

    fn describe(&self, uuid: &str) -> Result<String, StorageError> {
        Ok(self.dir(uuid)?.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::StorageConfig;

    #[tokio::test]
    async fn deletes_and_locates_directories_tolerating_missing_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let config = json!({"type": "shared_fs", "host_path": tmp.path(), "storage_path": "sub"});
        let store = StorageConfig::from_json(&config).unwrap().open().unwrap();
        let dir = tmp.path().join("sub/c-1");
        std::fs::create_dir_all(dir.join("model")).unwrap();
        std::fs::write(dir.join("model/w.bin"), b"w").unwrap();

        assert_eq!(store.locate("c-1").await.unwrap(), Some(dir.clone()));
        assert_eq!(store.describe("c-1").unwrap(), dir.display().to_string());
        assert_eq!(store.delete("c-1").await.unwrap(), Deletion::Deleted);
        assert!(!dir.exists());
        assert_eq!(store.locate("c-1").await.unwrap(), None);
        assert_eq!(store.delete("c-1").await.unwrap(), Deletion::AlreadyMissing);

        std::fs::write(tmp.path().join("sub/a-file"), b"x").unwrap();
        assert_eq!(store.locate("a-file").await.unwrap(), None, "only directories are checkpoints");
        assert!(matches!(store.delete("..").await, Err(StorageError::BadUuid(_))));
        assert!(matches!(store.locate("a/b").await, Err(StorageError::BadUuid(_))));
    }

    #[test]
    fn cloud_storage_has_no_store_yet() {
        let err = StorageConfig::from_json(&json!({"type": "gcs", "bucket": "b"})).unwrap().open().unwrap_err();
        assert!(matches!(&err, StorageError::Unsupported(kind) if kind == "gcs"), "{err}");
    }
}
