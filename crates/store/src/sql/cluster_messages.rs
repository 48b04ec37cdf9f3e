//! The cluster message: at most one row, replaced by every `set`, removed by `clear`; which one
//! is shown is decided by its start and end at read time, so a restarted master shows the same.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{SqlStore, on_pool};
use crate::cluster_store::{AllocationUsageRecord, ClusterMessageRecord, ClusterStore, NewClusterMessage, StateCounts};
use crate::error::{StoreError, StoreResult};

const INSERT_MESSAGE: &str = "INSERT INTO cluster_messages (created_by, message, start_ms, end_ms, created_ms) \
     VALUES ($1, $2, $3, $4, $5) RETURNING message, start_ms, end_ms, created_ms";

const ACTIVE_MESSAGE: &str = "SELECT message, start_ms, end_ms, created_ms FROM cluster_messages \
     WHERE start_ms <= $1 AND (end_ms IS NULL OR end_ms > $1) ORDER BY id DESC LIMIT 1";

impl SqlStore {
    async fn set_cluster_message_impl(&self, m: NewClusterMessage) -> StoreResult<ClusterMessageRecord> {
        StoreError::reject_nul("message", &m.message)?;
        let record = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            sqlx::query("DELETE FROM cluster_messages").execute(&mut *tx).await?;
            let record: ClusterMessageRecord = sqlx::query_as(INSERT_MESSAGE)
                .bind(m.created_by)
                .bind(&m.message)
                .bind(m.start_ms)
                .bind(m.end_ms)
                .bind(m.created_ms)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            record
        });
        Ok(record)
    }

    async fn clear_cluster_message_impl(&self) -> StoreResult<()> {
        on_pool!(self, pool => {
            sqlx::query("DELETE FROM cluster_messages").execute(pool).await?;
        });
        Ok(())
    }

    async fn active_cluster_message_impl(&self, now_ms: i64) -> StoreResult<Option<ClusterMessageRecord>> {
        Ok(on_pool!(self, pool => sqlx::query_as(ACTIVE_MESSAGE).bind(now_ms).fetch_optional(pool).await?))
    }
}

#[async_trait]
impl ClusterStore for SqlStore {
    async fn set_cluster_message(&self, message: NewClusterMessage) -> StoreResult<ClusterMessageRecord> {
        self.set_cluster_message_impl(message).await
    }

    async fn clear_cluster_message(&self) -> StoreResult<()> {
        self.clear_cluster_message_impl().await
    }

    async fn active_cluster_message(&self, now_ms: i64) -> StoreResult<Option<ClusterMessageRecord>> {
        self.active_cluster_message_impl(now_ms).await
    }

    async fn allocation_usage(&self, after: DateTime<Utc>, before: DateTime<Utc>) -> StoreResult<Vec<AllocationUsageRecord>> {
        self.allocation_usage_impl(after, before).await
    }

    async fn state_counts(&self) -> StoreResult<StateCounts> {
        self.state_counts_impl().await
    }
}
