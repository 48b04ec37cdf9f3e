//! User edits of what the master records about checkpoints and their retention: a checkpoint's
//! user metadata (`POST /api/v1/checkpoints/{uuid}/metadata`) and an experiment's stored config
//! after its GC policy changed (`PATCH /api/v1/experiments/{id}` with `checkpointStorage`).

use super::{SqlStore, expect_row, on_pool};
use crate::error::StoreResult;

impl SqlStore {
    pub(crate) async fn set_checkpoint_metadata_impl(&self, uuid: &str, metadata: &serde_json::Value) -> StoreResult<()> {
        super::findable("checkpoint", uuid)?;
        // serde_json escapes NUL characters, so the text never holds one.
        let text = metadata.to_string();
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE checkpoints SET metadata = $2 WHERE uuid = $1")
                .bind(uuid)
                .bind(&text)
                .execute(pool)
                .await?
                .rows_affected()
        });
        expect_row(done, "checkpoint", uuid)
    }

    pub(crate) async fn set_experiment_config_impl(&self, id: i32, config: &serde_json::Value) -> StoreResult<()> {
        let text = config.to_string();
        let summary = crate::config_summary_text(config);
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET config = $2, config_summary = $3 WHERE id = $1")
                .bind(id)
                .bind(&text)
                .bind(&summary)
                .execute(pool)
                .await?
                .rows_affected()
        });
        expect_row(done, "experiment", id)
    }
}
