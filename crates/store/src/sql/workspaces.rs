//! Workspaces and projects read back: one workspace or project, the workspace listing (filtered,
//! sorted and paged in SQL) and the default lookups experiments use.

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args, direction};
use super::{SqlStore, findable, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model::AgentUserGroup;
use crate::model_workspaces::{ProjectRecord, WorkspaceFilter, WorkspaceRecord, WorkspaceSort};

/// The project query with its workspace joined, narrowed by a literal WHERE clause.
macro_rules! project_select {
    ($where:literal) => {
        concat!(
            "SELECT p.id, p.name, p.description, p.workspace_id, w.name AS workspace_name, p.archived, w.archived AS workspace_archived, \
             p.immutable, p.user_id, COALESCE(u.username, '') AS username, COALESCE(p.key, '') AS key, p.notes, p.state, p.error_message \
             FROM projects p JOIN workspaces w ON w.id = p.workspace_id LEFT JOIN users u ON u.id = p.user_id ",
            $where
        )
    };
}
pub(crate) use project_select;

#[derive(sqlx::FromRow)]
pub(crate) struct ProjectRow {
    id: i32,
    name: String,
    description: String,
    workspace_id: i32,
    workspace_name: String,
    archived: bool,
    workspace_archived: bool,
    immutable: bool,
    user_id: Option<i32>,
    username: String,
    key: String,
    notes: String,
    state: String,
    error_message: String,
}

impl ProjectRow {
    pub(crate) fn into_record(self) -> StoreResult<ProjectRecord> {
        Ok(ProjectRecord {
            id: self.id,
            name: self.name,
            description: self.description,
            workspace_id: self.workspace_id,
            workspace_name: self.workspace_name,
            archived: self.archived,
            workspace_archived: self.workspace_archived,
            immutable: self.immutable,
            user_id: self.user_id,
            username: self.username,
            key: self.key,
            notes: parse_json("notes", &self.notes)?,
            state: self.state,
            error_message: self.error_message,
        })
    }
}

/// Every column of a workspace record; `$1` is the viewer whose pin is reported.
const WORKSPACE_COLUMNS: &str = "w.id, w.name, w.archived, w.immutable, w.user_id, COALESCE(u.username, '') AS username, \
     (SELECT COUNT(*) FROM projects p WHERE p.workspace_id = w.id) AS num_projects, \
     (SELECT COUNT(*) FROM experiments e JOIN projects p ON p.id = e.project_id WHERE p.workspace_id = w.id) AS num_experiments, \
     pin.pinned_at, w.checkpoint_storage_config, w.agent_uid, w.agent_gid, w.agent_user, w.agent_group, \
     w.default_compute_pool, w.default_aux_pool, w.state, w.error_message";
const WORKSPACE_FROM: &str =
    "FROM workspaces w LEFT JOIN users u ON u.id = w.user_id LEFT JOIN workspace_pins pin ON pin.workspace_id = w.id AND pin.user_id = $1";

#[derive(sqlx::FromRow)]
struct WorkspaceRow {
    id: i32,
    name: String,
    archived: bool,
    immutable: bool,
    user_id: Option<i32>,
    username: String,
    num_projects: i64,
    num_experiments: i64,
    pinned_at: Option<DateTime<Utc>>,
    checkpoint_storage_config: Option<String>,
    agent_uid: Option<i32>,
    agent_gid: Option<i32>,
    agent_user: Option<String>,
    agent_group: Option<String>,
    default_compute_pool: String,
    default_aux_pool: String,
    state: String,
    error_message: String,
}

impl WorkspaceRow {
    fn into_record(self) -> StoreResult<WorkspaceRecord> {
        let agent_user_group = match (self.agent_uid, self.agent_gid, self.agent_user, self.agent_group) {
            (Some(uid), Some(gid), Some(user), Some(group)) => Some(AgentUserGroup { uid, gid, user, group }),
            _ => None,
        };
        let checkpoint_storage_config =
            self.checkpoint_storage_config.as_deref().map(|t| parse_json("checkpoint_storage_config", t)).transpose()?;
        Ok(WorkspaceRecord {
            id: self.id,
            name: self.name,
            archived: self.archived,
            immutable: self.immutable,
            user_id: self.user_id,
            username: self.username,
            num_projects: self.num_projects,
            num_experiments: self.num_experiments,
            pinned: self.pinned_at.is_some(),
            pinned_at: self.pinned_at,
            checkpoint_storage_config,
            agent_user_group,
            default_compute_pool: self.default_compute_pool,
            default_aux_pool: self.default_aux_pool,
            state: self.state,
            error_message: self.error_message,
        })
    }
}

impl SqlStore {
    pub(crate) async fn list_workspaces_impl(&self) -> StoreResult<Vec<WorkspaceRecord>> {
        Ok(self.workspace_page_impl(&WorkspaceFilter::default()).await?.0)
    }

    pub(crate) async fn workspace_by_id_impl(&self, id: i32, viewer_id: i32) -> StoreResult<WorkspaceRecord> {
        let sql = format!("SELECT {WORKSPACE_COLUMNS} {WORKSPACE_FROM} WHERE w.id = $2");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, WorkspaceRow>(AssertSqlSafe(sql.as_str())).bind(viewer_id).bind(id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("workspace", id))?.into_record()
    }

    pub(crate) async fn workspace_page_impl(&self, f: &WorkspaceFilter) -> StoreResult<(Vec<WorkspaceRecord>, i64)> {
        let mut args = Args::default();
        args.push(f.viewer_id);
        let mut cond = Conditions::default();
        for name in [&f.name, &f.name_case_sensitive].into_iter().flatten() {
            // No stored name holds a NUL (writes refuse it); PostgreSQL cannot bind one.
            if name.contains('\0') {
                return Ok((Vec::new(), 0));
            }
        }
        if let Some(name) = &f.name {
            cond.and(format!("LOWER(w.name) = {}", args.push(name.to_ascii_lowercase())));
        }
        if let Some(name) = &f.name_case_sensitive {
            cond.and(format!("w.name = {}", args.push(name)));
        }
        if let Some(archived) = f.archived {
            cond.and(format!("w.archived = {}", args.push(archived)));
        }
        match f.pinned {
            Some(true) => cond.and("pin.pinned_at IS NOT NULL"),
            Some(false) => cond.and("pin.pinned_at IS NULL"),
            None => {}
        }
        if !f.user_ids.is_empty() || !f.usernames.is_empty() {
            if f.usernames.iter().any(|n| n.contains('\0')) {
                return Ok((Vec::new(), 0));
            }
            let ids = if f.user_ids.is_empty() { "NULL".to_owned() } else { args.push_list(f.user_ids.iter().copied()) };
            let names = if f.usernames.is_empty() { "NULL".to_owned() } else { args.push_list(f.usernames.iter().map(String::as_str)) };
            cond.and(format!("(w.user_id IN ({ids}) OR u.username IN ({names}))"));
        }
        let where_sql = cond.sql();
        let count_sql = format!("SELECT COUNT(*) {WORKSPACE_FROM} WHERE {where_sql}");
        let count_args = args.clone();
        let column = match f.sort {
            WorkspaceSort::Id => "w.id",
            WorkspaceSort::Name => "LOWER(w.name)",
        };
        let dir = direction(f.order);
        let limit = args.push(if f.limit > 0 { f.limit } else { i64::MAX });
        let offset = args.push(f.offset.max(0));
        let page_sql = format!(
            "SELECT {WORKSPACE_COLUMNS} {WORKSPACE_FROM} WHERE {where_sql} ORDER BY {column} {dir}, w.id {dir} LIMIT {limit} OFFSET {offset}"
        );
        let (rows, total): (Vec<WorkspaceRow>, i64) = on_pool!(self, pool => {
            tokio::try_join!(
                bind_args!(sqlx::query_as::<_, WorkspaceRow>(AssertSqlSafe(page_sql.as_str())), args).fetch_all(pool),
                bind_args!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())), count_args).fetch_one(pool),
            )?
        });
        Ok((rows.into_iter().map(WorkspaceRow::into_record).collect::<StoreResult<_>>()?, total))
    }

    pub(crate) async fn project_by_id_impl(&self, id: i32) -> StoreResult<ProjectRecord> {
        const SQL: &str = project_select!("WHERE p.id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, ProjectRow>(SQL).bind(id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("project", id))?.into_record()
    }

    pub(crate) async fn project_by_names_impl(&self, workspace: &str, project: &str) -> StoreResult<ProjectRecord> {
        findable("project", &format!("{workspace}/{project}"))?;
        const SQL: &str = project_select!("WHERE w.name = $1 AND p.name = $2");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, ProjectRow>(SQL).bind(workspace).bind(project).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("project", format!("{workspace}/{project}")))?.into_record()
    }
}
