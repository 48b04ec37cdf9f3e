//! Metric ingestion under concurrency (the group-commit writer): many trials reporting at once
//! are all stored exactly once, in order, with correct summaries; a token remembered by the
//! metrics path stops working as soon as its allocation ends.

use futures_util::future::join_all;
use resolute_store::{AllocationPatch, TRAINING_GROUP, db_now};
use serde_json::json;

use crate::harness::{TestMaster, assert_error};
use crate::runtime_support::{RunningTrial, metrics_body, running_trial, task_post};

const TRIALS: usize = 12;
const REPORTS: i64 = 25;

async fn report_all(m: &TestMaster, t: &RunningTrial) {
    let path = format!("/api/v1/trials/{}/metrics", t.trial.id);
    for step in 1..=REPORTS {
        let avg = json!({"loss": step as f64, "trial": t.trial.id});
        let r = task_post(m, &path, &t.token, metrics_body(t.trial.id, 1, TRAINING_GROUP, step, avg)).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = task_post(m, &path, &t.token, metrics_body(t.trial.id, 1, "validation", REPORTS, json!({"validation_loss": 0.5}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

pub async fn concurrent_reports_are_stored_exactly_once(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let mut trials = Vec::new();
    for n in 0..TRIALS {
        trials.push(running_trial(m, &admin, &format!("ingest-{n}")).await);
    }
    join_all(trials.iter().map(|t| report_all(m, t))).await;

    let expected_sum = (REPORTS * (REPORTS + 1) / 2) as f64;
    for t in &trials {
        let stored = m.store.metrics_for_trial(t.trial.id, Some(TRAINING_GROUP), true).await.unwrap();
        assert_eq!(stored.iter().map(|r| r.steps_completed).collect::<Vec<_>>(), (1..=REPORTS).collect::<Vec<_>>());
        assert!(stored.iter().all(|r| !r.archived && r.avg_metrics["trial"] == t.trial.id), "{stored:?}");
        let trial = m.store.trial_by_id(t.trial.id).await.unwrap();
        let loss = &trial.summary_metrics["training"]["loss"];
        assert_eq!(
            (loss["count"].as_i64(), loss["sum"].as_f64(), loss["last"].as_f64()),
            (Some(REPORTS), Some(expected_sum), Some(REPORTS as f64))
        );
        assert_eq!((trial.total_batches, trial.best_validation), (REPORTS, Some(0.5)));
    }
}

pub async fn remembered_token_stops_when_its_allocation_ends(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let t = running_trial(m, &admin, "ended").await;
    let other = running_trial(m, &admin, "neighbour").await;
    let path = format!("/api/v1/trials/{}/metrics", t.trial.id);
    let r = task_post(m, &path, &t.token, metrics_body(t.trial.id, 1, TRAINING_GROUP, 1, json!({"loss": 1.0}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Confinement holds for a remembered token too.
    let neighbour = format!("/api/v1/trials/{}/metrics", other.trial.id);
    let r = task_post(m, &neighbour, &t.token, metrics_body(other.trial.id, 1, TRAINING_GROUP, 1, json!({"loss": 1.0}))).await;
    assert_error(&r, 403, "PermissionDenied");

    m.store
        .update_allocation(
            &t.allocation_id,
            &AllocationPatch { end_time: Some(db_now()), state: Some("STATE_TERMINATED".into()), ..Default::default() },
        )
        .await
        .unwrap();
    let r = task_post(m, &path, &t.token, metrics_body(t.trial.id, 1, TRAINING_GROUP, 2, json!({"loss": 0.5}))).await;
    assert_error(&r, 401, "Unauthenticated");
    assert!(r.text.contains("ended"), "{}", r.text);
    // Now refused before the writer too (the entry was dropped and the store says so).
    let r = task_post(m, &path, &t.token, metrics_body(t.trial.id, 1, TRAINING_GROUP, 3, json!({"loss": 0.5}))).await;
    assert_error(&r, 401, "Unauthenticated");
    let stored = m.store.metrics_for_trial(t.trial.id, None, true).await.unwrap();
    assert_eq!(stored.iter().map(|r| r.steps_completed).collect::<Vec<_>>(), [1]);

    // Deleted sessions (a revoked token) are refused the same way.
    let o = format!("/api/v1/trials/{}/metrics", other.trial.id);
    let r = task_post(m, &o, &other.token, metrics_body(other.trial.id, 1, TRAINING_GROUP, 1, json!({"loss": 1.0}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    m.store.delete_allocation_sessions(&other.allocation_id).await.unwrap();
    let r = task_post(m, &o, &other.token, metrics_body(other.trial.id, 1, TRAINING_GROUP, 2, json!({"loss": 1.0}))).await;
    assert_error(&r, 401, "Unauthenticated");

    // A user session reporting for a run that is no longer current gets 400 from the writer.
    m.store.record_trial_restart(t.trial.id).await.unwrap();
    let stale = m.post(&path, Some(&admin), metrics_body(t.trial.id, 1, TRAINING_GROUP, 4, json!({"loss": 0.1}))).await;
    assert_error(&stale, 400, "InvalidArgument");
    assert!(stale.text.contains("trialRunId"), "{}", stale.text);
    let current = m.post(&path, Some(&admin), metrics_body(t.trial.id, 2, TRAINING_GROUP, 1, json!({"loss": 0.1}))).await;
    assert_eq!(current.status, 200, "{}", current.text);
}
