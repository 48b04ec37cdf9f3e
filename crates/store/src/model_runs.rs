//! Runs (0.38's name for trials) as the runs API lists and acts on them: a trial with its
//! experiment's, project's and workspace's fields, selected by ids or by a filter tree and sorted
//! by named columns — all evaluated in SQL (`sql/runs.rs`, `sql/run_filter.rs`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::model_trials::TrialRecord;

/// A column a run filter or sort names. Every variant maps to a fixed SQL expression; nothing a
/// caller sends becomes SQL text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunColumn {
    Id,
    ExperimentId,
    ExperimentName,
    ExperimentDescription,
    State,
    StartTime,
    EndTime,
    ProjectId,
    /// The owner's username.
    User,
    UserId,
    /// The experiment's parent (`forkedFrom`).
    ForkedFrom,
    /// `searcher.name` of the experiment's config.
    SearcherType,
    /// `searcher.metric` of the experiment's config.
    SearcherMetric,
    /// `resources.resource_pool` of the experiment's config.
    ResourcePool,
    /// The experiment's labels (filters only: `contains`, `notContains`, `isEmpty`, `notEmpty`).
    Tags,
    /// The trial's best searcher metric value.
    SearcherMetricValue,
    CheckpointCount,
    CheckpointSize,
    /// Whether the run's experiment has more than one trial.
    IsExpMultitrial,
    /// Seconds from start to end (or now).
    Duration,
}

/// A filter comparison. `In`/`NotIn` take a list (used for a state name that stands for several
/// stored ones, e.g. `ACTIVE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFilterOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Contains,
    NotContains,
    IsEmpty,
    NotEmpty,
    In,
    NotIn,
}

/// A typed filter value; the master checks it suits the column before the store sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum RunFilterValue {
    None,
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
    Time(DateTime<Utc>),
    TextList(Vec<String>),
}

/// A filter tree: groups joined by AND (`any: false`) or OR (`any: true`); an empty group is TRUE.
#[derive(Clone, Debug, PartialEq)]
pub enum RunFilterExpr {
    Group {
        any: bool,
        children: Vec<RunFilterExpr>,
    },
    Field {
        column: RunColumn,
        op: RunFilterOp,
        value: RunFilterValue,
    },
    /// A hyperparameter of the run by its path (`["optimizer", "lr"]` for `hp.optimizer.lr`): a
    /// number value compares numbers, a text value texts; runs without it never match a
    /// comparison. Path keys hold no `"` or `\` (the master refuses them).
    Hyperparameter {
        path: Vec<String>,
        op: RunFilterOp,
        value: RunFilterValue,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSortKey {
    pub column: RunColumn,
    pub descending: bool,
}

/// Which runs, in what order, which page. Sorting always ends with the run id, so pages are stable.
#[derive(Clone, Debug, Default)]
pub struct RunQuery {
    /// Runs of experiments in this project only.
    pub project_id: Option<i32>,
    /// Only these runs (the actions by id).
    pub ids: Option<Vec<i32>>,
    pub filter: Option<RunFilterExpr>,
    /// Leave out runs that are archived or whose experiment is.
    pub hide_archived: bool,
    pub sort: Vec<RunSortKey>,
    pub offset: i64,
    /// `None`: every row.
    pub limit: Option<i64>,
}

/// One run with what its row in upstream's run table shows.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    pub trial: TrialRecord,
    pub archived: bool,
    /// Completed checkpoints and their total size in bytes.
    pub checkpoint_count: i64,
    pub checkpoint_size: i64,
    pub experiment_name: String,
    pub experiment_description: String,
    pub experiment_state: String,
    pub experiment_config: Value,
    pub experiment_progress: Option<f64>,
    pub experiment_parent_id: Option<i32>,
    pub experiment_unmanaged: bool,
    pub experiment_archived: bool,
    pub experiment_labels: Vec<String>,
    /// Trials of the run's experiment.
    pub experiment_trials: i64,
    pub owner_id: i32,
    pub project_id: i32,
    pub project_name: String,
    pub project_archived: bool,
    pub workspace_id: i32,
    pub workspace_name: String,
    pub workspace_archived: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunPage {
    pub runs: Vec<RunRecord>,
    /// Every run the query matches, before offset and limit.
    pub total: i64,
}

/// What a deletion of runs did: `deleted` ids, and `registered` ids kept because one of their
/// checkpoints is in the model registry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunDeletion {
    pub deleted: Vec<i32>,
    pub registered: Vec<i32>,
}
