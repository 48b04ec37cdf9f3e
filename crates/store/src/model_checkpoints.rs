//! Records of checkpoints and the garbage-collection policy over them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::model::OrderDirection;

/// The state of a checkpoint whose files are all in storage; the only state GC deletes.
pub const CHECKPOINT_COMPLETED: &str = "STATE_COMPLETED";

#[derive(Clone, Debug)]
pub struct NewCheckpoint {
    /// Chosen by the harness; also the storage directory name.
    pub uuid: String,
    pub task_id: String,
    pub allocation_id: Option<String>,
    pub trial_id: Option<i32>,
    pub experiment_id: Option<i32>,
    pub report_time: DateTime<Utc>,
    pub state: String,
    /// Relative path → size in bytes (directories end in `/` with size 0).
    pub resources: BTreeMap<String, i64>,
    pub metadata: Value,
    pub steps_completed: i64,
    pub storage_id: Option<i32>,
    /// The validation searcher metric at or before `steps_completed`, when there is one.
    pub searcher_metric: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointRecord {
    pub uuid: String,
    pub task_id: String,
    pub allocation_id: Option<String>,
    pub trial_id: Option<i32>,
    pub experiment_id: Option<i32>,
    pub report_time: DateTime<Utc>,
    pub state: String,
    pub resources: BTreeMap<String, i64>,
    pub metadata: Value,
    pub steps_completed: i64,
    pub storage_id: Option<i32>,
    /// Sum of `resources`.
    pub size: i64,
    pub searcher_metric: Option<f64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CheckpointSort {
    #[default]
    Uuid,
    TrialId,
    /// `steps_completed`.
    BatchNumber,
    /// The report time.
    EndTime,
    State,
    /// Checkpoints without a metric last in either direction.
    SearcherMetric,
}

/// Which checkpoints to list: those of an experiment, of a trial, or (both `None`) all.
#[derive(Clone, Debug, Default)]
pub struct CheckpointFilter {
    pub experiment_id: Option<i32>,
    pub trial_id: Option<i32>,
    /// Any of these states; empty = all.
    pub states: Vec<String>,
    pub sort: CheckpointSort,
    pub order: OrderDirection,
    pub offset: i64,
    /// `None` = all.
    pub limit: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointPage {
    pub checkpoints: Vec<CheckpointRecord>,
    pub total: i64,
}

/// The experiment's `checkpoint_storage` retention settings, as upstream's GC applies them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointGcPolicy {
    /// Best checkpoints of the whole experiment to keep.
    pub save_experiment_best: i64,
    /// Best checkpoints of each trial to keep.
    pub save_trial_best: i64,
    /// Most recent (by steps) checkpoints of each trial to keep.
    pub save_trial_latest: i64,
    pub smaller_is_better: bool,
}
