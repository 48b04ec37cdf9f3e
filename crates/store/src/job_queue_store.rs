//! The job queue's order as stored: each job's place in its resource pool's queue, written as the
//! scheduler assigns or changes it and read back when the master starts, so `det job list` shows
//! the same order after a restart. A supertrait of [`crate::Store`].

use async_trait::async_trait;

use crate::error::StoreResult;

/// One job's stored place in one resource pool's queue; smaller `(registered_at, seq)` first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobQueuePositionRecord {
    pub resource_pool: String,
    pub job_id: String,
    pub registered_at: i64,
    pub seq: i64,
}

#[async_trait]
pub trait JobQueueStore: Send + Sync + 'static {
    /// In one transaction: stores each of `positions` in place of that job's previous one in its
    /// pool, then removes the `(resource_pool, job_id)` places of `forgotten`.
    async fn save_job_queue_positions(&self, positions: &[JobQueuePositionRecord], forgotten: &[(String, String)]) -> StoreResult<()>;
    /// Every stored place, by pool, then queue order.
    async fn job_queue_positions(&self) -> StoreResult<Vec<JobQueuePositionRecord>>;
}
