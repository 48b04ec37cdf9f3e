//! Group commit of metric reports: handlers validate a report, queue it here and wait; one writer
//! task takes everything queued (up to [`MAX_BATCH`]) and stores it in one transaction
//! (`Store::insert_metrics_if_current`, which checks every report's run and allocation session
//! in that transaction). A report is acknowledged only after its batch committed; a failed batch
//! answers every waiter with the error. Reports are written in the order they were queued, so a
//! trial's reports keep their order, and validations reach the cluster loop after their commit.

use std::sync::Arc;

use resolute_store::{CurrentMetricReport, MetricAdmission, Store, VALIDATION_GROUP};
use tokio::sync::{mpsc, oneshot};

use super::metric_reporters::{MetricReporter, MetricReporterCache};
use crate::cluster::{ClusterEvent, ClusterHandle};
use crate::error::{ApiError, ApiResult};

/// The most reports one transaction writes.
pub const MAX_BATCH: usize = 2048;
/// Reports waiting for the writer; beyond this, handlers wait to queue (backpressure).
const QUEUE: usize = 8192;

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

async fn run(store: Arc<dyn Store>, cluster: ClusterHandle, reporters: Arc<MetricReporterCache>, mut receiver: mpsc::Receiver<Job>) {
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    while receiver.recv_many(&mut jobs, MAX_BATCH).await > 0 {
        write_batch(store.as_ref(), &cluster, &reporters, std::mem::take(&mut jobs)).await;
    }
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
            MetricAdmission::Stored => {
                if r.group == VALIDATION_GROUP {
                    cluster.notify(ClusterEvent::ValidationReported {
                        trial_id: r.trial_id,
                        trial_run_id: r.trial_run_id,
                        steps_completed: r.steps_completed,
                        metrics: r.avg_metrics,
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
