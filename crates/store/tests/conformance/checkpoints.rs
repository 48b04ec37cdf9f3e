use std::collections::BTreeMap;

use resolute_store::{CheckpointFilter, CheckpointGcPolicy, CheckpointPage, CheckpointSort, OrderDirection, Store, StoreError};
use serde_json::json;

use crate::fixtures::{checkpoint, experiment, trial};

fn uuids(page: CheckpointPage) -> Vec<String> {
    page.checkpoints.into_iter().map(|c| c.uuid).collect()
}

pub async fn report_is_idempotent_and_tracks_latest(store: &dyn Store) {
    let e = experiment(store, "ckpt").await;
    let t = trial(store, e.id, 1).await;
    let new = checkpoint(&t, "c-200", 200, Some(0.5));
    let stored = store.report_checkpoint(new.clone()).await.unwrap();
    assert_eq!(stored.uuid, "c-200");
    assert_eq!((stored.task_id.as_str(), stored.allocation_id.as_deref()), (t.task_id.as_str(), new.allocation_id.as_deref()));
    assert_eq!((stored.trial_id, stored.experiment_id), (Some(t.id), Some(e.id)));
    assert_eq!((stored.report_time, stored.state.as_str()), (new.report_time, "STATE_COMPLETED"));
    assert_eq!(stored.resources, new.resources);
    assert_eq!(stored.size, 1200 + 24, "size is the sum of the resources");
    assert_eq!(stored.metadata, json!({"steps_completed": 200, "framework": "torch"}));
    assert_eq!((stored.steps_completed, stored.storage_id, stored.searcher_metric), (200, Some(1), Some(0.5)));
    assert_eq!(store.checkpoint_by_uuid("c-200").await.unwrap(), stored);
    assert_eq!(store.trial_by_id(t.id).await.unwrap().latest_checkpoint_uuid.as_deref(), Some("c-200"));

    // Reporting the same uuid again replaces it rather than failing or duplicating.
    let mut again = new.clone();
    again.metadata = json!({"steps_completed": 200, "merged": true});
    again.resources.insert("extra.bin".into(), 76);
    let replaced = store.report_checkpoint(again).await.unwrap();
    assert_eq!((replaced.size, replaced.metadata["merged"].as_bool()), (1300, Some(true)));
    let all = CheckpointFilter { trial_id: Some(t.id), ..Default::default() };
    assert_eq!(store.list_checkpoints(&all).await.unwrap().total, 1);

    // Only a completed checkpoint with at least as many steps becomes the trial's latest.
    store.report_checkpoint(checkpoint(&t, "c-100", 100, None)).await.unwrap();
    let mut partial = checkpoint(&t, "c-300", 300, None);
    partial.state = "STATE_PARTIALLY_DELETED".into();
    store.report_checkpoint(partial).await.unwrap();
    assert_eq!(store.trial_by_id(t.id).await.unwrap().latest_checkpoint_uuid.as_deref(), Some("c-200"));
    store.report_checkpoint(checkpoint(&t, "c-400", 400, None)).await.unwrap();
    assert_eq!(store.trial_by_id(t.id).await.unwrap().latest_checkpoint_uuid.as_deref(), Some("c-400"));

    // A checkpoint outside any trial (e.g. from a generic task).
    let mut loose = checkpoint(&t, "loose", 0, None);
    (loose.trial_id, loose.experiment_id, loose.allocation_id) = (None, None, None);
    assert_eq!(store.report_checkpoint(loose).await.unwrap().trial_id, None);
    assert!(matches!(store.checkpoint_by_uuid("nope").await, Err(StoreError::NotFound { entity: "checkpoint", .. })));
}

pub async fn state_and_resources_updates(store: &dyn Store) {
    let e = experiment(store, "ckpt-state").await;
    let t = trial(store, e.id, 1).await;
    for (uuid, steps) in [("a", 1), ("b", 2), ("c", 3)] {
        store.report_checkpoint(checkpoint(&t, uuid, steps, None)).await.unwrap();
    }
    let changed = store.set_checkpoints_state(&["a".into(), "b".into(), "missing".into()], "STATE_DELETED").await.unwrap();
    assert_eq!(changed, 2);
    assert_eq!(store.set_checkpoints_state(&[], "STATE_DELETED").await.unwrap(), 0);
    assert_eq!(store.checkpoint_by_uuid("a").await.unwrap().state, "STATE_DELETED");
    assert_eq!(store.checkpoint_by_uuid("c").await.unwrap().state, "STATE_COMPLETED");

    let remaining = BTreeMap::from([("metadata.json".to_owned(), 24)]);
    store.set_checkpoint_resources("c", &remaining, "STATE_PARTIALLY_DELETED").await.unwrap();
    let c = store.checkpoint_by_uuid("c").await.unwrap();
    assert_eq!((c.resources, c.size, c.state.as_str()), (remaining.clone(), 24, "STATE_PARTIALLY_DELETED"));
    assert!(matches!(store.set_checkpoint_resources("nope", &remaining, "x").await, Err(StoreError::NotFound { .. })));

    let deleted = CheckpointFilter { experiment_id: Some(e.id), states: vec!["STATE_DELETED".into()], ..Default::default() };
    assert_eq!(uuids(store.list_checkpoints(&deleted).await.unwrap()), ["a", "b"]);
}

pub async fn list_sorts_searcher_metric_nulls_last(store: &dyn Store) {
    let e = experiment(store, "ckpt-list").await;
    let t1 = trial(store, e.id, 1).await;
    let t2 = trial(store, e.id, 2).await;
    let other = experiment(store, "other").await;
    let t3 = trial(store, other.id, 1).await;
    for (t, uuid, steps, metric) in [
        (&t1, "u1", 300, Some(0.5)),
        (&t2, "u2", 100, None),
        (&t1, "u3", 200, Some(0.2)),
        (&t2, "u4", 400, Some(0.9)),
        (&t3, "x", 1, Some(0.0)),
    ] {
        store.report_checkpoint(checkpoint(t, uuid, steps, metric)).await.unwrap();
    }
    store.set_checkpoints_state(&["u4".into()], "STATE_DELETED").await.unwrap();
    let list = |sort, order, trial_id: Option<i32>| {
        let f = CheckpointFilter { experiment_id: Some(e.id), trial_id, sort, order, ..Default::default() };
        async move { uuids(store.list_checkpoints(&f).await.unwrap()) }
    };
    use CheckpointSort::*;
    use OrderDirection::*;
    assert_eq!(list(Uuid, Asc, None).await, ["u1", "u2", "u3", "u4"], "only this experiment's");
    assert_eq!(list(Uuid, Desc, None).await, ["u4", "u3", "u2", "u1"]);
    assert_eq!(list(SearcherMetric, Asc, None).await, ["u3", "u1", "u4", "u2"], "no metric sorts last");
    assert_eq!(list(SearcherMetric, Desc, None).await, ["u4", "u1", "u3", "u2"], "no metric sorts last descending too");
    assert_eq!(list(BatchNumber, Desc, None).await, ["u4", "u1", "u3", "u2"]);
    assert_eq!(list(EndTime, Asc, None).await, ["u2", "u3", "u1", "u4"]);
    assert_eq!(list(TrialId, Asc, None).await, ["u1", "u3", "u2", "u4"], "ties break by uuid");
    assert_eq!(list(State, Desc, None).await, ["u4", "u3", "u2", "u1"]);
    assert_eq!(list(SearcherMetric, Asc, Some(t2.id)).await, ["u4", "u2"]);
    let completed = CheckpointFilter {
        experiment_id: Some(e.id),
        states: vec!["STATE_COMPLETED".into()],
        sort: SearcherMetric,
        offset: 1,
        limit: Some(1),
        ..Default::default()
    };
    let page = store.list_checkpoints(&completed).await.unwrap();
    assert_eq!(page.total, 3, "total counts every match, not just the page");
    assert_eq!(uuids(page), ["u1"]);
    let everything = store.list_checkpoints(&CheckpointFilter::default()).await.unwrap();
    assert_eq!(everything.total, 5);
}

/// Two trials of five checkpoints each (metric: smaller is better unless said otherwise).
///
/// | steps | t1  | t2   |
/// |-------|-----|------|
/// | 100   | 0.9 | 0.95 |
/// | 200   | 0.5 | 0.85 |
/// | 300   | 0.7 | 0.4  |
/// | 400   | 0.6 | —    |
/// | 500   | 0.8 | 0.65 |
pub async fn gc_policy_selects_upstream_victims(store: &dyn Store) {
    let e = experiment(store, "gc").await;
    let t1 = trial(store, e.id, 1).await;
    let t2 = trial(store, e.id, 2).await;
    let table = [
        (100, Some(0.9), Some(0.95)),
        (200, Some(0.5), Some(0.85)),
        (300, Some(0.7), Some(0.4)),
        (400, Some(0.6), None),
        (500, Some(0.8), Some(0.65)),
    ];
    let mut batch = Vec::new();
    for (steps, m1, m2) in table {
        batch.push(checkpoint(&t1, &format!("t1-{steps}"), steps, m1));
        batch.push(checkpoint(&t2, &format!("t2-{steps}"), steps, m2));
    }
    // Not completed: neither ranked nor deleted, although it has the best metric of all.
    batch.push(checkpoint(&t1, "t1-deleted", 250, Some(0.01)));
    // Another experiment's checkpoint is never considered.
    let other = experiment(store, "other").await;
    let t3 = trial(store, other.id, 1).await;
    batch.push(checkpoint(&t3, "t3-100", 100, Some(9.0)));
    store.report_checkpoints(&batch).await.unwrap();
    store.set_checkpoints_state(&["t1-deleted".into()], "STATE_DELETED").await.unwrap();

    let gc = |save_experiment_best, save_trial_best, save_trial_latest, smaller_is_better| {
        let policy = CheckpointGcPolicy { save_experiment_best, save_trial_best, save_trial_latest, smaller_is_better };
        async move { store.checkpoints_to_gc(e.id, &policy).await.unwrap() }
    };
    // Kept: experiment best t2-300; trial bests t1-200, t2-300; latest t1-500, t2-500.
    assert_eq!(gc(1, 1, 1, true).await, ["t1-100", "t1-300", "t1-400", "t2-100", "t2-200", "t2-400"]);
    // Larger is better. Kept: experiment best t2-100; trial bests t1-100, t2-100; latest.
    assert_eq!(gc(1, 1, 1, false).await, ["t1-200", "t1-300", "t1-400", "t2-200", "t2-300", "t2-400"]);
    // Upstream's default (0, 1, 1): the trial bests and latests.
    assert_eq!(gc(0, 1, 1, true).await, ["t1-100", "t1-300", "t1-400", "t2-100", "t2-200", "t2-400"]);
    // Only the two best of the experiment: t2-300 (0.4) and t1-200 (0.5).
    assert_eq!(gc(2, 0, 0, true).await, ["t1-100", "t1-300", "t1-400", "t1-500", "t2-100", "t2-200", "t2-400", "t2-500"]);
    // Only the two latest of each trial.
    assert_eq!(gc(0, 0, 2, true).await, ["t1-100", "t1-200", "t1-300", "t2-100", "t2-200", "t2-300"]);
    // A checkpoint without a metric goes unless it is among the latest, even with room for it
    // among the bests.
    assert_eq!(gc(100, 100, 0, true).await, ["t2-400"]);
    assert_eq!(gc(100, 100, 2, true).await, Vec::<String>::new());
    // Keeping everything by every measure deletes nothing.
    assert_eq!(gc(0, 0, 5, true).await, Vec::<String>::new());
    assert_eq!(
        store
            .checkpoints_to_gc(
                9999,
                &CheckpointGcPolicy { save_experiment_best: 0, save_trial_best: 0, save_trial_latest: 0, smaller_is_better: true }
            )
            .await
            .unwrap(),
        Vec::<String>::new()
    );
}

pub async fn failing_checkpoint_batch_writes_nothing(store: &dyn Store) {
    let e = experiment(store, "ckpt-atomic").await;
    let t = trial(store, e.id, 1).await;
    let all = CheckpointFilter { experiment_id: Some(e.id), ..Default::default() };

    let duplicate = [checkpoint(&t, "d1", 1, None), checkpoint(&t, "d2", 2, None), checkpoint(&t, "d1", 3, None)];
    let err = store.report_checkpoints(&duplicate).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { entity: "checkpoint", .. }), "{err:?}");
    assert_eq!(store.list_checkpoints(&all).await.unwrap().total, 0, "the rows before the duplicate were rolled back");
    assert_eq!(store.trial_by_id(t.id).await.unwrap().latest_checkpoint_uuid, None);

    let mut orphan = checkpoint(&t, "o2", 2, None);
    orphan.trial_id = Some(9999);
    let err = store.report_checkpoints(&[checkpoint(&t, "o1", 1, None), orphan]).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "trial", .. }), "{err:?}");
    let mut orphan = checkpoint(&t, "o3", 2, None);
    orphan.experiment_id = Some(9999);
    let err = store.report_checkpoints(&[checkpoint(&t, "o1", 1, None), orphan]).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "experiment", .. }), "{err:?}");
    assert_eq!(store.list_checkpoints(&all).await.unwrap().total, 0);
    assert_eq!(store.trial_by_id(t.id).await.unwrap().latest_checkpoint_uuid, None);

    store.report_checkpoints(&[checkpoint(&t, "ok", 1, None)]).await.unwrap();
    assert_eq!(store.list_checkpoints(&all).await.unwrap().total, 1, "the store is usable afterwards");
}

pub async fn late_validation_gives_checkpoint_its_metric(store: &dyn Store) {
    let e = experiment(store, "ckpt-late").await;
    let t = trial(store, e.id, 1).await;
    // The harness ships metrics from a background thread: the checkpoint can arrive first.
    store.report_checkpoint(checkpoint(&t, "early", 500, None)).await.unwrap();
    store.report_checkpoint(checkpoint(&t, "kept", 400, Some(0.9))).await.unwrap();
    let mut validation = crate::fixtures::report(t.id, 1, "validation", 500, json!({"loss": 0.25}));
    validation.searcher_metric = Some(resolute_store::SearcherMetric { name: "loss".into(), smaller_is_better: true });
    let mut other = crate::fixtures::report(t.id, 1, "validation", 400, json!({"loss": 0.5}));
    other.searcher_metric = validation.searcher_metric.clone();
    store.insert_metrics(&[validation, other]).await.unwrap();
    assert_eq!(store.checkpoint_by_uuid("early").await.unwrap().searcher_metric, Some(0.25));
    assert_eq!(store.checkpoint_by_uuid("kept").await.unwrap().searcher_metric, Some(0.9), "a known metric is not overwritten");
}

/// GC settles checkpoints stored without a searcher metric: they are listed (completed ones of
/// trials of the experiment only), and setting the metric is seen by the GC ranking.
pub async fn checkpoints_missing_metric_are_listed_and_settled(store: &dyn Store) {
    let e = experiment(store, "ckpt-missing").await;
    let other = experiment(store, "ckpt-missing-other").await;
    let t = trial(store, e.id, 1).await;
    let u = trial(store, other.id, 1).await;
    store.report_checkpoint(checkpoint(&t, "m-b", 200, None)).await.unwrap();
    store.report_checkpoint(checkpoint(&t, "m-a", 100, None)).await.unwrap();
    store.report_checkpoint(checkpoint(&t, "m-known", 300, Some(0.5))).await.unwrap();
    store.report_checkpoint(checkpoint(&u, "m-other", 100, None)).await.unwrap();
    let mut active = checkpoint(&t, "m-active", 400, None);
    active.state = "STATE_ACTIVE".into();
    store.report_checkpoint(active).await.unwrap();
    assert_eq!(store.checkpoints_missing_metric(e.id).await.unwrap(), vec![("m-a".to_owned(), t.id, 100), ("m-b".to_owned(), t.id, 200)]);
    store.set_checkpoint_searcher_metric("m-a", 0.1).await.unwrap();
    assert_eq!(store.checkpoint_by_uuid("m-a").await.unwrap().searcher_metric, Some(0.1));
    assert_eq!(store.checkpoints_missing_metric(e.id).await.unwrap(), vec![("m-b".to_owned(), t.id, 200)]);
    let policy =
        resolute_store::CheckpointGcPolicy { save_experiment_best: 0, save_trial_best: 2, save_trial_latest: 0, smaller_is_better: true };
    assert_eq!(store.checkpoints_to_gc(e.id, &policy).await.unwrap(), ["m-b"], "m-a (0.1) and m-known (0.5) are the best two");
    assert!(matches!(store.set_checkpoint_searcher_metric("nope", 1.0).await, Err(resolute_store::StoreError::NotFound { .. })));
}
