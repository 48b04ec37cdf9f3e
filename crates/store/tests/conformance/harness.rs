use std::str::FromStr;
use std::sync::Arc;

use resolute_store::{PostgresOptions, SqlStore, Store};
use sqlx::ConnectOptions;
use sqlx::postgres::PgConnectOptions;

/// Expands one case into a `sqlite` and a `postgres` test in a module named after the case.
macro_rules! conformance {
    ($($path:ident)::+) => {
        $crate::harness::conformance!(@mod [$($path)::+] $($path)::+);
    };
    (@mod [$($path:ident)::+] $first:ident :: $($rest:ident)::+) => {
        $crate::harness::conformance!(@mod [$($path)::+] $($rest)::+);
    };
    (@mod [$($path:ident)::+] $case:ident) => {
        mod $case {
            #[tokio::test]
            async fn sqlite() {
                let store = $crate::harness::sqlite().await;
                $crate::$($path)::+(store.as_ref()).await;
            }
            #[tokio::test]
            async fn postgres() {
                if let Some(store) = $crate::harness::postgres().await {
                    $crate::$($path)::+(store.as_ref()).await;
                }
            }
        }
    };
}
pub(crate) use conformance;

/// A store on a brand-new SQLite file, as the master opens it (the metrics writer thread only
/// runs on files). The files stay under Cargo's test temp directory (`target/tmp`).
pub async fn sqlite() -> Arc<dyn Store> {
    let dir = tempfile::Builder::new().prefix("conformance-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("create a temp dir").keep();
    Arc::new(SqlStore::open_sqlite(&dir.join("store.db")).await.expect("open sqlite"))
}

/// A store on a brand-new PostgreSQL database, or `None` when no server is configured.
pub async fn postgres() -> Option<Arc<dyn Store>> {
    let Ok(url) = std::env::var("RESOLUTE_TEST_POSTGRES_URL") else {
        if std::env::var("RESOLUTE_REQUIRE_POSTGRES").as_deref() == Ok("1") {
            panic!("RESOLUTE_REQUIRE_POSTGRES=1 but RESOLUTE_TEST_POSTGRES_URL is not set");
        }
        eprintln!("skipping: RESOLUTE_TEST_POSTGRES_URL is not set");
        return None;
    };
    let admin = PgConnectOptions::from_str(&url).expect("RESOLUTE_TEST_POSTGRES_URL parses");
    let database = format!("resolute_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = admin.connect().await.expect("connect to the test PostgreSQL server");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {database}"))).execute(&mut conn).await.expect("create test database");
    let opts = PostgresOptions {
        host: admin.get_host().to_owned(),
        port: admin.get_port(),
        user: admin.get_username().to_owned(),
        password: std::env::var("RESOLUTE_TEST_POSTGRES_PASSWORD").unwrap_or_default(),
        database,
        ssl_mode: "disable".to_owned(),
        max_connections: 4,
    };
    Some(Arc::new(SqlStore::open_postgres(&opts).await.expect("open postgres store")))
}
