//! A trial's start time moves to its first placement, and only the first.

use chrono::TimeDelta;
use resolute_store::{AllocationPatch, NewAllocation, NewTask, Store, StoreError, db_now};

use crate::fixtures::{checkpoint, experiment, trial};

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
    let start = store.start_trial_run(t.id, placed).await.unwrap();
    assert!(start.first_start, "a queued allocation is not a start");
    assert_eq!((start.latest_checkpoint_uuid, start.latest_checkpoint_steps), (None, None), "a fresh trial starts from scratch");
    assert_eq!(store.trial_by_id(t.id).await.unwrap().start_time, placed);
    let patch = AllocationPatch { agent_id: Some("agent-1".into()), ..Default::default() };
    store.update_allocation(&format!("{}.1", t.task_id), &patch).await.unwrap();

    store.create_allocation(allocation(2)).await.unwrap();
    assert!(!store.start_trial_run(t.id, placed + TimeDelta::seconds(60)).await.unwrap().first_start, "a later run keeps the first start");
    assert_eq!(store.trial_by_id(t.id).await.unwrap().start_time, placed);
    assert!(matches!(store.start_trial_run(9999, placed).await, Err(StoreError::NotFound { entity: "trial", .. })));
}

/// A run resumes from the trial's latest checkpoint and that checkpoint's steps; a checkpoint
/// whose row is gone still names where to resume, with no steps.
pub async fn a_run_resumes_from_the_latest_checkpoint(store: &dyn Store) {
    let e = experiment(store, "resumes").await;
    let t = trial(store, e.id, 1).await;
    store.report_checkpoint(checkpoint(&t, "resume-200", 200, None)).await.unwrap();
    store.report_checkpoint(checkpoint(&t, "resume-400", 400, None)).await.unwrap();
    let start = store.start_trial_run(t.id, db_now()).await.unwrap();
    assert_eq!((start.latest_checkpoint_uuid.as_deref(), start.latest_checkpoint_steps), (Some("resume-400"), Some(400)));
    let other = trial(store, e.id, 2).await;
    let start = store.start_trial_run(other.id, db_now()).await.unwrap();
    assert_eq!((start.latest_checkpoint_uuid, start.latest_checkpoint_steps), (None, None), "another trial's checkpoints are not its own");
}
