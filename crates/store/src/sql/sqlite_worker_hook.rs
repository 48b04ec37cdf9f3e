//! The store's thread hook (`idle_hook`) on sqlx's SQLite connection threads.
//!
//! Why: sqlx runs each pooled SQLite connection on a thread of its own, where SQLite and sqlx
//! allocate (page caches, statements, every row's values), while the rows are dropped on the
//! async runtime's workers. An allocator's per-thread heap only takes back what other threads
//! freed when its own thread collects it, and these threads are sqlx's: neither the runtime's
//! park hook nor the store's own threads' idle calls reach them. On the soak (bench/README.md)
//! that was the SQLite master's heap growing a few MiB a minute while PostgreSQL's (no such
//! threads) stayed flat. SQLite calls a connection's progress handler on the thread that runs
//! the statement, every [`PROGRESS_OPS`] virtual-machine instructions, so a handler that runs the
//! hook gives each busy connection thread its turn; the hook itself (the master's) collects at
//! most once a second per thread.

use sqlx::sqlite::SqliteConnection;

/// Virtual-machine instructions between two calls of the handler: a few microseconds of work,
/// so any read of more than a handful of rows reaches it, and the call is a thread-local clock
/// check when the hook has collected within its interval.
pub(crate) const PROGRESS_OPS: i32 = 1_000;

/// Installs the handler on a new pooled connection (`SqlitePoolOptions::after_connect`).
pub(crate) async fn install(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    handle.set_progress_handler(PROGRESS_OPS, || {
        crate::idle_hook::thread_idle();
        // Never interrupt the statement.
        true
    });
    Ok(())
}
