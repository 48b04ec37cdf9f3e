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
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(Duration::from_secs(1))?;
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(EVERY) {
                    // Busy (another checkpoint running) and I/O errors are retried next time.
                    let frames = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)));
                    match frames {
                        // Readers that never all pause (a busy master) keep the WAL from starting
                        // over after PASSIVE checkpoints, and it grows without bound (2.5 GB in
                        // 7 minutes of the soak): once it is long and fully copied back, truncate
                        // it. That waits (busy timeout) for the readers of the old frames only;
                        // writers wait for it briefly.
                        Ok((log, copied)) if log > TRUNCATE_FRAMES && copied == log => {
                            if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())) {
                                tracing::debug!(error = %e, "WAL truncation did not run");
                            }
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!(error = %e, "WAL checkpoint did not run"),
                    }
                }
            })
            .map_err(|e| StoreError::Io { context: "starting the SQLite checkpoint thread", source: e })?;
        Ok(Checkpointer { _stop: stop })
    }
}
