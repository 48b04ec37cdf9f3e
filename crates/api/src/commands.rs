//! NTSC tasks — commands, notebooks, shells and TensorBoards (`/api/v1/{commands,notebooks,shells,
//! tensorboards}*`): the task objects, launch, list, get, kill and set-priority.
//!
//! The four kinds share their first fields ([`NtscBase`], flattened on the wire) and differ only in
//! a few extras, so the master maps one record to any of them and the CLI lists them alike.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::experiments::{ExperimentState, LaunchWarning};
use crate::files::File;
use crate::pagination::Pagination;
use crate::tasks::{Device, TaskState};
use crate::users::OrderBy;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `containerv1State`.
    pub enum ContainerState {
        Unspecified = "STATE_UNSPECIFIED",
        Assigned = "STATE_ASSIGNED",
        Pulling = "STATE_PULLING",
        Starting = "STATE_STARTING",
        Running = "STATE_RUNNING",
        Terminated = "STATE_TERMINATED",
    }
}

wire_enum! {
    /// `sortBy` of the NTSC list calls (`v1GetCommandsRequestSortBy` and its siblings).
    pub enum NtscSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        Id = "SORT_BY_ID",
        Description = "SORT_BY_DESCRIPTION",
        StartTime = "SORT_BY_START_TIME",
        WorkspaceId = "SORT_BY_WORKSPACE_ID",
    }
}

/// `v1Container`: the process a task runs in (the agent's process here).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub id: String,
    pub state: ContainerState,
    #[serde(default)]
    pub devices: Vec<Device>,
    /// The agent it runs on.
    #[serde(default)]
    pub parent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_denied: Option<bool>,
}

/// The fields every NTSC task carries. The Python bindings index `id, description, state,
/// startTime, username, resourcePool, jobId, workspaceId` directly, so those are always present.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NtscBase {
    /// The task id (a UUID).
    pub id: String,
    #[serde(default)]
    pub description: String,
    pub state: TaskState,
    pub start_time: DateTime<Utc>,
    /// `null` until the task is placed on an agent.
    #[serde(default)]
    pub container: Option<Container>,
    #[serde(default, alias = "display_name")]
    pub display_name: String,
    #[serde(default, alias = "user_id")]
    pub user_id: i32,
    pub username: String,
    #[serde(default, alias = "resource_pool")]
    pub resource_pool: String,
    /// proto3 `optional`: omitted while the task runs; the exit's summary once it ended.
    #[serde(default, alias = "exit_status", skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<String>,
    #[serde(default, alias = "job_id")]
    pub job_id: String,
    #[serde(default, alias = "workspace_id")]
    pub workspace_id: i32,
}

/// Gives the shared fields of any NTSC kind.
pub trait NtscTask {
    fn base(&self) -> &NtscBase;
}

/// `v1Command`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Command {
    #[serde(flatten)]
    pub base: NtscBase,
}

/// `v1Notebook`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Notebook {
    #[serde(flatten)]
    pub base: NtscBase,
    /// The proxied path (`/proxy/<id>/`); empty until the task has a proxy.
    #[serde(default, alias = "service_address")]
    pub service_address: String,
}

/// `v1Shell`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Shell {
    #[serde(flatten)]
    pub base: NtscBase,
    /// PEM of the key `det shell open` logs in with.
    #[serde(default, alias = "private_key")]
    pub private_key: String,
    #[serde(default, alias = "public_key")]
    pub public_key: String,
    /// `{agentUid, agentGid, agentUser, agentGroup}` or `null`.
    #[serde(default, alias = "agent_user_group")]
    #[schema(value_type = Option<Object>)]
    pub agent_user_group: Option<Value>,
    /// The container's address mappings (`{containerIp, containerPort, hostIp, hostPort}`).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub addresses: Vec<Value>,
}

/// `v1Tensorboard`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tensorboard {
    #[serde(flatten)]
    pub base: NtscBase,
    #[serde(default, alias = "experiment_ids")]
    pub experiment_ids: Vec<i32>,
    #[serde(default, alias = "trial_ids")]
    pub trial_ids: Vec<i32>,
    #[serde(default, alias = "service_address")]
    pub service_address: String,
}

impl NtscTask for Command {
    fn base(&self) -> &NtscBase {
        &self.base
    }
}
impl NtscTask for Notebook {
    fn base(&self) -> &NtscBase {
        &self.base
    }
}
impl NtscTask for Shell {
    fn base(&self) -> &NtscBase {
        &self.base
    }
}
impl NtscTask for Tensorboard {
    fn base(&self) -> &NtscBase {
        &self.base
    }
}

/// `POST /api/v1/commands`, `/notebooks` and `/shells` (`v1Launch{Command,Notebook,Shell}Request`;
/// `data` is used by commands and shells, `preview` by notebooks). Unset fields are omitted, as the
/// upstream client sends them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LaunchNtscRequest {
    /// The task's configuration (`entrypoint`, `resources`, `environment`, …) as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub config: Option<Value>,
    /// A template merged under the config.
    #[serde(default, alias = "template_name", skip_serializing_if = "Option::is_none")]
    pub template_name: Option<String>,
    /// The context directory (`-c`), file by file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<File>,
    /// Base64 of opaque user data (the upstream CLI's `--data`/includes payload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, alias = "workspace_id", skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<i32>,
    /// Notebooks only: return the merged config without launching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<bool>,
}

/// `POST /api/v1/commands`.
pub type LaunchCommandRequest = LaunchNtscRequest;
/// `POST /api/v1/notebooks`.
pub type LaunchNotebookRequest = LaunchNtscRequest;
/// `POST /api/v1/shells`.
pub type LaunchShellRequest = LaunchNtscRequest;

/// `v1BulkExperimentFilters`: experiments chosen by filter rather than by id.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkExperimentFilters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<ExperimentState>,
    #[serde(default, alias = "user_ids", skip_serializing_if = "Vec::is_empty")]
    pub user_ids: Vec<i32>,
    #[serde(default, alias = "project_id", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<i32>,
    #[serde(default, alias = "excluded_experiment_ids", skip_serializing_if = "Vec::is_empty")]
    pub excluded_experiment_ids: Vec<i32>,
}

/// `POST /api/v1/tensorboards`: the experiments' or trials' metrics to show.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LaunchTensorboardRequest {
    #[serde(default, alias = "experiment_ids", deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub experiment_ids: Vec<i32>,
    #[serde(default, alias = "trial_ids", deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub trial_ids: Vec<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub config: Option<Value>,
    #[serde(default, alias = "template_name", skip_serializing_if = "Option::is_none")]
    pub template_name: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<File>,
    #[serde(default, alias = "workspace_id", skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<BulkExperimentFilters>,
}

/// The upstream client sends unset lists as `null` (`det tensorboard start EXP` has `trialIds: null`).
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

/// `POST /api/v1/commands` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LaunchCommandResponse {
    pub command: Command,
    /// The fully merged configuration.
    #[schema(value_type = Object)]
    pub config: Value,
    #[serde(default)]
    pub warnings: Vec<LaunchWarning>,
}

/// `POST /api/v1/notebooks` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LaunchNotebookResponse {
    pub notebook: Notebook,
    #[schema(value_type = Object)]
    pub config: Value,
    #[serde(default)]
    pub warnings: Vec<LaunchWarning>,
}

/// `POST /api/v1/shells` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LaunchShellResponse {
    pub shell: Shell,
    #[schema(value_type = Object)]
    pub config: Value,
    #[serde(default)]
    pub warnings: Vec<LaunchWarning>,
}

/// `POST /api/v1/tensorboards` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LaunchTensorboardResponse {
    pub tensorboard: Tensorboard,
    #[schema(value_type = Object)]
    pub config: Value,
    #[serde(default)]
    pub warnings: Vec<LaunchWarning>,
}

/// Query parameters of `GET /api/v1/{commands,notebooks,shells,tensorboards}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetNtscQuery {
    #[serde(default, alias = "sort_by", skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<NtscSortBy>,
    #[serde(default, alias = "order_by", skip_serializing_if = "Option::is_none")]
    pub order_by: Option<OrderBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    /// 0 or absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i32>,
    /// Owners by username.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    /// Owners by id.
    #[serde(default, alias = "user_ids", skip_serializing_if = "Vec::is_empty")]
    pub user_ids: Vec<i32>,
    /// 0 or absent: every workspace.
    #[serde(default, alias = "workspace_id", skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<i32>,
}

/// `GET /api/v1/commands`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetCommandsResponse {
    pub commands: Vec<Command>,
    #[serde(default)]
    pub pagination: Option<Pagination>,
}

/// `GET /api/v1/notebooks`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetNotebooksResponse {
    pub notebooks: Vec<Notebook>,
    #[serde(default)]
    pub pagination: Option<Pagination>,
}

/// `GET /api/v1/shells`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetShellsResponse {
    pub shells: Vec<Shell>,
    #[serde(default)]
    pub pagination: Option<Pagination>,
}

/// `GET /api/v1/tensorboards`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetTensorboardsResponse {
    pub tensorboards: Vec<Tensorboard>,
    #[serde(default)]
    pub pagination: Option<Pagination>,
}

/// `GET /api/v1/commands/{commandId}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetCommandResponse {
    pub command: Command,
    #[schema(value_type = Object)]
    pub config: Value,
}

/// `GET /api/v1/notebooks/{notebookId}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetNotebookResponse {
    pub notebook: Notebook,
    #[schema(value_type = Object)]
    pub config: Value,
}

/// `GET /api/v1/shells/{shellId}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetShellResponse {
    pub shell: Shell,
    #[schema(value_type = Object)]
    pub config: Value,
}

/// `GET /api/v1/tensorboards/{tensorboardId}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetTensorboardResponse {
    pub tensorboard: Tensorboard,
    #[schema(value_type = Object)]
    pub config: Value,
}

/// `POST /api/v1/commands/{commandId}/kill` and `…/set_priority` responses: the task afterwards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct KillCommandResponse {
    #[serde(default)]
    pub command: Option<Command>,
}

/// `POST /api/v1/notebooks/{notebookId}/kill` and `…/set_priority` responses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct KillNotebookResponse {
    #[serde(default)]
    pub notebook: Option<Notebook>,
}

/// `POST /api/v1/shells/{shellId}/kill` and `…/set_priority` responses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct KillShellResponse {
    #[serde(default)]
    pub shell: Option<Shell>,
}

/// `POST /api/v1/tensorboards/{tensorboardId}/kill` and `…/set_priority` responses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct KillTensorboardResponse {
    #[serde(default)]
    pub tensorboard: Option<Tensorboard>,
}

/// `v1SetCommandPriorityResponse` has the kill response's shape.
pub type SetCommandPriorityResponse = KillCommandResponse;
/// `v1SetNotebookPriorityResponse` has the kill response's shape.
pub type SetNotebookPriorityResponse = KillNotebookResponse;
/// `v1SetShellPriorityResponse` has the kill response's shape.
pub type SetShellPriorityResponse = KillShellResponse;
/// `v1SetTensorboardPriorityResponse` has the kill response's shape.
pub type SetTensorboardPriorityResponse = KillTensorboardResponse;

/// `POST /api/v1/commands/{commandId}/set_priority` (`v1SetCommandPriorityRequest`). The path's id is the one that counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetCommandPriorityRequest {
    #[serde(default, alias = "command_id", skip_serializing_if = "Option::is_none")]
    pub command_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

/// `POST /api/v1/notebooks/{notebookId}/set_priority`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetNotebookPriorityRequest {
    #[serde(default, alias = "notebook_id", skip_serializing_if = "Option::is_none")]
    pub notebook_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

/// `POST /api/v1/shells/{shellId}/set_priority`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetShellPriorityRequest {
    #[serde(default, alias = "shell_id", skip_serializing_if = "Option::is_none")]
    pub shell_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

/// `POST /api/v1/tensorboards/{tensorboardId}/set_priority`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetTensorboardPriorityRequest {
    #[serde(default, alias = "tensorboard_id", skip_serializing_if = "Option::is_none")]
    pub tensorboard_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
