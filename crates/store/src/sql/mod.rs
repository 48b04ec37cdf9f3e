//! [`SqlStore`]: the [`Store`](crate::Store) implementation for SQLite and PostgreSQL.
//!
//! Queries are written once, in SQL both dialects accept (`$1` placeholders, `RETURNING`,
//! `ON CONFLICT`), and run against whichever pool the store holds via [`on_pool!`]. Only the
//! schema differs per dialect (`migrations/sqlite`, `migrations/postgres`).

mod agent_controls;
mod allocation_usage;
mod best_validations;
pub use best_validations::BestTrialValue;
pub(crate) mod args;
mod checkpoint_edits;
mod checkpoint_metric;
mod checkpoints;
mod cluster;
mod cluster_messages;
mod commands;
mod config_summary_backfill;
mod experiment_continue;
mod experiment_list_plans;
mod experiments;
mod job_queue_positions;
mod lifecycle;
mod log_group_commit;
mod metric_batch;
mod metric_repeats;
mod metric_series;
mod metrics;
mod model_versions;
mod models;
mod pool_lifetime;
mod series_body;
pub use pool_lifetime::PoolLifetime;
mod project_notes;
mod projects;
mod run_filter;
mod runs;
mod sessions;
mod sqlite_checkpoint;
mod sqlite_idle_release;
mod sqlite_metrics;
mod sqlite_series;
mod sqlite_worker_hook;
mod state_counts;
mod store_impl;
mod summary_cache;
mod task_logs;
mod task_logs_legacy;
mod task_user_groups;
mod tasks;
mod templates;
mod trial_start;
mod trial_warm_start;
mod unmanaged;
pub use unmanaged::UnmanagedStart;
mod trials;
mod users;
mod webhook_custom_events;
mod webhook_events;
mod webhooks;
mod workloads;
mod workspace_deletion;
mod workspace_writes;
mod workspaces;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgSslMode};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

use crate::error::{StoreError, StoreResult};

/// Prepared statements kept per connection: room for the batch paths' statements, whose texts
/// vary with the batch size (bucketed), beside every fixed query.
const STATEMENT_CACHE: usize = 400;

/// SQLite's page cache per pooled connection (`PRAGMA cache_size`, negative: KiB).
const SQLITE_CACHE_KIB: &str = "-2048";

/// Parses a JSON column; a document that does not parse is a backend fault.
pub(crate) fn parse_json(column: &'static str, text: &str) -> StoreResult<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| StoreError::corrupt(column, e))
}

/// `NotFound` unless an `UPDATE`/`DELETE` by primary key touched its row.
pub(crate) fn expect_row(rows_affected: u64, entity: &'static str, key: impl ToString) -> StoreResult<()> {
    if rows_affected == 0 { Err(StoreError::not_found(entity, key)) } else { Ok(()) }
}

/// `NotFound` for a key holding a NUL character: no such row can exist (writes refuse NUL, see
/// [`StoreError::reject_nul`]), and PostgreSQL would refuse the parameter with a driver error.
pub(crate) fn findable(entity: &'static str, key: &str) -> StoreResult<()> {
    if key.contains('\0') { Err(StoreError::not_found(entity, key.escape_default())) } else { Ok(()) }
}

/// Runs `$body` with `$pool` bound to the concrete pool, so one query text serves both backends.
macro_rules! on_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.pool {
            $crate::sql::Pool::Sqlite($pool) => $body,
            $crate::sql::Pool::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_pool;

/// Begins a transaction on `pool` (inside `on_pool!`). On SQLite it is `BEGIN IMMEDIATE`: a
/// deferred transaction that read first fails at once with "database is locked" when another
/// connection (the metrics writer, a login) wrote in between, where an immediate one waits its
/// turn under the busy timeout (STYLE.md §7). Every store transaction writes, so all use this.
macro_rules! begin_write {
    ($store:expr, $pool:ident) => {
        if matches!($store.pool, $crate::sql::Pool::Sqlite(_)) { $pool.begin_with("BEGIN IMMEDIATE").await? } else { $pool.begin().await? }
    };
}
pub(crate) use begin_write;

pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// A store over SQLite or PostgreSQL. Cheap to share behind an `Arc`.
pub struct SqlStore {
    pub(crate) pool: Pool,
    pub(crate) log_group: log_group_commit::LogGroupCommit,
    /// The metric writers' totals per trial; readers overlay them (see `summary_cache`).
    pub(crate) summaries: Arc<summary_cache::SummaryCache>,
    /// SQLite files only: the metric admission path's own connection and thread.
    pub(crate) sqlite_metrics: Option<sqlite_metrics::SqliteMetricsWriter>,
    /// On a SQLite file: series read on their own connection (`sqlite_series`).
    pub(crate) sqlite_series: Option<sqlite_series::SqliteSeriesReader>,
    /// Metric rows decoded by reads (see `Store::metric_rows_decoded`).
    pub(crate) decoded_metric_rows: Arc<std::sync::atomic::AtomicU64>,
    /// Woken when a write queued webhook events (see `webhook_events`).
    pub(crate) webhook_signal: Arc<tokio::sync::Notify>,
    /// Recently read metric series and the write generations that validate them.
    pub(crate) series: Arc<metric_series::SeriesCache>,
}

/// Connection settings for PostgreSQL, named as in upstream's `db` block of master.yaml.
#[derive(Clone, Debug, Default)]
pub struct PostgresOptions {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub database: String,
    /// `disable`, `allow`, `prefer`, `require`, `verify-ca` or `verify-full`.
    pub ssl_mode: String,
    pub max_connections: u32,
    /// How long a pooled connection lives (see [`PoolLifetime`]).
    pub lifetime: PoolLifetime,
}

impl SqlStore {
    /// Opens (creating if needed) the SQLite database at `path` and applies pending migrations.
    pub async fn open_sqlite(path: &Path) -> StoreResult<SqlStore> {
        Self::open_sqlite_with(path, PoolLifetime::default()).await
    }

    /// [`SqlStore::open_sqlite`] with pooled connections that live `lifetime`.
    pub async fn open_sqlite_with(path: &Path, lifetime: PoolLifetime) -> StoreResult<SqlStore> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            .statement_cache_capacity(STATEMENT_CACHE)
            // No memory map, and a small page cache per connection: the master's memory must not
            // grow with the database. A mapped page counts in the master's RSS once per
            // connection that touched it (up to 8 x 256 MiB), and 16 MiB caches on 8 connections
            // were 128 MiB of heap that stayed after a load (see bench/README.md, Soak); the
            // kernel's page cache still holds the file.
            .pragma("mmap_size", "0")
            .pragma("cache_size", SQLITE_CACHE_KIB);
        // No ping before handing out a connection: a local file does not drop connections, and the
        // ping is a round trip to the connection's thread on every query.
        // Connections opened for a burst are closed once idle or past their lifetime, with their
        // caches and threads (`pool_lifetime`).
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .min_connections(1)
            .idle_timeout(lifetime.idle)
            .max_lifetime(lifetime.connection)
            .test_before_acquire(false)
            // sqlx's connection threads run the store's thread hook too (`sqlite_worker_hook`).
            .after_connect(|conn, _| Box::pin(sqlite_worker_hook::install(conn)))
            .connect_with(options)
            .await?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await.map_err(StoreError::Migration)?;
        let mut store = SqlStore {
            pool: Pool::Sqlite(pool),
            log_group: Default::default(),
            summaries: Default::default(),
            sqlite_metrics: None,
            sqlite_series: None,
            decoded_metric_rows: Default::default(),
            webhook_signal: Default::default(),
            series: Default::default(),
        };
        store.convert_legacy_logs().await?;
        store.repair_pending_summaries().await?;
        store.backfill_config_summaries().await?;
        store.sqlite_metrics = Some(sqlite_metrics::SqliteMetricsWriter::start(path)?);
        store.sqlite_series = Some(sqlite_series::SqliteSeriesReader::new(path));
        Ok(store)
    }

    /// A private in-memory SQLite database, for tests.
    pub async fn open_sqlite_in_memory() -> StoreResult<SqlStore> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        // One connection: every in-memory connection would otherwise be its own database.
        let pool = SqlitePoolOptions::new().max_connections(1).idle_timeout(None).max_lifetime(None).connect_with(options).await?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await.map_err(StoreError::Migration)?;
        Ok(SqlStore {
            pool: Pool::Sqlite(pool),
            log_group: Default::default(),
            summaries: Default::default(),
            sqlite_metrics: None,
            sqlite_series: None,
            decoded_metric_rows: Default::default(),
            webhook_signal: Default::default(),
            series: Default::default(),
        })
    }

    /// Connects to PostgreSQL and applies pending migrations.
    pub async fn open_postgres(opts: &PostgresOptions) -> StoreResult<SqlStore> {
        let ssl_mode = if opts.ssl_mode.is_empty() { PgSslMode::Disable } else { PgSslMode::from_str(&opts.ssl_mode)? };
        let mut connect =
            PgConnectOptions::new().host(&opts.host).port(opts.port).username(&opts.user).database(&opts.database).ssl_mode(ssl_mode);
        connect = connect.statement_cache_capacity(STATEMENT_CACHE);
        if !opts.password.is_empty() {
            connect = connect.password(&opts.password);
        }
        let pool = PgPoolOptions::new()
            .max_connections(opts.max_connections.max(1))
            .idle_timeout(opts.lifetime.idle)
            .max_lifetime(opts.lifetime.connection)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(connect)
            .await?;
        sqlx::migrate!("migrations/postgres").run(&pool).await.map_err(StoreError::Migration)?;
        let store = SqlStore {
            pool: Pool::Postgres(pool),
            log_group: Default::default(),
            summaries: Default::default(),
            sqlite_metrics: None,
            sqlite_series: None,
            decoded_metric_rows: Default::default(),
            webhook_signal: Default::default(),
            series: Default::default(),
        };
        store.convert_legacy_logs().await?;
        store.repair_pending_summaries().await?;
        store.backfill_config_summaries().await?;
        Ok(store)
    }

    /// Closes the pool, waiting for in-flight queries (flushes SQLite's WAL on the way).
    pub async fn close(&self) {
        on_pool!(self, pool => pool.close().await)
    }
}
