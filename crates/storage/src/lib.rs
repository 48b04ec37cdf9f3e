//! The one place that knows where checkpoints live.
//!
//! A `checkpoint_storage` config (JSON, as stored with an experiment, or the typed one from
//! `resolute-expconf`) becomes a [`StorageConfig`]; [`StorageConfig::root`] computes the directory
//! holding every checkpoint (`shared_fs`: `host_path[/storage_path]`, as the harness's
//! `_full_storage_path`; `directory`: `container_path`), [`StorageConfig::checkpoint_dir`] one
//! checkpoint's. The agent rewrites `shared_fs` to `directory` with the same root
//! ([`shared_fs_to_directory`]), so trials write exactly where the master looks. The master
//! deletes, lists and reads files through a [`CheckpointStore`] ([`StorageConfig::open`]):
//! [`LocalDirectory`] for those two, [`CloudStore`] (`object_store`) for s3, gcs and azure;
//! [`FileGlobs`] picks the files a partial deletion removes.

mod cloud;
mod config;
mod error;
mod globs;
mod local;
mod rewrite;

pub use cloud::CloudStore;
pub use config::{CloudConfig, CloudKind, StorageConfig, validate_uuid};
pub use error::StorageError;
pub use globs::{BadGlob, FileGlobs};
pub use local::{CheckpointFiles, CheckpointStore, Deletion, LocalDirectory, ObjectFile, ObjectFiles};
pub use rewrite::{rewrite_experiment_config, shared_fs_to_directory};
