//! The cluster-wide part of the store: the message an admin shows every user, and the
//! allocation usage report (upstream's `allocations-csv`). A supertrait of [`crate::Store`], so
//! every store has it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreResult;

/// A cluster message to store; it replaces any stored one.
#[derive(Clone, Debug)]
pub struct NewClusterMessage {
    pub created_by: i32,
    pub message: String,
    pub start_ms: i64,
    /// `None`: shown until cleared.
    pub end_ms: Option<i64>,
    pub created_ms: i64,
}

/// A stored cluster message.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct ClusterMessageRecord {
    pub message: String,
    pub start_ms: i64,
    pub end_ms: Option<i64>,
    pub created_ms: i64,
}

/// One allocation as the usage report lists it: who ran what, where, for how long.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct AllocationUsageRecord {
    pub allocation_id: String,
    pub task_id: String,
    pub task_type: String,
    /// The task's owner (the experiment's for a trial); `None` when the user was deleted.
    pub username: Option<String>,
    pub user_id: Option<i32>,
    /// The workspace of the trial's experiment or of the command; `None` for other tasks.
    pub workspace_name: Option<String>,
    pub experiment_id: Option<i32>,
    pub slots: i32,
    pub resource_pool: String,
    pub start_time: DateTime<Utc>,
    pub end_time: Option<DateTime<Utc>>,
}

/// How many rows of one kind are in one state (a Prometheus gauge's sample).
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct StateCount {
    /// The experiment/trial state, or the task type of open tasks.
    pub state: String,
    pub count: i64,
}

/// What the cluster-state metrics count, read in one call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateCounts {
    pub experiments: Vec<StateCount>,
    pub trials: Vec<StateCount>,
    /// Tasks not yet ended, by task type.
    pub open_tasks: Vec<StateCount>,
}

/// The most rows one usage report returns.
pub const ALLOCATION_USAGE_LIMIT: i64 = 100_000;

#[async_trait]
pub trait ClusterStore: Send + Sync + 'static {
    /// Stores `message` in place of any stored one (one transaction).
    async fn set_cluster_message(&self, message: NewClusterMessage) -> StoreResult<ClusterMessageRecord>;
    /// Removes the stored message, if any.
    async fn clear_cluster_message(&self) -> StoreResult<()>;
    /// The stored message shown at `now_ms`: started, and not yet ended.
    async fn active_cluster_message(&self, now_ms: i64) -> StoreResult<Option<ClusterMessageRecord>>;
    /// Every allocation that overlapped `[after, before)` — started before `before` and not ended
    /// by `after` — by start time, at most [`ALLOCATION_USAGE_LIMIT`].
    async fn allocation_usage(&self, after: DateTime<Utc>, before: DateTime<Utc>) -> StoreResult<Vec<AllocationUsageRecord>>;
    /// Experiments and trials by state and open tasks by type (`sql/state_counts.rs`).
    async fn state_counts(&self) -> StoreResult<StateCounts>;
}
