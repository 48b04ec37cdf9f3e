//! A trial's start time: when its first process was placed, not when the searcher asked for it
//! (a search's trials are all requested at once and wait for slots in turn).

use chrono::{DateTime, Utc};

use super::{SqlStore, expect_row, on_pool};
use crate::error::StoreResult;

impl SqlStore {
    pub(crate) async fn mark_trial_started_impl(&self, id: i32, at: DateTime<Utc>) -> StoreResult<bool> {
        let exists = on_pool!(self, pool => {
            sqlx::query("SELECT 1 FROM trials WHERE id = $1").bind(id).fetch_optional(pool).await?.is_some()
        });
        expect_row(u64::from(exists), "trial", id)?;
        // Only the first placement counts: a restart or a resumed pause keeps the start time.
        let changed = on_pool!(self, pool => {
            sqlx::query(
                "UPDATE trials SET start_time = $2 WHERE id = $1 AND NOT EXISTS \
                 (SELECT 1 FROM allocations a WHERE a.task_id = trials.task_id AND a.agent_id IS NOT NULL)",
            )
            .bind(id)
            .bind(at)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(changed > 0)
    }
}
