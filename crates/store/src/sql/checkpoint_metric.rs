//! Completed checkpoints that lack their searcher metric, and setting it: what GC settles before
//! ranking, since a checkpoint reported while its step's validation was still being committed
//! can miss both the value at its report and the validation's backfill.

use super::{SqlStore, expect_row, on_pool};
use crate::error::StoreResult;
use crate::model_checkpoints::CHECKPOINT_COMPLETED;

impl SqlStore {
    pub(crate) async fn checkpoints_missing_metric_impl(&self, experiment_id: i32) -> StoreResult<Vec<(String, i32, i64)>> {
        let rows = on_pool!(self, pool => {
            sqlx::query_as::<_, (String, i32, i64)>(
                "SELECT uuid, trial_id, steps_completed FROM checkpoints \
                 WHERE experiment_id = $1 AND state = $2 AND searcher_metric IS NULL AND trial_id IS NOT NULL ORDER BY uuid",
            )
            .bind(experiment_id)
            .bind(CHECKPOINT_COMPLETED)
            .fetch_all(pool)
            .await?
        });
        Ok(rows)
    }

    pub(crate) async fn set_checkpoint_searcher_metric_impl(&self, uuid: &str, value: f64) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE checkpoints SET searcher_metric = $2 WHERE uuid = $1")
                .bind(uuid)
                .bind(value)
                .execute(pool)
                .await?
                .rows_affected()
        });
        expect_row(done, "checkpoint", uuid)
    }
}
