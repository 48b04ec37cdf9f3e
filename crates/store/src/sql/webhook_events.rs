//! The durable webhook queue. An experiment's state change and the events of the webhooks that
//! fire on it are written in one transaction, so an event exists exactly when the change does and
//! a master that stops right after loses neither; task-log events are queued right after their
//! lines are stored. The delivery worker reads what is due and records each attempt.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{SqlStore, expect_row, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model_webhooks::{
    DeliveryOutcome, NewLogEvent, NewWebhook, TRIGGER_EXPERIMENT_STATE_CHANGE, WebhookEventRecord, WebhookEventStatus, WebhookRecord,
    WebhookTriggerRecord,
};
use crate::webhook_store::WebhookStore;

const EVENT_COLUMNS: &str = "id, event_uuid, webhook_id, trigger_id, experiment_id, experiment_state, task_id, node_name, log_line, custom_data, \
     status, attempts, created_ms, next_attempt_ms, finished_ms, last_error";

/// The triggers an experiment entering a state fires: of webhooks for every workspace or for the
/// experiment's.
const MATCHING_STATE_TRIGGERS: &str = "SELECT t.id, t.webhook_id FROM webhook_triggers t JOIN webhooks w ON w.id = t.webhook_id \
     WHERE t.trigger_type = $1 AND t.experiment_state = $2 AND (w.workspace_id IS NULL OR w.workspace_id = \
     (SELECT p.workspace_id FROM experiments e JOIN projects p ON p.id = e.project_id WHERE e.id = $3))";

const INSERT_STATE_EVENT: &str = "INSERT INTO webhook_events (event_uuid, webhook_id, trigger_id, experiment_id, experiment_state, \
     created_ms, next_attempt_ms) VALUES ($1, $2, $3, $4, $5, $6, $6)";

/// A task-log event, once per (trigger, task), only for webhooks of every workspace or of the
/// workspace of the task's trial's experiment.
const INSERT_LOG_EVENT: &str = "INSERT INTO webhook_events (event_uuid, webhook_id, trigger_id, task_id, node_name, log_line, \
     dedupe_key, created_ms, next_attempt_ms) SELECT $1, w.id, $3, $4, $8, $5, $6, $7, $7 FROM webhooks w WHERE w.id = $2 AND (w.workspace_id IS NULL \
     OR w.workspace_id = (SELECT p.workspace_id FROM trials tr JOIN experiments e ON e.id = tr.experiment_id \
     JOIN projects p ON p.id = e.project_id WHERE tr.task_id = $4)) ON CONFLICT (dedupe_key) DO NOTHING";

#[derive(sqlx::FromRow)]
struct EventRow {
    id: i64,
    event_uuid: String,
    webhook_id: i32,
    trigger_id: i32,
    experiment_id: Option<i32>,
    experiment_state: Option<String>,
    task_id: Option<String>,
    node_name: Option<String>,
    log_line: Option<String>,
    custom_data: Option<String>,
    status: String,
    attempts: i32,
    created_ms: i64,
    next_attempt_ms: i64,
    finished_ms: Option<i64>,
    last_error: Option<String>,
}

impl EventRow {
    fn into_record(self) -> WebhookEventRecord {
        WebhookEventRecord {
            id: self.id,
            event_uuid: self.event_uuid,
            webhook_id: self.webhook_id,
            trigger_id: self.trigger_id,
            experiment_id: self.experiment_id,
            experiment_state: self.experiment_state,
            task_id: self.task_id,
            node_name: self.node_name,
            log_line: self.log_line,
            // Only `webhook_custom_events.rs` writes the column, always as JSON.
            custom_data: self.custom_data.and_then(|text| serde_json::from_str(&text).ok()),
            // Only this module writes the column.
            status: WebhookEventStatus::parse(&self.status).unwrap_or(WebhookEventStatus::Failed),
            attempts: self.attempts,
            created_ms: self.created_ms,
            next_attempt_ms: self.next_attempt_ms,
            finished_ms: self.finished_ms,
            last_error: self.last_error,
        }
    }
}

/// Error text kept per event, bounded.
fn bounded(text: &str) -> String {
    let mut end = text.len().min(1000);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].replace('\0', "")
}

impl SqlStore {
    /// Moves experiment `id` to `to` — unconditionally (`from` is `None`) or only from one of
    /// `from` — and, in the same transaction, queues the events of the state-change triggers
    /// that fire on `to`. A write that leaves the state as it was queues nothing. Returns whether
    /// the row changed (always true for an unconditional write to an existing row).
    pub(crate) async fn set_experiment_state_queuing(
        &self,
        id: i32,
        from: Option<&[&str]>,
        to: &str,
        end_time: Option<DateTime<Utc>>,
    ) -> StoreResult<bool> {
        let now_ms = Utc::now().timestamp_millis();
        // The row is locked by reading it, so the state read is the one replaced: SQLite's
        // `BEGIN IMMEDIATE` takes the write lock up front (a deferred transaction that read first
        // would fail to upgrade once another connection wrote), PostgreSQL locks the row.
        let sqlite = matches!(self.pool, super::Pool::Sqlite(_));
        let read_sql =
            if sqlite { "SELECT state FROM experiments WHERE id = $1" } else { "SELECT state FROM experiments WHERE id = $1 FOR UPDATE" };
        let queued: Option<usize> = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let before: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(read_sql)).bind(id).fetch_optional(&mut *tx).await?;
            let Some(before) = before else {
                return Err(StoreError::not_found("experiment", id));
            };
            let allowed = from.is_none_or(|from| from.contains(&before.as_str()));
            if !allowed {
                None
            } else {
                sqlx::query("UPDATE experiments SET state = $2, end_time = $3 WHERE id = $1")
                    .bind(id)
                    .bind(to)
                    .bind(end_time)
                    .execute(&mut *tx)
                    .await?;
                let mut queued = 0;
                if before != to {
                    let triggers: Vec<(i32, i32)> = sqlx::query_as(MATCHING_STATE_TRIGGERS)
                        .bind(TRIGGER_EXPERIMENT_STATE_CHANGE)
                        .bind(to)
                        .bind(id)
                        .fetch_all(&mut *tx)
                        .await?;
                    for (trigger_id, webhook_id) in triggers {
                        sqlx::query(INSERT_STATE_EVENT)
                            .bind(uuid::Uuid::new_v4().to_string())
                            .bind(webhook_id)
                            .bind(trigger_id)
                            .bind(id)
                            .bind(to)
                            .bind(now_ms)
                            .execute(&mut *tx)
                            .await?;
                        queued += 1;
                    }
                }
                tx.commit().await?;
                Some(queued)
            }
        });
        match queued {
            None => Ok(false),
            Some(n) => {
                if n > 0 {
                    self.webhook_signal.notify_one();
                }
                Ok(true)
            }
        }
    }

    async fn enqueue_log_events_impl(&self, events: &[NewLogEvent]) -> StoreResult<u64> {
        if events.is_empty() {
            return Ok(0);
        }
        let now_ms = Utc::now().timestamp_millis();
        let queued: u64 = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let mut queued = 0;
            for e in events {
                let dedupe = format!("log:{}:{}", e.trigger_id, e.task_id.replace('\0', ""));
                queued += sqlx::query(INSERT_LOG_EVENT)
                    .bind(&e.event_uuid)
                    .bind(e.webhook_id)
                    .bind(e.trigger_id)
                    .bind(e.task_id.replace('\0', ""))
                    .bind(bounded(&e.log_line))
                    .bind(dedupe)
                    .bind(now_ms)
                    .bind(bounded(&e.node_name))
                    .execute(&mut *tx)
                    .await
                    .map_err(|err| StoreError::from_write_ref("webhook event", &e.event_uuid, "webhook trigger", e.trigger_id, err))?
                    .rows_affected();
            }
            tx.commit().await?;
            queued
        });
        if queued > 0 {
            self.webhook_signal.notify_one();
        }
        Ok(queued)
    }

    async fn finish_attempt_impl(&self, event_id: i64, outcome: &DeliveryOutcome, now_ms: i64) -> StoreResult<()> {
        let (status, next_ms, finished_ms, error) = match outcome {
            DeliveryOutcome::Delivered => (WebhookEventStatus::Delivered, now_ms, Some(now_ms), None),
            DeliveryOutcome::Skipped { reason } => (WebhookEventStatus::Skipped, now_ms, Some(now_ms), Some(bounded(reason))),
            DeliveryOutcome::Retry { at_ms, error } => (WebhookEventStatus::Pending, *at_ms, None, Some(bounded(error))),
            DeliveryOutcome::Failed { error } => (WebhookEventStatus::Failed, now_ms, Some(now_ms), Some(bounded(error))),
        };
        let done = on_pool!(self, pool => {
            sqlx::query(
                "UPDATE webhook_events SET status = $2, attempts = attempts + 1, next_attempt_ms = $3, finished_ms = $4, \
                 last_error = $5 WHERE id = $1",
            )
            .bind(event_id)
            .bind(status.as_str())
            .bind(next_ms)
            .bind(finished_ms)
            .bind(error)
            .execute(pool)
            .await?
            .rows_affected()
        });
        expect_row(done, "webhook event", event_id)
    }
}

#[async_trait]
impl WebhookStore for SqlStore {
    async fn create_webhook(&self, webhook: NewWebhook) -> StoreResult<WebhookRecord> {
        self.create_webhook_impl(webhook).await
    }

    async fn list_webhooks(&self) -> StoreResult<Vec<WebhookRecord>> {
        self.list_webhooks_impl().await
    }

    async fn webhook_by_id(&self, id: i32) -> StoreResult<WebhookRecord> {
        self.webhook_by_id_impl(id).await
    }

    async fn delete_webhook(&self, id: i32) -> StoreResult<()> {
        self.delete_webhook_impl(id).await
    }

    async fn set_webhook_url(&self, id: i32, url: &str) -> StoreResult<()> {
        self.set_webhook_url_impl(id, url).await
    }

    async fn task_log_triggers(&self) -> StoreResult<Vec<WebhookTriggerRecord>> {
        self.task_log_triggers_impl().await
    }

    async fn enqueue_log_events(&self, events: &[NewLogEvent]) -> StoreResult<u64> {
        self.enqueue_log_events_impl(events).await
    }

    async fn due_webhook_events(&self, now_ms: i64, limit: i64) -> StoreResult<Vec<WebhookEventRecord>> {
        let sql =
            format!("SELECT {EVENT_COLUMNS} FROM webhook_events WHERE status = 'PENDING' AND next_attempt_ms <= $1 ORDER BY id LIMIT $2");
        let rows = on_pool!(self, pool => {
            sqlx::query_as::<_, EventRow>(sqlx::AssertSqlSafe(sql.as_str())).bind(now_ms).bind(limit.max(0)).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(EventRow::into_record).collect())
    }

    async fn next_webhook_event_due_ms(&self) -> StoreResult<Option<i64>> {
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar::<_, Option<i64>>("SELECT MIN(next_attempt_ms) FROM webhook_events WHERE status = 'PENDING'")
                .fetch_one(pool)
                .await?
        }))
    }

    async fn finish_webhook_attempt(&self, event_id: i64, outcome: &DeliveryOutcome, now_ms: i64) -> StoreResult<()> {
        self.finish_attempt_impl(event_id, outcome, now_ms).await
    }

    async fn webhook_events(&self, webhook_id: i32) -> StoreResult<Vec<WebhookEventRecord>> {
        let sql = format!("SELECT {EVENT_COLUMNS} FROM webhook_events WHERE webhook_id = $1 ORDER BY id LIMIT 1000");
        let rows = on_pool!(self, pool => {
            sqlx::query_as::<_, EventRow>(sqlx::AssertSqlSafe(sql.as_str())).bind(webhook_id).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(EventRow::into_record).collect())
    }

    async fn webhook_signing_key(&self, candidate: &str) -> StoreResult<String> {
        StoreError::reject_nul("webhook signing key", candidate)?;
        Ok(on_pool!(self, pool => {
            sqlx::query("INSERT INTO webhook_signing_key (id, signing_key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING")
                .bind(candidate)
                .execute(pool)
                .await?;
            sqlx::query_scalar::<_, String>("SELECT signing_key FROM webhook_signing_key WHERE id = 1").fetch_one(pool).await?
        }))
    }

    async fn enqueue_custom_events(&self, experiment_id: i32, data: &serde_json::Value) -> StoreResult<u64> {
        self.enqueue_custom_events_impl(experiment_id, data).await
    }

    fn webhook_events_signal(&self) -> Arc<tokio::sync::Notify> {
        self.webhook_signal.clone()
    }
}
