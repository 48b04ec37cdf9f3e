//! Runs (trials with their experiment's, project's and workspace's fields): the filtered, sorted,
//! paged list of `POST /api/v1/runs`, and the run-level writes of the runs API — archive and
//! delete. Selection, order and page are all SQL (`sql/run_filter.rs`).

use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args};
use super::run_filter::{filter_sql, order_sql};
use super::trials::{TRIAL_COLUMNS, TrialRow};
use super::{Pool, SqlStore, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model_checkpoints::CHECKPOINT_COMPLETED;
use crate::model_runs::{RunDeletion, RunPage, RunQuery, RunRecord};

const RUN_JOINS: &str = "FROM trials t JOIN experiments e ON e.id = t.experiment_id JOIN users u ON u.id = e.owner_id \
     JOIN projects p ON p.id = e.project_id JOIN workspaces w ON w.id = p.workspace_id";

#[derive(sqlx::FromRow)]
struct RunRow {
    #[sqlx(flatten)]
    trial: TrialRow,
    run_archived: bool,
    checkpoint_count: i64,
    checkpoint_size: i64,
    experiment_name: String,
    experiment_description: String,
    experiment_state: String,
    experiment_config: String,
    experiment_progress: Option<f64>,
    experiment_parent_id: Option<i32>,
    experiment_unmanaged: bool,
    experiment_archived: bool,
    experiment_labels: String,
    experiment_trials: i64,
    owner_id: i32,
    project_id: i32,
    project_name: String,
    project_archived: bool,
    workspace_id: i32,
    workspace_name: String,
    workspace_archived: bool,
}

impl SqlStore {
    fn is_sqlite(&self) -> bool {
        matches!(self.pool, Pool::Sqlite(_))
    }

    /// The `WHERE` of a run query (shared by the page and its count).
    fn run_conditions(&self, q: &RunQuery, args: &mut Args) -> String {
        let mut cond = Conditions::default();
        if let Some(project) = q.project_id {
            cond.and(format!("e.project_id = {}", args.push(project)));
        }
        if let Some(ids) = &q.ids {
            cond.and_in(args, "t.id", ids);
        }
        if q.hide_archived {
            cond.and("NOT (t.archived OR e.archived)");
        }
        if let Some(filter) = &q.filter {
            cond.and(filter_sql(filter, self.is_sqlite(), args));
        }
        cond.sql()
    }

    pub(crate) async fn search_runs_impl(&self, q: &RunQuery) -> StoreResult<RunPage> {
        if q.ids.as_ref().is_some_and(Vec::is_empty) {
            return Ok(RunPage::default());
        }
        let mut args = Args::default();
        let where_sql = self.run_conditions(q, &mut args);
        let count_sql = format!("SELECT COUNT(*) {RUN_JOINS} WHERE {where_sql}");
        let count_args = args.clone();
        let order = order_sql(&q.sort, self.is_sqlite(), &mut args);
        let completed = args.push(CHECKPOINT_COMPLETED);
        let limit = args.push(q.limit.unwrap_or(i64::MAX));
        let offset = args.push(q.offset.max(0));
        let trial_columns: Vec<String> = TRIAL_COLUMNS.split(',').map(|c| format!("t.{}", c.trim())).collect();
        let list_sql = format!(
            "SELECT {}, t.archived AS run_archived, \
               (SELECT COUNT(*) FROM checkpoints c WHERE c.trial_id = t.id AND c.state = {completed}) AS checkpoint_count, \
               (SELECT CAST(COALESCE(SUM(c.size), 0) AS BIGINT) FROM checkpoints c WHERE c.trial_id = t.id AND c.state = {completed}) AS checkpoint_size, \
               e.name AS experiment_name, e.description AS experiment_description, e.state AS experiment_state, \
               e.config AS experiment_config, e.progress AS experiment_progress, e.parent_id AS experiment_parent_id, \
               e.unmanaged AS experiment_unmanaged, e.archived AS experiment_archived, e.labels AS experiment_labels, \
               (SELECT COUNT(*) FROM trials t2 WHERE t2.experiment_id = e.id) AS experiment_trials, e.owner_id AS owner_id, \
               p.id AS project_id, p.name AS project_name, p.archived AS project_archived, \
               w.id AS workspace_id, w.name AS workspace_name, w.archived AS workspace_archived \
             {RUN_JOINS} WHERE {where_sql} ORDER BY {order} LIMIT {limit} OFFSET {offset}",
            trial_columns.join(", ")
        );
        let (rows, total) = on_pool!(self, pool => {
            let rows = bind_args!(sqlx::query_as::<_, RunRow>(AssertSqlSafe(list_sql.as_str())), args).fetch_all(pool).await?;
            let total: i64 = bind_args!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())), count_args).fetch_one(pool).await?;
            (rows, total)
        });
        let mut runs = Vec::with_capacity(rows.len());
        for r in rows {
            let labels = serde_json::from_str(&r.experiment_labels).map_err(|e| StoreError::corrupt("labels", e))?;
            runs.push(RunRecord {
                trial: r.trial.into_record(&self.summaries)?,
                archived: r.run_archived,
                checkpoint_count: r.checkpoint_count,
                checkpoint_size: r.checkpoint_size,
                experiment_name: r.experiment_name,
                experiment_description: r.experiment_description,
                experiment_state: r.experiment_state,
                experiment_config: parse_json("config", &r.experiment_config)?,
                experiment_progress: r.experiment_progress,
                experiment_parent_id: r.experiment_parent_id,
                experiment_unmanaged: r.experiment_unmanaged,
                experiment_archived: r.experiment_archived,
                experiment_labels: labels,
                experiment_trials: r.experiment_trials,
                owner_id: r.owner_id,
                project_id: r.project_id,
                project_name: r.project_name,
                project_archived: r.project_archived,
                workspace_id: r.workspace_id,
                workspace_name: r.workspace_name,
                workspace_archived: r.workspace_archived,
            });
        }
        Ok(RunPage { runs, total })
    }

    /// Sets `archived` on these runs; returns the ids changed.
    pub(crate) async fn set_runs_archived_impl(&self, ids: &[i32], archived: bool) -> StoreResult<Vec<i32>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = Args::default();
        let flag = args.push(archived);
        let list = args.push_list(ids.iter().copied());
        let sql = format!("UPDATE trials SET archived = {flag} WHERE id IN ({list}) RETURNING id");
        let mut changed: Vec<i32> = on_pool!(self, pool => {
            bind_args!(sqlx::query_scalar(AssertSqlSafe(sql.as_str())), args).fetch_all(pool).await?
        });
        changed.sort_unstable();
        Ok(changed)
    }

    /// Deletes these runs with their metrics, checkpoint rows, tasks, allocations and logs, in one
    /// transaction; a run holding a registered checkpoint is kept (named in `registered`).
    pub(crate) async fn delete_runs_impl(&self, ids: &[i32]) -> StoreResult<RunDeletion> {
        if ids.is_empty() {
            return Ok(RunDeletion::default());
        }
        let mut args = Args::default();
        let list = args.push_list(ids.iter().copied());
        let registered_sql = format!(
            "SELECT DISTINCT c.trial_id FROM checkpoints c JOIN model_versions mv ON mv.checkpoint_uuid = c.uuid \
             WHERE c.trial_id IN ({list}) ORDER BY c.trial_id"
        );
        let outcome = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let registered: Vec<Option<i32>> =
                bind_args!(sqlx::query_scalar(AssertSqlSafe(registered_sql.as_str())), args).fetch_all(&mut *tx).await?;
            let registered: Vec<i32> = registered.into_iter().flatten().collect();
            let doomed: Vec<i32> = ids.iter().copied().filter(|id| !registered.contains(id)).collect();
            let mut deleted = Vec::new();
            if !doomed.is_empty() {
                let mut a = Args::default();
                let l = a.push_list(doomed.iter().copied());
                let tasks = format!("SELECT task_id FROM trials WHERE id IN ({l})");
                let statements = [
                    format!("DELETE FROM task_logs WHERE task_id IN ({tasks})"),
                    format!("DELETE FROM tasks WHERE task_id IN ({tasks})"),
                ];
                for sql in &statements {
                    bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), a).execute(&mut *tx).await?;
                }
                // Metrics and checkpoint rows follow by ON DELETE CASCADE.
                let sql = format!("DELETE FROM trials WHERE id IN ({l}) RETURNING id");
                deleted = bind_args!(sqlx::query_scalar::<_, i32>(AssertSqlSafe(sql.as_str())), a).fetch_all(&mut *tx).await?;
            }
            tx.commit().await?;
            deleted.sort_unstable();
            RunDeletion { deleted, registered }
        });
        Ok(outcome)
    }
}
