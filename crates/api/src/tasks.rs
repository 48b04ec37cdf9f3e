//! Tasks and their allocations (`GET /api/v1/tasks`, `GET /api/v1/tasks/{taskId}`,
//! `GET /api/v1/tasks/count`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::wire_enum::wire_enum;

wire_enum! {
    /// `v1TaskType`.
    pub enum TaskType {
        Unspecified = "TASK_TYPE_UNSPECIFIED",
        Trial = "TASK_TYPE_TRIAL",
        Notebook = "TASK_TYPE_NOTEBOOK",
        Shell = "TASK_TYPE_SHELL",
        Command = "TASK_TYPE_COMMAND",
        Tensorboard = "TASK_TYPE_TENSORBOARD",
        CheckpointGc = "TASK_TYPE_CHECKPOINT_GC",
        Generic = "TASK_TYPE_GENERIC",
    }
}

wire_enum! {
    /// `taskv1State`: an allocation's state.
    pub enum TaskState {
        Unspecified = "STATE_UNSPECIFIED",
        Pulling = "STATE_PULLING",
        Starting = "STATE_STARTING",
        Running = "STATE_RUNNING",
        Terminated = "STATE_TERMINATED",
        Terminating = "STATE_TERMINATING",
        Queued = "STATE_QUEUED",
        Waiting = "STATE_WAITING",
    }
}

wire_enum! {
    /// `devicev1Type`.
    pub enum DeviceType {
        Unspecified = "TYPE_UNSPECIFIED",
        Cpu = "TYPE_CPU",
        Cuda = "TYPE_CUDA",
        Rocm = "TYPE_ROCM",
    }
}

/// `v1Device`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    pub id: i32,
    pub brand: String,
    pub uuid: String,
    #[serde(rename = "type")]
    pub device_type: DeviceType,
}

/// `ResourcesSummaryDevices`: the devices an allocation holds on one agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourcesSummaryDevices {
    #[serde(default)]
    pub devices: Vec<Device>,
}

/// `v1ResourcesSummary`: one container of an allocation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesSummary {
    pub resources_id: String,
    /// `DockerContainer` upstream; the agent's process here.
    pub resources_type: String,
    pub allocation_id: String,
    /// By agent id.
    #[serde(default)]
    pub agent_devices: BTreeMap<String, ResourcesSummaryDevices>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
}

/// `v1AllocationSummary`: an open allocation, as `det task list` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllocationSummary {
    pub task_id: String,
    pub allocation_id: String,
    pub name: String,
    pub registered_time: DateTime<Utc>,
    pub resource_pool: String,
    pub slots_needed: i32,
    /// Empty until the allocation is placed on agents.
    #[serde(default)]
    pub resources: Vec<ResourcesSummary>,
    pub scheduler_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub proxy_ports: Vec<serde_json::Value>,
}

/// `GET /api/v1/tasks`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetTasksResponse {
    pub allocation_id_to_summary: BTreeMap<String, AllocationSummary>,
}

/// `v1Allocation`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Allocation {
    pub task_id: String,
    pub allocation_id: String,
    pub state: TaskState,
    pub slots: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_ready: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<i32>,
}

/// `v1Task`. The Python bindings require `taskId, taskType, allocations, startTime`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub task_id: String,
    pub task_type: TaskType,
    pub allocations: Vec<Allocation>,
    pub start_time: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    /// Set only for generic tasks.
    #[serde(flatten)]
    pub generic: crate::generic_tasks::GenericTaskFields,
}

/// `GET /api/v1/tasks/{taskId}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetTaskResponse {
    pub task: Task,
}

/// `GET /api/v1/tasks/count`: open tasks of each interactive kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetActiveTasksCountResponse {
    pub commands: i32,
    pub notebooks: i32,
    pub shells: i32,
    pub tensorboards: i32,
}
