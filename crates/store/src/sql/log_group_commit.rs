//! Group commit for log appends: callers that append while another append is being written wait,
//! and the next writer stores all of their chunks in one transaction. Concurrent shippers (several
//! ranks posting logs, several agents) then cost one commit per round instead of one each, and
//! SQLite writers never contend for its single write lock.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use super::{Pool, SqlStore};
use crate::error::{StoreError, StoreResult};
use crate::log_chunk::NewLogChunk;

/// Appends waiting for the next writer, and the right to be that writer.
#[derive(Default)]
pub(crate) struct LogGroupCommit {
    waiting: Mutex<Vec<Waiting>>,
    writer: Arc<tokio::sync::Mutex<()>>,
}

struct Waiting {
    chunks: Vec<NewLogChunk>,
    done: oneshot::Sender<StoreResult<()>>,
}

impl SqlStore {
    pub(crate) async fn insert_log_chunks_impl(&self, chunks: Vec<NewLogChunk>) -> StoreResult<()> {
        if chunks.iter().all(NewLogChunk::is_empty) {
            return Ok(());
        }
        let group = &self.log_group;
        let (done, mut result) = oneshot::channel();
        group.waiting.lock().unwrap_or_else(PoisonError::into_inner).push(Waiting { chunks, done });
        let writing = group.writer.clone().lock_owned().await;
        match result.try_recv() {
            Ok(r) => return r, // the previous writer took these chunks along
            Err(oneshot::error::TryRecvError::Closed) => return Err(interrupted()),
            Err(oneshot::error::TryRecvError::Empty) => {}
        }
        let round = std::mem::take(&mut *group.waiting.lock().unwrap_or_else(PoisonError::into_inner));
        // Written by a task of its own, so a caller that goes away mid-write (a client
        // disconnecting) cannot abort the others' appends.
        let writer = SqlStore {
            pool: self.pool.handle(),
            log_group: LogGroupCommit::default(),
            summaries: Default::default(),
            sqlite_metrics: None,
            sqlite_series: None,
            decoded_metric_rows: Default::default(),
            webhook_signal: self.webhook_signal.clone(),
            series: self.series.clone(),
        };
        tokio::spawn(async move {
            writer.write_round(round).await;
            drop(writing);
        });
        result.await.unwrap_or_else(|_| Err(interrupted()))
    }

    /// One transaction for the whole round; if it fails, each append is retried alone so that it
    /// gets its own outcome (one bad append does not fail the others).
    async fn write_round(&self, round: Vec<Waiting>) {
        if round.len() > 1 {
            let all: Vec<&NewLogChunk> = round.iter().flat_map(|w| &w.chunks).collect();
            if self.append_chunks(&all, None).await.is_ok() {
                for w in round {
                    let _ = w.done.send(Ok(()));
                }
                return;
            }
        }
        for w in round {
            let chunks: Vec<&NewLogChunk> = w.chunks.iter().collect();
            let _ = w.done.send(self.append_chunks(&chunks, None).await);
        }
    }
}

impl Pool {
    /// Another handle on the same connections.
    pub(crate) fn handle(&self) -> Pool {
        match self {
            Pool::Sqlite(p) => Pool::Sqlite(p.clone()),
            Pool::Postgres(p) => Pool::Postgres(p.clone()),
        }
    }
}

fn interrupted() -> StoreError {
    StoreError::Backend(sqlx::Error::WorkerCrashed)
}
