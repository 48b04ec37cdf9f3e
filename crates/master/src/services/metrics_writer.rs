//! Group commit of metric reports: handlers validate a report, queue it here and wait; one writer
//! task takes everything queued (up to [`MAX_BATCH`]) and stores it in one transaction
//! (`Store::insert_metrics_if_current`, which checks every report's run and allocation session
//! in that transaction). A report is acknowledged only after its batch committed; a failed batch
//! answers every waiter with the error. A few batches are in flight at once, never two with the
//! same trial, so a trial's reports commit in the order they were queued; validations reach the
//! cluster loop after their commit.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use resolute_store::{CurrentMetricReport, MetricAdmission, Store, VALIDATION_GROUP};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{self, JoinSet};

use super::metric_reporters::{MetricReporter, MetricReporterCache};
use crate::cluster::{ClusterEvent, ClusterHandle};
use crate::error::{ApiError, ApiResult};

/// The most reports one transaction writes.
pub const MAX_BATCH: usize = 2048;
/// Reports waiting for the writer; beyond this, handlers wait to queue (backpressure).
const QUEUE: usize = 8192;
/// How often summary rows left behind by batches are looked at (they are written once they
/// have been behind for the store's interval).
const FLUSH_TICK: std::time::Duration = std::time::Duration::from_millis(100);

struct Job {
    report: CurrentMetricReport,
    /// The task that sent it (`None`: a user session), forgotten if its session has ended.
    reporter: Option<Arc<MetricReporter>>,
    reply: oneshot::Sender<ApiResult<()>>,
}

/// The handlers' end of the writer. Cheap to clone.
#[derive(Clone)]
pub struct MetricsWriter {
    jobs: mpsc::Sender<Job>,
}

impl MetricsWriter {
    /// Starts the writer task (call within a Tokio runtime); it ends once every handle is dropped.
    pub fn spawn(store: Arc<dyn Store>, cluster: ClusterHandle, reporters: Arc<MetricReporterCache>) -> MetricsWriter {
        let (jobs, receiver) = mpsc::channel(QUEUE);
        tokio::spawn(run(store, cluster, reporters, receiver));
        MetricsWriter { jobs }
    }

    /// Queues a validated report and waits until its batch is committed (or refused).
    pub async fn write(&self, report: CurrentMetricReport, reporter: Option<Arc<MetricReporter>>) -> ApiResult<()> {
        let (reply, answer) = oneshot::channel();
        self.jobs.send(Job { report, reporter, reply }).await.map_err(|_| writer_stopped())?;
        answer.await.map_err(|_| writer_stopped())?
    }
}

fn writer_stopped() -> ApiError {
    tracing::error!("the metrics writer has stopped");
    ApiError::internal()
}

/// Batches in flight at once. PostgreSQL locks rows, so batches over different trials overlap
/// their round trips. SQLite's writer thread merges the batches queued behind the one it is
/// writing into one transaction, so it never waits on this task between commits.
const DEPTH: usize = 4;
/// While batches are in flight, another starts only once it has this many reports to carry:
/// a batch's round trips and commit cost about as much as 10–20 reports, and a lone report
/// started beside running batches made PostgreSQL commit batches of one (13.7k → 21k reports/s
/// at 64 trials). With nothing in flight a report starts at once.
const MIN_FOLLOW_ON_BATCH: usize = 16;

async fn run(store: Arc<dyn Store>, cluster: ClusterHandle, reporters: Arc<MetricReporterCache>, mut receiver: mpsc::Receiver<Job>) {
    let mut received = Vec::with_capacity(MAX_BATCH);
    let mut pending: VecDeque<Job> = VecDeque::new();
    // Trials with a batch in flight: their next reports wait, so a trial's reports commit in order.
    let mut busy: HashSet<i32> = HashSet::new();
    let mut in_flight: JoinSet<()> = JoinSet::new();
    let mut trials_of: HashMap<task::Id, Vec<i32>> = HashMap::new();
    let mut open = true;
    // Summary rows that batches left behind are written once their trials stop reporting.
    let mut flush_tick = tokio::time::interval(FLUSH_TICK);
    flush_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut flushing: Option<task::JoinHandle<()>> = None;
    loop {
        while in_flight.len() < DEPTH && (in_flight.is_empty() || pending.len() >= MIN_FOLLOW_ON_BATCH) {
            let batch = take_batch(&mut pending, &busy);
            if batch.is_empty() {
                break;
            }
            let trials: Vec<i32> = batch.iter().map(|j| j.report.report.trial_id).collect();
            busy.extend(trials.iter().copied());
            let (store, cluster, reporters) = (store.clone(), cluster.clone(), reporters.clone());
            let handle = in_flight.spawn(async move { write_batch(store.as_ref(), &cluster, &reporters, batch).await });
            trials_of.insert(handle.id(), trials);
        }
        // With nothing in flight, `busy` is empty, so everything pending was started above.
        if !open && in_flight.is_empty() {
            if let Some(flush) = flushing.take() {
                let _ = flush.await;
            }
            if let Err(e) = store.flush_metric_summaries(true).await {
                tracing::error!(error = %e, "writing the last metric summaries failed");
            }
            return;
        }
        tokio::select! {
            n = receiver.recv_many(&mut received, MAX_BATCH), if open && pending.len() < MAX_BATCH => {
                open = n > 0;
                pending.extend(received.drain(..));
            }
            _ = flush_tick.tick() => {
                // One flush at a time; it runs beside the batches (it skips trials they hold).
                if flushing.as_ref().is_none_or(|f| f.is_finished()) {
                    let store = store.clone();
                    flushing = Some(tokio::spawn(async move {
                        if let Err(e) = store.flush_metric_summaries(false).await {
                            tracing::warn!(error = %e, "writing metric summaries failed; retrying at the next tick");
                        }
                    }));
                }
            }
            Some(done) = in_flight.join_next_with_id() => {
                // A panicked batch dropped its waiters' replies; they answer "internal error".
                let id = done.map_or_else(|e| e.id(), |(id, ())| id);
                for trial in trials_of.remove(&id).unwrap_or_default() {
                    busy.remove(&trial);
                }
            }
        }
    }
}

/// The next batch: queued reports in order, up to [`MAX_BATCH`], skipping trials with a batch in
/// flight (all of such a trial's reports stay queued, in order).
fn take_batch(pending: &mut VecDeque<Job>, busy: &HashSet<i32>) -> Vec<Job> {
    let mut batch = Vec::new();
    let mut kept = VecDeque::new();
    while let Some(job) = pending.pop_front() {
        if batch.len() < MAX_BATCH && !busy.contains(&job.report.report.trial_id) {
            batch.push(job);
        } else {
            kept.push_back(job);
        }
    }
    *pending = kept;
    batch
}

async fn write_batch(store: &dyn Store, cluster: &ClusterHandle, reporters: &MetricReporterCache, jobs: Vec<Job>) {
    let (reports, waiters): (Vec<_>, Vec<_>) = jobs.into_iter().map(|j| (j.report, (j.reporter, j.reply))).unzip();
    let started = std::time::Instant::now();
    let written = store.insert_metrics_if_current(&reports).await;
    tracing::debug!(reports = reports.len(), micros = started.elapsed().as_micros(), "metrics batch written");
    let admissions = match written {
        Ok(admissions) => admissions,
        Err(e) => {
            let error = ApiError::from(e);
            for (_, reply) in waiters {
                let _ = reply.send(Err(ApiError::new(error.code, error.message.clone()).with_status(error.status)));
            }
            return;
        }
    };
    for ((report, admission), (reporter, reply)) in reports.into_iter().zip(admissions).zip(waiters) {
        let r = report.report;
        let answer = match admission {
            MetricAdmission::Stored | MetricAdmission::Repeated => {
                if r.group == VALIDATION_GROUP {
                    cluster.notify(ClusterEvent::ValidationReported {
                        trial_id: r.trial_id,
                        trial_run_id: r.trial_run_id,
                        steps_completed: r.steps_completed,
                        metrics: r.avg_metrics,
                        // A retry: the searcher may have it already (or lost it with a killed master).
                        repeated: admission == MetricAdmission::Repeated,
                    });
                }
                Ok(())
            }
            MetricAdmission::StaleRun { current_run_id } => Err(ApiError::invalid(format!(
                "stale report: metrics.trialRunId is {} but trial {} is on run {current_run_id}",
                r.trial_run_id, r.trial_id
            ))),
            MetricAdmission::SessionEnded => {
                let allocation = reporter.as_ref().map_or("", |t| t.allocation_id.as_str());
                if let Some(t) = &reporter {
                    reporters.remove(&t.token_hash);
                }
                Err(ApiError::unauthenticated(format!("allocation {allocation} has ended; its token is no longer valid")))
            }
            MetricAdmission::TrialNotFound => Err(ApiError::not_found(format!("trial {} not found", r.trial_id))),
        };
        // The caller may have gone away; the report is stored either way.
        let _ = reply.send(answer);
    }
}

#[cfg(test)]
mod tests {
    use resolute_api::error::ErrorCode;
    use resolute_store::{NewMetricReport, SqlStore, db_now};
    use serde_json::Map;

    use super::*;

    fn report(trial_id: i32) -> CurrentMetricReport {
        let report = NewMetricReport {
            trial_id,
            trial_run_id: 1,
            group: "training".into(),
            steps_completed: 1,
            report_time: db_now(),
            avg_metrics: Map::new(),
            batch_metrics: Vec::new(),
            searcher_metric: None,
        };
        CurrentMetricReport { report, allocation_session_id: None }
    }

    #[test]
    fn batches_skip_busy_trials_and_keep_their_order() {
        let job = |trial_id: i32, steps: i64| {
            let mut report = report(trial_id);
            report.report.steps_completed = steps;
            Job { report, reporter: None, reply: oneshot::channel().0 }
        };
        let mut pending: VecDeque<Job> = [job(1, 1), job(2, 1), job(1, 2), job(3, 1), job(2, 2)].into_iter().collect();
        let busy: HashSet<i32> = [2].into_iter().collect();
        let key = |j: &Job| (j.report.report.trial_id, j.report.report.steps_completed);
        let batch = take_batch(&mut pending, &busy);
        assert_eq!(batch.iter().map(key).collect::<Vec<_>>(), [(1, 1), (1, 2), (3, 1)]);
        assert_eq!(pending.iter().map(key).collect::<Vec<_>>(), [(2, 1), (2, 2)]);
        let batch = take_batch(&mut pending, &HashSet::new());
        assert_eq!(batch.iter().map(key).collect::<Vec<_>>(), [(2, 1), (2, 2)]);
        assert!(pending.is_empty());
    }

    #[tokio::test]
    async fn a_failed_batch_answers_every_waiter() {
        let store = SqlStore::open_sqlite_in_memory().await.unwrap();
        // Every statement now fails, as a lost database would.
        store.close().await;
        let (cluster, _events) = ClusterHandle::new();
        let writer = MetricsWriter::spawn(Arc::new(store), cluster, Arc::default());
        let answers = futures_util::future::join_all((1..=20).map(|id| writer.write(report(id), None))).await;
        assert_eq!(answers.len(), 20);
        for answer in answers {
            let error = answer.expect_err("nothing can be stored");
            assert_eq!(error.code, ErrorCode::Internal);
        }
    }

    #[tokio::test]
    async fn unknown_trials_are_answered_per_report() {
        let store = SqlStore::open_sqlite_in_memory().await.unwrap();
        let (cluster, _events) = ClusterHandle::new();
        let writer = MetricsWriter::spawn(Arc::new(store), cluster, Arc::default());
        let answers = futures_util::future::join_all((1..=5).map(|id| writer.write(report(id), None))).await;
        for answer in answers {
            assert_eq!(answer.expect_err("no such trial").code, ErrorCode::NotFound);
        }
    }
}
