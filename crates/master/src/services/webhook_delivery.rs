//! The webhook delivery worker: one tokio task that owns the outgoing side of the durable queue.
//! It wakes when the store signals new events (an experiment's state change, a log match) and at
//! least every [`POLL_INTERVAL`] or when the earliest retry is due, renders each due event in its
//! webhook's shape, signs and POSTs it, and records the attempt: delivered, retried with
//! exponential backoff (network errors, 5xx, 408, 429), or failed (other 4xx, retries spent).
//!
//! Delivery is at-least-once: an event leaves the queue only after the receiver answered 2xx and
//! that was recorded, so a master stopped between the two sends it again after a restart
//! (`event_id` stays the same, for receivers that deduplicate). Nothing is lost: undelivered rows
//! are simply due when the next master starts.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt;
use resolute_store::{DeliveryOutcome, ExperimentRecord, Store, StoreError, WebhookEventRecord, WebhookRecord};
use serde_json::Value;

use super::webhook_payloads::{self as payloads, ExperimentFacts, SIGNATURE_HEADER, SIGNATURE_TIMESTAMP_HEADER, TaskLogFacts, TrialRef};

/// The longest the worker sleeps without a signal (a safety net; signals carry the latency).
pub const POLL_INTERVAL: Duration = Duration::from_secs(5);
/// Events read per pass.
const BATCH: i64 = 256;
/// Requests in flight at once.
const CONCURRENCY: usize = 16;
/// One request's limit (connect + answer).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// When to try again.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// The first retry's delay; doubled per attempt.
    pub base: Duration,
    pub max_delay: Duration,
    /// Attempts in all, the first included.
    pub max_attempts: i32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        // 1 s, 2 s, 4 s, … capped at 5 min: 10 attempts span about 9 minutes.
        RetryPolicy { base: Duration::from_secs(1), max_delay: Duration::from_secs(300), max_attempts: 10 }
    }
}

impl RetryPolicy {
    fn delay(&self, attempts_before: i32) -> Duration {
        let factor = 1u32.checked_shl(attempts_before.clamp(0, 30) as u32).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.max_delay)
    }
}

/// How a request came out.
enum Sent {
    Ok,
    Retryable(String),
    Permanent(String),
}

#[derive(Clone)]
pub struct WebhookSender {
    client: reqwest::Client,
    signing_key: Arc<str>,
}

impl WebhookSender {
    pub fn new(signing_key: &str) -> Self {
        let client = reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build().unwrap_or_default();
        WebhookSender { client, signing_key: Arc::from(signing_key) }
    }

    /// POSTs `body` with upstream's signature headers.
    async fn post(&self, url: &str, body: Vec<u8>) -> Sent {
        let timestamp = Utc::now().timestamp();
        let signature = payloads::signature(&self.signing_key, timestamp, &body);
        let sent = self
            .client
            .post(url)
            .header(SIGNATURE_TIMESTAMP_HEADER, timestamp.to_string())
            .header(SIGNATURE_HEADER, signature)
            .header(reqwest::header::CONTENT_TYPE, "application/json; charset=UTF-8")
            .body(body)
            .send()
            .await;
        match sent {
            Err(e) => Sent::Retryable(format!("request to the webhook failed: {e}")),
            Ok(resp) => {
                let status = resp.status();
                if status.is_success() {
                    Sent::Ok
                } else if status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 429 {
                    Sent::Retryable(format!("the webhook answered HTTP {status}"))
                } else {
                    Sent::Permanent(format!("the webhook answered HTTP {status}"))
                }
            }
        }
    }

    /// A one-off request (the test endpoint): `Err` says why it did not succeed.
    pub async fn send_once(&self, url: &str, body: Vec<u8>) -> Result<(), String> {
        match self.post(url, body).await {
            Sent::Ok => Ok(()),
            Sent::Retryable(e) | Sent::Permanent(e) => Err(e),
        }
    }
}

/// The worker; [`WebhookDelivery::run`] is its task.
pub struct WebhookDelivery {
    store: Arc<dyn Store>,
    sender: WebhookSender,
    policy: RetryPolicy,
    base_url: Option<String>,
}

impl WebhookDelivery {
    pub fn new(store: Arc<dyn Store>, sender: WebhookSender, base_url: Option<String>) -> Self {
        WebhookDelivery { store, sender, policy: RetryPolicy::default(), base_url }
    }

    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Delivers until the task is dropped. Undelivered events of an earlier run are due at once.
    pub async fn run(self) {
        let signal = self.store.webhook_events_signal();
        loop {
            // Register before draining, so a signal raised during the drain is not missed.
            let notified = signal.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let wait = match self.drain().await {
                Ok(wait) => wait,
                Err(e) => {
                    tracing::warn!(error = %e, "webhook delivery pass failed; retrying");
                    Duration::from_secs(1)
                }
            };
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Sends everything due; returns how long to sleep until the next due event.
    async fn drain(&self) -> Result<Duration, StoreError> {
        loop {
            let now_ms = Utc::now().timestamp_millis();
            let due = self.store.due_webhook_events(now_ms, BATCH).await?;
            let full = due.len() as i64 == BATCH;
            futures_util::stream::iter(due).for_each_concurrent(CONCURRENCY, |event| self.deliver(event)).await;
            if !full {
                break;
            }
        }
        let now_ms = Utc::now().timestamp_millis();
        Ok(match self.store.next_webhook_event_due_ms().await? {
            Some(due) if due <= now_ms => Duration::ZERO,
            Some(due) => Duration::from_millis(u64::try_from(due - now_ms).unwrap_or(0)).min(POLL_INTERVAL),
            None => POLL_INTERVAL,
        })
    }

    async fn deliver(&self, event: WebhookEventRecord) {
        let outcome = self.attempt(&event).await;
        let now_ms = Utc::now().timestamp_millis();
        match &outcome {
            DeliveryOutcome::Delivered => tracing::debug!(event = %event.event_uuid, webhook = event.webhook_id, "webhook delivered"),
            DeliveryOutcome::Failed { error } => {
                tracing::warn!(event = %event.event_uuid, webhook = event.webhook_id, %error, "webhook event given up")
            }
            DeliveryOutcome::Retry { error, .. } => {
                tracing::info!(event = %event.event_uuid, webhook = event.webhook_id, %error, attempt = event.attempts + 1, "webhook delivery will be retried")
            }
            DeliveryOutcome::Skipped { .. } => {}
        }
        if let Err(e) = self.store.finish_webhook_attempt(event.id, &outcome, now_ms).await {
            // The event stays pending and is sent again: at-least-once.
            tracing::warn!(error = %e, event = %event.event_uuid, "recording a webhook attempt failed");
        }
    }

    async fn attempt(&self, event: &WebhookEventRecord) -> DeliveryOutcome {
        let webhook = match self.store.webhook_by_id(event.webhook_id).await {
            Ok(w) => w,
            Err(StoreError::NotFound { .. }) => return DeliveryOutcome::Skipped { reason: "the webhook was deleted".into() },
            Err(e) => return self.retry(event, format!("reading the webhook: {e}")),
        };
        let body = match self.render(&webhook, event).await {
            Ok(Some(body)) => body,
            Ok(None) => return DeliveryOutcome::Skipped { reason: "the experiment does not select this webhook".into() },
            Err(e) => return self.retry(event, e),
        };
        match self.sender.post(&webhook.url, body).await {
            Sent::Ok => DeliveryOutcome::Delivered,
            Sent::Permanent(error) => DeliveryOutcome::Failed { error },
            Sent::Retryable(error) => self.retry(event, error),
        }
    }

    fn retry(&self, event: &WebhookEventRecord, error: String) -> DeliveryOutcome {
        if event.attempts + 1 >= self.policy.max_attempts {
            return DeliveryOutcome::Failed { error: format!("{error} (gave up after {} attempts)", event.attempts + 1) };
        }
        let delay = self.policy.delay(event.attempts);
        let at_ms = Utc::now().timestamp_millis() + i64::try_from(delay.as_millis()).unwrap_or(i64::MAX / 2);
        DeliveryOutcome::Retry { at_ms, error }
    }

    /// The body for this webhook, or `None` when the experiment's config leaves it out.
    async fn render(&self, webhook: &WebhookRecord, event: &WebhookEventRecord) -> Result<Option<Vec<u8>>, String> {
        let timestamp = event.created_ms / 1000;
        let slack = webhook.webhook_type == "WEBHOOK_TYPE_SLACK";
        let base_url = self.base_url.as_deref();
        if let Some(experiment_id) = event.experiment_id {
            let experiment = self.store.experiment_by_id(experiment_id).await.map_err(|e| format!("reading the experiment: {e}"))?;
            if !selects(webhook, Some(&experiment.config)) {
                return Ok(None);
            }
            let mut facts = self.experiment_facts(&experiment).await;
            if let Some(custom) = &event.custom_data {
                let custom: payloads::CustomFacts =
                    serde_json::from_value(custom.clone()).map_err(|e| format!("reading the custom event's data: {e}"))?;
                return Ok(Some(if slack {
                    payloads::custom_slack(&facts, &custom, base_url)
                } else {
                    payloads::custom_default(&event.event_uuid, timestamp, &facts, &custom)
                }));
            }
            if let Some(state) = &event.experiment_state {
                facts.state = state.trim_start_matches("STATE_").to_owned();
            }
            return Ok(Some(if slack {
                payloads::experiment_slack(&facts, base_url)
            } else {
                payloads::experiment_default(&event.event_uuid, timestamp, &facts)
            }));
        }
        let task_id = event.task_id.clone().unwrap_or_default();
        let trial = self.store.trial_by_task_id(&task_id).await.ok();
        let config = match &trial {
            Some(t) => self.store.experiment_by_id(t.experiment_id).await.ok().map(|e| e.config),
            None => None,
        };
        if !selects(webhook, config.as_deref()) {
            return Ok(None);
        }
        let regex = webhook
            .triggers
            .iter()
            .find(|t| t.id == event.trigger_id)
            .and_then(|t| t.condition.get("regex").and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        let facts = TaskLogFacts {
            task_id: task_id.clone(),
            node_name: event.node_name.clone().unwrap_or_default(),
            triggering_log: event.log_line.clone().unwrap_or_default(),
        };
        Ok(Some(if slack {
            let trial_ref = trial.as_ref().map(|t| TrialRef { experiment_id: t.experiment_id, trial_id: t.id });
            let task_type = match &trial {
                Some(_) => "TRIAL".to_owned(),
                None => self.store.task_by_id(&task_id).await.map(|t| t.task.task_type).unwrap_or_default(),
            };
            payloads::task_log_slack(&facts, &regex, trial_ref, &task_type, base_url)
        } else {
            payloads::task_log_default(&event.event_uuid, timestamp, &regex, &facts)
        }))
    }

    async fn experiment_facts(&self, e: &ExperimentRecord) -> ExperimentFacts {
        let (workspace, project) = match self.store.project_by_id(e.project_id).await {
            Ok(p) => (p.workspace_name, p.name),
            Err(_) => (String::new(), String::new()),
        };
        let resources = e.config.get("resources");
        let duration = e.end_time.map(|end| (end - e.start_time).num_seconds().max(0)).unwrap_or(0);
        ExperimentFacts {
            id: e.id,
            state: e.state.trim_start_matches("STATE_").to_owned(),
            name: e.name.clone(),
            duration,
            resource_pool: resources
                .and_then(|r| r.get("resource_pool"))
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
                .unwrap_or("default")
                .to_owned(),
            slots_per_trial: resources.and_then(|r| r.get("slots_per_trial")).and_then(Value::as_i64).unwrap_or(1),
            workspace,
            project,
        }
    }
}

/// Whether an experiment with this config gets this webhook's events (upstream's rule):
/// `integrations.webhooks.exclude` opts out of all; a `WEBHOOK_MODE_SPECIFIC` webhook only
/// reaches experiments that name it (`webhook_id` or `webhook_name`); the rest reach every
/// experiment of their workspace (the store already checked the workspace).
pub fn selects(webhook: &WebhookRecord, experiment_config: Option<&Value>) -> bool {
    let hooks = experiment_config.and_then(|c| c.get("integrations")).and_then(|i| i.get("webhooks"));
    if hooks.and_then(|h| h.get("exclude")).and_then(Value::as_bool).unwrap_or(false) {
        return false;
    }
    if webhook.mode != "WEBHOOK_MODE_SPECIFIC" {
        return true;
    }
    let Some(hooks) = hooks else { return false };
    let by_id = hooks
        .get("webhook_id")
        .and_then(Value::as_array)
        .is_some_and(|ids| ids.iter().any(|id| id.as_i64() == Some(i64::from(webhook.id))));
    let by_name = hooks
        .get("webhook_name")
        .and_then(Value::as_array)
        .is_some_and(|names| names.iter().any(|n| n.as_str() == Some(webhook.name.as_str())));
    by_id || by_name
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn webhook(mode: &str) -> WebhookRecord {
        WebhookRecord {
            id: 7,
            name: "alerts".into(),
            url: "http://x".into(),
            webhook_type: "WEBHOOK_TYPE_DEFAULT".into(),
            mode: mode.into(),
            workspace_id: None,
            triggers: vec![],
        }
    }

    #[test]
    fn specific_webhooks_reach_only_experiments_that_name_them() {
        let ws = webhook("WEBHOOK_MODE_WORKSPACE");
        let specific = webhook("WEBHOOK_MODE_SPECIFIC");
        assert!(selects(&ws, None) && selects(&ws, Some(&json!({}))));
        assert!(!selects(&specific, Some(&json!({}))) && !selects(&specific, None));
        assert!(selects(&specific, Some(&json!({"integrations": {"webhooks": {"webhook_name": ["alerts"]}}}))));
        assert!(selects(&specific, Some(&json!({"integrations": {"webhooks": {"webhook_id": [3, 7]}}}))));
        assert!(!selects(&specific, Some(&json!({"integrations": {"webhooks": {"webhook_id": [3]}}}))));
        let excluded = json!({"integrations": {"webhooks": {"exclude": true, "webhook_id": [7]}}});
        assert!(!selects(&ws, Some(&excluded)) && !selects(&specific, Some(&excluded)));
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy::default();
        assert_eq!((p.delay(0), p.delay(1), p.delay(3)), (Duration::from_secs(1), Duration::from_secs(2), Duration::from_secs(8)));
        assert_eq!(p.delay(40), Duration::from_secs(300));
    }
}
