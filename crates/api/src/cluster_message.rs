//! The cluster-wide message an admin shows every user: `GET/PUT/DELETE
//! /api/v1/master/cluster_message` and `GET /api/v1/master`'s `clusterMessage`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The message as clients read it (upstream's `v1ClusterMessage`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMessage {
    pub message: String,
    pub start_time: DateTime<Utc>,
    /// Absent: shown until cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<DateTime<Utc>>,
}

/// `PUT /api/v1/master/cluster_message`. Times are RFC 3339 text and `duration` a Go duration
/// (`24h`, `5d`, `2w`, `1h30m`); the master parses them so an error names the field. `endTime`
/// and `duration` are mutually exclusive.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetClusterMessageRequest {
    #[serde(default)]
    pub message: Option<String>,
    /// Default: now.
    #[serde(default)]
    pub start_time: Option<String>,
    #[serde(default)]
    pub end_time: Option<String>,
    #[serde(default)]
    pub duration: Option<String>,
}

/// `GET /api/v1/master/cluster_message`: the message shown now, or `null`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetClusterMessageResponse {
    pub cluster_message: Option<ClusterMessage>,
}

/// The empty answer to `PUT`/`DELETE` (upstream's empty responses).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct ClusterMessageChanged {}
