//! Custom webhook events (`POST /api/v1/webhooks/custom`, the harness's `core.alert`): one event
//! per custom trigger of a webhook for every workspace or for the experiment's, queued in one
//! transaction with the experiment checked to exist.

use chrono::Utc;

use super::{SqlStore, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model_webhooks::TRIGGER_CUSTOM;

const MATCHING_CUSTOM_TRIGGERS: &str = "SELECT t.id, t.webhook_id FROM webhook_triggers t JOIN webhooks w ON w.id = t.webhook_id \
     WHERE t.trigger_type = $1 AND (w.workspace_id IS NULL OR w.workspace_id = \
     (SELECT p.workspace_id FROM experiments e JOIN projects p ON p.id = e.project_id WHERE e.id = $2)) ORDER BY t.id";

const INSERT_CUSTOM_EVENT: &str = "INSERT INTO webhook_events (event_uuid, webhook_id, trigger_id, experiment_id, custom_data, \
     created_ms, next_attempt_ms) VALUES ($1, $2, $3, $4, $5, $6, $6)";

impl SqlStore {
    pub(crate) async fn enqueue_custom_events_impl(&self, experiment_id: i32, data: &serde_json::Value) -> StoreResult<u64> {
        let now_ms = Utc::now().timestamp_millis();
        // serde_json escapes NUL, so the text is storable on both backends.
        let text = data.to_string();
        // The transaction reads before it writes (`begin_write!`: IMMEDIATE on SQLite).
        let queued: u64 = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let exists: Option<i32> =
                sqlx::query_scalar("SELECT id FROM experiments WHERE id = $1").bind(experiment_id).fetch_optional(&mut *tx).await?;
            if exists.is_none() {
                return Err(StoreError::not_found("experiment", experiment_id));
            }
            let triggers: Vec<(i32, i32)> =
                sqlx::query_as(MATCHING_CUSTOM_TRIGGERS).bind(TRIGGER_CUSTOM).bind(experiment_id).fetch_all(&mut *tx).await?;
            for (trigger_id, webhook_id) in &triggers {
                sqlx::query(INSERT_CUSTOM_EVENT)
                    .bind(uuid::Uuid::new_v4().to_string())
                    .bind(webhook_id)
                    .bind(trigger_id)
                    .bind(experiment_id)
                    .bind(&text)
                    .bind(now_ms)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            triggers.len() as u64
        });
        if queued > 0 {
            self.webhook_signal.notify_one();
        }
        Ok(queued)
    }
}
