//! Webhooks and their triggers: created with their triggers in one transaction, listed, looked up,
//! re-pointed (URL) and deleted (triggers and queued events go with them).

use std::collections::BTreeMap;

use super::{SqlStore, expect_row, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model_webhooks::{NewWebhook, TRIGGER_TASK_LOG, WebhookRecord, WebhookTriggerRecord};

/// Lists read at most this many webhooks (a cluster has a handful).
const MAX_WEBHOOKS: i64 = 10_000;

const WEBHOOK_COLUMNS: &str = "id, name, url, webhook_type, mode, workspace_id";
const TRIGGER_COLUMNS: &str = "id, webhook_id, trigger_type, condition, experiment_state";

#[derive(sqlx::FromRow)]
struct WebhookRow {
    id: i32,
    name: String,
    url: String,
    webhook_type: String,
    mode: String,
    workspace_id: Option<i32>,
}

#[derive(sqlx::FromRow)]
struct TriggerRow {
    id: i32,
    webhook_id: i32,
    trigger_type: String,
    condition: String,
    experiment_state: Option<String>,
}

impl TriggerRow {
    fn into_record(self) -> StoreResult<WebhookTriggerRecord> {
        Ok(WebhookTriggerRecord {
            id: self.id,
            webhook_id: self.webhook_id,
            trigger_type: self.trigger_type,
            condition: parse_json("condition", &self.condition)?,
            experiment_state: self.experiment_state,
        })
    }
}

fn assemble(rows: Vec<WebhookRow>, triggers: Vec<TriggerRow>) -> StoreResult<Vec<WebhookRecord>> {
    let mut by_webhook: BTreeMap<i32, Vec<WebhookTriggerRecord>> = BTreeMap::new();
    for t in triggers {
        by_webhook.entry(t.webhook_id).or_default().push(t.into_record()?);
    }
    Ok(rows
        .into_iter()
        .map(|w| WebhookRecord {
            triggers: by_webhook.remove(&w.id).unwrap_or_default(),
            id: w.id,
            name: w.name,
            url: w.url,
            webhook_type: w.webhook_type,
            mode: w.mode,
            workspace_id: w.workspace_id,
        })
        .collect())
}

impl SqlStore {
    pub(crate) async fn create_webhook_impl(&self, w: NewWebhook) -> StoreResult<WebhookRecord> {
        for (field, value) in
            [("webhook name", &w.name), ("webhook url", &w.url), ("webhook type", &w.webhook_type), ("webhook mode", &w.mode)]
        {
            StoreError::reject_nul(field, value)?;
        }
        let now_ms = chrono::Utc::now().timestamp_millis();
        let conditions: Vec<String> = w.triggers.iter().map(|t| t.condition.to_string()).collect();
        let id: i32 = on_pool!(self, pool => {
            // Dropping the transaction on a failure rolls back: no webhook without its triggers.
            let mut tx = super::begin_write!(self, pool);
            let id: i32 = sqlx::query_scalar(
                "INSERT INTO webhooks (name, url, webhook_type, mode, workspace_id, created_ms) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            )
            .bind(&w.name)
            .bind(&w.url)
            .bind(&w.webhook_type)
            .bind(&w.mode)
            .bind(w.workspace_id)
            .bind(now_ms)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| StoreError::from_write_ref("webhook", &w.name, "workspace", w.workspace_id.unwrap_or_default(), e))?;
            for (t, condition) in w.triggers.iter().zip(&conditions) {
                sqlx::query(
                    "INSERT INTO webhook_triggers (webhook_id, trigger_type, condition, experiment_state) VALUES ($1, $2, $3, $4)",
                )
                .bind(id)
                .bind(&t.trigger_type)
                .bind(condition)
                .bind(&t.experiment_state)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            id
        });
        self.webhook_by_id_impl(id).await
    }

    pub(crate) async fn list_webhooks_impl(&self) -> StoreResult<Vec<WebhookRecord>> {
        let webhooks_sql = format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks ORDER BY id LIMIT {MAX_WEBHOOKS}");
        let triggers_sql = format!(
            "SELECT {TRIGGER_COLUMNS} FROM webhook_triggers WHERE webhook_id IN (SELECT id FROM webhooks ORDER BY id LIMIT {MAX_WEBHOOKS}) ORDER BY id"
        );
        let (rows, triggers) = on_pool!(self, pool => {
            tokio::try_join!(
                sqlx::query_as::<_, WebhookRow>(sqlx::AssertSqlSafe(webhooks_sql.as_str())).fetch_all(pool),
                sqlx::query_as::<_, TriggerRow>(sqlx::AssertSqlSafe(triggers_sql.as_str())).fetch_all(pool),
            )?
        });
        assemble(rows, triggers)
    }

    pub(crate) async fn webhook_by_id_impl(&self, id: i32) -> StoreResult<WebhookRecord> {
        let webhook_sql = format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1");
        let triggers_sql = format!("SELECT {TRIGGER_COLUMNS} FROM webhook_triggers WHERE webhook_id = $1 ORDER BY id");
        let (row, triggers) = on_pool!(self, pool => {
            tokio::try_join!(
                sqlx::query_as::<_, WebhookRow>(sqlx::AssertSqlSafe(webhook_sql.as_str())).bind(id).fetch_optional(pool),
                sqlx::query_as::<_, TriggerRow>(sqlx::AssertSqlSafe(triggers_sql.as_str())).bind(id).fetch_all(pool),
            )?
        });
        let row = row.ok_or_else(|| StoreError::not_found("webhook", id))?;
        assemble(vec![row], triggers)?.pop().ok_or_else(|| StoreError::not_found("webhook", id))
    }

    pub(crate) async fn delete_webhook_impl(&self, id: i32) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            // Explicit, so the queue empties even where foreign keys are not enforced.
            sqlx::query("DELETE FROM webhook_events WHERE webhook_id = $1").bind(id).execute(&mut *tx).await?;
            sqlx::query("DELETE FROM webhook_triggers WHERE webhook_id = $1").bind(id).execute(&mut *tx).await?;
            let done = sqlx::query("DELETE FROM webhooks WHERE id = $1").bind(id).execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            done
        });
        expect_row(done, "webhook", id)
    }

    pub(crate) async fn set_webhook_url_impl(&self, id: i32, url: &str) -> StoreResult<()> {
        StoreError::reject_nul("webhook url", url)?;
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE webhooks SET url = $2 WHERE id = $1").bind(id).bind(url).execute(pool).await?.rows_affected()
        });
        expect_row(done, "webhook", id)
    }

    pub(crate) async fn task_log_triggers_impl(&self) -> StoreResult<Vec<WebhookTriggerRecord>> {
        let sql = format!("SELECT {TRIGGER_COLUMNS} FROM webhook_triggers WHERE trigger_type = $1 ORDER BY id");
        let rows = on_pool!(self, pool => {
            sqlx::query_as::<_, TriggerRow>(sqlx::AssertSqlSafe(sql.as_str())).bind(TRIGGER_TASK_LOG).fetch_all(pool).await?
        });
        rows.into_iter().map(TriggerRow::into_record).collect()
    }
}
