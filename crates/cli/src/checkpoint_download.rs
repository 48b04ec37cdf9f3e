//! Getting a checkpoint's files onto this machine, as the SDK's `Checkpoint.download` does:
//! directly from `shared_fs`/`directory` storage when it is mounted here, else through the master
//! (`GET /checkpoints/{uuid}` as a gzipped tar, extracted as it streams in).

use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;
use serde_json::Value;
use thiserror::Error;

use crate::client::{Client, ClientError};

/// Upstream's `DownloadMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DownloadMode {
    /// first attempt a direct download and fall back to the master
    Auto,
    /// directly download from checkpoint storage
    Direct,
    /// download via the master
    Master,
}

/// Where `shared_fs` checkpoints are mounted inside task containers.
const SHARED_FS_CONTAINER_PATH: &str = "/determined_shared_fs";

#[derive(Debug, Error)]
pub enum DownloadError {
    #[error("Only COMPLETED or PARTIALLY_DELETED checkpoints can be downloaded. Checkpoint state: {0}")]
    NotDownloadable(String),
    #[error("Non-training checkpoints cannot be downloaded")]
    NotTraining,
    /// The storage is not reachable from here (direct mode only).
    #[error("{0}")]
    NoDirectAccess(String),
    #[error("unable to download checkpoint from master: {0}")]
    ViaMaster(#[from] ClientError),
    #[error(
        "Auto checkpoint download mode was enabled. Attempted direct download and proxied download through master but they both failed: {0}"
    )]
    BothFailed(String),
    #[error("cannot write the checkpoint to {path}: {cause}")]
    Io { path: String, cause: String },
}

/// Downloads `checkpoint` (a `v1Checkpoint` as JSON) into `dir` (default `checkpoints/<uuid>`),
/// writing `metadata.json` if the files lack one. Returns the directory.
pub fn download(client: &Client, checkpoint: &Value, dir: Option<&Path>, mode: DownloadMode) -> Result<PathBuf, DownloadError> {
    let uuid = checkpoint.get("uuid").and_then(Value::as_str).unwrap_or_default();
    let state = checkpoint.get("state").and_then(Value::as_str).unwrap_or("STATE_UNSPECIFIED");
    if state != "STATE_COMPLETED" && state != "STATE_PARTIALLY_DELETED" {
        return Err(DownloadError::NotDownloadable(state.to_owned()));
    }
    let dir = dir.map_or_else(|| Path::new("checkpoints").join(uuid), Path::to_path_buf);
    // A directory that already holds a checkpoint is reused, as upstream.
    if !dir.join("metadata.json").exists() && !dir.join("MLmodel").exists() {
        let storage = checkpoint.pointer("/training/experimentConfig/checkpoint_storage").ok_or(DownloadError::NotTraining)?;
        match mode {
            DownloadMode::Direct => direct(storage, uuid, &dir)?,
            DownloadMode::Master => via_master(client, uuid, &dir)?,
            DownloadMode::Auto => match direct(storage, uuid, &dir) {
                Err(DownloadError::NoDirectAccess(_)) => {
                    via_master(client, uuid, &dir).map_err(|e| DownloadError::BothFailed(e.to_string()))?;
                }
                other => other?,
            },
        }
    }
    let metadata_path = dir.join("metadata.json");
    if !metadata_path.exists() {
        let metadata = checkpoint.get("metadata").cloned().unwrap_or(Value::Object(Default::default()));
        let text = serde_json::to_string_pretty(&metadata).unwrap_or_default();
        std::fs::write(&metadata_path, text).map_err(|e| io_error(&metadata_path, &e))?;
    }
    Ok(dir)
}

/// `shared_fs` (host path, or the container mount) and `directory` storage, copied locally.
fn direct(storage: &Value, uuid: &str, dir: &Path) -> Result<(), DownloadError> {
    let kind = storage.get("type").and_then(Value::as_str).unwrap_or_default();
    let src = match kind {
        "shared_fs" => {
            let host = storage.get("host_path").and_then(Value::as_str).unwrap_or_default();
            let sub = storage.get("storage_path").and_then(Value::as_str);
            let candidates =
                [full_storage_path(host, sub, host).join(uuid), full_storage_path(host, sub, SHARED_FS_CONTAINER_PATH).join(uuid)];
            candidates.iter().find(|p| p.exists()).cloned().ok_or_else(|| {
                DownloadError::NoDirectAccess(format!(
                    "Checkpoint {uuid} not found in {candidates:?}. This error could be caused by not having the same shared file \
                     system mounted on the local machine as the experiment checkpoint storage configuration."
                ))
            })?
        }
        "directory" => {
            let root = storage.get("container_path").and_then(Value::as_str).unwrap_or_default();
            let src = Path::new(root).join(uuid);
            if !src.exists() {
                return Err(DownloadError::NoDirectAccess(format!(
                    "Checkpoint {uuid} not found in {}. This error could be caused by not having the same checkpoint storage \
                     directory present on the local machine as the task runtime storage configuration.",
                    src.display()
                )));
            }
            src
        }
        other => return Err(DownloadError::NoDirectAccess(format!("direct download from '{other}' checkpoint storage is not supported"))),
    };
    copy_tree(&src, dir)
}

/// `shared._full_storage_path`: an absolute `storage_path` is used as is, a relative one is
/// joined to the root.
fn full_storage_path(host_path: &str, storage_path: Option<&str>, root: &str) -> PathBuf {
    match storage_path {
        None => PathBuf::from(root),
        Some(p) if Path::new(p).is_absolute() => {
            // Upstream maps an absolute path under host_path onto the chosen root.
            let rel = Path::new(p).strip_prefix(host_path).unwrap_or(Path::new(p));
            if rel.is_absolute() { rel.to_path_buf() } else { Path::new(root).join(rel) }
        }
        Some(p) => Path::new(root).join(p),
    }
}

/// `shutil.copytree(..., dirs_exist_ok=True)`.
fn copy_tree(src: &Path, dst: &Path) -> Result<(), DownloadError> {
    std::fs::create_dir_all(dst).map_err(|e| io_error(dst, &e))?;
    for entry in std::fs::read_dir(src).map_err(|e| io_error(src, &e))? {
        let entry = entry.map_err(|e| io_error(src, &e))?;
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        if from.is_dir() {
            copy_tree(&from, &to)?;
        } else {
            std::fs::copy(&from, &to).map_err(|e| io_error(&to, &e))?;
        }
    }
    Ok(())
}

/// Streams the master's tar.gz straight into the extractor; nothing is held in memory.
fn via_master(client: &Client, uuid: &str, dir: &Path) -> Result<(), DownloadError> {
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, &e))?;
    let resp = client.open(&format!("checkpoints/{uuid}"), "application/gzip")?;
    // `unpack` refuses entries that would land outside `dir` (absolute paths, `..`).
    tar::Archive::new(GzDecoder::new(resp)).unpack(dir).map_err(|e| io_error(dir, &e))
}

fn io_error(path: &Path, err: &std::io::Error) -> DownloadError {
    DownloadError::Io { path: path.display().to_string(), cause: err.to_string() }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn checkpoint(storage: Value, state: &str) -> Value {
        json!({"uuid": "abc", "state": state, "metadata": {"steps_completed": 5},
               "training": {"experimentConfig": {"checkpoint_storage": storage}}})
    }

    #[test]
    fn direct_copies_shared_fs_and_writes_metadata() {
        let storage = tempfile::tempdir().unwrap();
        let src = storage.path().join("sub/abc");
        std::fs::create_dir_all(src.join("model")).unwrap();
        std::fs::write(src.join("model/w.bin"), "weights").unwrap();
        let out = tempfile::tempdir().unwrap();
        let dst = out.path().join("ck");
        let client = Client::new("http://127.0.0.1:1").unwrap();
        let ck = checkpoint(json!({"type": "shared_fs", "host_path": storage.path(), "storage_path": "sub"}), "STATE_COMPLETED");
        let got = download(&client, &ck, Some(&dst), DownloadMode::Direct).unwrap();
        assert_eq!(got, dst);
        assert_eq!(std::fs::read_to_string(dst.join("model/w.bin")).unwrap(), "weights");
        let meta: Value = serde_json::from_str(&std::fs::read_to_string(dst.join("metadata.json")).unwrap()).unwrap();
        assert_eq!(meta["steps_completed"], 5);
    }

    #[test]
    fn refuses_unfinished_checkpoints_and_missing_storage() {
        let client = Client::new("http://127.0.0.1:1").unwrap();
        let ck = checkpoint(json!({"type": "directory", "container_path": "/nonexistent"}), "STATE_ACTIVE");
        let err = download(&client, &ck, None, DownloadMode::Auto).unwrap_err();
        assert!(err.to_string().contains("Checkpoint state: STATE_ACTIVE"), "{err}");
        let out = tempfile::tempdir().unwrap();
        let ck = checkpoint(json!({"type": "directory", "container_path": "/nonexistent"}), "STATE_COMPLETED");
        let err = download(&client, &ck, Some(out.path()), DownloadMode::Direct).unwrap_err();
        assert!(matches!(err, DownloadError::NoDirectAccess(_)), "{err}");
        // Auto falls back to the master, which is unreachable here.
        let err = download(&client, &ck, Some(out.path()), DownloadMode::Auto).unwrap_err();
        assert!(matches!(err, DownloadError::BothFailed(_)), "{err}");
    }
}
