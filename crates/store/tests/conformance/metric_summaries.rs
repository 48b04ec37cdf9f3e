//! Summary rows that metric batches leave behind (see `store/src/sql/summary_cache.rs`):
//! readers still see current totals, a flush writes them, an archive's recompute wins over a
//! stale copy, and a store opened after an unclean stop re-derives them from the metrics.

use resolute_store::{SqlStore, Store, TRAINING_GROUP, TrialFilter};
use serde_json::json;

use crate::fixtures::{experiment, report, trial};
use crate::harness::Reopenable;

fn loss(summary: &serde_json::Value) -> serde_json::Value {
    summary["training"]["loss"].clone()
}

pub async fn deferred_summary_reads_current_and_flushes(store: &dyn Store) {
    let e = experiment(store, "deferred").await;
    let t = trial(store, e.id, 1).await;
    // The first batch writes the row; those right after it only fold into the writer's copy.
    for steps in 1..=5 {
        store.insert_metrics(&[report(t.id, 1, TRAINING_GROUP, steps * 10, json!({"loss": steps}))]).await.unwrap();
    }
    let expected = json!({"count": 5, "last": 5, "type": "number", "min": 1.0, "max": 5.0, "sum": 15.0});
    let read = store.trial_by_id(t.id).await.unwrap();
    assert_eq!((loss(&read.summary_metrics), read.total_batches), (expected.clone(), 50));
    let by_task = store.trial_by_task_id(&t.task_id).await.unwrap();
    assert_eq!(by_task.total_batches, 50);
    let page = store.list_trials(&TrialFilter { experiment_id: e.id, ..Default::default() }).await.unwrap();
    assert_eq!(loss(&page.trials[0].summary_metrics), expected);

    store.flush_metric_summaries(true).await.unwrap();
    assert_eq!(store.flush_metric_summaries(true).await.unwrap(), 0, "nothing is behind any more");
    let read = store.trial_by_id(t.id).await.unwrap();
    assert_eq!((loss(&read.summary_metrics), read.total_batches), (expected, 50));

    // After a flush the next batch writes the row again, and later ones defer again.
    for steps in 6..=7 {
        store.insert_metrics(&[report(t.id, 1, TRAINING_GROUP, steps * 10, json!({"loss": steps}))]).await.unwrap();
    }
    let read = store.trial_by_id(t.id).await.unwrap();
    assert_eq!((read.summary_metrics["training"]["loss"]["count"].clone(), read.total_batches), (json!(7), 70));
}

pub async fn archive_recompute_replaces_a_deferred_summary(store: &dyn Store) {
    let e = experiment(store, "deferred-archive").await;
    let t = trial(store, e.id, 1).await;
    for steps in 1..=4 {
        store.insert_metrics(&[report(t.id, 1, TRAINING_GROUP, steps * 10, json!({"loss": steps}))]).await.unwrap();
    }
    // A run restored from the checkpoint at 20 steps: 30 and 40 no longer count.
    assert_eq!(store.archive_metrics_after(t.id, 2, 20, None).await.unwrap(), 2);
    let read = store.trial_by_id(t.id).await.unwrap();
    assert_eq!((read.summary_metrics["training"]["loss"]["count"].clone(), read.total_batches), (json!(2), 20));
    store.insert_metrics(&[report(t.id, 2, TRAINING_GROUP, 30, json!({"loss": 9}))]).await.unwrap();
    store.insert_metrics(&[report(t.id, 2, TRAINING_GROUP, 40, json!({"loss": 10}))]).await.unwrap();
    store.flush_metric_summaries(true).await.unwrap();
    let read = store.trial_by_id(t.id).await.unwrap();
    assert_eq!(loss(&read.summary_metrics), json!({"count": 4, "last": 10, "type": "number", "min": 1.0, "max": 10.0, "sum": 22.0}));
    assert_eq!(read.total_batches, 40);
}

/// Stops a store without flushing (as a crash would) and opens the database again.
async fn repaired_after_unclean_stop(db: Reopenable) {
    let store = db.open().await;
    let e = experiment(&store, "unclean").await;
    let t = trial(&store, e.id, 1).await;
    for steps in 1..=3 {
        store.insert_metrics(&[report(t.id, 1, TRAINING_GROUP, steps, json!({"loss": steps}))]).await.unwrap();
    }
    assert_eq!(db.row_total_batches(t.id).await, 1, "the later batches left the row behind");
    store.close().await;
    drop(store);

    let store: SqlStore = db.open().await;
    let read = store.trial_by_id(t.id).await.unwrap();
    assert_eq!(loss(&read.summary_metrics), json!({"count": 3, "last": 3, "type": "number", "min": 1.0, "max": 3.0, "sum": 6.0}));
    assert_eq!(read.total_batches, 3);
    assert_eq!(store.flush_metric_summaries(true).await.unwrap(), 0, "the repair cleared the mark");
}

#[tokio::test]
async fn repaired_after_unclean_stop_sqlite() {
    repaired_after_unclean_stop(Reopenable::sqlite()).await;
}

#[tokio::test]
async fn repaired_after_unclean_stop_postgres() {
    if let Some(db) = Reopenable::postgres().await {
        repaired_after_unclean_stop(db).await;
    }
}
