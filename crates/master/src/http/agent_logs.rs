//! Storing an agent connection's `TaskLogs` off its socket loop: the loop parses the next
//! message while the previous batches are written, and whatever queued up during a write is
//! stored together in one transaction. Order is kept: batches are stored in arrival order, and
//! [`AgentLogWriter::flush`] returns once everything queued before it is stored, so a task's
//! exit reaches the loop only after its last lines (the invariant `logs -f` relies on).

use resolute_api::agent_protocol::{LineLevel, TaskLogBatch};
use resolute_store::{NewLogChunk, NewLogEvent};
use tokio::sync::{mpsc, oneshot};

use crate::services::log_policies::{LogPolicyMatcher, PolicyLine};
use crate::services::webhook_log_matcher::{LineRef, LogTriggerCache};
use crate::state::AppState;

/// Messages queued between the socket loop and the writer; a full queue holds the socket back.
const QUEUE_MESSAGES: usize = 8;
/// Lines stored per transaction at most, when many batches queued up.
const LINES_PER_WRITE: usize = 16_000;

enum Work {
    /// The chunks, and the task-log webhook events their lines fired (queued once they are stored).
    Chunks(Vec<NewLogChunk>, Vec<NewLogEvent>),
    Flushed(oneshot::Sender<()>),
}

/// One per agent connection; dropping it lets the writer finish what is queued and stop.
pub struct AgentLogWriter {
    queue: mpsc::Sender<Work>,
    log_triggers: LogTriggerCache,
    log_policies: LogPolicyMatcher,
}

impl AgentLogWriter {
    pub fn start(state: AppState, agent_id: String) -> Self {
        let (queue, rx) = mpsc::channel(QUEUE_MESSAGES);
        let log_triggers = state.webhooks.log_triggers().clone();
        let log_policies = state.log_policies.clone();
        tokio::spawn(write_loop(state, agent_id, rx));
        AgentLogWriter { queue, log_triggers, log_policies }
    }

    /// Queues a `TaskLogs` message, waiting while the queue is full.
    pub async fn push(&self, agent_id: &str, batches: &[TaskLogBatch]) {
        let chunks = batches.iter().map(|b| log_chunk(agent_id, b)).collect();
        let mut lines = Vec::new();
        for b in batches {
            lines.extend(b.lines.iter().map(|l| LineRef { task_id: &b.task_id, node_name: agent_id, log: &l.log }));
        }
        let events = self.log_triggers.match_lines(lines.into_iter()).await;
        // Before the batch is queued, so before any later exit of the task reaches the loop.
        let mut policy_lines = Vec::new();
        for b in batches {
            policy_lines.extend(b.lines.iter().map(|l| PolicyLine {
                task_id: &b.task_id,
                allocation_id: Some(b.allocation_id.as_str()),
                node: Some(agent_id),
                log: &l.log,
            }));
        }
        self.log_policies.match_lines(&policy_lines).await;
        // The writer stops only when this handle is dropped.
        let _ = self.queue.send(Work::Chunks(chunks, events)).await;
    }

    /// Waits until every batch queued so far is stored (or failed to store).
    pub async fn flush(&self) {
        let (done, stored) = oneshot::channel();
        if self.queue.send(Work::Flushed(done)).await.is_ok() {
            let _ = stored.await;
        }
    }
}

async fn write_loop(state: AppState, agent_id: String, mut rx: mpsc::Receiver<Work>) {
    let mut chunks: Vec<NewLogChunk> = Vec::new();
    let mut events: Vec<NewLogEvent> = Vec::new();
    let mut flushed = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut work = Some(first);
        let mut lines = 0;
        while let Some(w) = work.take() {
            match w {
                Work::Chunks(c, e) => {
                    lines += c.iter().map(NewLogChunk::len).sum::<usize>();
                    chunks.extend(c);
                    events.extend(e);
                }
                Work::Flushed(done) => flushed.push(done),
            }
            if lines < LINES_PER_WRITE {
                work = rx.try_recv().ok();
            }
        }
        if !chunks.is_empty() {
            match state.store.insert_log_chunks(std::mem::take(&mut chunks)).await {
                Ok(()) => state.task_logs.notify_new_lines(),
                Err(e) => tracing::error!(agent = %agent_id, error = %e, lines, "storing task logs failed"),
            }
        }
        // Right after the lines are stored (before `flush` returns, so before the task's exit is
        // processed); a failure here never fails log ingestion.
        if !events.is_empty() {
            let queued = std::mem::take(&mut events);
            if let Err(e) = state.store.enqueue_log_events(&queued).await {
                tracing::warn!(agent = %agent_id, error = %e, events = queued.len(), "queuing task-log webhook events failed");
            }
        }
        for done in flushed.drain(..) {
            let _ = done.send(());
        }
    }
}

/// A batch as one chunk: the agent's lines are the task's own output (`source` "task"), at level
/// INFO unless a prefix said otherwise.
fn log_chunk(agent_id: &str, batch: &TaskLogBatch) -> NewLogChunk {
    let mut chunk = NewLogChunk::new(
        batch.task_id.clone(),
        Some(batch.allocation_id.clone()),
        Some(agent_id.to_owned()),
        Some(batch.container_id.clone()),
        Some("task".to_owned()),
    );
    chunk.reserve(batch.lines.iter().map(|l| l.log.len() + 16).sum());
    for line in &batch.lines {
        let level = line.level.map_or("LOG_LEVEL_INFO", LineLevel::wire_name);
        chunk.push(line.timestamp, line.rank_id, Some(level), Some(line.stdtype.as_str()), &line.log);
    }
    chunk
}
