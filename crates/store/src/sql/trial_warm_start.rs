//! A trial's warm start: the checkpoint it starts from before it has one of its own (upstream's
//! `warmStartCheckpointUuid`), kept on the trial so responses and a restarted master see it.

use super::{SqlStore, expect_row, on_pool};
use crate::error::StoreResult;

impl SqlStore {
    pub(crate) async fn set_trial_warm_start_impl(&self, id: i32, checkpoint_uuid: &str) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET warm_start_checkpoint_uuid = $2 WHERE id = $1")
                .bind(id)
                .bind(checkpoint_uuid)
                .execute(pool)
                .await?
                .rows_affected()
        });
        expect_row(done, "trial", id)
    }
}
