//! What code running inside a task (the upstream harness, `prep_container`, the log shipper)
//! sends to the master and parses back: context download, log shipping, metric and checkpoint
//! reports, preemption signals, rendezvous. Requests accept camelCase and snake_case keys, as
//! grpc-gateway does; the harness mixes both.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::checkpoints::Checkpoint;
use crate::trials::Metrics;

/// `GET /api/v1/tasks/{taskId}/context_directory`: the model definition as base64 tar.gz; empty
/// for tasks without one.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskContextDirectoryResponse {
    pub b64_tgz: String,
}

/// One line of `POST /api/v1/task/logs`. The upstream shipper sends snake_case keys.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskLogIn {
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default, alias = "allocation_id")]
    pub allocation_id: Option<String>,
    #[serde(default, alias = "agent_id")]
    pub agent_id: Option<String>,
    #[serde(default, alias = "container_id")]
    pub container_id: Option<String>,
    #[serde(default, alias = "rank_id")]
    pub rank_id: Option<i32>,
    /// RFC 3339 (any offset); Python's `isoformat()` without an offset is read as UTC.
    #[serde(default)]
    pub timestamp: Option<String>,
    /// `LOG_LEVEL_INFO`, ...
    #[serde(default)]
    pub level: Option<String>,
    pub log: String,
    #[serde(default)]
    pub source: Option<String>,
    /// `stdout` or `stderr`.
    #[serde(default)]
    pub stdtype: Option<String>,
}

/// `POST /api/v1/task/logs`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PostTaskLogsRequest {
    pub logs: Vec<TaskLogIn>,
}

/// `POST /api/v1/runs/start` (`core.init` calls it before any checkpoint).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPrepareForReportingRequest {
    #[serde(alias = "run_id")]
    pub run_id: i32,
    /// The storage the run will write checkpoints to (the experiment's, unless overridden).
    #[serde(default, alias = "checkpoint_storage")]
    #[schema(value_type = Option<Object>)]
    pub checkpoint_storage: Option<Value>,
}

/// The harness puts `storageId` into each checkpoint it reports.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPrepareForReportingResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_id: Option<i32>,
}

/// `v1TrialMetrics`: one report.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrialMetrics {
    #[serde(alias = "trial_id")]
    pub trial_id: i32,
    #[serde(alias = "trial_run_id")]
    pub trial_run_id: i32,
    /// Absent in profiler reports.
    #[serde(default, alias = "steps_completed", with = "crate::int64::option")]
    #[schema(value_type = Option<String>, format = Int64)]
    pub steps_completed: Option<i64>,
    #[serde(default, alias = "report_time")]
    pub report_time: Option<DateTime<Utc>>,
    pub metrics: Metrics,
}

/// `POST /api/v1/trials/{trialId}/metrics`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ReportTrialMetricsRequest {
    pub metrics: TrialMetrics,
    /// `training`, `validation`, or a custom group.
    pub group: String,
}

/// `POST /api/v1/trials/{trialId}/progress`: the harness sends `{"progress": p, "is_raw": true}`;
/// a bare number is accepted too.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ReportTrialProgressRequest {
    Object {
        progress: f64,
        #[serde(default, alias = "is_raw", rename = "isRaw")]
        is_raw: Option<bool>,
    },
    Bare(f64),
}

impl ReportTrialProgressRequest {
    pub fn progress(&self) -> f64 {
        match self {
            ReportTrialProgressRequest::Object { progress, .. } | ReportTrialProgressRequest::Bare(progress) => *progress,
        }
    }
}

/// `POST /api/v1/trials/{trialId}/early_exit`: `EXITED_REASON_INVALID_HP`, ...
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TrialEarlyExit {
    pub reason: String,
}

/// `POST /api/v1/trials/{trialId}/runner/metadata`: the harness sends `{"state": "..."}`; the
/// request message's own shape `{"metadata": {"state": "..."}}` is accepted too.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct TrialRunnerMetadataRequest {
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub metadata: Option<TrialRunnerMetadata>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct TrialRunnerMetadata {
    pub state: String,
}

/// `GET /api/v1/experiments/{id}/searcher/best_searcher_validation_metric`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetBestSearcherValidationMetricResponse {
    pub metric: f64,
}

/// `GET /api/v1/checkpoints/{uuid}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetCheckpointResponse {
    pub checkpoint: Checkpoint,
}

/// The remaining files of a checkpoint after some were deleted from storage.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct PatchCheckpointResources {
    /// Relative path → size (numbers or int64 strings); empty or absent: everything was deleted.
    #[serde(default, with = "optional_int64_map")]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub resources: Option<BTreeMap<String, i64>>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PatchCheckpoint {
    pub uuid: String,
    /// Absent: nothing changes.
    #[serde(default)]
    pub resources: Option<PatchCheckpointResources>,
}

/// `PATCH /api/v1/checkpoints` (after deleting files, from the harness or a GC task).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PatchCheckpointsRequest {
    pub checkpoints: Vec<PatchCheckpoint>,
}

/// Query of `GET /api/v1/allocations/{id}/signals/preemption` (the harness sends snake_case).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct AllocationPreemptionSignalQuery {
    /// Long-poll for at most this many seconds (capped at 60); 0 answers at once.
    #[serde(default, alias = "timeout_seconds")]
    #[param(value_type = Option<String>, format = Int64)]
    #[schema(value_type = Option<String>, format = Int64)]
    pub timeout_seconds: Option<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct AllocationPreemptionSignalResponse {
    pub preempt: bool,
}

/// `POST /api/v1/allocations/{id}/all_gather`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllocationAllGatherRequest {
    #[serde(default, alias = "allocation_id")]
    pub allocation_id: Option<String>,
    #[serde(default, alias = "request_uuid")]
    pub request_uuid: Option<String>,
    /// Participants to wait for; absent means 1.
    #[serde(default, alias = "num_peers")]
    pub num_peers: Option<i32>,
    #[schema(value_type = Object)]
    pub data: Value,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct AllocationAllGatherResponse {
    /// Every participant's `data`.
    #[schema(value_type = Vec<Object>)]
    pub data: Vec<Value>,
}

/// `v1RendezvousInfo`: where each container of the allocation listens, by rank.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct RendezvousInfo {
    pub addresses: Vec<String>,
    pub rank: i32,
    pub slots: Vec<i32>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllocationRendezvousInfoResponse {
    pub rendezvous_info: RendezvousInfo,
}

/// `POST /api/v1/allocations/{id}/acceleratorData`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceleratorData {
    #[serde(default, alias = "container_id")]
    pub container_id: Option<String>,
    #[serde(default, alias = "allocation_id")]
    pub allocation_id: Option<String>,
    #[serde(default, alias = "node_name")]
    pub node_name: Option<String>,
    #[serde(default, alias = "task_id")]
    pub task_id: Option<String>,
    #[serde(default, alias = "accelerator_type")]
    pub accelerator_type: Option<String>,
    #[serde(default, alias = "accelerator_uuids")]
    pub accelerator_uuids: Vec<String>,
    #[serde(default, alias = "resource_pool")]
    pub resource_pool: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostAllocationAcceleratorDataRequest {
    #[serde(default, alias = "allocation_id")]
    pub allocation_id: Option<String>,
    #[serde(default, alias = "accelerator_data")]
    pub accelerator_data: Option<AcceleratorData>,
}

/// `POST /api/v1/allocations/{id}/proxy_address`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostAllocationProxyAddressRequest {
    #[serde(default, alias = "allocation_id")]
    pub allocation_id: Option<String>,
    #[serde(default, alias = "proxy_address")]
    pub proxy_address: Option<String>,
}

/// The body of the allocation signals and readiness calls (`{allocationId}` or `{}`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllocationIdRequest {
    #[serde(default, alias = "allocation_id")]
    pub allocation_id: Option<String>,
}

/// `{}`: what upstream answers to the reports above.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct Empty {}

/// `Option<BTreeMap<String, i64>>` whose values are int64 strings or numbers.
mod optional_int64_map {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Wrapped(#[serde(with = "crate::int64::map")] BTreeMap<String, i64>);

    pub fn serialize<S: Serializer>(value: &Option<BTreeMap<String, i64>>, serializer: S) -> Result<S::Ok, S::Error> {
        value.clone().map(Wrapped).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<BTreeMap<String, i64>>, D::Error> {
        Ok(Option::<Wrapped>::deserialize(deserializer)?.map(|Wrapped(m)| m))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn harness_bodies_parse() {
        let progress: ReportTrialProgressRequest = serde_json::from_value(json!({"progress": 0.5, "is_raw": true})).unwrap();
        assert_eq!(progress.progress(), 0.5);
        let bare: ReportTrialProgressRequest = serde_json::from_value(json!(0.25)).unwrap();
        assert_eq!(bare.progress(), 0.25);
        let log: TaskLogIn = serde_json::from_value(json!({"task_id": "t", "rank_id": 1, "log": "x\n", "stdtype": "stdout"})).unwrap();
        assert_eq!((log.task_id.as_str(), log.rank_id), ("t", Some(1)));
        let patch: PatchCheckpointsRequest =
            serde_json::from_value(json!({"checkpoints": [{"uuid": "u", "resources": {"resources": {"a": 1, "b": "2"}}}]})).unwrap();
        let resources = patch.checkpoints[0].resources.as_ref().unwrap().resources.as_ref().unwrap();
        assert_eq!(resources["b"], 2);
        let q: AllocationPreemptionSignalQuery = serde_json::from_value(json!({"timeout_seconds": 60})).unwrap();
        assert_eq!(q.timeout_seconds, Some(60));
    }
}
