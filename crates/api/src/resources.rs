//! Historical cluster usage: `GET /resources/allocation/allocations-csv` (`det resources
//! allocations AFTER BEFORE`) and `GET /api/v1/resources/allocation/raw` (`det resources raw
//! AFTER BEFORE --json`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The window of the report, RFC 3339 times (snake_case, as the upstream CLI and web UI send
/// them). The master parses them itself so a bad one is a 400 naming it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AllocationCsvQuery {
    /// Allocations that ended before this time are left out.
    #[serde(default)]
    pub timestamp_after: Option<String>,
    /// Allocations that started at or after this time are left out.
    #[serde(default)]
    pub timestamp_before: Option<String>,
}

/// The CSV's header row, upstream's columns in upstream's order.
pub const ALLOCATION_CSV_COLUMNS: [&str; 10] = [
    "allocation_id",
    "task_type",
    "username",
    "workspace_name",
    "experiment_id",
    "slots",
    "start_time",
    "end_time",
    "slot_hours",
    "resource_pool",
];

/// `GET /api/v1/resources/allocation/raw`'s window (grpc-gateway reads both spellings).
#[derive(Clone, Debug, Default, Serialize, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct AllocationRawQuery {
    /// RFC 3339; allocations that ended before it are left out.
    #[serde(default, alias = "timestamp_after")]
    pub timestamp_after: Option<String>,
    /// RFC 3339; allocations that started at or after it are left out.
    #[serde(default, alias = "timestamp_before")]
    pub timestamp_before: Option<String>,
}

/// One allocation's use of slots (upstream's `v1ResourceAllocationRawEntry`).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceAllocationRawEntry {
    /// The task type, as in the CSV's `task_type` (`TRIAL`, `COMMAND`, ...).
    pub kind: String,
    pub start_time: DateTime<Utc>,
    /// Absent while the allocation runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    /// 0 for tasks of no experiment.
    pub experiment_id: i32,
    #[serde(default)]
    pub username: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<i32>,
    #[serde(default)]
    pub labels: Vec<String>,
    /// Seconds of the allocation inside the window.
    pub seconds: f64,
    pub slots: i32,
}

/// `{resourceEntries: [...]}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceAllocationRawResponse {
    pub resource_entries: Vec<ResourceAllocationRawEntry>,
}
