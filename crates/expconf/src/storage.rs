//! `checkpoint_storage`: where trials write checkpoints (shared_fs, directory, s3, gcs, azure) and
//! how many the garbage collector keeps.

use serde::Serialize;

use crate::error::ConfigError;
use crate::path::FieldPath;
use crate::read::{Ctx, Field, Fields, quote};

const TYPES: &[&str] = &["shared_fs", "directory", "s3", "gcs", "azure"];

/// Mount propagation modes Docker accepts for bind mounts.
pub(crate) const PROPAGATIONS: &[&str] = &["rprivate", "private", "rshared", "shared", "rslave", "slave"];

fn backend_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "shared_fs" => &["host_path", "storage_path", "propagation", "container_path", "checkpoint_path", "tensorboard_path"],
        "directory" => &["container_path"],
        "s3" => &["bucket", "access_key", "secret_key", "endpoint_url", "prefix"],
        "gcs" => &["bucket", "prefix"],
        "azure" => &["container", "connection_string", "account_url", "credential"],
        _ => &[],
    }
}

/// The `checkpoint_storage` section.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckpointStorage {
    #[serde(flatten)]
    pub backend: StorageBackend,
    /// Best checkpoints kept across the experiment (by the searcher metric).
    pub save_experiment_best: u32,
    /// Best checkpoints kept per trial.
    pub save_trial_best: u32,
    /// Most recent checkpoints kept per trial.
    pub save_trial_latest: u32,
}

/// Where checkpoints live; serialises with `type` as the tag, as upstream.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StorageBackend {
    /// A host directory mounted into every trial container.
    SharedFs {
        host_path: String,
        storage_path: Option<String>,
        propagation: String,
        container_path: Option<String>,
        checkpoint_path: Option<String>,
        tensorboard_path: Option<String>,
    },
    /// A directory inside the container (e.g. a volume from `pod_spec` or `bind_mounts`).
    Directory {
        container_path: String,
    },
    S3 {
        bucket: String,
        access_key: Option<String>,
        secret_key: Option<String>,
        endpoint_url: Option<String>,
        prefix: Option<String>,
    },
    Gcs {
        bucket: String,
        prefix: Option<String>,
    },
    Azure {
        container: String,
        connection_string: Option<String>,
        account_url: Option<String>,
        credential: Option<String>,
    },
}

/// Reads `checkpoint_storage` (after the master's defaults were merged in).
pub(crate) fn read_checkpoint_storage(ctx: &mut Ctx, field: Option<Field<'_>>, path: &FieldPath) -> Option<CheckpointStorage> {
    let Some(field) = field else {
        ctx.missing(path, "set checkpoint_storage (e.g. {type: shared_fs, host_path: /mnt/checkpoints}) or configure it in master.yaml");
        return None;
    };
    let mut fields = Fields::of(ctx, &field)?;
    let kind = match fields.take("type") {
        Some(f) => read_type(ctx, &f),
        None => {
            ctx.missing(&field.path.key("type"), format!("one of {}", TYPES.join(", ")));
            None
        }
    };
    let save_experiment_best = fields.u32_or(ctx, "save_experiment_best", 0, 0);
    let save_trial_best = fields.u32_or(ctx, "save_trial_best", 0, 1);
    let save_trial_latest = fields.u32_or(ctx, "save_trial_latest", 0, 1);
    let backend = match kind {
        Some(kind) => read_backend(ctx, &mut fields, kind),
        None => {
            // Unknown type: its keys are not "unknown fields", the type is the problem.
            for key in TYPES.iter().flat_map(|t| backend_keys(t)) {
                let _ = fields.take(key);
            }
            None
        }
    };
    let chosen = kind.unwrap_or("chosen");
    fields.finish_with(ctx, |key| {
        TYPES
            .iter()
            .any(|t| backend_keys(t).contains(&key))
            .then(|| (crate::error::WarningKind::Ignored, format!("not used by {chosen} checkpoint storage; ignored")))
    });
    Some(CheckpointStorage { backend: backend?, save_experiment_best, save_trial_best, save_trial_latest })
}

fn read_type(ctx: &mut Ctx, field: &Field<'_>) -> Option<&'static str> {
    let kind = field.string(ctx)?;
    if kind == "hdfs" {
        ctx.error(ConfigError::Removed {
            path: field.path.to_string(),
            found: "hdfs checkpoint storage".to_string(),
            reason: "removed upstream; use shared_fs, directory, s3, gcs or azure".to_string(),
        });
        return None;
    }
    field.choice(ctx, TYPES)
}

fn read_backend(ctx: &mut Ctx, fields: &mut Fields<'_>, kind: &str) -> Option<StorageBackend> {
    match kind {
        "shared_fs" => {
            let host_path = fields.require(ctx, "host_path", "the host directory holding checkpoints, e.g. /mnt/checkpoints");
            let host_path = host_path.and_then(|f| absolute_path(ctx, &f));
            let storage_path = fields.take("storage_path").and_then(|f| {
                let storage_path = f.non_empty_string(ctx)?;
                check_storage_path(ctx, &f.path, &storage_path, host_path.as_deref());
                Some(storage_path)
            });
            let propagation = fields.take("propagation").and_then(|f| f.choice(ctx, PROPAGATIONS)).unwrap_or("rprivate");
            Some(StorageBackend::SharedFs {
                host_path: host_path?,
                storage_path,
                propagation: propagation.to_string(),
                container_path: fields.string(ctx, "container_path"),
                checkpoint_path: fields.string(ctx, "checkpoint_path"),
                tensorboard_path: fields.string(ctx, "tensorboard_path"),
            })
        }
        "directory" => {
            let container_path = fields.require(ctx, "container_path", "the directory inside the container, e.g. /checkpoints");
            Some(StorageBackend::Directory { container_path: container_path.and_then(|f| f.non_empty_string(ctx))? })
        }
        "s3" => {
            let bucket = fields.require(ctx, "bucket", "the S3 bucket name").and_then(|f| f.non_empty_string(ctx));
            let access_key = fields.string(ctx, "access_key");
            let secret_key = fields.string(ctx, "secret_key");
            let endpoint_url = fields.string(ctx, "endpoint_url");
            let prefix = read_prefix(ctx, fields);
            Some(StorageBackend::S3 { bucket: bucket?, access_key, secret_key, endpoint_url, prefix })
        }
        "gcs" => {
            let bucket = fields.require(ctx, "bucket", "the GCS bucket name").and_then(|f| f.non_empty_string(ctx));
            let prefix = read_prefix(ctx, fields);
            Some(StorageBackend::Gcs { bucket: bucket?, prefix })
        }
        _ => {
            let container = fields.require(ctx, "container", "the Azure blob container").and_then(|f| f.non_empty_string(ctx));
            let connection_string = fields.string(ctx, "connection_string");
            let account_url = fields.string(ctx, "account_url");
            let credential = fields.string(ctx, "credential");
            let path = fields.path().clone();
            if connection_string.is_some() == account_url.is_some() {
                let found = if connection_string.is_some() { "both" } else { "neither" };
                ctx.invalid(&path.key("connection_string"), found, "set exactly one of connection_string or account_url");
            }
            if connection_string.is_some() && credential.is_some() {
                ctx.invalid(&path.key("credential"), "credential with connection_string", "credential goes with account_url only");
            }
            Some(StorageBackend::Azure { container: container?, connection_string, account_url, credential })
        }
    }
}

fn absolute_path(ctx: &mut Ctx, field: &Field<'_>) -> Option<String> {
    let path = field.non_empty_string(ctx)?;
    if !path.starts_with('/') {
        ctx.invalid(&field.path, quote(&path), "must be an absolute path");
        return None;
    }
    Some(path)
}

/// `storage_path` must stay inside `host_path`: relative without `..`, or an absolute subdirectory.
fn check_storage_path(ctx: &mut Ctx, path: &FieldPath, storage_path: &str, host_path: Option<&str>) {
    let escapes = storage_path.split('/').any(|segment| segment == "..");
    let outside = match (storage_path.starts_with('/'), host_path) {
        (true, Some(host)) => {
            let host = host.trim_end_matches('/');
            storage_path != host && !storage_path.starts_with(&format!("{host}/"))
        }
        _ => false,
    };
    if escapes || outside {
        ctx.invalid(path, quote(storage_path), "must be a relative directory or a subdirectory of host_path");
    }
}

/// Object-store prefixes may not climb out of the bucket with `..`.
fn read_prefix(ctx: &mut Ctx, fields: &mut Fields<'_>) -> Option<String> {
    let field = fields.take("prefix")?;
    let prefix = field.string(ctx)?;
    if prefix.split('/').any(|segment| segment == "..") {
        ctx.invalid(&field.path, quote(&prefix), "prefix cannot contain a .. segment");
        return None;
    }
    Some(prefix)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::read::Mode;

    fn read(value: Value) -> (Option<CheckpointStorage>, Vec<String>) {
        let mut ctx = Ctx::new(Mode::Complete);
        let path = FieldPath::root().key("checkpoint_storage");
        let storage = read_checkpoint_storage(&mut ctx, Some(Field::new(&value, path.clone())), &path);
        (storage, ctx.errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn shared_fs_defaults_and_serialises_with_type_tag() {
        let (storage, errors) = read(json!({"type": "shared_fs", "host_path": "/mnt/ckpt", "storage_path": "runs"}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            serde_json::to_value(storage.unwrap()).unwrap(),
            json!({"type": "shared_fs", "host_path": "/mnt/ckpt", "storage_path": "runs", "propagation": "rprivate",
                   "container_path": null, "checkpoint_path": null, "tensorboard_path": null,
                   "save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1})
        );
    }

    #[test]
    fn reports_bad_paths_and_counts() {
        let (_, errors) = read(json!({"type": "shared_fs", "host_path": "mnt", "save_trial_best": -1}));
        assert_eq!(
            errors,
            [
                "checkpoint_storage.save_trial_best: found -1, expected an integer >= 0",
                "checkpoint_storage.host_path: must be an absolute path (found \"mnt\")",
            ]
        );
        let (_, errors) = read(json!({"type": "shared_fs", "host_path": "/mnt", "storage_path": "/etc"}));
        assert!(errors[0].starts_with("checkpoint_storage.storage_path: must be a relative directory"));
        let (_, errors) = read(json!({"type": "s3", "bucket": "b", "prefix": "a/../b"}));
        assert!(errors[0].starts_with("checkpoint_storage.prefix: prefix cannot contain"));
    }

    #[test]
    fn requires_type_specific_fields_and_known_types() {
        let (_, errors) = read(json!({"type": "s3"}));
        assert!(errors[0].starts_with("checkpoint_storage.bucket: required but missing"));
        let (_, errors) = read(json!({"type": "hdfs", "hdfs_url": "x"}));
        assert!(errors[0].contains("no longer supported"));
        let (storage, errors) = read(json!({"type": "directory", "container_path": "/ckpt"}));
        assert!(errors.is_empty());
        assert_eq!(storage.unwrap().backend, StorageBackend::Directory { container_path: "/ckpt".into() });
    }
}
