//! [`CloudStore`]: checkpoints in an object store — S3 (and S3-compatible servers through
//! `endpoint_url`), GCS, Azure Blob — through `object_store`. Objects are laid out as the
//! harness uploads them: `<prefix>/<uuid>/<relative path>` (S3, GCS) or `<uuid>/<relative path>`
//! in the container (Azure), with empty objects ending in `/` for directories.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;

use crate::config::{CloudConfig, CloudKind, validate_uuid};
use crate::error::StorageError;
use crate::local::{CheckpointFiles, CheckpointStore, Deletion, ObjectFile, ObjectFiles};

/// A bucket (or container) holding checkpoints below a prefix.
#[derive(Clone)]
pub struct CloudStore {
    store: Arc<dyn ObjectStore>,
    kind: CloudKind,
    /// `s3://bucket`, `gs://bucket`, `azure://container`: for messages.
    url: String,
    prefix: String,
}

impl std::fmt::Debug for CloudStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudStore").field("url", &self.url).field("prefix", &self.prefix).finish()
    }
}

impl CloudStore {
    /// Builds the client from the config; credentials not in it come from the master's
    /// environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`), as the harness's SDKs would find them.
    pub fn open(config: &CloudConfig) -> Result<Self, StorageError> {
        let bad = |source: object_store::Error| StorageError::CloudConfig { kind: config.kind.as_str(), reason: source.to_string() };
        let store: Arc<dyn ObjectStore> = match config.kind {
            CloudKind::S3 => {
                let mut builder = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(&config.bucket);
                if let Some(key) = &config.access_key {
                    builder = builder.with_access_key_id(key);
                }
                if let Some(secret) = &config.secret_key {
                    builder = builder.with_secret_access_key(secret);
                }
                if let Some(endpoint) = &config.endpoint_url {
                    builder = builder.with_endpoint(endpoint).with_allow_http(endpoint.starts_with("http://"));
                }
                if std::env::var_os("AWS_REGION").is_none() && std::env::var_os("AWS_DEFAULT_REGION").is_none() {
                    builder = builder.with_region("us-east-1");
                }
                Arc::new(builder.build().map_err(bad)?)
            }
            CloudKind::Gcs => {
                Arc::new(object_store::gcp::GoogleCloudStorageBuilder::from_env().with_bucket_name(&config.bucket).build().map_err(bad)?)
            }
            CloudKind::Azure => {
                let mut builder = object_store::azure::MicrosoftAzureBuilder::from_env().with_container_name(&config.bucket);
                let account = config.azure_account().map_err(|reason| StorageError::CloudConfig { kind: "azure", reason })?;
                if let Some(name) = account.name {
                    builder = builder.with_account(name);
                }
                if let Some(key) = account.key {
                    builder = builder.with_access_key(key);
                }
                if let Some(endpoint) = account.endpoint {
                    builder = builder.with_allow_http(endpoint.starts_with("http://")).with_endpoint(endpoint);
                }
                Arc::new(builder.build().map_err(bad)?)
            }
        };
        let scheme = match config.kind {
            CloudKind::S3 => "s3",
            CloudKind::Gcs => "gs",
            CloudKind::Azure => "azure",
        };
        Ok(CloudStore { store, kind: config.kind, url: format!("{scheme}://{}", config.bucket), prefix: config.prefix.clone() })
    }

    /// `<prefix>/<uuid>` as an object path.
    fn checkpoint_path(&self, uuid: &str) -> Result<ObjectPath, StorageError> {
        validate_uuid(uuid)?;
        let key = if self.prefix.is_empty() { uuid.to_owned() } else { format!("{}/{uuid}", self.prefix) };
        ObjectPath::parse(&key).map_err(|e| StorageError::CloudConfig { kind: self.kind.as_str(), reason: e.to_string() })
    }

    fn failed(&self, uuid: &str, source: object_store::Error) -> StorageError {
        StorageError::Cloud { uuid: uuid.to_owned(), location: self.describe(uuid).unwrap_or_default(), reason: source.to_string() }
    }

    /// Every object below the checkpoint's path, sorted by relative path. Directory markers (the
    /// empty `dir/` objects the harness uploads, which `object_store` lists as `dir`) are left
    /// out while they are the parents of other entries. `object_store` cannot name a key ending
    /// in `/`, so deleting never removes a marker: a checkpoint with nothing but empty objects
    /// left counts as gone.
    async fn list(&self, uuid: &str) -> Result<Vec<ObjectFile>, StorageError> {
        let base = self.checkpoint_path(uuid)?;
        let metas: Vec<_> = self.store.list(Some(&base)).try_collect().await.map_err(|e| self.failed(uuid, e))?;
        let mut files: Vec<ObjectFile> = metas
            .into_iter()
            .filter_map(|meta| {
                let relative = meta.location.prefix_match(&base)?.map(|part| part.as_ref().to_owned()).collect::<Vec<_>>().join("/");
                (!relative.is_empty()).then_some(ObjectFile { relative, location: meta.location, size: meta.size })
            })
            .collect();
        files.sort_by(|a, b| a.relative.cmp(&b.relative));
        let parents: std::collections::HashSet<String> =
            files.iter().flat_map(|f| f.relative.match_indices('/').map(|(i, _)| f.relative[..i].to_owned()).collect::<Vec<_>>()).collect();
        files.retain(|f| !(f.size == 0 && parents.contains(&f.relative)));
        Ok(files)
    }

    async fn delete_locations(&self, uuid: &str, locations: Vec<ObjectPath>) -> Result<(), StorageError> {
        let count = locations.len();
        let stream = futures_util::stream::iter(locations.into_iter().map(Ok)).boxed();
        let _: Vec<_> = self.store.delete_stream(stream).try_collect().await.map_err(|e| self.failed(uuid, e))?;
        tracing::debug!(uuid, objects = count, store = %self.url, "deleted checkpoint objects");
        Ok(())
    }
}

#[async_trait]
impl CheckpointStore for CloudStore {
    async fn delete(&self, uuid: &str) -> Result<Deletion, StorageError> {
        let base = self.checkpoint_path(uuid)?;
        // Markers included: everything below the checkpoint's path goes.
        let all: Vec<object_store::ObjectMeta> = self.store.list(Some(&base)).try_collect().await.map_err(|e| self.failed(uuid, e))?;
        // Only empty objects left: the directory markers a deletion cannot remove (see `list`).
        let found = all.iter().any(|m| m.size > 0);
        if !all.is_empty() {
            self.delete_locations(uuid, all.into_iter().map(|m| m.location).collect()).await?;
        }
        Ok(if found { Deletion::Deleted } else { Deletion::AlreadyMissing })
    }

    async fn locate(&self, _uuid: &str) -> Result<Option<std::path::PathBuf>, StorageError> {
        Ok(None)
    }

    async fn files(&self, uuid: &str) -> Result<Option<CheckpointFiles>, StorageError> {
        let files = self.list(uuid).await?;
        if files.iter().all(|f| f.size == 0) {
            return Ok(None);
        }
        Ok(Some(CheckpointFiles::Objects(ObjectFiles { store: self.store.clone(), files })))
    }

    async fn list_files(&self, uuid: &str) -> Result<Vec<(String, u64)>, StorageError> {
        Ok(self.list(uuid).await?.into_iter().map(|f| (f.relative, f.size)).collect())
    }

    async fn remove_files(&self, uuid: &str, relative: &[String]) -> Result<(), StorageError> {
        let files = self.list(uuid).await?;
        let doomed = files.into_iter().filter(|f| relative.contains(&f.relative)).map(|f| f.location).collect();
        self.delete_locations(uuid, doomed).await
    }

    fn describe(&self, uuid: &str) -> Result<String, StorageError> {
        Ok(format!("{}/{}", self.url, self.checkpoint_path(uuid)?))
    }

    fn lists_directory_markers(&self) -> bool {
        true
    }
}
