//! Logs written before chunks (one row per line, now `task_logs_legacy`) are converted into
//! chunks when the store opens, in batches that each commit the chunks and delete their rows
//! together; the lines are renumbered per task in their old order.

use chrono::{DateTime, Utc};

use super::task_logs::group_lines;
use super::{SqlStore, on_pool};
use crate::error::StoreResult;
use crate::model_logs::NewLogLine;

/// Legacy rows converted per transaction.
const BATCH_ROWS: i64 = 5000;

#[derive(sqlx::FromRow)]
struct LegacyRow {
    id: i64,
    task_id: String,
    allocation_id: Option<String>,
    agent_id: Option<String>,
    container_id: Option<String>,
    rank_id: Option<i32>,
    timestamp: DateTime<Utc>,
    level: Option<String>,
    log: String,
    source: Option<String>,
    stdtype: Option<String>,
}

impl SqlStore {
    /// Converts every legacy log row; a no-op once the legacy table is empty.
    pub(crate) async fn convert_legacy_logs(&self) -> StoreResult<()> {
        let sql = "SELECT id, task_id, allocation_id, agent_id, container_id, rank_id, timestamp, level, log, source, stdtype \
            FROM task_logs_legacy ORDER BY id LIMIT $1";
        let mut converted = 0usize;
        loop {
            let rows: Vec<LegacyRow> = on_pool!(self, pool => sqlx::query_as(sql).bind(BATCH_ROWS).fetch_all(pool).await?);
            let Some(last_id) = rows.last().map(|r| r.id) else { break };
            converted += rows.len();
            let lines: Vec<NewLogLine> = rows
                .into_iter()
                .map(|r| NewLogLine {
                    task_id: r.task_id,
                    allocation_id: r.allocation_id,
                    agent_id: r.agent_id,
                    container_id: r.container_id,
                    rank_id: r.rank_id,
                    timestamp: r.timestamp,
                    level: r.level,
                    log: r.log,
                    source: r.source,
                    stdtype: r.stdtype,
                })
                .collect();
            let chunks = group_lines(&lines);
            self.append_chunks(&chunks.iter().collect::<Vec<_>>(), Some(last_id)).await?;
        }
        if converted > 0 {
            tracing::info!(lines = converted, "converted task log lines of the previous schema into chunks");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use crate::model_logs::LogFilter;
    use crate::sql::Pool;

    #[tokio::test]
    async fn legacy_rows_become_chunks_in_order() {
        let store = SqlStore::open_sqlite_in_memory().await.unwrap();
        let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
        let at = |s: i64| DateTime::from_timestamp(1_700_000_000 + s, 0).unwrap();
        for (i, (task, agent)) in [("a", "x"), ("b", "x"), ("a", "x"), ("a", "y")].into_iter().enumerate() {
            sqlx::query("INSERT INTO task_logs_legacy (task_id, agent_id, rank_id, timestamp, level, log, stdtype) VALUES ($1, $2, 0, $3, 'LOG_LEVEL_INFO', $4, 'stdout')")
                .bind(task)
                .bind(agent)
                .bind(at(i as i64))
                .bind(format!("line {i}\n"))
                .execute(pool)
                .await
                .unwrap();
        }
        store.convert_legacy_logs().await.unwrap();
        let a = store.task_logs("a", &LogFilter::default()).await.unwrap();
        let summary: Vec<_> = a.iter().map(|r| (r.id, r.log.as_str(), r.agent_id.as_deref(), r.timestamp)).collect();
        assert_eq!(summary, [(1, "line 0\n", Some("x"), at(0)), (2, "line 2\n", Some("x"), at(2)), (3, "line 3\n", Some("y"), at(3))]);
        assert_eq!(store.task_logs("b", &LogFilter::default()).await.unwrap().len(), 1);
        let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM task_logs_legacy").fetch_one(pool).await.unwrap();
        assert_eq!(left, 0);
        // New lines continue the numbering.
        store.insert_logs(&[NewLogLine { log: "new\n".into(), ..legacy_line("a") }]).await.unwrap();
        assert_eq!(store.task_logs("a", &LogFilter::default()).await.unwrap().last().map(|r| r.id), Some(4));
    }

    fn legacy_line(task_id: &str) -> NewLogLine {
        NewLogLine {
            task_id: task_id.into(),
            allocation_id: None,
            agent_id: None,
            container_id: None,
            rank_id: None,
            timestamp: Utc::now(),
            level: None,
            log: String::new(),
            source: None,
            stdtype: None,
        }
    }
}
