//! `insert_metrics_if_current`: the admission path of running tasks' reports, one transaction for
//! many callers with per-report checks (run, allocation session, trial).

use resolute_store::{
    AllocationPatch, CurrentMetricReport, MetricAdmission, NewAllocation, NewAllocationSession, NewTask, SearcherMetric, Store,
    TRAINING_GROUP, TrialRecord, VALIDATION_GROUP, db_now,
};
use serde_json::json;

use crate::fixtures::{experiment, report, trial};

/// A running allocation of the trial's task with one session; returns the session id.
pub async fn open_session(store: &dyn Store, t: &TrialRecord, owner_id: i32) -> (String, i64) {
    let task = NewTask {
        task_id: t.task_id.clone(),
        task_type: "TASK_TYPE_TRIAL".into(),
        start_time: db_now(),
        job_id: None,
        owner_id: Some(owner_id),
    };
    store.create_task(task).await.unwrap();
    let allocation_id = format!("{}.1", t.task_id);
    let allocation = NewAllocation {
        allocation_id: allocation_id.clone(),
        task_id: t.task_id.clone(),
        state: "STATE_RUNNING".into(),
        slots: 1,
        resource_pool: "default".into(),
        agent_id: None,
        start_time: db_now(),
    };
    store.create_allocation(allocation).await.unwrap();
    let session = NewAllocationSession { allocation_id: allocation_id.clone(), token_hash: format!("hash-{}", t.id), created_at: db_now() };
    let session = store.create_allocation_session(session).await.unwrap();
    (allocation_id, session.id)
}

fn current(trial_id: i32, run_id: i32, steps: i64, session: Option<i64>) -> CurrentMetricReport {
    CurrentMetricReport { report: report(trial_id, run_id, TRAINING_GROUP, steps, json!({"loss": steps})), allocation_session_id: session }
}

pub async fn each_report_is_checked_in_the_batch(store: &dyn Store) {
    let e = experiment(store, "admission").await;
    let a = trial(store, e.id, 1).await;
    let b = trial(store, e.id, 2).await;
    let (_, a_session) = open_session(store, &a, e.owner_id).await;
    let (b_allocation, b_session) = open_session(store, &b, e.owner_id).await;
    store
        .update_allocation(
            &b_allocation,
            &AllocationPatch { end_time: Some(db_now()), state: Some("STATE_TERMINATED".into()), ..Default::default() },
        )
        .await
        .unwrap();

    let mut validation = current(a.id, 1, 30, Some(a_session));
    validation.report.group = VALIDATION_GROUP.into();
    validation.report.searcher_metric = Some(SearcherMetric { name: "loss".into(), smaller_is_better: true });
    let batch = vec![
        current(a.id, 1, 10, Some(a_session)),
        current(b.id, 1, 10, Some(b_session)),
        current(a.id, 2, 20, Some(a_session)),
        current(a.id + 1000, 1, 10, None),
        current(a.id, 1, 20, None),
        validation,
    ];
    let admissions = store.insert_metrics_if_current(&batch).await.unwrap();
    assert_eq!(
        admissions,
        [
            MetricAdmission::Stored,
            MetricAdmission::SessionEnded,
            MetricAdmission::StaleRun { current_run_id: 1 },
            MetricAdmission::TrialNotFound,
            MetricAdmission::Stored,
            MetricAdmission::Stored,
        ]
    );
    let stored = store.metrics_for_trial(a.id, None, true).await.unwrap();
    assert_eq!(stored.iter().map(|m| (m.trial_run_id, m.steps_completed)).collect::<Vec<_>>(), [(1, 10), (1, 20), (1, 30)]);
    assert!(store.metrics_for_trial(b.id, None, true).await.unwrap().is_empty(), "the ended allocation's report is not stored");
    let after = store.trial_by_id(a.id).await.unwrap();
    assert_eq!(
        after.summary_metrics["training"]["loss"],
        json!({"count": 2, "last": 20, "type": "number", "min": 10.0, "max": 20.0, "sum": 30.0})
    );
    assert_eq!((after.total_batches, after.best_validation), (30, Some(30.0)));
    assert_eq!(store.trial_by_id(b.id).await.unwrap().total_batches, 0);

    // Once the trial restarts, run 1 is stale and run 2 rolls run 1's later rows back.
    store.record_trial_restart(a.id).await.unwrap();
    let admissions = store.insert_metrics_if_current(&[current(a.id, 1, 40, None), current(a.id, 2, 15, None)]).await.unwrap();
    assert_eq!(admissions, [MetricAdmission::StaleRun { current_run_id: 2 }, MetricAdmission::Stored]);
    let live = store.metrics_for_trial(a.id, Some(TRAINING_GROUP), false).await.unwrap();
    assert_eq!(live.iter().map(|m| (m.trial_run_id, m.steps_completed)).collect::<Vec<_>>(), [(1, 10), (2, 15)]);
    let after = store.trial_by_id(a.id).await.unwrap();
    assert_eq!(after.summary_metrics["training"]["loss"]["count"], 2, "recomputed from the live rows");
    assert_eq!(after.total_batches, 30, "the live validation at 30 still counts");

    // Nothing admitted: nothing written, and an empty batch is a no-op.
    let admissions = store.insert_metrics_if_current(&[current(b.id, 1, 50, Some(b_session))]).await.unwrap();
    assert_eq!(admissions, [MetricAdmission::SessionEnded]);
    assert!(store.insert_metrics_if_current(&[]).await.unwrap().is_empty());
}

/// Many trials in one batch, several reports each: every report stored once, in order, and
/// each trial's summary folds exactly its own reports.
pub async fn batch_across_many_trials(store: &dyn Store) {
    let e = experiment(store, "many").await;
    let mut trials = Vec::new();
    for n in 1..=70 {
        trials.push(trial(store, e.id, n).await);
    }
    let mut batch = Vec::new();
    for step in 1..=3 {
        for t in &trials {
            batch.push(CurrentMetricReport {
                report: report(t.id, 1, TRAINING_GROUP, step, json!({"loss": f64::from(t.id) + step as f64, "tag": "x"})),
                allocation_session_id: None,
            });
        }
    }
    let admissions = store.insert_metrics_if_current(&batch).await.unwrap();
    assert!(admissions.iter().all(|a| *a == MetricAdmission::Stored));
    for t in &trials {
        let stored = store.metrics_for_trial(t.id, None, false).await.unwrap();
        assert_eq!(stored.iter().map(|m| m.steps_completed).collect::<Vec<_>>(), [1, 2, 3]);
        let after = store.trial_by_id(t.id).await.unwrap();
        let id = f64::from(t.id);
        let loss = &after.summary_metrics["training"]["loss"];
        assert_eq!((loss["count"].as_i64(), loss["sum"].as_f64(), loss["min"].as_f64()), (Some(3), Some(3.0 * id + 6.0), Some(id + 1.0)));
        assert_eq!(after.total_batches, 3);
    }
}

/// Callers writing at once (SQLite's writer merges queued calls into one transaction): each is
/// answered with its own reports' admissions, in its own order, and everything admitted is stored.
pub async fn concurrent_callers_get_their_own_admissions(store: &dyn Store) {
    let e = experiment(store, "concurrent").await;
    let mut trials = Vec::new();
    for n in 1..=8 {
        trials.push(trial(store, e.id, n).await);
    }
    // Caller k writes steps 1..=5 of trial k, with one stale report (run 2) second and, for
    // odd k, a report of a trial that does not exist last.
    let calls: Vec<Vec<CurrentMetricReport>> = trials
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let mut call: Vec<CurrentMetricReport> = (1..=5).map(|step| current(t.id, 1, step, None)).collect();
            call.insert(1, current(t.id, 2, 99, None));
            if k % 2 == 1 {
                call.push(current(t.id + 10_000, 1, 1, None));
            }
            call
        })
        .collect();
    let answers = futures_util::future::join_all(calls.iter().map(|call| store.insert_metrics_if_current(call))).await;
    for (k, (t, answer)) in trials.iter().zip(answers).enumerate() {
        let mut expected = vec![MetricAdmission::Stored; 6];
        expected[1] = MetricAdmission::StaleRun { current_run_id: 1 };
        if k % 2 == 1 {
            expected.push(MetricAdmission::TrialNotFound);
        }
        assert_eq!(answer.unwrap(), expected, "caller {k}");
        let stored = store.metrics_for_trial(t.id, None, false).await.unwrap();
        assert_eq!(stored.iter().map(|m| m.steps_completed).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
        let after = store.trial_by_id(t.id).await.unwrap();
        assert_eq!((after.summary_metrics["training"]["loss"]["count"].as_i64(), after.total_batches), (Some(5), 5));
    }
}
