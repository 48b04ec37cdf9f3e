use chrono::Utc;

use super::{SqlStore, on_pool};
use crate::error::StoreResult;

impl SqlStore {
    pub(crate) async fn cluster_id_impl(&self) -> StoreResult<String> {
        // Insert-if-absent then read: concurrent first starts agree on one id.
        let candidate = uuid::Uuid::new_v4().to_string();
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO cluster_identity (singleton, cluster_id, created_at) VALUES (1, $1, $2) \
                 ON CONFLICT (singleton) DO NOTHING",
            )
            .bind(&candidate)
            .bind(Utc::now())
            .execute(pool)
            .await?;
            let id: String = sqlx::query_scalar("SELECT cluster_id FROM cluster_identity WHERE singleton = 1")
                .fetch_one(pool)
                .await?;
            Ok(id)
        })
    }
}
