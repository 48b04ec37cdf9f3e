//! `metric_series`: a trial's live reports of a group as columns, in step order whatever order
//! they were reported in, and never stale: a report added or archived after a read shows in the
//! next read (the store keeps read series in memory).

use resolute_store::{CurrentMetricReport, MetricSeries, Store, TRAINING_GROUP, VALIDATION_GROUP};
use serde_json::{Value, json};

use crate::fixtures::{at, experiment, report, trial};
use crate::metrics_current::open_session;

fn points(s: &MetricSeries, name: &str) -> Vec<(i64, Option<Value>)> {
    let column = s.column(name);
    (0..s.len()).map(|row| (s.steps[row], column.and_then(|c| c.value(row)))).collect()
}

pub async fn series_are_in_step_order_and_complete(store: &dyn Store) {
    let e = experiment(store, "series").await;
    let t = trial(store, e.id, 1).await;
    let other = trial(store, e.id, 2).await;
    // Out of order, across batches, with a second group and another trial in between.
    store
        .insert_metrics(&[
            report(t.id, 1, TRAINING_GROUP, 300, json!({"loss": 0.3, "epoch": 3})),
            report(t.id, 1, TRAINING_GROUP, 100, json!({"loss": 1, "phase": "warmup"})),
            report(other.id, 1, TRAINING_GROUP, 100, json!({"loss": 9.0})),
            report(t.id, 1, VALIDATION_GROUP, 300, json!({"accuracy": 0.5})),
        ])
        .await
        .unwrap();
    store.insert_metrics(&[report(t.id, 1, TRAINING_GROUP, 200, json!({"loss": 0.5, "lr": 0.01}))]).await.unwrap();

    let s = store.metric_series(t.id, TRAINING_GROUP).await.unwrap();
    assert_eq!(s.steps, [100, 200, 300]);
    assert_eq!(s.names, ["epoch", "loss", "lr", "phase"]);
    assert_eq!(points(&s, "loss"), [(100, Some(json!(1))), (200, Some(json!(0.5))), (300, Some(json!(0.3)))]);
    assert_eq!(points(&s, "lr"), [(100, None), (200, Some(json!(0.01))), (300, None)]);
    assert_eq!(s.column("phase").unwrap().value(0), Some(json!("warmup")));
    assert_eq!(s.report_time(0), at(100));
    let v = store.metric_series(t.id, VALIDATION_GROUP).await.unwrap();
    assert_eq!(points(&v, "accuracy"), [(300, Some(json!(0.5)))]);
    assert!(store.metric_series(t.id, "nope").await.unwrap().is_empty());
    assert_eq!(store.metric_series(other.id, TRAINING_GROUP).await.unwrap().steps, [100]);
    assert!(store.metric_series(9999, TRAINING_GROUP).await.unwrap().is_empty());

    // An unchanged series is not read again: no report body is decoded.
    let decoded = store.metric_rows_decoded();
    assert_eq!(store.metric_series(t.id, TRAINING_GROUP).await.unwrap().steps, [100, 200, 300]);
    assert_eq!(store.metric_rows_decoded(), decoded, "the second read of an unchanged series decodes nothing");

    // Read again after a late report between two others: it is there, in its place.
    store.insert_metrics(&[report(t.id, 1, TRAINING_GROUP, 150, json!({"loss": 7.0}))]).await.unwrap();
    let s = store.metric_series(t.id, TRAINING_GROUP).await.unwrap();
    assert_eq!(points(&s, "loss").iter().map(|p| p.0).collect::<Vec<_>>(), [100, 150, 200, 300]);
    assert_eq!(s.column("loss").unwrap().value(1), Some(json!(7.0)));
}

pub async fn series_drop_what_a_restart_archived(store: &dyn Store) {
    let e = experiment(store, "series-restart").await;
    let t = trial(store, e.id, 1).await;
    let run1: Vec<_> = (1..=5).map(|i| report(t.id, 1, TRAINING_GROUP, i * 100, json!({"loss": i}))).collect();
    store.insert_metrics(&run1).await.unwrap();
    assert_eq!(store.metric_series(t.id, TRAINING_GROUP).await.unwrap().steps, [100, 200, 300, 400, 500]);

    // A report of run 2 at 250 archives run 1's rows past it (the rollback rule).
    store.insert_metrics(&[report(t.id, 2, TRAINING_GROUP, 250, json!({"loss": 25}))]).await.unwrap();
    let s = store.metric_series(t.id, TRAINING_GROUP).await.unwrap();
    assert_eq!(points(&s, "loss"), [(100, Some(json!(1))), (200, Some(json!(2))), (250, Some(json!(25)))]);

    // An explicit restore to 100 archives again.
    store.archive_metrics_after(t.id, 3, 100, None).await.unwrap();
    assert_eq!(store.metric_series(t.id, TRAINING_GROUP).await.unwrap().steps, [100]);
}

pub async fn series_see_reports_of_running_tasks(store: &dyn Store) {
    let e = experiment(store, "series-running").await;
    let t = trial(store, e.id, 1).await;
    let (_, session) = open_session(store, &t, e.owner_id).await;
    let current = |steps: i64| CurrentMetricReport {
        report: report(t.id, 1, TRAINING_GROUP, steps, json!({"loss": steps})),
        allocation_session_id: Some(session),
    };
    store.insert_metrics_if_current(&[current(20), current(10)]).await.unwrap();
    assert_eq!(store.metric_series(t.id, TRAINING_GROUP).await.unwrap().steps, [10, 20]);
    store.insert_metrics_if_current(&[current(15)]).await.unwrap();
    assert_eq!(store.metric_series(t.id, TRAINING_GROUP).await.unwrap().steps, [10, 15, 20]);
}
