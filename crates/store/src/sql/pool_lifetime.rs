//! How the store's connection pools give back the connections a burst opened.
//!
//! Why: a pool closes a connection that sat idle for its idle timeout, but sqlx hands idle
//! connections out first in, first out, and an idle master still queries every few seconds
//! (command tasks every 2 s, webhook events every 5 s): each of the eight SQLite connections (or
//! sixteen PostgreSQL ones) a burst opened was used again every 10–20 s, so none ever reached
//! its idle timeout and all stayed open after the load with their statement caches, buffers and
//! (SQLite) their own threads and allocator heaps (bench/README.md, Soak). A connection now
//! lives at most [`PoolLifetime::connection`]: the pool closes it when it is released or found
//! idle past that age, and opens a new one only when a query needs it, so after a load the pools
//! shrink to what the periodic queries use. Under load the cost is reopening each connection
//! once a lifetime (a file open or one PostgreSQL login, and its statements prepared again).
//! Both backends also close a connection idle for [`PoolLifetime::idle`] (PostgreSQL's was sqlx's
//! 10 minutes).

use std::time::Duration;

use super::{Pool, SqlStore};

/// The default lifetime of a pooled connection.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// The default time a pooled connection (beyond the pool's minimum) may sit idle.
pub const IDLE_CONNECTION: Duration = Duration::from_secs(30);

/// Lifetimes of the store's pooled connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolLifetime {
    /// How long a pooled connection is used before the pool closes it.
    pub connection: Duration,
    /// How long a pooled connection may sit idle before the pool closes it.
    pub idle: Duration,
}

impl Default for PoolLifetime {
    fn default() -> Self {
        PoolLifetime { connection: CONNECTION_LIFETIME, idle: IDLE_CONNECTION }
    }
}

impl SqlStore {
    /// Connections the store's pool holds now, in use or idle (the SQLite metrics writer's own
    /// connection not included).
    pub fn pool_connections(&self) -> u32 {
        match &self.pool {
            Pool::Sqlite(pool) => pool.size(),
            Pool::Postgres(pool) => pool.size(),
        }
    }
}
