//! Webhooks (`/api/v1/webhooks*`): `v1Webhook`, `v1Trigger` and their enums, and the request and
//! response bodies of create, list, patch and test.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::wire_enum::wire_enum;

wire_enum! {
    /// `v1WebhookType`.
    pub enum WebhookType {
        Unspecified = "WEBHOOK_TYPE_UNSPECIFIED",
        Default = "WEBHOOK_TYPE_DEFAULT",
        Slack = "WEBHOOK_TYPE_SLACK",
    }
}

wire_enum! {
    /// `v1WebhookMode`: every experiment of the workspace, or only those whose config names the
    /// webhook (`integrations.webhooks`).
    pub enum WebhookMode {
        Unspecified = "WEBHOOK_MODE_UNSPECIFIED",
        Workspace = "WEBHOOK_MODE_WORKSPACE",
        Specific = "WEBHOOK_MODE_SPECIFIC",
    }
}

wire_enum! {
    /// `v1TriggerType`.
    pub enum TriggerType {
        Unspecified = "TRIGGER_TYPE_UNSPECIFIED",
        ExperimentStateChange = "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE",
        MetricThresholdExceeded = "TRIGGER_TYPE_METRIC_THRESHOLD_EXCEEDED",
        TaskLog = "TRIGGER_TYPE_TASK_LOG",
        Custom = "TRIGGER_TYPE_CUSTOM",
    }
}

/// `v1Trigger` as the master answers it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trigger {
    pub id: i32,
    pub trigger_type: TriggerType,
    /// `{"state": "COMPLETED"}` for state changes, `{"regex": "..."}` for task logs.
    #[schema(value_type = Object)]
    pub condition: Value,
    pub webhook_id: i32,
}

/// `v1Webhook` as the master answers it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: i32,
    pub name: String,
    pub url: String,
    pub triggers: Vec<Trigger>,
    pub webhook_type: WebhookType,
    pub mode: WebhookMode,
    /// Absent: a webhook for every workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<i32>,
}

/// A trigger in the body of `POST /api/v1/webhooks`; enums are read as text so a wrong value gets
/// an error naming the field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TriggerBody {
    #[serde(default, alias = "trigger_type")]
    pub trigger_type: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub condition: Option<Value>,
}

/// The body of `POST /api/v1/webhooks` (a `v1Webhook` without ids).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookBody {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub triggers: Vec<TriggerBody>,
    #[serde(default, alias = "webhook_type")]
    pub webhook_type: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default, alias = "workspace_id")]
    pub workspace_id: Option<i32>,
}

/// `v1PostWebhookResponse`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PostWebhookResponse {
    pub webhook: Webhook,
}

/// `v1GetWebhooksResponse`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetWebhooksResponse {
    pub webhooks: Vec<Webhook>,
}

/// `v1PatchWebhook`: only the URL can change, as upstream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PatchWebhook {
    #[serde(default)]
    pub url: Option<String>,
}

/// `v1TestWebhookResponse`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TestWebhookResponse {
    /// Whether the receiver answered the test event with a success.
    pub completed: bool,
}

/// The empty answer of delete and patch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmptyWebhookResponse {}

/// `v1CustomWebhookEventData`: what `core.alert` sends.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CustomWebhookEventData {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// `LOG_LEVEL_INFO` (default), `LOG_LEVEL_WARNING`, `LOG_LEVEL_ERROR`, `LOG_LEVEL_DEBUG`, …
    #[serde(default)]
    pub level: Option<String>,
}

/// `v1PostWebhookEventDataRequest`: the body of `POST /api/v1/webhooks/custom`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostWebhookEventDataRequest {
    #[serde(default)]
    pub data: Option<CustomWebhookEventData>,
    #[serde(default, alias = "experiment_id")]
    pub experiment_id: Option<i32>,
    #[serde(default, alias = "trial_id")]
    pub trial_id: Option<i32>,
}
