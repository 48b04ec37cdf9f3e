//! Workspaces and projects: for now only looked up and listed (the schema creates the default pair).

use super::{SqlStore, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model_experiments::{ProjectRecord, WorkspaceRecord};

/// The project query with its workspace joined, narrowed by a literal WHERE clause.
macro_rules! project_select {
    ($where:literal) => {
        concat!(
            "SELECT p.id, p.name, p.description, p.workspace_id, w.name AS workspace_name, p.archived, p.immutable, p.user_id \
             FROM projects p JOIN workspaces w ON w.id = p.workspace_id ",
            $where
        )
    };
}

impl SqlStore {
    pub(crate) async fn list_workspaces_impl(&self) -> StoreResult<Vec<WorkspaceRecord>> {
        const SQL: &str = "SELECT w.id, w.name, w.archived, w.immutable, w.user_id, COALESCE(u.username, '') AS username, \
             (SELECT COUNT(*) FROM projects p WHERE p.workspace_id = w.id) AS num_projects, \
             (SELECT COUNT(*) FROM experiments e JOIN projects p ON p.id = e.project_id WHERE p.workspace_id = w.id) AS num_experiments \
             FROM workspaces w LEFT JOIN users u ON u.id = w.user_id ORDER BY w.id";
        Ok(on_pool!(self, pool => { sqlx::query_as::<_, WorkspaceRecord>(SQL).fetch_all(pool).await? }))
    }

    pub(crate) async fn project_by_id_impl(&self, id: i32) -> StoreResult<ProjectRecord> {
        const SQL: &str = project_select!("WHERE p.id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, ProjectRecord>(SQL).bind(id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("project", id))
    }

    pub(crate) async fn project_by_names_impl(&self, workspace: &str, project: &str) -> StoreResult<ProjectRecord> {
        super::findable("project", &format!("{workspace}/{project}"))?;
        const SQL: &str = project_select!("WHERE w.name = $1 AND p.name = $2");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, ProjectRecord>(SQL).bind(workspace).bind(project).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("project", format!("{workspace}/{project}")))
    }
}
