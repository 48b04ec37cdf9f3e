//! PostgreSQL test databases, shared by the store's conformance suite and the master's API tests
//! (included into both with `#[path]`).

use std::str::FromStr;

use sqlx::ConnectOptions;
use sqlx::postgres::PgConnectOptions;

/// Creates a fresh database on the server named by `RESOLUTE_TEST_POSTGRES_URL` and returns the
/// server's options with the new database's name. `None` (the test skips) when the variable is
/// unset, unless `RESOLUTE_REQUIRE_POSTGRES=1`, which makes that a failure.
pub async fn create_test_database(prefix: &str) -> Option<(PgConnectOptions, String)> {
    let Ok(url) = std::env::var("RESOLUTE_TEST_POSTGRES_URL") else {
        assert_ne!(
            std::env::var("RESOLUTE_REQUIRE_POSTGRES").as_deref(),
            Ok("1"),
            "RESOLUTE_REQUIRE_POSTGRES=1 but RESOLUTE_TEST_POSTGRES_URL is not set"
        );
        eprintln!("skipping: RESOLUTE_TEST_POSTGRES_URL is not set");
        return None;
    };
    let admin = PgConnectOptions::from_str(&url).expect("RESOLUTE_TEST_POSTGRES_URL parses");
    let mut conn = admin.connect().await.expect("connect to the test PostgreSQL server");
    let database = fresh_database_name(&mut conn, prefix).await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {database}"))).execute(&mut conn).await.expect("create test database");
    Some((admin, database))
}

/// Test databases outlive their tests (a test can't drop what its store still holds open), so
/// each new one is named with its creation time and drops those of its prefix over an hour old.
pub async fn fresh_database_name(conn: &mut sqlx::PgConnection, prefix: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let names: Vec<String> = sqlx::query_scalar("SELECT datname FROM pg_database WHERE starts_with(datname, $1)")
        .bind(prefix)
        .fetch_all(&mut *conn)
        .await
        .unwrap_or_default();
    for name in names {
        let created = name.strip_prefix(prefix).and_then(|rest| rest.split('_').next()).and_then(|t| t.parse::<u64>().ok());
        if created.is_some_and(|t| now.saturating_sub(t) > 3600) {
            // Another test run may be dropping it too.
            let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).execute(&mut *conn).await;
        }
    }
    format!("{prefix}{now}_{}", uuid::Uuid::new_v4().simple())
}
