use resolute_store::{BestValidation, MetricRecord, SearcherMetric, Store, StoreError, TRAINING_GROUP, VALIDATION_GROUP};
use serde_json::json;

use crate::fixtures::{at, experiment, report, trial};

fn steps(metrics: &[MetricRecord]) -> Vec<(i64, i32)> {
    metrics.iter().map(|m| (m.steps_completed, m.trial_run_id)).collect()
}

fn searcher() -> Option<SearcherMetric> {
    Some(SearcherMetric { name: "loss".into(), smaller_is_better: true })
}

pub async fn batch_insert_updates_summary(store: &dyn Store) {
    let e = experiment(store, "metrics").await;
    let t = trial(store, e.id, 1).await;
    let other = trial(store, e.id, 2).await;
    let mut batch = vec![
        report(t.id, 1, TRAINING_GROUP, 200, json!({"loss": 2.0, "lr": 0.1})),
        report(t.id, 1, TRAINING_GROUP, 100, json!({"loss": 4.0, "phase": "warmup"})),
        report(t.id, 1, TRAINING_GROUP, 300, json!({"loss": 3.0, "phase": "main"})),
        report(other.id, 1, "custom", 50, json!({"x": 1})),
    ];
    batch[0].batch_metrics = vec![json!({"loss": 2.5}), json!({"loss": 1.5})];
    let mut validation = report(t.id, 1, VALIDATION_GROUP, 300, json!({"loss": 0.75, "accuracy": 0.5}));
    validation.searcher_metric = searcher();
    batch.push(validation);
    store.insert_metrics(&batch).await.unwrap();
    let mut worse = report(t.id, 1, VALIDATION_GROUP, 350, json!({"loss": 1.25}));
    worse.searcher_metric = searcher();
    store.insert_metrics(&[worse]).await.unwrap();
    store.insert_metrics(&[]).await.unwrap();

    let training = store.metrics_for_trial(t.id, Some(TRAINING_GROUP), false).await.unwrap();
    assert_eq!(steps(&training), [(100, 1), (200, 1), (300, 1)], "ordered by steps completed");
    assert_eq!(training[1].avg_metrics, json!({"loss": 2.0, "lr": 0.1}).as_object().cloned().unwrap());
    assert_eq!(training[1].batch_metrics, [json!({"loss": 2.5}), json!({"loss": 1.5})]);
    assert!(training[0].batch_metrics.is_empty());
    assert_eq!((training[1].group.as_str(), training[1].report_time, training[1].archived), (TRAINING_GROUP, at(200), false));
    assert_eq!(store.metrics_for_trial(t.id, None, false).await.unwrap().len(), 5);
    assert_eq!(store.metrics_for_trial(t.id, Some("nope"), false).await.unwrap().len(), 0);

    let after = store.trial_by_id(t.id).await.unwrap();
    assert_eq!(after.total_batches, 350);
    assert_eq!(after.best_validation, Some(0.75), "a worse validation does not replace the best");
    let summary = &after.summary_metrics;
    assert_eq!(summary["training"]["loss"], json!({"count": 3, "last": 3.0, "type": "number", "min": 2.0, "max": 4.0, "sum": 9.0}));
    assert_eq!(summary["training"]["lr"]["count"], 1);
    assert_eq!(summary["training"]["phase"], json!({"count": 2, "last": "main", "type": "string"}));
    assert_eq!(summary["validation"]["loss"], json!({"count": 2, "last": 1.25, "type": "number", "min": 0.75, "max": 1.25, "sum": 2.0}));
    assert_eq!(summary["validation"]["accuracy"]["last"], 0.5);
    let other = store.trial_by_id(other.id).await.unwrap();
    assert_eq!(other.total_batches, 50);
    assert_eq!(
        other.summary_metrics,
        json!({"custom": {"x": {"count": 1, "last": 1, "type": "number", "min": 1.0, "max": 1.0, "sum": 1.0}}})
    );
    assert_eq!(other.best_validation, None);

    let latest = store.latest_validation(t.id).await.unwrap().unwrap();
    assert_eq!((latest.steps_completed, latest.avg_metrics["loss"].as_f64()), (350, Some(1.25)));
    assert_eq!(store.latest_validation(other.id).await.unwrap(), None);
}

pub async fn large_batch_spans_statements(store: &dyn Store) {
    let e = experiment(store, "large").await;
    let t = trial(store, e.id, 1).await;
    let batch: Vec<_> = (1..=2500).map(|i| report(t.id, 1, TRAINING_GROUP, i, json!({"loss": i}))).collect();
    store.insert_metrics(&batch).await.unwrap();
    let stored = store.metrics_for_trial(t.id, None, false).await.unwrap();
    assert_eq!(stored.len(), 2500);
    assert!(stored.iter().enumerate().all(|(i, m)| m.steps_completed == i as i64 + 1));
    let after = store.trial_by_id(t.id).await.unwrap();
    assert_eq!(after.total_batches, 2500);
    assert_eq!(after.summary_metrics["training"]["loss"]["count"], 2500);
    assert_eq!(after.summary_metrics["training"]["loss"]["sum"], 2500.0 * 2501.0 / 2.0);
}

/// Run 1 reports steps 100..500; run 2 restores the checkpoint at 200 and reports 300.
pub async fn restart_rollback_archives_superseded_rows(store: &dyn Store) {
    let e = experiment(store, "rollback").await;
    let t = trial(store, e.id, 1).await;
    let run1: Vec<_> = (1..=5).map(|i| report(t.id, 1, TRAINING_GROUP, i * 100, json!({"loss": i}))).collect();
    store.insert_metrics(&run1).await.unwrap();
    store.insert_metrics(&[report(t.id, 1, VALIDATION_GROUP, 500, json!({"loss": 5}))]).await.unwrap();
    assert_eq!(store.trial_by_id(t.id).await.unwrap().total_batches, 500);

    // The restore itself archives what run 1 did past the checkpoint, in every group.
    assert_eq!(store.archive_metrics_after(t.id, 2, 200, None).await.unwrap(), 4);
    store.insert_metrics(&[report(t.id, 2, TRAINING_GROUP, 300, json!({"loss": 30}))]).await.unwrap();

    let live = store.metrics_for_trial(t.id, Some(TRAINING_GROUP), false).await.unwrap();
    assert_eq!(steps(&live), [(100, 1), (200, 1), (300, 2)], "queries exclude archived rows");
    let everything = store.metrics_for_trial(t.id, Some(TRAINING_GROUP), true).await.unwrap();
    assert_eq!(everything.iter().filter(|m| m.archived).map(|m| m.steps_completed).collect::<Vec<_>>(), [300, 400, 500]);
    assert_eq!(store.latest_validation(t.id).await.unwrap(), None);
    let after = store.trial_by_id(t.id).await.unwrap();
    assert_eq!(after.total_batches, 300, "recomputed from live rows");
    assert_eq!(
        after.summary_metrics["training"]["loss"],
        json!({"count": 3, "last": 30, "type": "number", "min": 1.0, "max": 30.0, "sum": 33.0})
    );
    assert!(after.summary_metrics.get("validation").is_none());
    // Nothing left to archive: idempotent.
    assert_eq!(store.archive_metrics_after(t.id, 2, 200, None).await.unwrap(), 0);
    assert!(matches!(store.archive_metrics_after(9999, 2, 0, None).await, Err(StoreError::NotFound { entity: "trial", .. })));
}

/// Without an explicit restore, a report of a later run archives earlier runs' rows past it, in
/// its own group only.
pub async fn report_of_later_run_applies_rollback_rule(store: &dyn Store) {
    let e = experiment(store, "implicit").await;
    let t = trial(store, e.id, 1).await;
    let mut run1: Vec<_> = (1..=5).map(|i| report(t.id, 1, TRAINING_GROUP, i * 100, json!({"loss": i}))).collect();
    run1.push(report(t.id, 1, VALIDATION_GROUP, 500, json!({"loss": 5})));
    store.insert_metrics(&run1).await.unwrap();
    store.insert_metrics(&[report(t.id, 2, TRAINING_GROUP, 300, json!({"loss": 30}))]).await.unwrap();
    let live = store.metrics_for_trial(t.id, Some(TRAINING_GROUP), false).await.unwrap();
    assert_eq!(steps(&live), [(100, 1), (200, 1), (300, 1), (300, 2)], "rows past 300 of run 1 are archived");
    assert_eq!(store.metrics_for_trial(t.id, Some(VALIDATION_GROUP), false).await.unwrap().len(), 1, "other groups untouched");
    let after = store.trial_by_id(t.id).await.unwrap();
    assert_eq!(after.total_batches, 500, "the validation at 500 is still live");
    assert_eq!(after.summary_metrics["training"]["loss"]["count"], 4);

    // A batch that itself mixes runs archives its superseded rows too.
    let t2 = trial(store, e.id, 2).await;
    store
        .insert_metrics(&[
            report(t2.id, 1, TRAINING_GROUP, 100, json!({})),
            report(t2.id, 1, TRAINING_GROUP, 200, json!({})),
            report(t2.id, 2, TRAINING_GROUP, 150, json!({})),
        ])
        .await
        .unwrap();
    assert_eq!(steps(&store.metrics_for_trial(t2.id, None, false).await.unwrap()), [(100, 1), (150, 2)]);
    assert_eq!(store.trial_by_id(t2.id).await.unwrap().total_batches, 150);
}

pub async fn best_validation_across_experiment(store: &dyn Store) {
    let e = experiment(store, "best").await;
    let a = trial(store, e.id, 1).await;
    let b = trial(store, e.id, 2).await;
    let elsewhere = experiment(store, "elsewhere").await;
    let c = trial(store, elsewhere.id, 1).await;
    store
        .insert_metrics(&[
            report(a.id, 1, VALIDATION_GROUP, 100, json!({"loss": 0.5, "acc": 0.7})),
            report(a.id, 1, VALIDATION_GROUP, 200, json!({"loss": 0.3, "acc": 0.8})),
            report(b.id, 1, VALIDATION_GROUP, 100, json!({"loss": 0.4, "acc": 0.9})),
            report(b.id, 1, VALIDATION_GROUP, 150, json!({"acc": "n/a"})),
            report(b.id, 1, TRAINING_GROUP, 100, json!({"loss": 0.01, "acc": 0.99})),
            report(c.id, 1, VALIDATION_GROUP, 100, json!({"loss": 0.0001, "acc": 1.0})),
        ])
        .await
        .unwrap();
    let best = |name: &'static str, smaller: bool| async move { store.best_validation_for_experiment(e.id, name, smaller).await.unwrap() };
    assert_eq!(best("loss", true).await, Some(BestValidation { trial_id: a.id, steps_completed: 200, value: 0.3 }));
    assert_eq!(best("loss", false).await, Some(BestValidation { trial_id: a.id, steps_completed: 100, value: 0.5 }));
    assert_eq!(best("acc", false).await, Some(BestValidation { trial_id: b.id, steps_completed: 100, value: 0.9 }));
    assert_eq!(best("acc", true).await, Some(BestValidation { trial_id: a.id, steps_completed: 100, value: 0.7 }));
    assert_eq!(best("missing", true).await, None);

    // Archived validations no longer count.
    store.insert_metrics(&[report(a.id, 2, VALIDATION_GROUP, 150, json!({"loss": 0.45}))]).await.unwrap();
    assert_eq!(best("loss", true).await, Some(BestValidation { trial_id: b.id, steps_completed: 100, value: 0.4 }));
}

pub async fn failing_metrics_batch_writes_nothing(store: &dyn Store) {
    let e = experiment(store, "atomic").await;
    let t = trial(store, e.id, 1).await;
    store.insert_metrics(&[report(t.id, 1, TRAINING_GROUP, 10, json!({"loss": 1}))]).await.unwrap();
    let before = store.trial_by_id(t.id).await.unwrap();
    let batch: Vec<_> = (2..=1500)
        .map(|i| report(t.id, 1, TRAINING_GROUP, i * 10, json!({"loss": i})))
        .chain([report(9999, 1, TRAINING_GROUP, 1, json!({}))])
        .collect();
    let err = store.insert_metrics(&batch).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "trial", .. }), "{err:?}");
    assert_eq!(store.metrics_for_trial(t.id, None, true).await.unwrap().len(), 1, "no row of the batch was kept");
    assert_eq!(store.trial_by_id(t.id).await.unwrap(), before, "the trial's summary is untouched");
    // The store is still usable afterwards.
    store.insert_metrics(&[report(t.id, 1, TRAINING_GROUP, 20, json!({"loss": 2}))]).await.unwrap();
    assert_eq!(store.trial_by_id(t.id).await.unwrap().total_batches, 20);
}
