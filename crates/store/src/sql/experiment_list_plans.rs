//! Checks on SQLite's query plans for a project's experiment list (migrations 0022, 0027): filtered
//! totals and deep pages are answered from indexes, never by reading each experiment's wide row
//! (before, every such request read all of the project's rows: ~20 ms per total at 10,000).

#[cfg(test)]
mod tests {
    use sqlx::AssertSqlSafe;

    use crate::sql::{Pool, SqlStore};

    async fn plan(store: &SqlStore, sql: &str) -> String {
        let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
        let rows: Vec<(i64, i64, i64, String)> =
            sqlx::query_as(AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}"))).fetch_all(pool).await.unwrap();
        rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("\n")
    }

    #[tokio::test]
    async fn project_list_filters_read_indexes_not_rows() {
        let store = SqlStore::open_sqlite_in_memory().await.unwrap();
        // `det project list-experiments`: the caller's unarchived experiments of the project.
        let total =
            plan(&store, "SELECT COUNT(*) FROM experiments e WHERE e.archived = 0 AND e.owner_id IN (1) AND e.project_id = 2").await;
        assert!(total.contains("COVERING INDEX experiments_project_filter"), "{total}");
        // A deep page by id, and its total.
        let deep = plan(
            &store,
            "SELECT e.id FROM experiments e WHERE e.archived = 0 AND e.project_id = 2 ORDER BY e.id ASC LIMIT 200 OFFSET 8000",
        )
        .await;
        assert!(deep.contains("COVERING INDEX experiments_project_archived") && !deep.contains("TEMP B-TREE"), "{deep}");
        let total = plan(&store, "SELECT COUNT(*) FROM experiments e WHERE e.archived = 0 AND e.project_id = 2").await;
        assert!(total.contains("COVERING INDEX"), "{total}");
        // State and name filters.
        let named = plan(
            &store,
            "SELECT COUNT(*) FROM experiments e WHERE e.state IN ('STATE_PAUSED') AND e.name LIKE '%x%' ESCAPE '\\' AND e.project_id = 2",
        )
        .await;
        assert!(named.contains("COVERING INDEX"), "{named}");
        // Their page, newest first (migration 0027): index entries in start-time order, no row reads.
        let page = plan(
            &store,
            "SELECT e.id FROM experiments e WHERE e.state IN ('STATE_PAUSED') AND e.name LIKE '%x%' ESCAPE '\\' AND e.project_id = 2 \
             ORDER BY e.start_time DESC, e.id DESC LIMIT 100",
        )
        .await;
        assert!(page.contains("COVERING INDEX experiments_project_start_time"), "{page}");
    }
}
