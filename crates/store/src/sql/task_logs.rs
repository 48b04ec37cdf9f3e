//! Task log lines: batch appends and filtered, cursor-paged reads (a follower polls with the last
//! id it saw).

use sqlx::AssertSqlSafe;

use super::args::{Args, BatchInsert, Conditions, bind_args, direction};
use super::{SqlStore, on_pool};
use crate::error::StoreResult;
use crate::model::OrderDirection;
use crate::model_logs::{LogFilter, LogRecord, NewLogLine};

const LOG_COLUMNS: &str = "id, task_id, allocation_id, agent_id, container_id, rank_id, timestamp, level, log, source, stdtype";

const INSERT_HEAD: &str =
    "INSERT INTO task_logs (task_id, allocation_id, agent_id, container_id, rank_id, timestamp, level, log, source, stdtype)";
const INSERT_COLUMNS: usize = 10;

impl SqlStore {
    pub(crate) async fn insert_logs_impl(&self, lines: &[NewLogLine]) -> StoreResult<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let insert = BatchInsert::for_store(self, INSERT_HEAD, INSERT_COLUMNS);
        let statements: Vec<(String, Args)> = lines
            .chunks(insert.rows_per_statement())
            .map(|chunk| {
                let mut args = Args::default();
                for l in chunk {
                    args.push(&l.task_id);
                    args.push(&l.allocation_id);
                    args.push(&l.agent_id);
                    args.push(&l.container_id);
                    args.push(l.rank_id);
                    args.push(l.timestamp);
                    args.push(&l.level);
                    args.push(&l.log);
                    args.push(&l.source);
                    args.push(&l.stdtype);
                }
                (insert.sql(chunk.len()), args)
            })
            .collect();
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            for (sql, args) in &statements {
                bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), args).execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    pub(crate) async fn task_logs_impl(&self, task_id: &str, filter: &LogFilter) -> StoreResult<Vec<LogRecord>> {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        cond.and(format!("task_id = {}", args.push(task_id)));
        if let Some(after) = filter.after_id {
            let op = match filter.order {
                OrderDirection::Asc => ">",
                OrderDirection::Desc => "<",
            };
            cond.and(format!("id {op} {}", args.push(after)));
        }
        cond.and_in(&mut args, "level", &filter.levels);
        cond.and_in(&mut args, "stdtype", &filter.stdtypes);
        cond.and_in(&mut args, "source", &filter.sources);
        cond.and_in(&mut args, "rank_id", &filter.rank_ids);
        cond.and_in(&mut args, "agent_id", &filter.agent_ids);
        cond.and_in(&mut args, "container_id", &filter.container_ids);
        cond.and_in(&mut args, "allocation_id", &filter.allocation_ids);
        if let Some(before) = filter.timestamp_before {
            cond.and(format!("timestamp < {}", args.push(before)));
        }
        if let Some(after) = filter.timestamp_after {
            cond.and(format!("timestamp > {}", args.push(after)));
        }
        if let Some(text) = filter.search_text.as_deref().filter(|t| !t.is_empty()) {
            // Case-sensitive in both dialects (SQLite's LIKE is not): the line changes when the
            // text is removed from it exactly when it contains the text.
            cond.and(format!("REPLACE(log, {}, '') <> log", args.push(text)));
        }
        let dir = direction(filter.order);
        let limit = args.push(filter.limit.unwrap_or(i64::MAX));
        let sql = format!("SELECT {LOG_COLUMNS} FROM task_logs WHERE {} ORDER BY id {dir} LIMIT {limit}", cond.sql());
        let rows = on_pool!(self, pool => {
            bind_args!(sqlx::query_as::<_, LogRecord>(AssertSqlSafe(sql.as_str())), args).fetch_all(pool).await?
        });
        Ok(rows)
    }
}
