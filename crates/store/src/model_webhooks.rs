//! Records of webhooks, their triggers and the durable queue of events to deliver.

use serde_json::Value;

/// `TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE`, as stored in `webhook_triggers.trigger_type`.
pub const TRIGGER_EXPERIMENT_STATE_CHANGE: &str = "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE";
/// `TRIGGER_TYPE_TASK_LOG`.
pub const TRIGGER_TASK_LOG: &str = "TRIGGER_TYPE_TASK_LOG";
/// Fired by `POST /api/v1/webhooks/custom` (the harness's `core.alert`).
pub const TRIGGER_CUSTOM: &str = "TRIGGER_TYPE_CUSTOM";

/// A webhook to create, with its triggers, in one transaction.
#[derive(Clone, Debug)]
pub struct NewWebhook {
    pub name: String,
    pub url: String,
    /// `WEBHOOK_TYPE_DEFAULT` or `WEBHOOK_TYPE_SLACK`.
    pub webhook_type: String,
    /// `WEBHOOK_MODE_WORKSPACE` or `WEBHOOK_MODE_SPECIFIC`.
    pub mode: String,
    /// `None`: every workspace.
    pub workspace_id: Option<i32>,
    pub triggers: Vec<NewWebhookTrigger>,
}

#[derive(Clone, Debug)]
pub struct NewWebhookTrigger {
    pub trigger_type: String,
    pub condition: Value,
    /// Experiment-state triggers: the stored state (`STATE_COMPLETED`) they fire on.
    pub experiment_state: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WebhookRecord {
    pub id: i32,
    pub name: String,
    pub url: String,
    pub webhook_type: String,
    pub mode: String,
    pub workspace_id: Option<i32>,
    pub triggers: Vec<WebhookTriggerRecord>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WebhookTriggerRecord {
    pub id: i32,
    pub webhook_id: i32,
    pub trigger_type: String,
    pub condition: Value,
    pub experiment_state: Option<String>,
}

/// A task-log line that matched a trigger's pattern; queued at most once per trigger and task.
#[derive(Clone, Debug)]
pub struct NewLogEvent {
    pub event_uuid: String,
    pub webhook_id: i32,
    pub trigger_id: i32,
    pub task_id: String,
    /// The agent the line came from.
    pub node_name: String,
    pub log_line: String,
}

/// Where a queued event stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookEventStatus {
    Pending,
    Delivered,
    /// Given up: a permanent refusal by the receiver or the retries ran out.
    Failed,
    /// Not for this webhook after all (a `WEBHOOK_MODE_SPECIFIC` webhook the experiment does
    /// not name).
    Skipped,
}

impl WebhookEventStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookEventStatus::Pending => "PENDING",
            WebhookEventStatus::Delivered => "DELIVERED",
            WebhookEventStatus::Failed => "FAILED",
            WebhookEventStatus::Skipped => "SKIPPED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "PENDING" => WebhookEventStatus::Pending,
            "DELIVERED" => WebhookEventStatus::Delivered,
            "FAILED" => WebhookEventStatus::Failed,
            "SKIPPED" => WebhookEventStatus::Skipped,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct WebhookEventRecord {
    pub id: i64,
    pub event_uuid: String,
    pub webhook_id: i32,
    pub trigger_id: i32,
    pub experiment_id: Option<i32>,
    pub experiment_state: Option<String>,
    pub task_id: Option<String>,
    pub node_name: Option<String>,
    pub log_line: Option<String>,
    /// A custom event's `{title, description, level, trial_id}`.
    pub custom_data: Option<serde_json::Value>,
    pub status: WebhookEventStatus,
    pub attempts: i32,
    /// Milliseconds since the epoch.
    pub created_ms: i64,
    pub next_attempt_ms: i64,
    pub finished_ms: Option<i64>,
    pub last_error: Option<String>,
}

/// What one delivery attempt came to.
#[derive(Clone, Debug, PartialEq)]
pub enum DeliveryOutcome {
    Delivered,
    Skipped {
        reason: String,
    },
    /// Try again at `at_ms`.
    Retry {
        at_ms: i64,
        error: String,
    },
    Failed {
        error: String,
    },
}
