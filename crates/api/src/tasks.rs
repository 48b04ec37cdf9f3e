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
    // The master always writes these three; proto3 leaves them optional, so readers default them.
    #[serde(default)]
    pub resources_id: String,
    /// `DockerContainer` upstream; the agent's process here.
    #[serde(default)]
    pub resources_type: String,
    #[serde(default)]
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
    /// Empty until the allocation is placed on agents. The master always sends the list; `None`
    /// only when a reader got none, which upstream's CLI shows as `unassigned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<ResourcesSummary>>,
    pub scheduler_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default)]
    pub proxy_ports: Vec<ProxyPortConfig>,
}

/// `v1ProxyPortConfig`: a port of the task that the master proxies (every field proto3 optional).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyPortConfig {
    #[serde(default, alias = "service_id", skip_serializing_if = "Option::is_none")]
    pub service_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    #[serde(default, alias = "proxy_tcp", skip_serializing_if = "Option::is_none")]
    pub proxy_tcp: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unauthenticated: Option<bool>,
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn allocation_summaries_round_trip() {
        let placed = json!({"taskId": "3.abc", "allocationId": "3.abc.1", "name": "Trial 3 (Experiment 2)",
            "registeredTime": "2025-03-19T10:05:00Z", "resourcePool": "default", "slotsNeeded": 1, "schedulerType": "priority",
            "priority": 42, "resources": [{"resourcesId": "c1", "resourcesType": "DockerContainer", "allocationId": "3.abc.1",
            "containerId": "c1", "agentDevices": {"alpha": {"devices": []}}}],
            "proxyPorts": [{"port": 8080, "proxyTcp": false, "serviceId": "s", "unauthenticated": true}]});
        let resp: GetTasksResponse = serde_json::from_value(json!({"allocationIdToSummary": {"3.abc.1": placed}})).unwrap();
        let summary = &resp.allocation_id_to_summary["3.abc.1"];
        assert_eq!(summary.proxy_ports[0].port, Some(8080));
        assert_eq!(serde_json::to_value(summary).unwrap(), placed);

        // What upstream's bindings accept: no resources at all, resources without their ids.
        let queued: AllocationSummary = serde_json::from_value(json!({"taskId": "gc", "allocationId": "gc.1",
            "name": "Checkpoint GC", "registeredTime": "2025-03-19T10:01:00Z", "resourcePool": "default", "slotsNeeded": 0,
            "schedulerType": "fair_share"}))
        .unwrap();
        assert_eq!((queued.resources, queued.proxy_ports), (None, vec![]));
        let bare: ResourcesSummary = serde_json::from_value(json!({"containerId": "c1"})).unwrap();
        assert_eq!((bare.resources_id.as_str(), bare.container_id.as_deref()), ("", Some("c1")));
    }
}
