//! Historical cluster usage: `GET /resources/allocation/allocations-csv` (`det resources
//! allocations AFTER BEFORE`).

use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

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
