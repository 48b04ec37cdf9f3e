//! Records of tasks (trials, commands, GC, ...), their allocations, and the allocation tokens that
//! authenticate code running inside them.

use chrono::{DateTime, Utc};

#[derive(Clone, Debug)]
pub struct NewTask {
    pub task_id: String,
    /// `TASK_TYPE_TRIAL`, `TASK_TYPE_COMMAND`, ...
    pub task_type: String,
    pub start_time: DateTime<Utc>,
    pub job_id: Option<String>,
    pub owner_id: Option<i32>,
}

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct TaskRecord {
    pub task_id: String,
    pub task_type: String,
    pub start_time: DateTime<Utc>,
    pub end_time: Option<DateTime<Utc>>,
    pub job_id: Option<String>,
    pub owner_id: Option<i32>,
}

/// A task with its allocations, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskWithAllocations {
    pub task: TaskRecord,
    pub allocations: Vec<AllocationRecord>,
}

#[derive(Clone, Debug, Default)]
pub struct TaskFilter {
    pub task_type: Option<String>,
    /// Only tasks without an end time.
    pub open_only: bool,
}

#[derive(Clone, Debug)]
pub struct NewAllocation {
    /// `<task_id>.<n>`.
    pub allocation_id: String,
    pub task_id: String,
    /// `STATE_QUEUED`, `STATE_RUNNING`, ...
    pub state: String,
    pub slots: i32,
    pub resource_pool: String,
    pub agent_id: Option<String>,
    pub start_time: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct AllocationRecord {
    pub allocation_id: String,
    pub task_id: String,
    pub state: String,
    pub slots: i32,
    pub resource_pool: String,
    pub agent_id: Option<String>,
    pub start_time: DateTime<Utc>,
    pub end_time: Option<DateTime<Utc>>,
    pub exit_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub is_ready: bool,
}

/// Fields to change; `None` leaves a field alone.
#[derive(Clone, Debug, Default)]
pub struct AllocationPatch {
    pub state: Option<String>,
    pub agent_id: Option<String>,
    pub end_time: Option<DateTime<Utc>>,
    pub exit_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub is_ready: Option<bool>,
}

#[derive(Clone, Debug)]
pub struct NewAllocationSession {
    pub allocation_id: String,
    /// SHA-256 of the token: the token itself is never stored.
    pub token_hash: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct AllocationSessionRecord {
    pub id: i64,
    pub allocation_id: String,
    pub token_hash: String,
    pub created_at: DateTime<Utc>,
}

/// An allocation token's session with its allocation and task: what authenticating a call from
/// inside a task needs, in one query.
#[derive(Clone, Debug, PartialEq)]
pub struct AuthenticatedAllocation {
    pub session_id: i64,
    pub allocation: AllocationRecord,
    pub task: TaskRecord,
}
