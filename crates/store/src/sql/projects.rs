//! Projects: create (with a unique key), the per-workspace listing with experiment counts,
//! patch, archive, delete, and experiments moved between projects. The built-in project
//! (immutable) refuses changes.

use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args, direction};
use super::workspace_writes::{TERMINAL_STATES, refusal};
use super::workspaces::{ProjectRow, project_select};
use super::{SqlStore, expect_row, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model_workspaces::{
    Deletion, NewProject, ProjectFilter, ProjectPatch, ProjectRecord, ProjectSort, ProjectSummary, WORKSPACE_STATE_DELETE_FAILED,
};

const IMMUTABLE: StoreError = StoreError::Precondition { reason: "the built-in project \"Uncategorized\" cannot be changed or deleted" };

/// Upstream's key rules: 1 to 5 characters, letters and digits; stored upper-case.
pub const MAX_PROJECT_KEY_LEN: usize = 5;

/// The counts a listing shows, for the project row aliased `p`.
const COUNTS: &str = "(SELECT COUNT(*) FROM experiments e WHERE e.project_id = p.id) AS num_experiments, \
     (SELECT COUNT(*) FROM experiments e WHERE e.project_id = p.id AND e.state IN ('STATE_ACTIVE', 'STATE_QUEUED', 'STATE_RUNNING')) \
     AS num_active_experiments, \
     (SELECT MAX(e.start_time) FROM experiments e WHERE e.project_id = p.id) AS last_experiment_started_at";

#[derive(sqlx::FromRow)]
struct SummaryRow {
    #[sqlx(flatten)]
    project: ProjectRow,
    num_experiments: i64,
    num_active_experiments: i64,
    last_experiment_started_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Candidate keys derived from a name: its first letters and digits, upper-cased, then the same
/// prefix with a number, within the length limit.
fn key_candidates(name: &str) -> Vec<String> {
    let mut prefix: String = name.chars().filter(char::is_ascii_alphanumeric).take(3).collect::<String>().to_ascii_uppercase();
    if prefix.is_empty() {
        prefix = "PRJ".to_owned();
    }
    let mut out = vec![prefix.clone()];
    out.extend((1..10_000).map(|n| format!("{prefix}{n}")).filter(|k| k.len() <= MAX_PROJECT_KEY_LEN));
    out
}

/// The project query's column list and FROM clause, to put the counts between them.
fn project_parts() -> (&'static str, &'static str) {
    const SELECT: &str = project_select!("");
    SELECT.split_once(" FROM ").unwrap_or((SELECT, ""))
}

impl SqlStore {
    pub(crate) async fn create_project_impl(&self, p: NewProject) -> StoreResult<ProjectRecord> {
        StoreError::reject_nul("project name", &p.name)?;
        StoreError::reject_nul("project description", &p.description)?;
        let key = match &p.key {
            Some(key) => {
                StoreError::reject_nul("project key", key)?;
                key.to_ascii_uppercase()
            }
            None => {
                let candidates = key_candidates(&p.name);
                let prefix = candidates[0].clone();
                let taken: Vec<String> = on_pool!(self, pool => {
                    sqlx::query_scalar("SELECT key FROM projects WHERE key LIKE $1").bind(format!("{prefix}%")).fetch_all(pool).await?
                });
                candidates.into_iter().find(|k| !taken.contains(k)).ok_or(StoreError::Conflict { entity: "project key", key: prefix })?
            }
        };
        const SQL: &str = "INSERT INTO projects (name, description, workspace_id, user_id, key) VALUES ($1, $2, $3, $4, $5) RETURNING id";
        let id = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let name_taken: Option<i32> = sqlx::query_scalar("SELECT id FROM projects WHERE workspace_id = $1 AND name = $2")
                .bind(p.workspace_id).bind(&p.name).fetch_optional(&mut *tx).await?;
            if name_taken.is_some() {
                return Err(StoreError::Conflict { entity: "project", key: p.name.clone() });
            }
            let id: i32 = sqlx::query_scalar(SQL)
                .bind(&p.name).bind(&p.description).bind(p.workspace_id).bind(p.user_id).bind(&key)
                .fetch_one(&mut *tx).await
                .map_err(|e| StoreError::from_write_ref("project key", &key, "workspace", p.workspace_id, e))?;
            tx.commit().await?;
            id
        });
        self.project_by_id_impl(id).await
    }

    pub(crate) async fn project_summary_impl(&self, id: i32) -> StoreResult<ProjectSummary> {
        let (select, from) = project_parts();
        let sql = format!("{select}, {COUNTS} FROM {from} WHERE p.id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, SummaryRow>(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("project", id))?.into_summary()
    }

    pub(crate) async fn project_page_impl(&self, f: &ProjectFilter) -> StoreResult<(Vec<ProjectSummary>, i64)> {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        cond.and(format!("p.workspace_id = {}", args.push(f.workspace_id)));
        if let Some(name) = &f.name {
            if name.contains('\0') {
                return Ok((Vec::new(), 0));
            }
            cond.and(format!("p.name = {}", args.push(name)));
        }
        if let Some(archived) = f.archived {
            cond.and(format!("p.archived = {}", args.push(archived)));
        }
        if !f.user_ids.is_empty() || !f.usernames.is_empty() {
            if f.usernames.iter().any(|n| n.contains('\0')) {
                return Ok((Vec::new(), 0));
            }
            let ids = if f.user_ids.is_empty() { "NULL".to_owned() } else { args.push_list(f.user_ids.iter().copied()) };
            let names = if f.usernames.is_empty() { "NULL".to_owned() } else { args.push_list(f.usernames.iter().map(String::as_str)) };
            cond.and(format!("(p.user_id IN ({ids}) OR u.username IN ({names}))"));
        }
        let where_sql = cond.sql();
        let (select, from) = project_parts();
        let count_sql = format!("SELECT COUNT(*) FROM {from} WHERE {where_sql}");
        let count_args = args.clone();
        let dir = direction(f.order);
        let column = match f.sort {
            ProjectSort::Id => "p.id".to_owned(),
            ProjectSort::Name => "LOWER(p.name)".to_owned(),
            ProjectSort::Description => "LOWER(p.description)".to_owned(),
            // Explicit NULLS LAST: the dialects' defaults differ.
            ProjectSort::LastExperimentStartTime => format!("last_experiment_started_at {dir} NULLS LAST, p.id"),
        };
        let limit = args.push(if f.limit > 0 { f.limit } else { i64::MAX });
        let offset = args.push(f.offset.max(0));
        let page_sql =
            format!("{select}, {COUNTS} FROM {from} WHERE {where_sql} ORDER BY {column} {dir}, p.id {dir} LIMIT {limit} OFFSET {offset}");
        let (rows, total): (Vec<SummaryRow>, i64) = on_pool!(self, pool => {
            tokio::try_join!(
                bind_args!(sqlx::query_as::<_, SummaryRow>(AssertSqlSafe(page_sql.as_str())), args).fetch_all(pool),
                bind_args!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())), count_args).fetch_one(pool),
            )?
        });
        Ok((rows.into_iter().map(SummaryRow::into_summary).collect::<StoreResult<_>>()?, total))
    }

    async fn refuse_immutable_project(&self, id: i32) -> StoreResult<()> {
        let immutable: Option<bool> = on_pool!(self, pool => {
            sqlx::query_scalar("SELECT immutable FROM projects WHERE id = $1").bind(id).fetch_optional(pool).await?
        });
        match immutable {
            None => Err(StoreError::not_found("project", id)),
            Some(true) => Err(IMMUTABLE),
            Some(false) => Ok(()),
        }
    }

    pub(crate) async fn patch_project_impl(&self, id: i32, p: &ProjectPatch) -> StoreResult<ProjectRecord> {
        self.refuse_immutable_project(id).await?;
        for (field, value) in [("project name", &p.name), ("project description", &p.description), ("project key", &p.key)] {
            if let Some(v) = value {
                StoreError::reject_nul(field, v)?;
            }
        }
        let notes = p.notes.as_ref().map(ToString::to_string);
        let key = p.key.as_ref().map(|k| k.to_ascii_uppercase());
        let written = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            if let Some(name) = &p.name {
                let taken: Option<i32> = sqlx::query_scalar(
                    "SELECT id FROM projects WHERE name = $2 AND id <> $1 AND workspace_id = (SELECT workspace_id FROM projects WHERE id = $1)",
                )
                .bind(id).bind(name).fetch_optional(&mut *tx).await?;
                if taken.is_some() {
                    return Err(StoreError::Conflict { entity: "project", key: name.clone() });
                }
            }
            let done = sqlx::query(
                "UPDATE projects SET name = COALESCE($2, name), description = COALESCE($3, description), key = COALESCE($4, key), \
                 notes = COALESCE($5, notes) WHERE id = $1",
            )
            .bind(id).bind(&p.name).bind(&p.description).bind(&key).bind(&notes)
            .execute(&mut *tx).await
            .map_err(|e| StoreError::from_write("project key", key.clone().unwrap_or_default(), e))?
            .rows_affected();
            tx.commit().await?;
            done
        });
        expect_row(written, "project", id)?;
        self.project_by_id_impl(id).await
    }

    pub(crate) async fn set_project_archived_impl(&self, id: i32, archived: bool) -> StoreResult<()> {
        self.refuse_immutable_project(id).await?;
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE projects SET archived = $2 WHERE id = $1").bind(id).bind(archived).execute(pool).await?.rows_affected()
        });
        expect_row(done, "project", id)
    }

    /// Deletes the project with its experiments (trials, metrics, checkpoints, logs) in one
    /// transaction; refused (and the refusal recorded on the row) while one is unfinished.
    pub(crate) async fn delete_project_impl(&self, id: i32) -> StoreResult<Deletion> {
        self.refuse_immutable_project(id).await?;
        let blocking = format!("SELECT id FROM experiments WHERE project_id = $1 AND state NOT IN {TERMINAL_STATES} ORDER BY id");
        let trial_tasks = "SELECT t.task_id FROM trials t JOIN experiments e ON e.id = t.experiment_id WHERE e.project_id = $1";
        let deletes = [
            format!("DELETE FROM task_logs WHERE task_id IN ({trial_tasks})"),
            format!("DELETE FROM tasks WHERE task_id IN ({trial_tasks})"),
            "DELETE FROM experiments WHERE project_id = $1".to_owned(),
            "DELETE FROM projects WHERE id = $1".to_owned(),
        ];
        let outcome = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let unfinished: Vec<i32> = sqlx::query_scalar(AssertSqlSafe(blocking.as_str())).bind(id).fetch_all(&mut *tx).await?;
            if let Some(reason) = refusal(&unfinished, &[]) {
                sqlx::query("UPDATE projects SET state = $2, error_message = $3 WHERE id = $1")
                    .bind(id).bind(WORKSPACE_STATE_DELETE_FAILED).bind(&reason).execute(&mut *tx).await?;
                tx.commit().await?;
                Deletion::Refused { reason }
            } else {
                for sql in &deletes {
                    sqlx::query(AssertSqlSafe(sql.as_str())).bind(id).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Deletion::Deleted
            }
        });
        Ok(outcome)
    }

    pub(crate) async fn move_experiment_impl(&self, experiment_id: i32, project_id: i32) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET project_id = $2 WHERE id = $1").bind(experiment_id).bind(project_id).execute(pool).await.map(|r| r.rows_affected())
        });
        let done = done.map_err(|e| StoreError::from_write_ref("experiment", experiment_id, "project", project_id, e))?;
        expect_row(done, "experiment", experiment_id)
    }
}

impl SummaryRow {
    fn into_summary(self) -> StoreResult<ProjectSummary> {
        Ok(ProjectSummary {
            project: self.project.into_record()?,
            num_experiments: self.num_experiments,
            num_active_experiments: self.num_active_experiments,
            last_experiment_started_at: self.last_experiment_started_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_the_name_and_stay_short() {
        let keys = key_candidates("my project");
        assert_eq!(&keys[..3], ["MYP", "MYP1", "MYP2"]);
        assert!(keys.iter().all(|k| k.len() <= MAX_PROJECT_KEY_LEN));
        assert_eq!(key_candidates("---")[0], "PRJ");
    }
}
