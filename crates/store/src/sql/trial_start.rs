//! Placing a run of a trial: its start time is when its first process was placed, not when the
//! searcher asked for it (a search's trials are all requested at once and wait for slots in
//! turn), and the run resumes from the trial's latest checkpoint. Both in two statements, since
//! the loop awaits them for every launch.

use chrono::{DateTime, Utc};

use super::{SqlStore, expect_row, on_pool};
use crate::error::StoreResult;
use crate::model_trials::TrialRunStart;

impl SqlStore {
    pub(crate) async fn start_trial_run_impl(&self, id: i32, at: DateTime<Utc>) -> StoreResult<TrialRunStart> {
        let resume: Option<(Option<String>, Option<i64>)> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT t.latest_checkpoint_uuid, c.steps_completed FROM trials t \
                 LEFT JOIN checkpoints c ON c.uuid = t.latest_checkpoint_uuid WHERE t.id = $1",
            )
            .bind(id)
            .fetch_optional(pool)
            .await?
        });
        expect_row(u64::from(resume.is_some()), "trial", id)?;
        let (latest_checkpoint_uuid, latest_checkpoint_steps) = resume.unwrap_or_default();
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
        Ok(TrialRunStart { first_start: changed > 0, latest_checkpoint_uuid, latest_checkpoint_steps })
    }
}
