//! Continuing a finished experiment (`POST /api/v1/experiments/continue`), as upstream's
//! `ContinueExperiment` does in one transaction: the experiment takes the merged config, goes
//! back to a live state with its progress at 0 and no end time; every trial's restart counter is
//! zeroed and its end time cleared; the trials to run again are reopened (paused, on a new run so
//! their next allocation gets a fresh id, their task open again). Trials keep their start time.

use sqlx::AssertSqlSafe;

use super::{SqlStore, expect_row, on_pool};
use crate::error::{StoreError, StoreResult};

impl SqlStore {
    pub(crate) async fn continue_experiment_impl(
        &self,
        id: i32,
        from_state: &str,
        to_state: &str,
        config: &serde_json::Value,
        reopen: &[i32],
        reopened_state: &str,
    ) -> StoreResult<()> {
        let summary = crate::config_summary_text(config);
        let config = config.to_string();
        StoreError::reject_nul("config", &config)?;
        let ids = reopen.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        let reopen_trials = format!("UPDATE trials SET state = $2, run_id = run_id + 1 WHERE experiment_id = $1 AND id IN ({ids})");
        let reopen_tasks = format!(
            "UPDATE tasks SET end_time = NULL WHERE task_id IN (SELECT task_id FROM trials WHERE experiment_id = $1 AND id IN ({ids}))"
        );
        let done = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let done = sqlx::query(
                "UPDATE experiments SET state = $3, config = $4, config_summary = $5, progress = 0, end_time = NULL \
                 WHERE id = $1 AND state = $2",
            )
            .bind(id)
            .bind(from_state)
            .bind(to_state)
            .bind(&config)
            .bind(&summary)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if done == 1 {
                sqlx::query("UPDATE trials SET restarts = 0, end_time = NULL WHERE experiment_id = $1").bind(id).execute(&mut *tx).await?;
                if !reopen.is_empty() {
                    sqlx::query(AssertSqlSafe(reopen_trials.as_str())).bind(id).bind(reopened_state).execute(&mut *tx).await?;
                    sqlx::query(AssertSqlSafe(reopen_tasks.as_str())).bind(id).execute(&mut *tx).await?;
                }
            }
            tx.commit().await?;
            done
        });
        expect_row(done, "experiment in that state", id)
    }
}
