//! Workspaces changed: create, patch, archive, pin, delete. The built-in workspace (immutable)
//! refuses every change; a name is unique (a `Conflict` names it).

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use super::{SqlStore, expect_row, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model::AgentUserGroup;
use crate::model_workspaces::{Deletion, NewWorkspace, WORKSPACE_STATE_DELETE_FAILED, WorkspacePatch, WorkspaceRecord};

const IMMUTABLE: StoreError = StoreError::Precondition { reason: "the built-in workspace \"Uncategorized\" cannot be changed or deleted" };

/// Experiment states after which an experiment may be deleted with its workspace or project.
pub(crate) const TERMINAL_STATES: &str = "('STATE_COMPLETED', 'STATE_CANCELED', 'STATE_ERROR', 'STATE_DELETED', 'STATE_DELETE_FAILED')";

fn split_group(g: Option<&AgentUserGroup>) -> (Option<i32>, Option<i32>, Option<String>, Option<String>) {
    match g {
        Some(g) => (Some(g.uid), Some(g.gid), Some(g.user.clone()), Some(g.group.clone())),
        None => (None, None, None, None),
    }
}

fn reject_group_nul(g: Option<&AgentUserGroup>) -> StoreResult<()> {
    if let Some(g) = g {
        StoreError::reject_nul("agent user", &g.user)?;
        StoreError::reject_nul("agent group", &g.group)?;
    }
    Ok(())
}

impl SqlStore {
    pub(crate) async fn create_workspace_impl(&self, w: NewWorkspace) -> StoreResult<WorkspaceRecord> {
        StoreError::reject_nul("workspace name", &w.name)?;
        StoreError::reject_nul("default compute pool", &w.default_compute_pool)?;
        StoreError::reject_nul("default aux pool", &w.default_aux_pool)?;
        reject_group_nul(w.agent_user_group.as_ref())?;
        let (uid, gid, user, group) = split_group(w.agent_user_group.as_ref());
        let storage = w.checkpoint_storage_config.as_ref().map(ToString::to_string);
        const SQL: &str = "INSERT INTO workspaces (name, user_id, checkpoint_storage_config, agent_uid, agent_gid, agent_user, agent_group, \
             default_compute_pool, default_aux_pool) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id";
        let inserted: Result<i32, sqlx::Error> = on_pool!(self, pool => {
            sqlx::query_scalar(SQL)
                .bind(&w.name).bind(w.user_id).bind(&storage).bind(uid).bind(gid).bind(&user).bind(&group)
                .bind(&w.default_compute_pool).bind(&w.default_aux_pool)
                .fetch_one(pool).await
        });
        let id = inserted.map_err(|e| StoreError::from_write_ref("workspace", &w.name, "user", w.user_id, e))?;
        self.workspace_by_id_impl(id, w.user_id).await
    }

    pub(super) async fn refuse_immutable(&self, id: i32) -> StoreResult<()> {
        let immutable: Option<bool> = on_pool!(self, pool => {
            sqlx::query_scalar("SELECT immutable FROM workspaces WHERE id = $1").bind(id).fetch_optional(pool).await?
        });
        match immutable {
            None => Err(StoreError::not_found("workspace", id)),
            Some(true) => Err(IMMUTABLE),
            Some(false) => Ok(()),
        }
    }

    pub(crate) async fn patch_workspace_impl(&self, id: i32, p: &WorkspacePatch) -> StoreResult<()> {
        self.refuse_immutable(id).await?;
        for (field, value) in
            [("workspace name", &p.name), ("default compute pool", &p.default_compute_pool), ("default aux pool", &p.default_aux_pool)]
        {
            if let Some(v) = value {
                StoreError::reject_nul(field, v)?;
            }
        }
        reject_group_nul(p.agent_user_group.as_ref().and_then(Option::as_ref))?;
        let (uid, gid, user, group) = split_group(p.agent_user_group.as_ref().and_then(Option::as_ref));
        let storage = p.checkpoint_storage_config.as_ref().and_then(|s| s.as_ref().map(ToString::to_string));
        const SQL: &str = "UPDATE workspaces SET name = COALESCE($2, name), \
             checkpoint_storage_config = CASE WHEN $3 THEN $4 ELSE checkpoint_storage_config END, \
             agent_uid = CASE WHEN $5 THEN $6 ELSE agent_uid END, agent_gid = CASE WHEN $5 THEN $7 ELSE agent_gid END, \
             agent_user = CASE WHEN $5 THEN $8 ELSE agent_user END, agent_group = CASE WHEN $5 THEN $9 ELSE agent_group END, \
             default_compute_pool = COALESCE($10, default_compute_pool), default_aux_pool = COALESCE($11, default_aux_pool) \
             WHERE id = $1";
        let key = p.name.clone().unwrap_or_else(|| id.to_string());
        let done = on_pool!(self, pool => {
            sqlx::query(SQL)
                .bind(id).bind(&p.name)
                .bind(p.checkpoint_storage_config.is_some()).bind(&storage)
                .bind(p.agent_user_group.is_some()).bind(uid).bind(gid).bind(&user).bind(&group)
                .bind(&p.default_compute_pool).bind(&p.default_aux_pool)
                .execute(pool).await.map(|r| r.rows_affected())
        });
        let done = done.map_err(|e| StoreError::from_write("workspace", key, e))?;
        expect_row(done, "workspace", id)
    }

    pub(crate) async fn set_workspace_archived_impl(&self, id: i32, archived: bool) -> StoreResult<()> {
        self.refuse_immutable(id).await?;
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE workspaces SET archived = $2 WHERE id = $1").bind(id).bind(archived).execute(pool).await?.rows_affected()
        });
        expect_row(done, "workspace", id)
    }

    /// Pins are the viewer's own; pinning twice keeps the first time.
    pub(crate) async fn set_workspace_pinned_impl(&self, id: i32, user_id: i32, pinned: Option<DateTime<Utc>>) -> StoreResult<()> {
        let exists: Option<i32> = on_pool!(self, pool => {
            sqlx::query_scalar("SELECT id FROM workspaces WHERE id = $1").bind(id).fetch_optional(pool).await?
        });
        exists.ok_or_else(|| StoreError::not_found("workspace", id))?;
        let written = on_pool!(self, pool => {
            match pinned {
                Some(at) => sqlx::query(
                    "INSERT INTO workspace_pins (workspace_id, user_id, pinned_at) VALUES ($1, $2, $3) ON CONFLICT (workspace_id, user_id) DO NOTHING",
                )
                .bind(id).bind(user_id).bind(at).execute(pool).await.map(|_| ()),
                None => sqlx::query("DELETE FROM workspace_pins WHERE workspace_id = $1 AND user_id = $2")
                    .bind(id).bind(user_id).execute(pool).await.map(|_| ()),
            }
        });
        written.map_err(|e| StoreError::from_write_ref("workspace pin", id, "user", user_id, e))?;
        Ok(())
    }

    /// Deletes the workspace with its projects, their experiments (trials, metrics, checkpoints,
    /// logs), its ended tasks and its templates, in one transaction; refused (and the refusal
    /// recorded on the row) while an experiment is unfinished or a task is open.
    pub(crate) async fn delete_workspace_impl(&self, id: i32) -> StoreResult<Deletion> {
        self.refuse_immutable(id).await?;
        let experiments_in = "SELECT e.id FROM experiments e JOIN projects p ON p.id = e.project_id WHERE p.workspace_id = $1";
        let blocking = format!("{experiments_in} AND e.state NOT IN {TERMINAL_STATES} ORDER BY e.id");
        let open_tasks = "SELECT c.task_id FROM command_tasks c JOIN tasks t ON t.task_id = c.task_id \
             WHERE c.workspace_id = $1 AND t.end_time IS NULL ORDER BY c.task_id";
        let trial_tasks = format!("SELECT task_id FROM trials WHERE experiment_id IN ({experiments_in})");
        let command_tasks = "SELECT task_id FROM command_tasks WHERE workspace_id = $1";
        let deletes = [
            format!("DELETE FROM task_logs WHERE task_id IN ({trial_tasks})"),
            format!("DELETE FROM tasks WHERE task_id IN ({trial_tasks})"),
            format!("DELETE FROM experiments WHERE id IN ({experiments_in})"),
            format!("DELETE FROM task_logs WHERE task_id IN ({command_tasks})"),
            format!("DELETE FROM tasks WHERE task_id IN ({command_tasks})"),
            "DELETE FROM templates WHERE workspace_id = $1".to_owned(),
        ];
        let outcome = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let unfinished: Vec<i32> = sqlx::query_scalar(AssertSqlSafe(blocking.as_str())).bind(id).fetch_all(&mut *tx).await?;
            let open: Vec<String> = sqlx::query_scalar(open_tasks).bind(id).fetch_all(&mut *tx).await?;
            if let Some(reason) = refusal(&unfinished, &open) {
                sqlx::query("UPDATE workspaces SET state = $2, error_message = $3 WHERE id = $1")
                    .bind(id).bind(WORKSPACE_STATE_DELETE_FAILED).bind(&reason).execute(&mut *tx).await?;
                tx.commit().await?;
                Deletion::Refused { reason }
            } else {
                for sql in &deletes {
                    sqlx::query(AssertSqlSafe(sql.as_str())).bind(id).execute(&mut *tx).await?;
                }
                // Projects and pins follow by ON DELETE CASCADE.
                sqlx::query("DELETE FROM workspaces WHERE id = $1").bind(id).execute(&mut *tx).await?;
                tx.commit().await?;
                Deletion::Deleted
            }
        });
        Ok(outcome)
    }
}

/// The error message a refused deletion leaves: what is still running, and what to do.
pub(crate) fn refusal(unfinished: &[i32], open_tasks: &[String]) -> Option<String> {
    let mut parts = Vec::new();
    if !unfinished.is_empty() {
        let ids: Vec<String> = unfinished.iter().map(ToString::to_string).collect();
        parts.push(format!("experiments not in a terminal state: {} (kill them or wait for them to end)", ids.join(", ")));
    }
    if !open_tasks.is_empty() {
        parts.push(format!("open tasks: {} (kill them first)", open_tasks.join(", ")));
    }
    (!parts.is_empty()).then(|| format!("cannot delete: {}", parts.join("; ")))
}
