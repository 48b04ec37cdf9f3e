//! Command tasks (commands, notebooks, shells, TensorBoards, generic tasks): a `tasks` row and a
//! `command_tasks` row, written together and read joined. The context archive is read only on
//! request, never by lists.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args};
use super::{SqlStore, expect_row, findable, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model_commands::{CommandTaskFilter, CommandTaskRecord, NewCommandTask};

/// Every column of a command task but its context. The owner is a left join: `tasks.owner_id`
/// is set to NULL if the user row ever goes, and the task must still be listed.
const COMMAND_SELECT: &str = "SELECT t.task_id, t.task_type, COALESCE(t.job_id, '') AS job_id, COALESCE(t.owner_id, 0) AS owner_id, \
     COALESCE(u.username, '') AS owner_username, c.workspace_id, c.description, c.config, c.extra, t.start_time, t.end_time, \
     c.exit_status, c.priority \
     FROM command_tasks c JOIN tasks t ON t.task_id = c.task_id LEFT JOIN users u ON u.id = t.owner_id";

const INSERT_TASK: &str = "INSERT INTO tasks (task_id, task_type, start_time, job_id, owner_id) VALUES ($1, $2, $3, $4, $5)";

const INSERT_COMMAND: &str = "INSERT INTO command_tasks (task_id, workspace_id, description, config, context, extra) \
     VALUES ($1, $2, $3, $4, $5, $6)";

#[derive(sqlx::FromRow)]
struct CommandRow {
    task_id: String,
    task_type: String,
    job_id: String,
    owner_id: i32,
    owner_username: String,
    workspace_id: i32,
    description: String,
    config: String,
    extra: String,
    start_time: DateTime<Utc>,
    end_time: Option<DateTime<Utc>>,
    exit_status: Option<String>,
    priority: Option<i32>,
}

impl CommandRow {
    fn into_record(self) -> StoreResult<CommandTaskRecord> {
        Ok(CommandTaskRecord {
            task_id: self.task_id,
            task_type: self.task_type,
            job_id: self.job_id,
            owner_id: self.owner_id,
            owner_username: self.owner_username,
            workspace_id: self.workspace_id,
            description: self.description,
            config: parse_json("config", &self.config)?,
            extra: parse_json("extra", &self.extra)?,
            start_time: self.start_time,
            end_time: self.end_time,
            exit_status: self.exit_status,
            priority: self.priority,
        })
    }
}

/// Which insert of a create failed, so the error can name the missing row.
enum CreateFailure {
    Task(sqlx::Error),
    Command(sqlx::Error),
}

impl SqlStore {
    pub(crate) async fn create_command_task_impl(&self, t: NewCommandTask) -> StoreResult<CommandTaskRecord> {
        for (field, value) in [("task id", &t.task_id), ("task type", &t.task_type), ("job id", &t.job_id), ("description", &t.description)]
        {
            StoreError::reject_nul(field, value)?;
        }
        let by_id = format!("{COMMAND_SELECT} WHERE c.task_id = $1");
        // JSON text escapes a NUL inside a string (`\u0000`), so documents need no check.
        let (config, extra) = (t.config.to_string(), t.extra.to_string());
        let outcome: Result<CommandRow, CreateFailure> = on_pool!(self, pool => {
            // Dropping the transaction on a failure rolls back: neither row stays.
            let mut tx = super::begin_write!(self, pool);
            let task = sqlx::query(INSERT_TASK)
                .bind(&t.task_id)
                .bind(&t.task_type)
                .bind(t.start_time)
                .bind(&t.job_id)
                .bind(t.owner_id)
                .execute(&mut *tx)
                .await;
            let inserted = match task {
                Err(err) => Err(CreateFailure::Task(err)),
                Ok(_) => sqlx::query(INSERT_COMMAND)
                    .bind(&t.task_id)
                    .bind(t.workspace_id)
                    .bind(&t.description)
                    .bind(&config)
                    .bind(&t.context)
                    .bind(&extra)
                    .execute(&mut *tx)
                    .await
                    .map_err(CreateFailure::Command),
            };
            match inserted {
                Err(failure) => Err(failure),
                Ok(_) => {
                    let row =
                        sqlx::query_as::<_, CommandRow>(AssertSqlSafe(by_id.as_str())).bind(&t.task_id).fetch_one(&mut *tx).await?;
                    tx.commit().await?;
                    Ok(row)
                }
            }
        });
        match outcome {
            Ok(row) => row.into_record(),
            Err(CreateFailure::Task(err)) => Err(StoreError::from_write_ref("task", &t.task_id, "user", t.owner_id, err)),
            Err(CreateFailure::Command(err)) => Err(StoreError::from_write_ref("task", &t.task_id, "workspace", t.workspace_id, err)),
        }
    }

    pub(crate) async fn command_task_by_id_impl(&self, task_id: &str) -> StoreResult<CommandTaskRecord> {
        findable("task", task_id)?;
        let sql = format!("{COMMAND_SELECT} WHERE c.task_id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, CommandRow>(AssertSqlSafe(sql.as_str())).bind(task_id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("task", task_id))?.into_record()
    }

    pub(crate) async fn command_task_context_impl(&self, task_id: &str) -> StoreResult<Vec<u8>> {
        findable("task", task_id)?;
        let found = on_pool!(self, pool => {
            sqlx::query_scalar::<_, Vec<u8>>("SELECT context FROM command_tasks WHERE task_id = $1")
                .bind(task_id)
                .fetch_optional(pool)
                .await?
        });
        found.ok_or_else(|| StoreError::not_found("task", task_id))
    }

    pub(crate) async fn list_command_tasks_impl(&self, filter: &CommandTaskFilter) -> StoreResult<Vec<CommandTaskRecord>> {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        // A type with a NUL matches no stored task; binding it would fail on PostgreSQL.
        let task_types: Vec<&str> = filter.task_types.iter().map(String::as_str).filter(|t| !t.contains('\0')).collect();
        if !filter.task_types.is_empty() && task_types.is_empty() {
            return Ok(Vec::new());
        }
        cond.and_in(&mut args, "t.task_type", &task_types);
        cond.and_in(&mut args, "t.owner_id", &filter.owner_ids);
        if let Some(workspace_id) = filter.workspace_id {
            cond.and(format!("c.workspace_id = {}", args.push(workspace_id)));
        }
        if filter.open_only {
            cond.and("t.end_time IS NULL");
        }
        let sql = format!("{COMMAND_SELECT} WHERE {} ORDER BY t.start_time, t.task_id", cond.sql());
        let rows = on_pool!(self, pool => {
            bind_args!(sqlx::query_as::<_, CommandRow>(AssertSqlSafe(sql.as_str())), args).fetch_all(pool).await?
        });
        rows.into_iter().map(CommandRow::into_record).collect()
    }

    pub(crate) async fn end_command_task_impl(&self, task_id: &str, exit_status: &str, end_time: DateTime<Utc>) -> StoreResult<()> {
        StoreError::reject_nul("exit status", exit_status)?;
        findable("task", task_id)?;
        let done = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let done = sqlx::query("UPDATE command_tasks SET exit_status = $2 WHERE task_id = $1")
                .bind(task_id)
                .bind(exit_status)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            // Not a command task (unknown, or a trial's): the transaction rolls back untouched.
            if done > 0 {
                sqlx::query("UPDATE tasks SET end_time = $2 WHERE task_id = $1").bind(task_id).bind(end_time).execute(&mut *tx).await?;
                tx.commit().await?;
            }
            done
        });
        expect_row(done, "task", task_id)
    }

    pub(crate) async fn set_command_task_extra_impl(&self, task_id: &str, extra: &Value) -> StoreResult<()> {
        findable("task", task_id)?;
        let text = extra.to_string();
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE command_tasks SET extra = $2 WHERE task_id = $1").bind(task_id).bind(&text).execute(pool).await?.rows_affected()
        });
        expect_row(done, "task", task_id)
    }

    pub(crate) async fn set_command_task_priority_impl(&self, task_id: &str, priority: i32) -> StoreResult<()> {
        findable("task", task_id)?;
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE command_tasks SET priority = $2 WHERE task_id = $1")
                .bind(task_id)
                .bind(priority)
                .execute(pool)
                .await?
                .rows_affected()
        });
        expect_row(done, "task", task_id)
    }
}
