//! Filling `experiments.config_summary` for rows written before the column existed (migration
//! 0028), once, when the store opens: reads fall back to the config meanwhile, so this only makes
//! old rows as cheap to list as new ones. A row whose config is not JSON gets `{}` (reading it
//! fails on the config anyway).

use serde_json::Value;

use super::{SqlStore, on_pool};
use crate::config_summary_text;
use crate::error::StoreResult;

/// Rows summarised per transaction.
const BATCH: i64 = 500;

impl SqlStore {
    pub(crate) async fn backfill_config_summaries(&self) -> StoreResult<()> {
        let mut after = 0;
        loop {
            let rows: Vec<(i32, String)> = on_pool!(self, pool => {
                sqlx::query_as("SELECT id, config FROM experiments WHERE config_summary IS NULL AND id > $1 ORDER BY id LIMIT $2")
                    .bind(after)
                    .bind(BATCH)
                    .fetch_all(pool)
                    .await?
            });
            let Some(&(last, _)) = rows.last() else { return Ok(()) };
            after = last;
            let summaries: Vec<(i32, String)> = rows
                .into_iter()
                .map(|(id, config)| (id, config_summary_text(&serde_json::from_str::<Value>(&config).unwrap_or(Value::Null))))
                .collect();
            on_pool!(self, pool => {
                let mut tx = super::begin_write!(self, pool);
                for (id, summary) in &summaries {
                    sqlx::query("UPDATE experiments SET config_summary = $2 WHERE id = $1 AND config_summary IS NULL")
                        .bind(id)
                        .bind(summary)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sql::Pool;
    use crate::{DEFAULT_PROJECT_ID, NewExperiment, Store, db_now};

    #[tokio::test]
    async fn rows_without_a_summary_read_the_config_until_filled() {
        let store = SqlStore::open_sqlite_in_memory().await.unwrap();
        let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
        sqlx::query("INSERT INTO users (username, modified_at) VALUES ('old', '2026-01-01T00:00:00Z')").execute(pool).await.unwrap();
        let owner_id: i32 = sqlx::query_scalar("SELECT id FROM users WHERE username = 'old'").fetch_one(pool).await.unwrap();
        let config = json!({"searcher": {"name": "grid", "metric": "m", "max_trials": 3}, "hyperparameters": {"b": 1, "a": [2]}, "x": 1});
        let mut ids = Vec::new();
        for n in 0..3 {
            let new = NewExperiment {
                name: format!("old-{n}"),
                description: String::new(),
                notes: String::new(),
                state: "STATE_PAUSED".into(),
                owner_id,
                project_id: DEFAULT_PROJECT_ID,
                config: config.clone(),
                original_config: String::new(),
                model_definition: Vec::new(),
                labels: Vec::new(),
                parent_id: None,
                start_time: db_now(),
                job_id: format!("job-{n}"),
                unmanaged: false,
            };
            ids.push(store.create_experiment(new).await.unwrap().id);
        }
        // As written before migration 0028.
        sqlx::query("UPDATE experiments SET config_summary = NULL WHERE id <> $1").bind(ids[0]).execute(pool).await.unwrap();
        let old = store.experiment_by_id(ids[1]).await.unwrap();
        assert_eq!(old.config_summary.raw().get(), old.config.raw().get(), "the config stands in");

        store.backfill_config_summaries().await.unwrap();
        let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM experiments WHERE config_summary IS NULL").fetch_one(pool).await.unwrap();
        assert_eq!(left, 0);
        for id in ids {
            let filled = store.experiment_by_id(id).await.unwrap();
            assert_eq!(filled.config_summary.raw().get(), config_summary_text(&config));
        }
    }
}
