use std::path::PathBuf;
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
    Arc::new(Reopenable::sqlite().open().await)
}

/// A store on a brand-new PostgreSQL database, or `None` when no server is configured.
pub async fn postgres() -> Option<Arc<dyn Store>> {
    Some(Arc::new(Reopenable::postgres().await?.open().await))
}

/// A brand-new database that can be opened again, as a restarted master would.
pub enum Reopenable {
    Sqlite(PathBuf),
    Postgres(PostgresOptions),
}

impl Reopenable {
    pub fn sqlite() -> Reopenable {
        let dir =
            tempfile::Builder::new().prefix("conformance-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("create a temp dir").keep();
        Reopenable::Sqlite(dir.join("store.db"))
    }

    /// `None` when no server is configured.
    pub async fn postgres() -> Option<Reopenable> {
        let (admin, database) = crate::pg_databases::create_test_database("resolute_test_").await?;
        Some(Reopenable::Postgres(PostgresOptions {
            host: admin.get_host().to_owned(),
            port: admin.get_port(),
            user: admin.get_username().to_owned(),
            password: std::env::var("RESOLUTE_TEST_POSTGRES_PASSWORD").unwrap_or_default(),
            database,
            ssl_mode: "disable".to_owned(),
            max_connections: 4,
            ..Default::default()
        }))
    }

    /// The trial's `total_batches` as its row holds it (what a store reads before overlaying).
    pub async fn row_total_batches(&self, trial_id: i32) -> i64 {
        const SQL: &str = "SELECT total_batches FROM trials WHERE id = $1";
        match self {
            Reopenable::Sqlite(path) => {
                let mut conn = sqlx::sqlite::SqliteConnectOptions::new().filename(path).connect().await.expect("connect");
                sqlx::query_scalar(SQL).bind(trial_id).fetch_one(&mut conn).await.expect("read the row")
            }
            Reopenable::Postgres(opts) => {
                let options = PgConnectOptions::new()
                    .host(&opts.host)
                    .port(opts.port)
                    .username(&opts.user)
                    .password(&opts.password)
                    .database(&opts.database);
                let mut conn = options.connect().await.expect("connect");
                sqlx::query_scalar(SQL).bind(trial_id).fetch_one(&mut conn).await.expect("read the row")
            }
        }
    }

    pub async fn open(&self) -> SqlStore {
        match self {
            Reopenable::Sqlite(path) => SqlStore::open_sqlite(path).await.expect("open sqlite"),
            Reopenable::Postgres(opts) => SqlStore::open_postgres(opts).await.expect("open postgres store"),
        }
    }
}
