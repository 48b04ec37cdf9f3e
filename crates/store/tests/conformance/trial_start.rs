//! A trial's start time moves to its first placement, and only the first.

use chrono::TimeDelta;
use resolute_store::{AllocationPatch, NewAllocation, NewTask, Store, StoreError, db_now};

use crate::fixtures::{experiment, trial};

pub async fn start_time_is_the_first_placement(store: &dyn Store) {
    let e = experiment(store, "starts").await;
    let t = trial(store, e.id, 1).await;
    store
        .create_task(NewTask {
            task_id: t.task_id.clone(),
            task_type: "TASK_TYPE_TRIAL".into(),
            start_time: db_now(),
            job_id: None,
            owner_id: None,
        })
        .await
        .unwrap();
    let allocation = |n: i64| NewAllocation {
        allocation_id: format!("{}.{n}", t.task_id),
        task_id: t.task_id.clone(),
        state: "STATE_QUEUED".into(),
        slots: 1,
        resource_pool: "default".into(),
        agent_id: None,
        start_time: db_now(),
    };
    store.create_allocation(allocation(1)).await.unwrap();
    let placed = t.start_time + TimeDelta::seconds(60);
    assert!(store.mark_trial_started(t.id, placed).await.unwrap(), "a queued allocation is not a start");
    assert_eq!(store.trial_by_id(t.id).await.unwrap().start_time, placed);
    let patch = AllocationPatch { agent_id: Some("agent-1".into()), ..Default::default() };
    store.update_allocation(&format!("{}.1", t.task_id), &patch).await.unwrap();

    store.create_allocation(allocation(2)).await.unwrap();
    assert!(!store.mark_trial_started(t.id, placed + TimeDelta::seconds(60)).await.unwrap(), "a later run keeps the first start");
    assert_eq!(store.trial_by_id(t.id).await.unwrap().start_time, placed);
    assert!(matches!(store.mark_trial_started(9999, placed).await, Err(StoreError::NotFound { entity: "trial", .. })));
}
