//! `GET /info` (snake_case, unauthenticated) and `GET /api/v1/master`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `GET /info`: the upstream CLI's version probe. snake_case on purpose: it is an echo route,
/// not a grpc-gateway one.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct MasterInfo {
    pub version: String,
    pub master_id: String,
    pub cluster_id: String,
    pub cluster_name: String,
    pub telemetry: Telemetry,
    pub sso_providers: Option<Vec<serde_json::Value>>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct Telemetry {
    pub enabled: bool,
    pub otel_enabled: bool,
    pub otel_endpoint: String,
}

/// `GET /api/v1/master`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetMasterResponse {
    pub version: String,
    pub master_id: String,
    pub cluster_id: String,
    pub cluster_name: String,
    #[serde(default)]
    pub telemetry_enabled: bool,
    #[serde(default)]
    pub sso_providers: Vec<serde_json::Value>,
    #[serde(default)]
    pub rbac_enabled: bool,
    #[serde(default)]
    pub product: String,
    #[serde(default)]
    pub feature_switches: Vec<String>,
    #[serde(default)]
    pub user_management_enabled: bool,
    #[serde(default)]
    pub strict_job_queue_control: bool,
    #[serde(default)]
    pub has_custom_logo: bool,
    /// The cluster message shown now, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_message: Option<crate::cluster_message::ClusterMessage>,
}
