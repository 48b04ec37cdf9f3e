//! Write-throughput probes, ignored by default (timings belong to benchmarks, not tests). Run:
//! `cargo test -p resolute-store --release -- --ignored --nocapture bench`; with
//! `RESOLUTE_TEST_POSTGRES_URL` set the PostgreSQL variant runs too.

use std::time::Instant;

use resolute_store::{CurrentMetricReport, MetricAdmission, NewLogLine, SqlStore, Store, TRAINING_GROUP};
use serde_json::json;

use crate::fixtures::{at, experiment, report, trial};

const REPORTS: usize = 100_000;
const LOG_LINES: usize = 1_000_000;
const BATCH: usize = 1_000;

/// The master's admission path at the ingestion benchmark's shape: every batch holds one
/// training report (10 scalars) of each of `TRIALS` running trials, with their sessions checked.
async fn run_admission(store: &dyn Store) {
    const TRIALS: usize = 128;
    const BATCHES: usize = 200;
    let e = experiment(store, "admission-bench").await;
    let mut trials = Vec::new();
    for n in 0..TRIALS {
        let t = trial(store, e.id, n as u32).await;
        let (_, session) = crate::metrics_current::open_session(store, &t, e.owner_id).await;
        trials.push((t.id, session));
    }
    let mut in_store = std::time::Duration::ZERO;
    for b in 0..BATCHES {
        let x = b as f64 + 1.0;
        let batch: Vec<_> = trials
            .iter()
            .map(|&(trial_id, session)| CurrentMetricReport {
                report: report(
                    trial_id,
                    1,
                    TRAINING_GROUP,
                    b as i64 + 1,
                    json!({"loss": 1.0 / x, "accuracy": 1.0 - 1.0 / x, "lr": 0.1, "grad_norm": x * 0.5, "m4": x + 4.0,
                           "m5": x + 5.0, "m6": x + 6.0, "m7": x + 7.0, "m8": x + 8.0, "m9": x + 9.0}),
                ),
                allocation_session_id: Some(session),
            })
            .collect();
        let started = Instant::now();
        let admitted = store.insert_metrics_if_current(&batch).await.unwrap();
        in_store += started.elapsed();
        assert!(admitted.iter().all(|a| *a == MetricAdmission::Stored));
    }
    let secs = in_store.as_secs_f64();
    let reports = TRIALS * BATCHES;
    println!(
        "[{}] admission: {BATCHES} batches of {TRIALS} reports (one per trial): {:.0} µs a batch, {:.1} µs a report, {:.0} reports/s",
        store.backend(),
        secs * 1e6 / BATCHES as f64,
        secs * 1e6 / reports as f64,
        reports as f64 / secs
    );
}

async fn run(store: &dyn Store) {
    run_admission(store).await;
    let backend = store.backend();
    let e = experiment(store, "bench").await;
    let mut trials = Vec::new();
    for n in 0..10 {
        trials.push(trial(store, e.id, n).await.id);
    }

    let started = Instant::now();
    let mut bytes = 0usize;
    for (b, chunk_start) in (0..REPORTS).step_by(BATCH).enumerate() {
        let trial_id = trials[b % trials.len()];
        let batch: Vec<_> = (chunk_start..chunk_start + BATCH)
            .map(|i| {
                let x = i as f64;
                report(
                    trial_id,
                    1,
                    TRAINING_GROUP,
                    i as i64,
                    json!({"loss": 1.0 / (1.0 + x), "accuracy": x / 1e5, "lr": 0.001, "grad_norm": 0.5 + x / 1e6}),
                )
            })
            .collect();
        bytes += batch.iter().map(|r| serde_json::Value::Object(r.avg_metrics.clone()).to_string().len()).sum::<usize>();
        store.insert_metrics(&batch).await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "[{backend}] metrics: {REPORTS} reports in batches of {BATCH}: {secs:.2} s, {:.0} reports/s, {:.2} MB/s of metric JSON",
        REPORTS as f64 / secs,
        bytes as f64 / secs / 1e6
    );

    let task_id = "bench-task";
    let started = Instant::now();
    let mut bytes = 0usize;
    for chunk_start in (0..LOG_LINES).step_by(BATCH) {
        let batch: Vec<_> = (chunk_start..chunk_start + BATCH).map(|i| log_line(task_id, i)).collect();
        bytes += batch.iter().map(|l| l.log.len()).sum::<usize>();
        store.insert_logs(&batch).await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "[{backend}] logs: {LOG_LINES} lines of ~{} B in batches of {BATCH}: {secs:.2} s, {:.0} lines/s, {:.2} MB/s of log text",
        bytes / LOG_LINES,
        LOG_LINES as f64 / secs,
        bytes as f64 / secs / 1e6
    );
    let newest = resolute_store::LogFilter { limit: Some(1), order: resolute_store::OrderDirection::Desc, ..Default::default() };
    assert_eq!(store.task_logs(task_id, &newest).await.unwrap().len(), 1);
}

fn log_line(task_id: &str, i: usize) -> NewLogLine {
    // 100 bytes, shaped like a training script's progress line.
    let mut log = format!(
        "[rank={}] INFO: step {i:07}: loss=0.{:06} accuracy=0.{:06} lr=0.001000 samples/s=1234.5 eta=00:12:34",
        i % 8,
        i % 999_983,
        i % 999_979
    );
    log.truncate(99);
    log.push('\n');
    NewLogLine {
        task_id: task_id.to_owned(),
        allocation_id: Some(format!("{task_id}.1")),
        agent_id: Some("agent-0".to_owned()),
        container_id: Some("3f2a9c1e-container".to_owned()),
        rank_id: Some((i % 8) as i32),
        timestamp: at(i as i64),
        level: Some("LOG_LEVEL_INFO".to_owned()),
        log,
        source: Some("task".to_owned()),
        stdtype: Some("stdout".to_owned()),
    }
}

#[tokio::test]
#[ignore = "benchmark: run with --ignored --nocapture in release mode"]
async fn bench_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::open_sqlite(&dir.path().join("bench.db")).await.unwrap();
    run(&store).await;
    store.close().await;
}

#[tokio::test]
#[ignore = "benchmark: run with --ignored --nocapture in release mode"]
async fn bench_postgres() {
    if let Some(store) = crate::harness::postgres().await {
        run(store.as_ref()).await;
    }
}
