//! Records of workspaces and projects: what is stored, what a listing filters on, and what a
//! deletion reports.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::model::{AgentUserGroup, OrderDirection};

/// Upstream's `v1WorkspaceState` names, shared by workspaces and projects: only a refused
/// deletion leaves a row in a state other than the first.
pub const WORKSPACE_STATE_UNSPECIFIED: &str = "WORKSPACE_STATE_UNSPECIFIED";
pub const WORKSPACE_STATE_DELETE_FAILED: &str = "WORKSPACE_STATE_DELETE_FAILED";
/// A workspace whose deletion runs in the background (`Store::begin_workspace_deletion`).
pub const WORKSPACE_STATE_DELETING: &str = "WORKSPACE_STATE_DELETING";

#[derive(Clone, Debug, PartialEq)]
pub struct WorkspaceRecord {
    pub id: i32,
    pub name: String,
    pub archived: bool,
    pub immutable: bool,
    pub user_id: Option<i32>,
    /// The creator's username; empty for the built-in workspace.
    pub username: String,
    pub num_projects: i64,
    pub num_experiments: i64,
    /// Pinned by the user the record was read for (pins are per user).
    pub pinned: bool,
    pub pinned_at: Option<DateTime<Utc>>,
    /// Merged under the checkpoint storage of experiments created in the workspace.
    pub checkpoint_storage_config: Option<Value>,
    /// The account tasks in the workspace run as, before the owner's own link.
    pub agent_user_group: Option<AgentUserGroup>,
    pub default_compute_pool: String,
    pub default_aux_pool: String,
    pub state: String,
    pub error_message: String,
}

#[derive(Clone, Debug)]
pub struct NewWorkspace {
    pub name: String,
    pub user_id: i32,
    pub checkpoint_storage_config: Option<Value>,
    pub agent_user_group: Option<AgentUserGroup>,
    pub default_compute_pool: String,
    pub default_aux_pool: String,
}

/// A partial update: `None` leaves a field as it is; `Some(None)` clears an optional one.
#[derive(Clone, Debug, Default)]
pub struct WorkspacePatch {
    pub name: Option<String>,
    pub checkpoint_storage_config: Option<Option<Value>>,
    pub agent_user_group: Option<Option<AgentUserGroup>>,
    pub default_compute_pool: Option<String>,
    pub default_aux_pool: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WorkspaceSort {
    #[default]
    Id,
    Name,
}

#[derive(Clone, Debug, Default)]
pub struct WorkspaceFilter {
    /// Whose pins `pinned` reports and filters on.
    pub viewer_id: i32,
    /// Name equal ignoring ASCII case.
    pub name: Option<String>,
    /// Name equal exactly.
    pub name_case_sensitive: Option<String>,
    pub archived: Option<bool>,
    pub pinned: Option<bool>,
    /// Creators, by id or by username (either matches).
    pub user_ids: Vec<i32>,
    pub usernames: Vec<String>,
    pub sort: WorkspaceSort,
    pub order: OrderDirection,
    pub offset: i64,
    /// 0: no limit.
    pub limit: i64,
}

/// A project with the workspace it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectRecord {
    pub id: i32,
    pub name: String,
    pub description: String,
    pub workspace_id: i32,
    pub workspace_name: String,
    pub archived: bool,
    /// The project's workspace is archived (nothing may be added to its projects either).
    pub workspace_archived: bool,
    pub immutable: bool,
    pub user_id: Option<i32>,
    pub username: String,
    pub key: String,
    /// `[{"name", "contents"}]`, as upstream's `v1Note`s.
    pub notes: Value,
    pub state: String,
    pub error_message: String,
}

/// A project with the counts its listing shows.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectSummary {
    pub project: ProjectRecord,
    pub num_experiments: i64,
    /// Experiments in `STATE_ACTIVE`, `STATE_QUEUED` or `STATE_RUNNING`.
    pub num_active_experiments: i64,
    pub last_experiment_started_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug)]
pub struct NewProject {
    pub name: String,
    pub description: String,
    /// `None`: derived from the name, unique among all projects.
    pub key: Option<String>,
    pub workspace_id: i32,
    pub user_id: i32,
}

#[derive(Clone, Debug, Default)]
pub struct ProjectPatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub key: Option<String>,
    pub notes: Option<Value>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProjectSort {
    #[default]
    Id,
    Name,
    Description,
    LastExperimentStartTime,
}

#[derive(Clone, Debug, Default)]
pub struct ProjectFilter {
    pub workspace_id: i32,
    pub name: Option<String>,
    pub archived: Option<bool>,
    pub user_ids: Vec<i32>,
    pub usernames: Vec<String>,
    pub sort: ProjectSort,
    pub order: OrderDirection,
    pub offset: i64,
    /// 0: no limit.
    pub limit: i64,
}

/// What a deletion did. A workspace or project holding unfinished experiments or open tasks is
/// kept, marked `WORKSPACE_STATE_DELETE_FAILED` with `reason` as its error message (what
/// upstream's asynchronous deletion reports).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deletion {
    Deleted,
    Refused { reason: String },
}
