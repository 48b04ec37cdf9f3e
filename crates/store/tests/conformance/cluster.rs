//! The cluster-wide rows: the admin's cluster message and the allocation usage report.

use chrono::TimeDelta;
use resolute_store::{AllocationPatch, NewAllocation, NewClusterMessage, NewTask, StateCount, StateCounts, Store, StoreError};

use crate::fixtures::{at, experiment, trial, user_id};

fn message(created_by: i32, text: &str, start_ms: i64, end_ms: Option<i64>) -> NewClusterMessage {
    NewClusterMessage { created_by, message: text.to_owned(), start_ms, end_ms, created_ms: start_ms }
}

pub async fn cluster_message_is_replaced_shown_in_its_window_and_cleared(store: &dyn Store) {
    let admin = user_id(store, "admin-msg").await;
    assert_eq!(store.active_cluster_message(1_000).await.unwrap(), None);
    store.set_cluster_message(message(admin, "first", 1_000, None)).await.unwrap();
    let stored = store.set_cluster_message(message(admin, "maintenance at noon", 2_000, Some(5_000))).await.unwrap();
    assert_eq!((stored.message.as_str(), stored.start_ms, stored.end_ms), ("maintenance at noon", 2_000, Some(5_000)));
    assert_eq!(store.active_cluster_message(1_500).await.unwrap(), None, "the replaced message is gone, the new one not started");
    assert_eq!(store.active_cluster_message(2_000).await.unwrap(), Some(stored.clone()));
    assert_eq!(store.active_cluster_message(4_999).await.unwrap(), Some(stored));
    assert_eq!(store.active_cluster_message(5_000).await.unwrap(), None, "ended");
    store.set_cluster_message(message(admin, "forever", 1_000, None)).await.unwrap();
    assert_eq!(store.active_cluster_message(i64::MAX / 2).await.unwrap().map(|m| m.message), Some("forever".to_owned()));
    store.clear_cluster_message().await.unwrap();
    assert_eq!(store.active_cluster_message(2_000).await.unwrap(), None);
    store.clear_cluster_message().await.unwrap();
    let err = store.set_cluster_message(message(admin, "nul\0here", 1_000, None)).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }), "{err:?}");
}

pub async fn allocation_usage_lists_overlapping_allocations_with_their_owner(store: &dyn Store) {
    let e = experiment(store, "usage").await;
    let t = trial(store, e.id, 1).await;
    let owner = user_id(store, "owner").await;
    store
        .create_task(NewTask {
            task_id: t.task_id.clone(),
            task_type: "TASK_TYPE_TRIAL".into(),
            start_time: at(0),
            job_id: None,
            owner_id: Some(owner),
        })
        .await
        .unwrap();
    let allocation = |n: i64, start: i64| NewAllocation {
        allocation_id: format!("{}.{n}", t.task_id),
        task_id: t.task_id.clone(),
        state: "STATE_RUNNING".into(),
        slots: 1,
        resource_pool: "default".into(),
        agent_id: Some("agent-1".into()),
        start_time: at(start),
    };
    // Run 1: [10, 20); run 2: [100, open); run 3 starts after the window.
    store.create_allocation(allocation(1, 10)).await.unwrap();
    let ended = AllocationPatch { end_time: Some(at(20)), state: Some("STATE_TERMINATED".into()), ..Default::default() };
    store.update_allocation(&format!("{}.1", t.task_id), &ended).await.unwrap();
    store.create_allocation(allocation(2, 100)).await.unwrap();
    store.create_allocation(allocation(3, 1_000)).await.unwrap();

    let rows = store.allocation_usage(at(0), at(500)).await.unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r.allocation_id.rsplit('.').next().unwrap()).collect();
    assert_eq!(ids, ["1", "2"], "{rows:?}");
    let first = &rows[0];
    assert_eq!(first.experiment_id, Some(e.id));
    assert_eq!(first.username.as_deref(), Some("owner"));
    assert_eq!(first.workspace_name.as_deref(), Some("Uncategorized"));
    assert_eq!((first.task_type.as_str(), first.slots, first.resource_pool.as_str()), ("TASK_TYPE_TRIAL", 1, "default"));
    assert_eq!((first.start_time, first.end_time), (at(10), Some(at(20))));
    assert_eq!(rows[1].end_time, None);

    let later = store.allocation_usage(at(20) + TimeDelta::milliseconds(1), at(500)).await.unwrap();
    assert_eq!(later.len(), 1, "an allocation that ended before the window is left out: {later:?}");
    let open = store.allocation_usage(at(2_000), at(3_000)).await.unwrap();
    assert_eq!(open.len(), 2, "open runs 2 and 3 overlap any later window: {open:?}");
}

pub async fn state_counts_group_experiments_trials_and_open_tasks(store: &dyn Store) {
    assert_eq!(store.state_counts().await.unwrap(), StateCounts::default());
    let a = experiment(store, "counted-a").await;
    let b = experiment(store, "counted-b").await;
    store.update_experiment_state(b.id, "STATE_COMPLETED", Some(at(9))).await.unwrap();
    trial(store, a.id, 1).await;
    trial(store, a.id, 2).await;
    let owner = user_id(store, "owner").await;
    let task = |id: &str, kind: &str| NewTask {
        task_id: id.into(),
        task_type: kind.into(),
        start_time: at(0),
        job_id: None,
        owner_id: Some(owner),
    };
    store.create_task(task("cmd-open", "TASK_TYPE_COMMAND")).await.unwrap();
    store.create_task(task("cmd-done", "TASK_TYPE_COMMAND")).await.unwrap();
    store.end_task("cmd-done", at(5)).await.unwrap();
    let counts = store.state_counts().await.unwrap();
    let pairs = |v: &[StateCount]| v.iter().map(|c| (c.state.clone(), c.count)).collect::<Vec<_>>();
    assert_eq!(pairs(&counts.experiments), [("STATE_ACTIVE".to_owned(), 1), ("STATE_COMPLETED".to_owned(), 1)]);
    assert_eq!(pairs(&counts.trials), [("STATE_ACTIVE".to_owned(), 2)]);
    assert_eq!(pairs(&counts.open_tasks), [("TASK_TYPE_COMMAND".to_owned(), 1)]);
}
