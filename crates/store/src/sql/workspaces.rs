//! Workspaces and projects: for now only looked up (the schema creates the default pair).

use super::{SqlStore, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model_experiments::ProjectRecord;

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
    pub(crate) async fn project_by_id_impl(&self, id: i32) -> StoreResult<ProjectRecord> {
        const SQL: &str = project_select!("WHERE p.id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, ProjectRecord>(SQL).bind(id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("project", id))
    }

    pub(crate) async fn project_by_names_impl(&self, workspace: &str, project: &str) -> StoreResult<ProjectRecord> {
        const SQL: &str = project_select!("WHERE w.name = $1 AND p.name = $2");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, ProjectRecord>(SQL).bind(workspace).bind(project).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("project", format!("{workspace}/{project}")))
    }
}
