//! The webhook part of the store: webhooks and their triggers, and the durable queue of events the
//! delivery worker drains. A supertrait of [`crate::Store`], so every store has it.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::StoreResult;
use crate::model_webhooks::{DeliveryOutcome, NewLogEvent, NewWebhook, WebhookEventRecord, WebhookRecord, WebhookTriggerRecord};

#[async_trait]
pub trait WebhookStore: Send + Sync + 'static {
    /// The webhook and its triggers in one transaction; `NotFound` for a missing workspace.
    async fn create_webhook(&self, webhook: NewWebhook) -> StoreResult<WebhookRecord>;
    /// Every webhook (at most 10,000), by id, with its triggers.
    async fn list_webhooks(&self) -> StoreResult<Vec<WebhookRecord>>;
    /// `NotFound` names the webhook.
    async fn webhook_by_id(&self, id: i32) -> StoreResult<WebhookRecord>;
    /// Deletes the webhook, its triggers and its queued events; `NotFound` when absent.
    async fn delete_webhook(&self, id: i32) -> StoreResult<()>;
    /// `NotFound` when absent.
    async fn set_webhook_url(&self, id: i32, url: &str) -> StoreResult<()>;
    /// Every `TRIGGER_TYPE_TASK_LOG` trigger, for the log matcher's cache.
    async fn task_log_triggers(&self) -> StoreResult<Vec<WebhookTriggerRecord>>;
    /// Queues task-log events; one per (trigger, task) ever, so repeats are dropped. Only
    /// webhooks of every workspace or of the task's experiment's workspace get one. Returns how
    /// many were queued.
    async fn enqueue_log_events(&self, events: &[NewLogEvent]) -> StoreResult<u64>;
    /// Pending events due at `now_ms`, oldest first.
    async fn due_webhook_events(&self, now_ms: i64, limit: i64) -> StoreResult<Vec<WebhookEventRecord>>;
    /// When the earliest pending event is due, if any is pending.
    async fn next_webhook_event_due_ms(&self) -> StoreResult<Option<i64>>;
    /// Records an attempt's outcome (counts the attempt).
    async fn finish_webhook_attempt(&self, event_id: i64, outcome: &DeliveryOutcome, now_ms: i64) -> StoreResult<()>;
    /// A webhook's events, by id (at most 1,000), for inspection and tests.
    async fn webhook_events(&self, webhook_id: i32) -> StoreResult<Vec<WebhookEventRecord>>;
    /// The stored signing key, storing `candidate` first when none is stored yet.
    async fn webhook_signing_key(&self, candidate: &str) -> StoreResult<String>;
    /// Signalled after a write queued webhook events (experiment state changes, log events), so
    /// the delivery worker wakes at once instead of at its next poll.
    /// Queues a custom event (`data`: title, description, level, trial) for every custom trigger
    /// of a webhook for all workspaces or for the experiment's; returns how many were queued.
    async fn enqueue_custom_events(&self, experiment_id: i32, data: &serde_json::Value) -> StoreResult<u64>;
    fn webhook_events_signal(&self) -> Arc<tokio::sync::Notify>;
}
