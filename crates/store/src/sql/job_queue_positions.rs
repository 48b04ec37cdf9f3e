//! Job queue positions: one row per job and pool, replaced by every save (`job_queue_store.rs`).

use async_trait::async_trait;

use super::{SqlStore, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::job_queue_store::{JobQueuePositionRecord, JobQueueStore};

const UPSERT: &str = "INSERT INTO job_queue_positions (resource_pool, job_id, registered_at, seq) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (resource_pool, job_id) DO UPDATE SET registered_at = excluded.registered_at, seq = excluded.seq";

const DELETE: &str = "DELETE FROM job_queue_positions WHERE resource_pool = $1 AND job_id = $2";

const ALL: &str = "SELECT resource_pool, job_id, registered_at, seq FROM job_queue_positions ORDER BY resource_pool, registered_at, seq";

#[derive(sqlx::FromRow)]
struct Row {
    resource_pool: String,
    job_id: String,
    registered_at: i64,
    seq: i64,
}

#[async_trait]
impl JobQueueStore for SqlStore {
    async fn save_job_queue_positions(&self, positions: &[JobQueuePositionRecord], forgotten: &[(String, String)]) -> StoreResult<()> {
        if positions.is_empty() && forgotten.is_empty() {
            return Ok(());
        }
        for p in positions {
            StoreError::reject_nul("resource_pool", &p.resource_pool)?;
            StoreError::reject_nul("job_id", &p.job_id)?;
        }
        on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            for p in positions {
                sqlx::query(UPSERT).bind(&p.resource_pool).bind(&p.job_id).bind(p.registered_at).bind(p.seq).execute(&mut *tx).await?;
            }
            for (resource_pool, job_id) in forgotten {
                sqlx::query(DELETE).bind(resource_pool).bind(job_id).execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    async fn job_queue_positions(&self) -> StoreResult<Vec<JobQueuePositionRecord>> {
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(ALL).fetch_all(pool).await?);
        Ok(rows
            .into_iter()
            .map(|r| JobQueuePositionRecord {
                resource_pool: r.resource_pool,
                job_id: r.job_id,
                registered_at: r.registered_at,
                seq: r.seq,
            })
            .collect())
    }
}
