//! Wire types of the Determined-compatible REST API.
//!
//! Everything here follows grpc-gateway v1 JSON conventions, because that is what the upstream
//! `determined==0.38.1` CLI, SDK and harness parse: camelCase field names out (camelCase or
//! snake_case accepted in), int64 as JSON strings, enum values by name, RFC 3339 timestamps, and
//! every non-`optional` field always emitted. This crate has no I/O; both the master (serialising)
//! and the `det` CLI (parsing) depend on it, so the two cannot drift apart.

pub mod agent_protocol;
pub mod checkpoints;
pub mod cluster_message;
pub mod commands;
pub mod error;
pub mod experiment_bulk;
pub mod experiments;
pub mod files;
pub mod generic_tasks;
pub mod hp_importance;
pub mod int64;
pub mod logs;
pub mod master;
pub mod metrics_stream;
pub mod model_def_files;
pub mod models;
pub mod pagination;
pub mod preview;
pub mod projects;
pub mod raw_json;
pub mod resources;
pub mod runs;
pub mod runtime;
pub mod searcher_state;
pub mod task_type;
pub mod tasks;
pub mod templates;
pub mod time_series;
pub mod trials;
pub mod unmanaged;
pub mod users;
pub mod webhooks;
mod wire_enum;
pub mod workloads;
pub mod workspaces;

/// The upstream release whose wire contract we implement. Reported by `/info` so the upstream CLI's
/// version check stays silent.
pub const DETERMINED_VERSION: &str = "0.38.1";

/// The salt the upstream clients prepend before SHA-512-hashing a password client-side.
pub const CLIENT_PASSWORD_SALT: &str = "GubPEmmotfiK9TMD6Zdw";
