//! Records of command tasks (commands, notebooks, shells, TensorBoards and generic tasks: every
//! task that is not a trial) and of config templates.
//!
//! A command task is a `tasks` row (type, start and end time, job, owner) plus a command row with
//! what only these tasks have (workspace, description, merged config, context archive, kind-specific
//! JSON, exit status, priority); the store writes and reads both together.

use chrono::{DateTime, Utc};
use serde_json::Value;

#[derive(Clone, Debug)]
pub struct NewCommandTask {
    /// A UUID string; shares the id space of `tasks`.
    pub task_id: String,
    /// `TASK_TYPE_COMMAND`, `TASK_TYPE_NOTEBOOK`, `TASK_TYPE_SHELL`, `TASK_TYPE_TENSORBOARD` or
    /// `TASK_TYPE_GENERIC`.
    pub task_type: String,
    pub job_id: String,
    pub owner_id: i32,
    pub workspace_id: i32,
    pub description: String,
    /// The merged task config.
    pub config: Value,
    /// tar.gz of the uploaded context directory; empty when there is none.
    pub context: Vec<u8>,
    /// Kind-specific JSON (a TensorBoard's experiment and trial ids, a shell's key pair, ...).
    pub extra: Value,
    pub start_time: DateTime<Utc>,
}

/// A command task as listed: everything but the context archive
/// ([`Store::command_task_context`](crate::Store::command_task_context) reads that).
#[derive(Clone, Debug, PartialEq)]
pub struct CommandTaskRecord {
    pub task_id: String,
    pub task_type: String,
    pub job_id: String,
    pub owner_id: i32,
    pub owner_username: String,
    pub workspace_id: i32,
    pub description: String,
    pub config: Value,
    pub extra: Value,
    pub start_time: DateTime<Utc>,
    /// The `tasks` row's end time: set when the task ends.
    pub end_time: Option<DateTime<Utc>>,
    /// Set when the task ends, e.g. "resources exited successfully".
    pub exit_status: Option<String>,
    pub priority: Option<i32>,
}

/// Empty lists and `None` filter nothing.
#[derive(Clone, Debug, Default)]
pub struct CommandTaskFilter {
    pub task_types: Vec<String>,
    pub owner_ids: Vec<i32>,
    pub workspace_id: Option<i32>,
    /// Only tasks that have not ended.
    pub open_only: bool,
}

#[derive(Clone, Debug)]
pub struct NewTemplate {
    pub name: String,
    pub config: Value,
    pub workspace_id: i32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TemplateRecord {
    pub name: String,
    pub config: Value,
    pub workspace_id: i32,
}

#[derive(Clone, Debug, Default)]
pub struct TemplateFilter {
    /// Case-insensitive (ASCII) substring of the name.
    pub name_contains: Option<String>,
    /// Empty: every workspace.
    pub workspace_ids: Vec<i32>,
    pub offset: i64,
    /// 0: no limit.
    pub limit: i64,
}
