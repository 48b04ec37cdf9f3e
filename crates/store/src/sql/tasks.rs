//! Tasks, their allocations, and allocation sessions (the tokens code inside a task uses; only
//! their SHA-256 hashes are stored, as for user sessions).

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args};
use super::{SqlStore, expect_row, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model_tasks::{
    AllocationPatch, AllocationRecord, AllocationSessionRecord, AuthenticatedAllocation, NewAllocation, NewAllocationSession, NewTask,
    TaskFilter, TaskRecord, TaskWithAllocations,
};

const TASK_COLUMNS: &str = "task_id, task_type, start_time, end_time, job_id, owner_id";
const ALLOCATION_COLUMNS: &str =
    "allocation_id, task_id, state, slots, resource_pool, agent_id, start_time, end_time, exit_reason, exit_code, is_ready";

/// The allocation-token lookup's row: allocation and task columns side by side, renamed where
/// their names collide.
#[derive(sqlx::FromRow)]
struct AuthenticatedRow {
    session_id: i64,
    #[sqlx(flatten)]
    allocation: AllocationRecord,
    task_type: String,
    task_start_time: DateTime<Utc>,
    task_end_time: Option<DateTime<Utc>>,
    job_id: Option<String>,
    owner_id: Option<i32>,
}

impl SqlStore {
    pub(crate) async fn create_task_impl(&self, t: NewTask) -> StoreResult<TaskRecord> {
        let sql = format!(
            "INSERT INTO tasks (task_id, task_type, start_time, job_id, owner_id) VALUES ($1, $2, $3, $4, $5) RETURNING {TASK_COLUMNS}"
        );
        let created = on_pool!(self, pool => {
            sqlx::query_as::<_, TaskRecord>(AssertSqlSafe(sql.as_str()))
                .bind(&t.task_id)
                .bind(&t.task_type)
                .bind(t.start_time)
                .bind(&t.job_id)
                .bind(t.owner_id)
                .fetch_one(pool)
                .await
        });
        created.map_err(|e| StoreError::from_write_ref("task", &t.task_id, "user", t.owner_id.unwrap_or_default(), e))
    }

    pub(crate) async fn task_by_id_impl(&self, task_id: &str) -> StoreResult<TaskWithAllocations> {
        super::findable("task", task_id)?;
        let task_sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = $1");
        let alloc_sql = format!("SELECT {ALLOCATION_COLUMNS} FROM allocations WHERE task_id = $1 ORDER BY start_time, allocation_id");
        let (task, allocations) = on_pool!(self, pool => {
            let task = sqlx::query_as::<_, TaskRecord>(AssertSqlSafe(task_sql.as_str())).bind(task_id).fetch_optional(pool).await?;
            let allocations =
                sqlx::query_as::<_, AllocationRecord>(AssertSqlSafe(alloc_sql.as_str())).bind(task_id).fetch_all(pool).await?;
            (task, allocations)
        });
        let task = task.ok_or_else(|| StoreError::not_found("task", task_id))?;
        Ok(TaskWithAllocations { task, allocations })
    }

    pub(crate) async fn list_tasks_impl(&self, filter: &TaskFilter) -> StoreResult<Vec<TaskWithAllocations>> {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        if let Some(task_type) = &filter.task_type {
            cond.and(format!("t.task_type = {}", args.push(task_type)));
        }
        if filter.open_only {
            cond.and("t.end_time IS NULL");
        }
        let where_sql = cond.sql();
        let task_sql = format!("SELECT {TASK_COLUMNS} FROM tasks t WHERE {where_sql} ORDER BY t.start_time, t.task_id");
        let alloc_sql = format!(
            "SELECT {ALLOCATION_COLUMNS} FROM allocations WHERE task_id IN (SELECT t.task_id FROM tasks t WHERE {where_sql}) \
             ORDER BY start_time, allocation_id"
        );
        let (tasks, allocations) = on_pool!(self, pool => {
            let tasks = bind_args!(sqlx::query_as::<_, TaskRecord>(AssertSqlSafe(task_sql.as_str())), args).fetch_all(pool).await?;
            let allocations =
                bind_args!(sqlx::query_as::<_, AllocationRecord>(AssertSqlSafe(alloc_sql.as_str())), args).fetch_all(pool).await?;
            (tasks, allocations)
        });
        let mut by_task: std::collections::HashMap<String, Vec<AllocationRecord>> = std::collections::HashMap::new();
        for a in allocations {
            by_task.entry(a.task_id.clone()).or_default().push(a);
        }
        Ok(tasks
            .into_iter()
            .map(|task| {
                let allocations = by_task.remove(&task.task_id).unwrap_or_default();
                TaskWithAllocations { task, allocations }
            })
            .collect())
    }

    pub(crate) async fn end_task_impl(&self, task_id: &str, end_time: DateTime<Utc>) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE tasks SET end_time = $2 WHERE task_id = $1").bind(task_id).bind(end_time).execute(pool).await?.rows_affected()
        });
        expect_row(done, "task", task_id)
    }

    pub(crate) async fn create_allocation_impl(&self, a: NewAllocation) -> StoreResult<AllocationRecord> {
        let sql = format!(
            "INSERT INTO allocations (allocation_id, task_id, state, slots, resource_pool, agent_id, start_time) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {ALLOCATION_COLUMNS}"
        );
        let created = on_pool!(self, pool => {
            sqlx::query_as::<_, AllocationRecord>(AssertSqlSafe(sql.as_str()))
                .bind(&a.allocation_id)
                .bind(&a.task_id)
                .bind(&a.state)
                .bind(a.slots)
                .bind(&a.resource_pool)
                .bind(&a.agent_id)
                .bind(a.start_time)
                .fetch_one(pool)
                .await
        });
        created.map_err(|e| StoreError::from_write_ref("allocation", &a.allocation_id, "task", &a.task_id, e))
    }

    pub(crate) async fn allocation_by_id_impl(&self, allocation_id: &str) -> StoreResult<AllocationRecord> {
        super::findable("allocation", allocation_id)?;
        let sql = format!("SELECT {ALLOCATION_COLUMNS} FROM allocations WHERE allocation_id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, AllocationRecord>(AssertSqlSafe(sql.as_str())).bind(allocation_id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("allocation", allocation_id))
    }

    pub(crate) async fn update_allocation_impl(&self, allocation_id: &str, patch: &AllocationPatch) -> StoreResult<AllocationRecord> {
        let sql = format!(
            "UPDATE allocations SET state = COALESCE($2, state), agent_id = COALESCE($3, agent_id), \
             end_time = COALESCE($4, end_time), exit_reason = COALESCE($5, exit_reason), exit_code = COALESCE($6, exit_code), \
             is_ready = COALESCE($7, is_ready) WHERE allocation_id = $1 RETURNING {ALLOCATION_COLUMNS}"
        );
        let updated = on_pool!(self, pool => {
            sqlx::query_as::<_, AllocationRecord>(AssertSqlSafe(sql.as_str()))
                .bind(allocation_id)
                .bind(&patch.state)
                .bind(&patch.agent_id)
                .bind(patch.end_time)
                .bind(&patch.exit_reason)
                .bind(patch.exit_code)
                .bind(patch.is_ready)
                .fetch_optional(pool)
                .await?
        });
        updated.ok_or_else(|| StoreError::not_found("allocation", allocation_id))
    }

    pub(crate) async fn create_allocation_session_impl(&self, s: NewAllocationSession) -> StoreResult<AllocationSessionRecord> {
        const SQL: &str = "INSERT INTO allocation_sessions (allocation_id, token_hash, created_at) VALUES ($1, $2, $3) \
             RETURNING id, allocation_id, token_hash, created_at";
        let created = on_pool!(self, pool => {
            sqlx::query_as::<_, AllocationSessionRecord>(SQL)
                .bind(&s.allocation_id)
                .bind(&s.token_hash)
                .bind(s.created_at)
                .fetch_one(pool)
                .await
        });
        created.map_err(|e| StoreError::from_write_ref("allocation session", &s.allocation_id, "allocation", &s.allocation_id, e))
    }

    pub(crate) async fn allocation_session_by_token_hash_impl(&self, token_hash: &str) -> StoreResult<Option<AuthenticatedAllocation>> {
        // Every call from inside a task runs this: one indexed join, no second round trip.
        const SQL: &str = "SELECT s.id AS session_id, a.allocation_id, a.task_id, a.state, a.slots, a.resource_pool, a.agent_id, \
             a.start_time, a.end_time, a.exit_reason, a.exit_code, a.is_ready, t.task_type, t.start_time AS task_start_time, \
             t.end_time AS task_end_time, t.job_id, t.owner_id \
             FROM allocation_sessions s JOIN allocations a ON a.allocation_id = s.allocation_id JOIN tasks t ON t.task_id = a.task_id \
             WHERE s.token_hash = $1";
        let row = on_pool!(self, pool => {
            sqlx::query_as::<_, AuthenticatedRow>(SQL).bind(token_hash).fetch_optional(pool).await?
        });
        Ok(row.map(|r| AuthenticatedAllocation {
            session_id: r.session_id,
            task: TaskRecord {
                task_id: r.allocation.task_id.clone(),
                task_type: r.task_type,
                start_time: r.task_start_time,
                end_time: r.task_end_time,
                job_id: r.job_id,
                owner_id: r.owner_id,
            },
            allocation: r.allocation,
        }))
    }

    pub(crate) async fn delete_allocation_sessions_impl(&self, allocation_id: &str) -> StoreResult<u64> {
        let done = on_pool!(self, pool => {
            sqlx::query("DELETE FROM allocation_sessions WHERE allocation_id = $1").bind(allocation_id).execute(pool).await?.rows_affected()
        });
        Ok(done)
    }
}
