//! The first step of a workspace's background deletion, as upstream's: the same refusal rules as
//! a deletion (an unfinished experiment or an open task keeps it, the reason recorded), else the
//! workspace is marked `WORKSPACE_STATE_DELETING` while the master deletes its projects one by
//! one and then the workspace (`delete_project`, `delete_workspace`, each re-checking).

use sqlx::AssertSqlSafe;

use super::workspace_writes::{TERMINAL_STATES, refusal};
use super::{SqlStore, on_pool};
use crate::error::StoreResult;
use crate::model_workspaces::{WORKSPACE_STATE_DELETE_FAILED, WORKSPACE_STATE_DELETING};

impl SqlStore {
    pub(crate) async fn begin_workspace_deletion_impl(&self, id: i32) -> StoreResult<Option<String>> {
        self.refuse_immutable(id).await?;
        let blocking = format!(
            "SELECT e.id FROM experiments e JOIN projects p ON p.id = e.project_id \
             WHERE p.workspace_id = $1 AND e.state NOT IN {TERMINAL_STATES} ORDER BY e.id"
        );
        let open_tasks = "SELECT c.task_id FROM command_tasks c JOIN tasks t ON t.task_id = c.task_id \
             WHERE c.workspace_id = $1 AND t.end_time IS NULL ORDER BY c.task_id";
        let outcome = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let unfinished: Vec<i32> = sqlx::query_scalar(AssertSqlSafe(blocking.as_str())).bind(id).fetch_all(&mut *tx).await?;
            let open: Vec<String> = sqlx::query_scalar(open_tasks).bind(id).fetch_all(&mut *tx).await?;
            let reason = refusal(&unfinished, &open);
            let (state, message) = match &reason {
                Some(r) => (WORKSPACE_STATE_DELETE_FAILED, r.as_str()),
                None => (WORKSPACE_STATE_DELETING, ""),
            };
            sqlx::query("UPDATE workspaces SET state = $2, error_message = $3 WHERE id = $1")
                .bind(id).bind(state).bind(message).execute(&mut *tx).await?;
            tx.commit().await?;
            reason
        });
        Ok(outcome)
    }
}
