//! Records of trials.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::model::OrderDirection;

#[derive(Clone, Debug)]
pub struct NewTrial {
    pub experiment_id: i32,
    /// The searcher's request id, unique within the experiment.
    pub request_id: String,
    /// `<experiment_id>.<uuid>`.
    pub task_id: String,
    pub state: String,
    pub hparams: Value,
    pub seed: i64,
    pub start_time: DateTime<Utc>,
}

/// What placing a run of a trial reads and changes (`Store::start_trial_run`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrialRunStart {
    /// Whether this placement set the trial's start time (its first).
    pub first_start: bool,
    /// The trial's latest checkpoint, where the run resumes.
    pub latest_checkpoint_uuid: Option<String>,
    /// That checkpoint's `steps_completed`, when its row exists.
    pub latest_checkpoint_steps: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TrialRecord {
    pub id: i32,
    pub experiment_id: i32,
    pub request_id: String,
    pub task_id: String,
    pub state: String,
    pub hparams: Value,
    pub seed: i64,
    pub start_time: DateTime<Utc>,
    pub end_time: Option<DateTime<Utc>>,
    /// Failed runs so far.
    pub restarts: i32,
    /// The current run (allocation `<task_id>.<run_id>`); 1 for the first.
    pub run_id: i32,
    /// The highest `steps_completed` among the trial's live (non-archived) metrics.
    pub total_batches: i64,
    /// The completed checkpoint with the most steps reported for this trial.
    pub latest_checkpoint_uuid: Option<String>,
    /// The best searcher metric seen in validation reports that named it.
    pub best_validation: Option<f64>,
    /// See the crate's summary module: per group, per metric count/last/type/min/max/sum.
    pub summary_metrics: Value,
    /// Free text the harness reports (e.g. "validating").
    pub runner_state: String,
    pub end_reason: Option<String>,
    pub progress: Option<f64>,
    /// The checkpoint the trial started from before it had one of its own (a warm start).
    pub warm_start_checkpoint_uuid: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrialSort {
    #[default]
    Id,
    StartTime,
    /// Unfinished trials last in either direction.
    EndTime,
    State,
    /// Trials without a validation last in either direction.
    BestValidation,
    TotalBatches,
}

#[derive(Clone, Debug, Default)]
pub struct TrialFilter {
    pub experiment_id: i32,
    /// Any of these states; empty = all.
    pub states: Vec<String>,
    pub sort: TrialSort,
    pub order: OrderDirection,
    pub offset: i64,
    /// `None` = all.
    pub limit: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TrialPage {
    pub trials: Vec<TrialRecord>,
    pub total: i64,
}

/// An unmanaged trial to create (see `sql/unmanaged.rs`): paused on run 0 until its script starts it.
#[derive(Clone, Debug)]
pub struct NewUnmanagedTrial {
    pub experiment_id: i32,
    /// `<experiment_id>.<external trial id or a uuid>`, as upstream.
    pub task_id: String,
    pub request_id: String,
    pub hparams: Value,
    /// The caller's own id: a second create with it returns the first trial.
    pub external_trial_id: Option<String>,
    pub owner_id: i32,
    pub job_id: Option<String>,
    pub at: DateTime<Utc>,
}
