//! Agent controls: one row per agent id, replaced by every save (`agent_control_store.rs`).

use async_trait::async_trait;

use super::{SqlStore, on_pool};
use crate::agent_control_store::{AgentControlRecord, AgentControlStore};
use crate::error::{StoreError, StoreResult};

const UPSERT: &str = "INSERT INTO agent_controls (agent_id, mode, disabled_slots, updated_ms) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (agent_id) DO UPDATE SET mode = excluded.mode, disabled_slots = excluded.disabled_slots, updated_ms = excluded.updated_ms";

const ALL: &str = "SELECT agent_id, mode, disabled_slots, updated_ms FROM agent_controls ORDER BY agent_id";

#[derive(sqlx::FromRow)]
struct Row {
    agent_id: String,
    mode: String,
    disabled_slots: String,
    updated_ms: i64,
}

#[async_trait]
impl AgentControlStore for SqlStore {
    async fn save_agent_control(&self, r: AgentControlRecord) -> StoreResult<()> {
        StoreError::reject_nul("agent_id", &r.agent_id)?;
        let mut slots = r.disabled_slots.clone();
        slots.sort_unstable();
        slots.dedup();
        let slots = serde_json::to_string(&slots).unwrap_or_else(|_| "[]".to_owned());
        on_pool!(self, pool => {
            sqlx::query(UPSERT).bind(&r.agent_id).bind(&r.mode).bind(&slots).bind(r.updated_ms).execute(pool).await?;
        });
        Ok(())
    }

    async fn agent_controls(&self) -> StoreResult<Vec<AgentControlRecord>> {
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(ALL).fetch_all(pool).await?);
        Ok(rows
            .into_iter()
            .map(|row| AgentControlRecord {
                // A row this store wrote always parses; anything else reads as no disabled slots.
                disabled_slots: serde_json::from_str(&row.disabled_slots).unwrap_or_default(),
                agent_id: row.agent_id,
                mode: row.mode,
                updated_ms: row.updated_ms,
            })
            .collect())
    }
}
