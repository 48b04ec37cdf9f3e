//! Records of task log lines: what tasks ship and how a reader or follower selects them.

use chrono::{DateTime, Utc};

use crate::model::OrderDirection;

#[derive(Clone, Debug)]
pub struct NewLogLine {
    pub task_id: String,
    pub allocation_id: Option<String>,
    pub agent_id: Option<String>,
    pub container_id: Option<String>,
    pub rank_id: Option<i32>,
    pub timestamp: DateTime<Utc>,
    /// `LOG_LEVEL_INFO`, ...
    pub level: Option<String>,
    pub log: String,
    pub source: Option<String>,
    /// `stdout` or `stderr`.
    pub stdtype: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LogRecord {
    /// The line's sequence number within its task (1, 2, ...), in insertion order: the cursor
    /// for following a task's logs.
    pub id: i64,
    pub task_id: String,
    pub allocation_id: Option<String>,
    pub agent_id: Option<String>,
    pub container_id: Option<String>,
    pub rank_id: Option<i32>,
    pub timestamp: DateTime<Utc>,
    pub level: Option<String>,
    pub log: String,
    pub source: Option<String>,
    pub stdtype: Option<String>,
}

/// Which of a task's log lines to read. List filters match any of their values; empty = all.
#[derive(Clone, Debug, Default)]
pub struct LogFilter {
    /// Cursor: only lines after this id in `order` (greater ids ascending, smaller descending).
    pub after_id: Option<i64>,
    /// Ordered by id. Each read is consistent on its own; pages follow with `after_id`.
    pub order: OrderDirection,
    /// `None` = all.
    pub limit: Option<i64>,
    pub levels: Vec<String>,
    pub stdtypes: Vec<String>,
    pub sources: Vec<String>,
    pub rank_ids: Vec<i32>,
    pub agent_ids: Vec<String>,
    pub container_ids: Vec<String>,
    pub allocation_ids: Vec<String>,
    /// Strictly before.
    pub timestamp_before: Option<DateTime<Utc>>,
    /// Strictly after.
    pub timestamp_after: Option<DateTime<Utc>>,
    /// Case-sensitive substring of the line.
    pub search_text: Option<String>,
}

/// The distinct values each filter can take for a task's lines (`…/logs/fields`), sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogFields {
    pub allocation_ids: Vec<String>,
    pub agent_ids: Vec<String>,
    pub container_ids: Vec<String>,
    pub rank_ids: Vec<i32>,
    pub sources: Vec<String>,
    pub stdtypes: Vec<String>,
}
