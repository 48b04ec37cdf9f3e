//! Records of experiments (workspaces and projects: `model_workspaces.rs`).
//!
//! States are stored as upstream's wire enum names (`STATE_ACTIVE`, ...): the store writes what it
//! is given, and the master owns the transition rules.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::StoredJson;

use crate::model::OrderDirection;

/// Id of the default workspace and of its default project, both named "Uncategorized", created
/// by the schema.
pub const DEFAULT_WORKSPACE_ID: i32 = 1;
pub const DEFAULT_PROJECT_ID: i32 = 1;

#[derive(Clone, Debug)]
pub struct NewExperiment {
    pub name: String,
    pub description: String,
    pub notes: String,
    pub state: String,
    pub owner_id: i32,
    pub project_id: i32,
    /// The fully defaulted configuration.
    pub config: Value,
    /// The YAML exactly as submitted.
    pub original_config: String,
    /// The model definition as tar.gz bytes.
    pub model_definition: Vec<u8>,
    pub labels: Vec<String>,
    pub parent_id: Option<i32>,
    pub start_time: DateTime<Utc>,
    pub job_id: String,
    pub unmanaged: bool,
}

/// An experiment without its model definition (see `Store::experiment_model_definition`) or
/// searcher snapshot (see `Store::searcher_snapshot`), which can be large.
#[derive(Clone, Debug, PartialEq)]
pub struct ExperimentRecord {
    pub id: i32,
    pub name: String,
    pub description: String,
    pub notes: String,
    pub state: String,
    pub owner_id: i32,
    pub owner_username: String,
    pub project_id: i32,
    pub workspace_id: i32,
    pub config: StoredJson,
    /// The config's fields a list row shows, in the config's shape (`config_summary_text`): the
    /// stored summary, or the config itself for a row written before summaries were kept.
    pub config_summary: StoredJson,
    pub original_config: String,
    pub archived: bool,
    pub labels: Vec<String>,
    pub parent_id: Option<i32>,
    pub start_time: DateTime<Utc>,
    pub end_time: Option<DateTime<Utc>>,
    /// 0..1, when known.
    pub progress: Option<f64>,
    pub job_id: String,
    pub unmanaged: bool,
    pub end_reason: Option<String>,
    /// Trials the experiment has, counted when the record was read.
    pub num_trials: i64,
}

/// Free-text fields to change; `None` leaves a field alone.
#[derive(Clone, Debug, Default)]
pub struct ExperimentPatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub notes: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExperimentSort {
    #[default]
    Id,
    /// Case-insensitive.
    Name,
    StartTime,
    /// Running experiments (no end time) last in either direction.
    EndTime,
    State,
    /// Experiments without progress last in either direction.
    Progress,
    /// The owner's username, case-insensitive.
    Owner,
}

#[derive(Clone, Debug, Default)]
pub struct ExperimentFilter {
    pub archived: Option<bool>,
    /// Any of these owners; empty = everyone's.
    pub owner_ids: Vec<i32>,
    /// Any of these states; empty = all.
    pub states: Vec<String>,
    /// Case-insensitive substring of the name.
    pub name: Option<String>,
    /// Experiments carrying every one of these labels.
    pub labels: Vec<String>,
    pub project_id: Option<i32>,
    pub sort: ExperimentSort,
    pub order: OrderDirection,
    pub offset: i64,
    /// `None` = all.
    pub limit: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExperimentPage {
    /// `original_config` left empty (see `Store::list_experiments`).
    pub experiments: Vec<ExperimentRecord>,
    /// Matching rows before offset/limit.
    pub total: i64,
}
