//! The allocation usage report (upstream's `allocations-csv`): every allocation overlapping a
//! time window with its task's type, owner, workspace and experiment, in one query.

use chrono::{DateTime, Utc};

use super::{SqlStore, on_pool};
use crate::cluster_store::{ALLOCATION_USAGE_LIMIT, AllocationUsageRecord};
use crate::error::StoreResult;

/// A trial's task names its experiment (owner and workspace through its project); a command's
/// task its workspace; other tasks (checkpoint GC) only their owner.
const USAGE_SQL: &str = "SELECT a.allocation_id, a.task_id, t.task_type, u.username, u.id AS user_id, w.name AS workspace_name, \
     tr.experiment_id, a.slots, a.resource_pool, a.start_time, a.end_time \
     FROM allocations a JOIN tasks t ON t.task_id = a.task_id \
     LEFT JOIN trials tr ON tr.task_id = a.task_id \
     LEFT JOIN experiments e ON e.id = tr.experiment_id \
     LEFT JOIN projects p ON p.id = e.project_id \
     LEFT JOIN command_tasks c ON c.task_id = a.task_id \
     LEFT JOIN workspaces w ON w.id = COALESCE(p.workspace_id, c.workspace_id) \
     LEFT JOIN users u ON u.id = COALESCE(e.owner_id, t.owner_id) \
     WHERE a.start_time < $2 AND (a.end_time IS NULL OR a.end_time > $1) \
     ORDER BY a.start_time, a.allocation_id LIMIT $3";

impl SqlStore {
    pub(crate) async fn allocation_usage_impl(
        &self,
        after: DateTime<Utc>,
        before: DateTime<Utc>,
    ) -> StoreResult<Vec<AllocationUsageRecord>> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as(USAGE_SQL).bind(after).bind(before).bind(ALLOCATION_USAGE_LIMIT).fetch_all(pool).await?
        }))
    }
}
