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

    /// The checkpoint's files, to stream them out; `None` when nothing is there.
    async fn files(&self, uuid: &str) -> Result<Option<CheckpointFiles>, StorageError>;

    /// The checkpoint's files (not directories) as `(relative path, size)`, sorted by path.
    async fn list_files(&self, uuid: &str) -> Result<Vec<(String, u64)>, StorageError>;

    /// Removes these files (relative paths, as [`CheckpointStore::list_files`] names them).
    async fn remove_files(&self, uuid: &str, relative: &[String]) -> Result<(), StorageError>;

    /// Where the checkpoint's files are or would be, for messages.
    fn describe(&self, uuid: &str) -> Result<String, StorageError>;

    /// Whether [`CheckpointStore::list_files`] may name empty entries that are directory markers
    /// rather than files (object stores: the harness's `dir/` keys, which cannot be removed), so
    /// that a checkpoint with only empty entries left counts as gone.
    fn lists_directory_markers(&self) -> bool {
        false
    }
}

/// Where a checkpoint's files can be read from.
#[derive(Debug)]
pub enum CheckpointFiles {
    /// A directory on the master's host.
    Directory(PathBuf),
    /// Objects in a bucket.
    Objects(ObjectFiles),
}

/// One object of a checkpoint in a bucket.
#[derive(Clone, Debug)]
pub struct ObjectFile {
    /// Below the checkpoint's path, `/`-separated.
    pub relative: String,
    pub(crate) location: object_store::path::Path,
    pub size: u64,
}

/// A checkpoint's objects (directory markers left out), sorted by relative path, and the store
/// that reads them.
pub struct ObjectFiles {
    pub(crate) store: std::sync::Arc<dyn object_store::ObjectStore>,
    pub files: Vec<ObjectFile>,
}

impl std::fmt::Debug for ObjectFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectFiles").field("files", &self.files).finish()
    }
}

impl ObjectFiles {
    /// The bytes of one of the files, as they arrive.
    pub async fn read(
        &self,
        file: &ObjectFile,
    ) -> Result<futures_util::stream::BoxStream<'static, Result<Vec<u8>, std::io::Error>>, StorageError> {
        use futures_util::{StreamExt, TryStreamExt};
        use object_store::ObjectStoreExt;
        let failed = |e: object_store::Error| StorageError::Cloud {
            uuid: String::new(),
            location: file.location.to_string(),
            reason: e.to_string(),
        };
        let got = self.store.get(&file.location).await.map_err(failed)?;
        Ok(got.into_stream().map_ok(|b| b.to_vec()).map_err(std::io::Error::other).boxed())
    }
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

    async fn files(&self, uuid: &str) -> Result<Option<CheckpointFiles>, StorageError> {
        Ok(self.locate(uuid).await?.map(CheckpointFiles::Directory))
    }

    async fn list_files(&self, uuid: &str) -> Result<Vec<(String, u64)>, StorageError> {
        let dir = self.dir(uuid)?;
        let root = dir.clone();
        let listed = tokio::task::spawn_blocking(move || walk_files(&root))
            .await
            .unwrap_or_else(|join| Err(std::io::Error::other(join.to_string())));
        match listed {
            Ok(files) => Ok(files),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => Err(StorageError::Io { uuid: uuid.to_owned(), path: dir, source }),
        }
    }

    async fn remove_files(&self, uuid: &str, relative: &[String]) -> Result<(), StorageError> {
        let dir = self.dir(uuid)?;
        for file in relative {
            // Only names `list_files` could give: relative, no `..`.
            let path = Path::new(file);
            if file.is_empty() || !path.components().all(|c| matches!(c, std::path::Component::Normal(_))) {
                return Err(StorageError::BadUuid(format!("{uuid}/{file}")));
            }
            let full = dir.join(path);
            match tokio::fs::remove_file(&full).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(StorageError::Io { uuid: uuid.to_owned(), path: full, source }),
            }
            // Directories left empty go too, up to the checkpoint's own, as removing a matched
            // directory would; one that still holds something stays (removing it fails).
            for parent in path.ancestors().skip(1).filter(|p| !p.as_os_str().is_empty()) {
                if tokio::fs::remove_dir(dir.join(parent)).await.is_err() {
                    break;
                }
            }
        }
        if !relative.is_empty() {
            let _ = tokio::fs::remove_dir(&dir).await;
        }
        Ok(())
    }

    fn describe(&self, uuid: &str) -> Result<String, StorageError> {
        Ok(self.dir(uuid)?.display().to_string())
    }
}

/// Every regular file below `root` as `(relative path, size)`, sorted; links are not followed.
fn walk_files(root: &Path) -> std::io::Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        for entry in std::fs::read_dir(root.join(&relative))? {
            let entry = entry?;
            let name = relative.join(entry.file_name());
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(name);
            } else if kind.is_file() {
                let path = name.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/");
                out.push((path, entry.metadata()?.len()));
            }
        }
    }
    out.sort();
    Ok(out)
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
}
