//! Copies SQLite's WAL back into the database file from a thread of its own, so the metrics
//! writer does not: a checkpoint ends with an fsync of the database file, and while the writer
//! thread waited on it every running trial's reports waited too (the ~50 ms p99 of ingestion).
//!
//! PASSIVE checkpoints run beside readers and writers without blocking them; the writer
//! connection keeps a (large) automatic checkpoint only as a bound on the WAL should this
//! thread fall behind.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::{StoreError, StoreResult};

/// How often the WAL is copied back.
const EVERY: Duration = Duration::from_millis(250);

/// A WAL longer than this many frames (64 MiB of 4 KiB pages), once copied back, is truncated.
const TRUNCATE_FRAMES: i64 = 16_384;

/// The thread stops when this is dropped.
pub(crate) struct Checkpointer {
    _stop: mpsc::Sender<()>,
}

impl Checkpointer {
    pub(crate) fn start(path: &Path) -> StoreResult<Checkpointer> {
        Checkpointer::start_with(path, EVERY, TRUNCATE_FRAMES)
    }

    /// `every`: between checkpoints; `truncate_frames`: the WAL length that is cut back.
    fn start_with(path: &Path, every: Duration, truncate_frames: i64) -> StoreResult<Checkpointer> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(Duration::from_secs(1))?;
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    // Busy (another checkpoint running) and I/O errors are retried next time.
                    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1)) {
                        // Readers that never all pause (a busy master) keep the WAL from starting
                        // over after PASSIVE checkpoints, and it grows without bound (2.5 GB in
                        // 7 minutes of the soak). A PASSIVE checkpoint copies only the frames
                        // every reader's snapshot includes, so under a steady writer it never
                        // copies them all (3 GB in 5 minutes while truncation waited for that):
                        // once the WAL is long, truncate it. That waits (busy timeout) for the
                        // writer and for the readers of old frames; writers wait for it briefly.
                        Ok(log) if log > truncate_frames => {
                            if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())) {
                                tracing::debug!(error = %e, "WAL truncation did not run");
                            }
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!(error = %e, "WAL checkpoint did not run"),
                    }
                    crate::idle_hook::thread_idle();
                }
            })
            .map_err(|e| StoreError::Io { context: "starting the SQLite checkpoint thread", source: e })?;
        Ok(Checkpointer { _stop: stop })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    fn open(path: &Path) -> Connection {
        let conn = Connection::open(path).expect("open");
        conn.busy_timeout(Duration::from_secs(10)).expect("busy timeout");
        conn
    }

    /// The soak's pattern: a steady writer and readers of which one always holds an older
    /// snapshot, so no PASSIVE checkpoint copies the whole WAL. It must stay short anyway.
    #[test]
    fn the_wal_stays_short_under_a_steady_writer_and_overlapping_readers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("wal.db");
        let writer = open(&path);
        writer.pragma_update(None, "journal_mode", "WAL").expect("WAL");
        // Only the checkpoint thread copies frames back, as in the master (large autocheckpoint).
        writer.pragma_update(None, "wal_autocheckpoint", 0).expect("autocheckpoint");
        writer.pragma_update(None, "journal_size_limit", 1024 * 1024).expect("size limit");
        writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)", []).expect("create");
        // 256 frames: 1 MiB of 4 KiB pages.
        let _checkpointer = Checkpointer::start_with(&path, Duration::from_millis(5), 256).expect("checkpointer");

        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..4u64)
            .map(|i| {
                let (path, stop) = (path.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut conn = open(&path);
                    // Staggered, so a snapshot is always open while the writer commits.
                    std::thread::sleep(Duration::from_millis(5 * i));
                    while !stop.load(Ordering::Relaxed) {
                        let tx = conn.transaction().expect("read transaction");
                        let _: i64 = tx.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).expect("count");
                        std::thread::sleep(Duration::from_millis(20));
                        tx.commit().expect("end of read");
                    }
                })
            })
            .collect();

        // 32 MiB in 2,048 commits of 16 KiB.
        let body = vec![7u8; 16 * 1024];
        let wal = path.with_file_name("wal.db-wal");
        for _ in 0..2048 {
            writer.execute("INSERT INTO t (body) VALUES (?1)", [&body]).expect("insert");
            // Paced, as trials report: the writer lock is free between commits.
            std::thread::sleep(Duration::from_micros(200));
        }
        let wal_bytes = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().expect("reader");
        }
        assert!(wal_bytes < 8 * 1024 * 1024, "32 MiB written; the WAL should have been cut back to about 1 MiB, but is {wal_bytes} bytes");
    }
}
