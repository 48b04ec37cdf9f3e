//! The agent user groups read when the loop launches a task (`Store::task_user_groups`): the
//! task's workspace's and its owner's, in one statement. The loop awaits it on every launch, so
//! it reads only these columns (not the experiment's config, nor the workspace's counts).

use super::{SqlStore, expect_row, findable, on_pool};
use crate::error::StoreResult;
use crate::model::{AgentUserGroup, TaskUserGroups, TaskWorkspaceOf};

/// A trial's: its experiment's project's workspace; `$2` the owner.
const OF_EXPERIMENT: &str = "SELECT w.agent_uid AS w_uid, w.agent_gid AS w_gid, w.agent_user AS w_user, w.agent_group AS w_group, \
     u.agent_uid AS u_uid, u.agent_gid AS u_gid, u.agent_user AS u_user, u.agent_group AS u_group \
     FROM experiments e JOIN projects p ON p.id = e.project_id JOIN workspaces w ON w.id = p.workspace_id \
     LEFT JOIN users u ON u.id = $2 WHERE e.id = $1";
/// A command task's own workspace; `$2` the owner.
const OF_COMMAND_TASK: &str = "SELECT w.agent_uid AS w_uid, w.agent_gid AS w_gid, w.agent_user AS w_user, w.agent_group AS w_group, \
     u.agent_uid AS u_uid, u.agent_gid AS u_gid, u.agent_user AS u_user, u.agent_group AS u_group \
     FROM command_tasks c JOIN workspaces w ON w.id = c.workspace_id LEFT JOIN users u ON u.id = $2 WHERE c.task_id = $1";

#[derive(sqlx::FromRow)]
struct GroupsRow {
    w_uid: Option<i32>,
    w_gid: Option<i32>,
    w_user: Option<String>,
    w_group: Option<String>,
    u_uid: Option<i32>,
    u_gid: Option<i32>,
    u_user: Option<String>,
    u_group: Option<String>,
}

/// A group when all four of its columns are set (as the API writes them).
fn group(uid: Option<i32>, gid: Option<i32>, user: Option<String>, group: Option<String>) -> Option<AgentUserGroup> {
    Some(AgentUserGroup { uid: uid?, gid: gid?, user: user?, group: group? })
}

impl SqlStore {
    pub(crate) async fn task_user_groups_impl(&self, of: TaskWorkspaceOf<'_>, owner_id: Option<i32>) -> StoreResult<TaskUserGroups> {
        let row: Option<GroupsRow> = match of {
            TaskWorkspaceOf::Experiment(id) => {
                let row = on_pool!(self, pool => sqlx::query_as(OF_EXPERIMENT).bind(id).bind(owner_id).fetch_optional(pool).await?);
                expect_row(u64::from(row.is_some()), "experiment", id)?;
                row
            }
            TaskWorkspaceOf::CommandTask(task_id) => {
                findable("task", task_id)?;
                let row = on_pool!(self, pool => sqlx::query_as(OF_COMMAND_TASK).bind(task_id).bind(owner_id).fetch_optional(pool).await?);
                expect_row(u64::from(row.is_some()), "task", task_id)?;
                row
            }
        };
        Ok(row.map_or_else(TaskUserGroups::default, |r| TaskUserGroups {
            workspace: group(r.w_uid, r.w_gid, r.w_user, r.w_group),
            owner: group(r.u_uid, r.u_gid, r.u_user, r.u_group),
        }))
    }
}
