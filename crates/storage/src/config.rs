//! `checkpoint_storage` as far as file locations go, and the root directory it names.

use std::path::{Component, Path, PathBuf};

use resolute_expconf::{CheckpointStorage, StorageBackend};
use serde_json::Value;

use crate::cloud::CloudStore;
use crate::error::StorageError;
use crate::local::{CheckpointStore, LocalDirectory};

/// Object stores the harness writes to, read through [`crate::CloudStore`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloudKind {
    S3,
    Gcs,
    Azure,
}

impl CloudKind {
    /// The `type` of its `checkpoint_storage`.
    pub fn as_str(self) -> &'static str {
        match self {
            CloudKind::S3 => "s3",
            CloudKind::Gcs => "gcs",
            CloudKind::Azure => "azure",
        }
    }
}

/// Where a `checkpoint_storage` keeps checkpoints. Paths are as written; [`StorageConfig::root`]
/// checks and normalises them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StorageConfig {
    /// A host directory (`host_path`, below it the first non-empty of `storage_path` and the
    /// legacy `checkpoint_path`).
    SharedFs {
        host_path: String,
        storage_path: Option<String>,
    },
    /// A directory as the task sees it; on our agents, the host's.
    Directory {
        container_path: String,
    },
    Cloud(CloudConfig),
}

/// A bucket's `checkpoint_storage`: `bucket` (Azure: `container`), the normalised `prefix`
/// (`<prefix>/<uuid>/…`; Azure has none), and the credentials the config gives (the others come
/// from the master's environment).
#[derive(Clone, PartialEq, Eq)]
pub struct CloudConfig {
    pub kind: CloudKind,
    pub bucket: String,
    pub prefix: String,
    pub endpoint_url: Option<String>,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    /// Azure: `connection_string`, or `account_url` with `credential` (the account key).
    pub connection_string: Option<String>,
    pub account_url: Option<String>,
    pub credential: Option<String>,
}

/// Secrets never reach logs or messages.
impl std::fmt::Debug for CloudConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudConfig")
            .field("kind", &self.kind)
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("endpoint_url", &self.endpoint_url)
            .finish_non_exhaustive()
    }
}

/// An Azure storage account as a connection string or `account_url` names it.
#[derive(Default)]
pub(crate) struct AzureAccount {
    pub name: Option<String>,
    pub key: Option<String>,
    pub endpoint: Option<String>,
}

impl CloudConfig {
    fn new(kind: CloudKind, bucket: String) -> Self {
        CloudConfig {
            kind,
            bucket,
            prefix: String::new(),
            endpoint_url: None,
            access_key: None,
            secret_key: None,
            connection_string: None,
            account_url: None,
            credential: None,
        }
    }

    /// The account of an Azure config: `AccountName`/`AccountKey`/`BlobEndpoint` of the
    /// connection string, or the first label of `account_url`'s host and `credential`.
    pub(crate) fn azure_account(&self) -> Result<AzureAccount, String> {
        if let Some(conn) = &self.connection_string {
            let mut account = AzureAccount::default();
            for pair in conn.split(';').filter(|p| !p.trim().is_empty()) {
                let Some((key, value)) = pair.split_once('=') else {
                    return Err("connection_string must be `Key=Value` pairs separated by `;`".to_owned());
                };
                match key.trim() {
                    "AccountName" => account.name = Some(value.to_owned()),
                    "AccountKey" => account.key = Some(value.to_owned()),
                    "BlobEndpoint" => account.endpoint = Some(value.to_owned()),
                    _ => {}
                }
            }
            return Ok(account);
        }
        let Some(url) = &self.account_url else { return Ok(AzureAccount::default()) };
        let host = url.split("://").nth(1).unwrap_or(url).split(['/', ':']).next().unwrap_or_default();
        let Some(name) = host.split('.').next().filter(|n| !n.is_empty()) else {
            return Err(format!("account_url {url:?} names no storage account"));
        };
        Ok(AzureAccount { name: Some(name.to_owned()), key: self.credential.clone(), endpoint: None })
    }
}

/// The harness's `normalize_prefix`: no `..` segment, `os.path.normpath`, no leading `/`.
fn normalize_prefix(prefix: Option<&str>) -> Result<String, StorageError> {
    let Some(prefix) = prefix.filter(|p| !p.is_empty()) else { return Ok(String::new()) };
    if prefix.split('/').any(|segment| segment == "..") {
        return Err(StorageError::BadPrefix(prefix.to_owned()));
    }
    let parts: Vec<&str> = prefix.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    Ok(parts.join("/"))
}

impl StorageConfig {
    /// Reads a `checkpoint_storage` object. A missing `type` is [`StorageError::Missing`], an
    /// unknown one [`StorageError::Unsupported`]; relative paths are only refused by `root`.
    pub fn from_json(storage: &Value) -> Result<Self, StorageError> {
        let kind = storage.get("type").and_then(Value::as_str).ok_or(StorageError::Missing)?;
        let string = |key: &str| storage.get(key).and_then(Value::as_str);
        let required = |field: &'static str| string(field).map(str::to_owned).ok_or(StorageError::NotAbsolute { field, value: None });
        Ok(match kind {
            "shared_fs" => StorageConfig::SharedFs {
                host_path: required("host_path")?,
                // Legacy `checkpoint_path` stands in for a missing `storage_path`, as in the harness.
                storage_path: ["storage_path", "checkpoint_path"].into_iter().filter_map(string).find(|s| !s.is_empty()).map(str::to_owned),
            },
            "directory" => StorageConfig::Directory { container_path: required("container_path")? },
            "s3" | "gcs" | "azure" => {
                let bucket_key = if kind == "azure" { "container" } else { "bucket" };
                let Some(bucket) = string(bucket_key).filter(|b| !b.is_empty()) else {
                    return Err(StorageError::CloudConfig { kind: cloud_kind(kind).as_str(), reason: format!("{bucket_key} is required") });
                };
                let owned = |key: &str| string(key).filter(|v| !v.is_empty()).map(str::to_owned);
                let mut cloud = CloudConfig::new(cloud_kind(kind), bucket.trim_end_matches('/').to_owned());
                cloud.prefix = normalize_prefix(string("prefix"))?;
                cloud.endpoint_url = owned("endpoint_url");
                cloud.access_key = owned("access_key");
                cloud.secret_key = owned("secret_key");
                cloud.connection_string = owned("connection_string");
                cloud.account_url = owned("account_url");
                cloud.credential = owned("credential");
                StorageConfig::Cloud(cloud)
            }
            other => return Err(StorageError::Unsupported(other.to_owned())),
        })
    }

    /// The `checkpoint_storage` of an experiment config.
    pub fn from_experiment_config(config: &Value) -> Result<Self, StorageError> {
        Self::from_json(config.get("checkpoint_storage").filter(|s| s.is_object()).ok_or(StorageError::Missing)?)
    }

    /// The storage type, as `checkpoint_storage.type` spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            StorageConfig::SharedFs { .. } => "shared_fs",
            StorageConfig::Directory { .. } => "directory",
            StorageConfig::Cloud(cloud) => cloud.kind.as_str(),
        }
    }

    /// The directory holding every checkpoint, lexically normalised.
    pub fn root(&self) -> Result<PathBuf, StorageError> {
        match self {
            StorageConfig::SharedFs { host_path, storage_path } => {
                let host_path = absolute("host_path", host_path)?;
                let Some(storage_path) = storage_path.as_deref().filter(|s| !s.is_empty()) else { return Ok(host_path) };
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
            StorageConfig::Directory { container_path } => absolute("container_path", container_path),
            StorageConfig::Cloud(cloud) => Err(StorageError::Unsupported(cloud.kind.as_str().to_owned())),
        }
    }

    /// A checkpoint's directory. The uuid names one directory entry, never a path.
    pub fn checkpoint_dir(&self, uuid: &str) -> Result<PathBuf, StorageError> {
        validate_uuid(uuid)?;
        Ok(self.root()?.join(uuid))
    }

    /// Where a trial's harness uploads its TensorBoard event files:
    /// `<root>/<cluster_id>/tensorboard/experiment/<exp>/trial/<trial>` (the harness's
    /// `tensorboard.build.get_sync_path` below the storage root). The cluster id names one
    /// directory entry, as a checkpoint uuid does.
    pub fn tensorboard_dir(&self, cluster_id: &str, experiment_id: i32, trial_id: i32) -> Result<PathBuf, StorageError> {
        validate_uuid(cluster_id)?;
        Ok(self
            .root()?
            .join(cluster_id)
            .join("tensorboard/experiment")
            .join(experiment_id.to_string())
            .join("trial")
            .join(trial_id.to_string()))
    }

    /// Where a trial's harness uploads its TensorBoard event files in a bucket (s3, gcs, azure):
    /// the key prefix `[<prefix>/]<cluster_id>/tensorboard/experiment/<exp>/trial/<trial>`, as
    /// the harness's `S3TensorboardManager` joins its prefix and `get_sync_path`. `None` for
    /// directories ([`StorageConfig::tensorboard_dir`] names those).
    pub fn tensorboard_key_prefix(&self, cluster_id: &str, experiment_id: i32, trial_id: i32) -> Result<Option<String>, StorageError> {
        validate_uuid(cluster_id)?;
        let StorageConfig::Cloud(cloud) = self else { return Ok(None) };
        let sync_path = format!("{cluster_id}/tensorboard/experiment/{experiment_id}/trial/{trial_id}");
        Ok(Some(if cloud.prefix.is_empty() { sync_path } else { format!("{}/{sync_path}", cloud.prefix) }))
    }

    /// The store that deletes and finds this storage's checkpoint files.
    pub fn open(&self) -> Result<Box<dyn CheckpointStore>, StorageError> {
        match self {
            StorageConfig::Cloud(cloud) => Ok(Box::new(CloudStore::open(cloud)?)),
            _ => Ok(Box::new(LocalDirectory::new(self.root()?))),
        }
    }
}

impl From<&CheckpointStorage> for StorageConfig {
    fn from(storage: &CheckpointStorage) -> Self {
        match &storage.backend {
            StorageBackend::SharedFs { host_path, storage_path, checkpoint_path, .. } => StorageConfig::SharedFs {
                host_path: host_path.clone(),
                storage_path: [storage_path, checkpoint_path].into_iter().flatten().find(|s| !s.is_empty()).cloned(),
            },
            StorageBackend::Directory { container_path } => StorageConfig::Directory { container_path: container_path.clone() },
            StorageBackend::S3 { bucket, access_key, secret_key, endpoint_url, prefix } => {
                let mut cloud = CloudConfig::new(CloudKind::S3, bucket.clone());
                // Expconf validated the prefix; a bad one leaves it empty rather than panic.
                cloud.prefix = normalize_prefix(prefix.as_deref()).unwrap_or_default();
                cloud.access_key = access_key.clone();
                cloud.secret_key = secret_key.clone();
                cloud.endpoint_url = endpoint_url.clone();
                StorageConfig::Cloud(cloud)
            }
            StorageBackend::Gcs { bucket, prefix } => {
                let mut cloud = CloudConfig::new(CloudKind::Gcs, bucket.clone());
                cloud.prefix = normalize_prefix(prefix.as_deref()).unwrap_or_default();
                StorageConfig::Cloud(cloud)
            }
            StorageBackend::Azure { container, connection_string, account_url, credential } => {
                let mut cloud = CloudConfig::new(CloudKind::Azure, container.clone());
                cloud.connection_string = connection_string.clone();
                cloud.account_url = account_url.clone();
                cloud.credential = credential.clone();
                StorageConfig::Cloud(cloud)
            }
        }
    }
}

fn cloud_kind(kind: &str) -> CloudKind {
    match kind {
        "s3" => CloudKind::S3,
        "gcs" => CloudKind::Gcs,
        _ => CloudKind::Azure,
    }
}

/// A checkpoint uuid must name a single directory entry: no separators, not `.` or `..`.
pub fn validate_uuid(uuid: &str) -> Result<(), StorageError> {
    let valid = !uuid.is_empty()
        && uuid.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && uuid != "."
        && uuid != "..";
    if valid { Ok(()) } else { Err(StorageError::BadUuid(uuid.to_owned())) }
}

fn absolute(field: &'static str, value: &str) -> Result<PathBuf, StorageError> {
    if !Path::new(value).is_absolute() {
        return Err(StorageError::NotAbsolute { field, value: Some(value.to_owned()) });
    }
    Ok(normalize(Path::new(value)))
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

    fn root(storage: Value) -> Result<PathBuf, StorageError> {
        StorageConfig::from_json(&storage)?.root()
    }

    #[test]
    fn shared_fs_root_follows_the_harness_rules() {
        assert_eq!(root(json!({"type":"shared_fs","host_path":"/h/"})).unwrap(), PathBuf::from("/h"));
        assert_eq!(root(json!({"type":"shared_fs","host_path":"/h","storage_path":"a/./b"})).unwrap(), PathBuf::from("/h/a/b"));
        assert_eq!(root(json!({"type":"shared_fs","host_path":"/h","storage_path":"/h/x"})).unwrap(), PathBuf::from("/h/x"));
        assert_eq!(root(json!({"type":"shared_fs","host_path":"/h","storage_path":"a/../b"})).unwrap(), PathBuf::from("/h/b"));
        assert_eq!(root(json!({"type":"shared_fs","host_path":"/h","checkpoint_path":"old"})).unwrap(), PathBuf::from("/h/old"));
        assert_eq!(
            root(json!({"type":"shared_fs","host_path":"/h","storage_path":"","checkpoint_path":"old"})).unwrap(),
            PathBuf::from("/h/old")
        );
        for escape in ["../x", "/etc", "/h/../x"] {
            assert!(
                matches!(
                    root(json!({"type":"shared_fs","host_path":"/h","storage_path":escape})),
                    Err(StorageError::OutsideHostPath { .. })
                ),
                "{escape}"
            );
        }
        let err = root(json!({"type":"shared_fs","host_path":"/h","storage_path":"../x"})).unwrap_err();
        assert_eq!(err.to_string(), r#"checkpoint_storage.storage_path "../x" must be a subdirectory of host_path "/h""#);
    }

    #[test]
    fn tensorboard_dirs_are_where_the_harness_uploads_event_files() {
        let shared = StorageConfig::from_json(&json!({"type": "shared_fs", "host_path": "/mnt/ckpt", "storage_path": "team"})).unwrap();
        assert_eq!(shared.tensorboard_dir("c-1", 7, 42).unwrap(), PathBuf::from("/mnt/ckpt/team/c-1/tensorboard/experiment/7/trial/42"));
        let directory = StorageConfig::from_json(&json!({"type": "directory", "container_path": "/data"})).unwrap();
        assert_eq!(directory.tensorboard_dir("c", 1, 2).unwrap(), PathBuf::from("/data/c/tensorboard/experiment/1/trial/2"));
        assert!(matches!(directory.tensorboard_dir("../x", 1, 2), Err(StorageError::BadUuid(_))));
        let s3 = StorageConfig::from_json(&json!({"type": "s3", "bucket": "b"})).unwrap();
        assert!(matches!(s3.tensorboard_dir("c", 1, 2), Err(StorageError::Unsupported(_))));
        assert_eq!(s3.tensorboard_key_prefix("c", 1, 2).unwrap().as_deref(), Some("c/tensorboard/experiment/1/trial/2"));
        let prefixed = StorageConfig::from_json(&json!({"type": "s3", "bucket": "b", "prefix": "/team/runs/"})).unwrap();
        assert_eq!(prefixed.tensorboard_key_prefix("c", 1, 2).unwrap().as_deref(), Some("team/runs/c/tensorboard/experiment/1/trial/2"));
        assert_eq!(directory.tensorboard_key_prefix("c", 1, 2).unwrap(), None);
    }

    #[test]
    fn resolves_shared_fs_and_directory_checkpoint_dirs() {
        let shared = StorageConfig::from_json(&json!({"type": "shared_fs", "host_path": "/mnt/ckpt"})).unwrap();
        assert_eq!(shared.checkpoint_dir("abc-1").unwrap(), PathBuf::from("/mnt/ckpt/abc-1"));
        let sub = json!({"type": "shared_fs", "host_path": "/mnt/ckpt", "storage_path": "team/a"});
        assert_eq!(root(sub).unwrap(), PathBuf::from("/mnt/ckpt/team/a"));
        let dir = StorageConfig::from_json(&json!({"type": "directory", "container_path": "/data/./c"})).unwrap();
        assert_eq!(dir.checkpoint_dir("u").unwrap(), PathBuf::from("/data/c/u"));
        let config = json!({"checkpoint_storage": {"type": "directory", "container_path": "/d"}});
        assert_eq!(StorageConfig::from_experiment_config(&config).unwrap().root().unwrap(), PathBuf::from("/d"));
        assert!(matches!(StorageConfig::from_experiment_config(&json!({"name": "x"})), Err(StorageError::Missing)));
    }

    #[test]
    fn rejects_cloud_and_unknown_types_relative_paths_and_path_uuids() {
        for kind in ["s3", "gcs", "azure", "hdfs"] {
            let err = root(json!({"type": kind, "bucket": "b", "container": "c"})).unwrap_err();
            assert!(matches!(&err, StorageError::Unsupported(k) if k == kind), "{err}");
            assert!(err.to_string().contains("not supported by this master yet"), "{err}");
        }
        assert!(matches!(root(json!({"host_path": "/h"})), Err(StorageError::Missing)));
        let relative = root(json!({"type": "shared_fs", "host_path": "rel"})).unwrap_err();
        assert_eq!(relative.to_string(), r#"checkpoint_storage.host_path must be an absolute path, found "rel""#);
        let missing = root(json!({"type": "shared_fs"})).unwrap_err();
        assert!(matches!(missing, StorageError::NotAbsolute { field: "host_path", value: None }));
        assert_eq!(missing.to_string(), r#"checkpoint_storage.host_path must be an absolute path, found """#);
        assert!(matches!(root(json!({"type": "directory", "container_path": "c"})), Err(StorageError::NotAbsolute { .. })));
        let shared = StorageConfig::from_json(&json!({"type": "shared_fs", "host_path": "/mnt"})).unwrap();
        for bad in ["", ".", "..", "a/b", "../x", "/abs"] {
            assert!(matches!(shared.checkpoint_dir(bad), Err(StorageError::BadUuid(_))), "{bad}");
        }
    }

    #[test]
    fn cloud_configs_read_upstreams_keys() {
        let s3 = json!({"type": "s3", "bucket": "b", "prefix": "/team/./x/", "endpoint_url": "http://127.0.0.1:9000",
            "access_key": "AK", "secret_key": "SK"});
        let StorageConfig::Cloud(cloud) = StorageConfig::from_json(&s3).unwrap() else { panic!("not cloud") };
        assert_eq!((cloud.kind, cloud.bucket.as_str(), cloud.prefix.as_str()), (CloudKind::S3, "b", "team/x"));
        assert_eq!(cloud.endpoint_url.as_deref(), Some("http://127.0.0.1:9000"));
        assert!(!format!("{cloud:?}").contains("SK"), "secrets stay out of Debug");
        let err = StorageConfig::from_json(&json!({"type": "s3", "bucket": "b", "prefix": "a/../b"})).unwrap_err();
        assert!(err.to_string().contains("prefix"), "{err}");
        let err = StorageConfig::from_json(&json!({"type": "s3"})).unwrap_err();
        assert_eq!(err.to_string(), "checkpoint_storage (s3): bucket is required");
        let err = StorageConfig::from_json(&json!({"type": "azure", "bucket": "b"})).unwrap_err();
        assert_eq!(err.to_string(), "checkpoint_storage (azure): container is required");
        let azure = json!({"type": "azure", "container": "c",
            "connection_string": "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/acct;"});
        let StorageConfig::Cloud(cloud) = StorageConfig::from_json(&azure).unwrap() else { panic!("not cloud") };
        let account = cloud.azure_account().unwrap();
        assert_eq!(account.name.as_deref(), Some("acct"));
        assert_eq!(account.key.as_deref(), Some("a2V5"));
        assert_eq!(account.endpoint.as_deref(), Some("http://127.0.0.1:10000/acct"));
    }

    #[test]
    fn typed_config_gives_the_same_root() {
        let json = json!({"type": "shared_fs", "host_path": "/mnt", "checkpoint_path": "legacy"});
        let typed = CheckpointStorage {
            backend: StorageBackend::SharedFs {
                host_path: "/mnt".into(),
                storage_path: None,
                propagation: "rprivate".into(),
                container_path: None,
                checkpoint_path: Some("legacy".into()),
                tensorboard_path: None,
            },
            save_experiment_best: 0,
            save_trial_best: 1,
            save_trial_latest: 1,
        };
        assert_eq!(StorageConfig::from(&typed), StorageConfig::from_json(&json).unwrap());
        assert_eq!(StorageConfig::from(&typed).root().unwrap(), PathBuf::from("/mnt/legacy"));
        let s3 = CheckpointStorage {
            backend: StorageBackend::S3 { bucket: "b".into(), access_key: None, secret_key: None, endpoint_url: None, prefix: None },
            ..typed
        };
        let from_json = StorageConfig::from_json(&json!({"type": "s3", "bucket": "b"})).unwrap();
        assert_eq!(StorageConfig::from(&s3), from_json);
        assert_eq!(from_json.kind(), "s3");
    }
}
