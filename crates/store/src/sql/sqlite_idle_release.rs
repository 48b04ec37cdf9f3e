//! What a long-lived SQLite connection gives back once its thread has not used it for a while:
//! its page cache and its cached prepared statements (the metrics writer's connection, which
//! lives as long as the store).
//!
//! Why: under a load both are rebuilt over and over — the page cache is dropped whenever another
//! connection commits (WAL mode) and refilled page by page, and the statement cache evicts and
//! re-prepares the batch paths' statements, whose texts vary with the batch — so the ~5 KiB page
//! buffers and the statements' programs (tens of KiB for a many-row statement) that are alive
//! when the load stops were allocated at scattered moments, each on an allocator page shared
//! with thousands of short-lived blocks. Each kept its whole page (64 KiB, 512 KiB for a medium
//! block) resident after the load: a master whose live heap was 5 MiB kept tens of MiB after a
//! 10-minute soak (bench/README.md, "Soak: what the SQLite master kept after the load").
//! Freed, those pages empty out and the thread's idle hook returns them.
//!
//! The cost: after an idle spell the connection re-reads the pages and re-prepares the
//! statements its next transaction needs (well under a millisecond), at most once per
//! [`RELEASE_AFTER`].

use std::time::{Duration, Instant};

use rusqlite::Connection;

/// How long a connection stays unused before its caches are given back.
pub(crate) const RELEASE_AFTER: Duration = Duration::from_secs(5);

/// When the connection was last used, and so when its caches are due to be given back.
pub(crate) struct IdleRelease {
    after: Duration,
    /// `None`: given back since it was last used (nothing to give).
    used_at: Option<Instant>,
}

impl IdleRelease {
    pub(crate) fn new(after: Duration) -> IdleRelease {
        IdleRelease { after, used_at: None }
    }

    /// The connection ran statements just now.
    pub(crate) fn used(&mut self) {
        self.used_at = Some(Instant::now());
    }

    /// How long the thread may wait for work before the release is due; `None` when there is
    /// nothing to release (wait as long as it takes).
    pub(crate) fn wait_limit(&self, now: Instant) -> Option<Duration> {
        self.used_at.map(|at| (at + self.after).saturating_duration_since(now))
    }

    /// The caches were given back.
    pub(crate) fn released(&mut self) {
        self.used_at = None;
    }
}

/// Frees `conn`'s cached statements and every page of its cache that no statement holds.
pub(crate) fn release(conn: &Connection) {
    conn.flush_prepared_statement_cache();
    if let Err(e) = conn.release_memory() {
        tracing::debug!(error = %e, "SQLite did not release the connection's cache");
    }
}

#[cfg(test)]
mod tests {
    use std::os::raw::c_int;

    use rusqlite::ffi;

    use super::*;

    /// SQLite's own count of what the connection holds (`sqlite3_db_status`).
    fn db_status(conn: &Connection, op: c_int) -> i64 {
        let (mut current, mut high) = (0, 0);
        // SAFETY: the handle is the live connection's; the outputs are plain ints.
        let rc = unsafe { ffi::sqlite3_db_status(conn.handle(), op, &mut current, &mut high, 0) };
        assert_eq!(rc, ffi::SQLITE_OK);
        i64::from(current)
    }

    #[test]
    fn release_gives_back_the_page_cache_and_the_cached_statements() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("db.sqlite")).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT);").unwrap();
        {
            let mut insert = conn.prepare_cached("INSERT INTO t (body) VALUES (?1)").unwrap();
            for i in 0..2_000 {
                insert.execute([format!("{i:0>400}")]).unwrap();
            }
        }
        // Statements whose texts vary, as the batch paths' do.
        for n in 1..20 {
            let sql = format!("SELECT count(*) FROM t WHERE id IN ({})", vec!["?"; n].join(","));
            let mut select = conn.prepare_cached(&sql).unwrap();
            select.query_row(rusqlite::params_from_iter(0..n as i64), |r| r.get::<_, i64>(0)).unwrap();
        }
        let (cache, statements) = (db_status(&conn, ffi::SQLITE_DBSTATUS_CACHE_USED), db_status(&conn, ffi::SQLITE_DBSTATUS_STMT_USED));
        assert!(cache > 256 * 1024, "the writes filled the page cache: {cache} bytes");
        assert!(statements > 20 * 1024, "20 statements are cached: {statements} bytes");

        release(&conn);

        let (cache_after, statements_after) =
            (db_status(&conn, ffi::SQLITE_DBSTATUS_CACHE_USED), db_status(&conn, ffi::SQLITE_DBSTATUS_STMT_USED));
        assert!(cache_after < cache / 10, "page cache {cache} -> {cache_after} bytes");
        assert_eq!(statements_after, 0, "no statement stays prepared (was {statements} bytes)");
        // The connection works as before.
        let rows: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 2_000);
    }

    #[test]
    fn the_release_is_due_once_per_spell_of_use() {
        let mut idle = IdleRelease::new(Duration::from_secs(5));
        let now = Instant::now();
        assert_eq!(idle.wait_limit(now), None, "nothing used, nothing to release");
        idle.used();
        let limit = idle.wait_limit(Instant::now()).expect("due after use");
        assert!(limit <= Duration::from_secs(5) && limit > Duration::from_secs(4), "{limit:?}");
        assert_eq!(idle.wait_limit(Instant::now() + Duration::from_secs(6)), Some(Duration::ZERO));
        idle.released();
        assert_eq!(idle.wait_limit(Instant::now()), None, "released until used again");
    }
}
