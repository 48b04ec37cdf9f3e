//! Reading a task's (or trial's) log lines as a stream: one-shot reads in batches, tails
//! (descending with a limit), and `follow`, which keeps polling until the task has ended and no
//! more lines arrive. The poller runs in its own task and stops as soon as the reader goes away.

use std::sync::Arc;
use std::time::Duration;

use resolute_store::{LogFields, LogFilter, LogRecord, OrderDirection, Store, StoreError};
use tokio::sync::{Notify, mpsc};

use crate::domain::TrialState;
use crate::error::{ApiError, ApiResult};

/// Lines read per query; a full batch means more may be waiting.
const BATCH_SIZE: i64 = 1000;
/// How long a follower waits for new lines before looking again (unless woken earlier).
const FOLLOW_POLL: Duration = Duration::from_millis(500);
/// Batches buffered between the poller and a slow reader.
const CHANNEL_BATCHES: usize = 4;

/// Whose logs to read.
#[derive(Clone, Debug)]
pub struct LogSubject {
    pub task_id: String,
    /// Set for trial logs: the trial's end also ends a follow.
    pub trial_id: Option<i32>,
}

/// A log read after parsing: the filter (its `after_id` is the poller's), the total `limit`, and
/// whether to follow.
#[derive(Clone, Debug, Default)]
pub struct LogStreamRequest {
    pub filter: LogFilter,
    pub limit: Option<i64>,
    pub follow: bool,
}

/// Batches of log lines, or the error that ended the stream.
pub type LogBatches = mpsc::Receiver<ApiResult<Vec<LogRecord>>>;

#[derive(Clone)]
pub struct TaskLogService {
    store: Arc<dyn Store>,
    new_lines: Arc<Notify>,
}

impl TaskLogService {
    pub fn new(store: Arc<dyn Store>) -> Self {
        TaskLogService { store, new_lines: Arc::new(Notify::new()) }
    }

    /// Wakes every follower at once; whoever stores log lines calls this after `insert_logs`, so
    /// followers need not wait for their next poll.
    pub fn notify_new_lines(&self) {
        self.new_lines.notify_waiters();
    }

    /// A trial's logs are its task's. 404 for an unknown trial.
    pub async fn trial_subject(&self, trial_id: i32) -> ApiResult<LogSubject> {
        let trial = self.store.trial_by_id(trial_id).await?;
        Ok(LogSubject { task_id: trial.task_id, trial_id: Some(trial_id) })
    }

    /// 404 for an unknown task.
    pub async fn task_subject(&self, task_id: &str) -> ApiResult<LogSubject> {
        self.store.task_by_id(task_id).await?;
        Ok(LogSubject { task_id: task_id.to_owned(), trial_id: None })
    }

    /// Starts reading; the poller stops when the receiver is dropped.
    pub fn stream(&self, subject: LogSubject, request: LogStreamRequest) -> ApiResult<LogBatches> {
        if request.follow && request.filter.order == OrderDirection::Desc {
            return Err(ApiError::invalid(
                "follow streams new lines as they arrive, oldest first; it cannot be combined with orderBy=ORDER_BY_DESC",
            ));
        }
        if request.limit.is_some_and(|l| l < 0) {
            return Err(ApiError::invalid("limit must not be negative (0 means no limit)"));
        }
        let (tx, rx) = mpsc::channel(CHANNEL_BATCHES);
        let poller = Poller { store: self.store.clone(), new_lines: self.new_lines.clone(), subject, request };
        tokio::spawn(async move {
            if let Err(e) = poller.run(&tx).await {
                let _ = tx.send(Err(e)).await;
            }
        });
        Ok(rx)
    }

    /// Whether the subject will write no more lines: its task has ended or its trial is over.
    pub async fn has_ended(&self, subject: &LogSubject) -> ApiResult<bool> {
        has_ended(self.store.as_ref(), subject).await
    }

    /// The distinct values of the task's lines, for `…/logs/fields`.
    pub async fn fields(&self, task_id: &str) -> ApiResult<LogFields> {
        Ok(self.store.task_log_fields(task_id).await?)
    }
}

async fn has_ended(store: &dyn Store, subject: &LogSubject) -> ApiResult<bool> {
    match store.task_by_id(&subject.task_id).await {
        Ok(task) if task.task.end_time.is_some() => return Ok(true),
        Ok(_) | Err(StoreError::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    if let Some(trial_id) = subject.trial_id {
        let trial = store.trial_by_id(trial_id).await?;
        return Ok(TrialState::is_terminal_name(&trial.state));
    }
    Ok(false)
}

struct Poller {
    store: Arc<dyn Store>,
    new_lines: Arc<Notify>,
    subject: LogSubject,
    request: LogStreamRequest,
}

impl Poller {
    async fn run(self, tx: &mpsc::Sender<ApiResult<Vec<LogRecord>>>) -> ApiResult<()> {
        let mut filter = self.request.filter.clone();
        let mut remaining = self.request.limit.filter(|l| *l > 0);
        loop {
            // Registered before reading, so a wake-up between the read and the wait is not lost.
            let woken = self.new_lines.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            // Checked before reading: if the task had ended by then, this read sees its last line.
            let ended = self.request.follow && has_ended(self.store.as_ref(), &self.subject).await?;
            let want = remaining.map_or(BATCH_SIZE, |r| r.min(BATCH_SIZE));
            filter.limit = Some(want);
            let batch = self.store.task_logs(&self.subject.task_id, &filter).await?;
            let got = batch.len() as i64;
            if let Some(last) = batch.last() {
                filter.after_id = Some(last.id);
            }
            if got > 0 && tx.send(Ok(batch)).await.is_err() {
                return Ok(()); // the reader went away
            }
            if let Some(r) = remaining.as_mut() {
                *r -= got;
                if *r <= 0 {
                    return Ok(());
                }
            }
            if got == want {
                continue;
            }
            if !self.request.follow || ended {
                return Ok(());
            }
            tokio::select! {
                _ = tx.closed() => return Ok(()),
                _ = &mut woken => {}
                _ = tokio::time::sleep(FOLLOW_POLL) => {}
            }
        }
    }
}
