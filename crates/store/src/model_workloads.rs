//! A trial's workloads as the store pages them: its training and validation reports and its
//! checkpoints in one list, filtered, ordered and cut to a page in SQL, so a page costs what it
//! returns rather than the trial's history.

use crate::model_checkpoints::CheckpointRecord;
use crate::model_metrics::MetricRecord;

/// Which of a trial's workloads to list and in what order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadFilter {
    /// The metric groups to include (live reports only); empty for none.
    pub groups: Vec<String>,
    pub include_checkpoints: bool,
    /// Leave out checkpoints in this state (the caller's typed state, as stored).
    pub skip_checkpoint_state: Option<String>,
    /// Order by this metric of the reports of `sort_group` (others go last, by batches);
    /// `None` orders by batches.
    pub sort_metric: Option<String>,
    pub sort_group: String,
    pub descending: bool,
    /// Rows skipped (non-negative).
    pub offset: i64,
    /// `None` for all the rest.
    pub limit: Option<i64>,
}

/// One workload of a page.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadRecord {
    Metric(MetricRecord),
    Checkpoint(CheckpointRecord),
}

/// A page of workloads and how many match the filter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadPage {
    pub items: Vec<WorkloadRecord>,
    pub total: i64,
}

/// A keyset page of one trial's live metric reports, by `(steps_completed, id)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricPageQuery {
    pub trial_id: i32,
    /// Only this group (`None`: every group).
    pub group: Option<String>,
    /// Only reports at exactly this step.
    pub steps_completed: Option<i64>,
    /// Only reports after this `(steps_completed, id)`: the last one of the previous page.
    pub after: Option<(i64, i64)>,
    /// Reports at most; non-positive means none.
    pub limit: i64,
}
