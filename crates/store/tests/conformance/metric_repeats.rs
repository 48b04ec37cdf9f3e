//! Exactly-once metric admission: a report that repeats a stored one (a harness retry after its
//! answer was lost, e.g. with a master killed after the write) is `Repeated` and stored once;
//! another run, other values at the same step, or another group are not repeats.

use resolute_store::{CurrentMetricReport, MetricAdmission, Store, TRAINING_GROUP, VALIDATION_GROUP};
use serde_json::json;

use crate::fixtures::{experiment, report, trial};
use crate::metrics_current::open_session;

fn current(trial_id: i32, group: &str, steps: i64, loss: f64, session: i64) -> CurrentMetricReport {
    CurrentMetricReport { report: report(trial_id, 1, group, steps, json!({"loss": loss})), allocation_session_id: Some(session) }
}

pub async fn a_retried_report_is_stored_once(store: &dyn Store) {
    let e = experiment(store, "repeats").await;
    let t = trial(store, e.id, 1).await;
    let (_, session) = open_session(store, &t, e.owner_id).await;
    let first = store.insert_metrics_if_current(&[current(t.id, TRAINING_GROUP, 1, 0.5, session)]).await.unwrap();
    assert_eq!(first, [MetricAdmission::Stored]);
    // The retry, in a later batch, and twice within one batch beside new reports.
    let batch = vec![
        current(t.id, TRAINING_GROUP, 1, 0.5, session),
        current(t.id, TRAINING_GROUP, 2, 0.25, session),
        current(t.id, TRAINING_GROUP, 2, 0.25, session),
        current(t.id, TRAINING_GROUP, 2, 0.125, session),
        current(t.id, VALIDATION_GROUP, 2, 0.25, session),
    ];
    let admissions = store.insert_metrics_if_current(&batch).await.unwrap();
    assert_eq!(
        admissions,
        [MetricAdmission::Repeated, MetricAdmission::Stored, MetricAdmission::Repeated, MetricAdmission::Stored, MetricAdmission::Stored]
    );
    let stored = store.metrics_for_trial(t.id, None, true).await.unwrap();
    let rows: Vec<(String, i64, serde_json::Value)> =
        stored.iter().map(|m| (m.group.clone(), m.steps_completed, m.avg_metrics["loss"].clone())).collect();
    assert_eq!(rows.iter().filter(|(g, s, _)| g == TRAINING_GROUP && *s == 1).count(), 1, "{rows:?}");
    assert_eq!(rows.len(), 4, "{rows:?}");
}
