//! Records of metric reports and what is derived from them.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

/// The metric group of training reports.
pub const TRAINING_GROUP: &str = "training";
/// The metric group of validation reports (the ones the searcher sees).
pub const VALIDATION_GROUP: &str = "validation";

/// Tells `insert_metrics` which value of a validation report is the searcher's, so the trial's
/// `best_validation` follows in the same transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct SearcherMetric {
    pub name: String,
    pub smaller_is_better: bool,
}

#[derive(Clone, Debug)]
pub struct NewMetricReport {
    pub trial_id: i32,
    pub trial_run_id: i32,
    /// `training`, `validation` or any custom group name.
    pub group: String,
    pub steps_completed: i64,
    pub report_time: DateTime<Utc>,
    pub avg_metrics: Map<String, Value>,
    /// Per-batch metrics; empty when not reported.
    pub batch_metrics: Vec<Value>,
    /// When set and `avg_metrics` holds that metric as a number, it may improve the trial's
    /// `best_validation`.
    pub searcher_metric: Option<SearcherMetric>,
}

/// A report from a running task for `insert_metrics_if_current`: stored only if, when its
/// transaction runs, its run is still the trial's current one and its allocation session (when
/// given) still belongs to an open allocation.
#[derive(Clone, Debug)]
pub struct CurrentMetricReport {
    pub report: NewMetricReport,
    /// The allocation session (token) the report came with; `None` for a user session.
    pub allocation_session_id: Option<i64>,
}

/// What became of one report given to `insert_metrics_if_current`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricAdmission {
    Stored,
    /// Not stored: the trial has moved on to `current_run_id`.
    StaleRun {
        current_run_id: i32,
    },
    /// Not stored: the allocation session was deleted or its allocation has ended.
    SessionEnded,
    /// Not stored: the trial does not exist.
    TrialNotFound,
    /// Not stored again: an exact repeat (same trial, run, group, steps and metrics) of a stored
    /// report, as a harness retry after a lost answer sends; the report is in, once.
    Repeated,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MetricRecord {
    pub id: i64,
    pub trial_id: i32,
    pub trial_run_id: i32,
    pub group: String,
    pub steps_completed: i64,
    pub report_time: DateTime<Utc>,
    pub avg_metrics: Map<String, Value>,
    pub batch_metrics: Vec<Value>,
    /// Superseded by a later run that restarted from an earlier checkpoint.
    pub archived: bool,
}

/// The best value of a metric across an experiment's validations, and where it was reported.
#[derive(Clone, Debug, PartialEq)]
pub struct BestValidation {
    pub trial_id: i32,
    pub steps_completed: i64,
    pub value: f64,
}
