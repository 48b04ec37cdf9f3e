use chrono::TimeDelta;
use resolute_store::{AllocationPatch, NewAllocation, NewAllocationSession, NewTask, Store, StoreError, TaskFilter, db_now};

use crate::fixtures::user_id;

fn new_task(task_id: &str, task_type: &str, offset: i64) -> NewTask {
    NewTask {
        task_id: task_id.to_owned(),
        task_type: task_type.to_owned(),
        start_time: db_now() + TimeDelta::seconds(offset),
        job_id: None,
        owner_id: None,
    }
}

fn new_allocation(task_id: &str, n: i64) -> NewAllocation {
    NewAllocation {
        allocation_id: format!("{task_id}.{n}"),
        task_id: task_id.to_owned(),
        state: "STATE_QUEUED".to_owned(),
        slots: 2,
        resource_pool: "default".to_owned(),
        agent_id: None,
        start_time: db_now() + TimeDelta::seconds(n),
    }
}

pub async fn create_get_and_list(store: &dyn Store) {
    let owner = user_id(store, "tasker").await;
    let mut trial_task = new_task("7.abc", "TASK_TYPE_TRIAL", 0);
    (trial_task.job_id, trial_task.owner_id) = (Some("job-1".into()), Some(owner));
    let created = store.create_task(trial_task.clone()).await.unwrap();
    assert_eq!((created.task_id.as_str(), created.task_type.as_str()), ("7.abc", "TASK_TYPE_TRIAL"));
    assert_eq!((created.start_time, created.end_time), (trial_task.start_time, None));
    assert_eq!((created.job_id.as_deref(), created.owner_id), (Some("job-1"), Some(owner)));
    store.create_task(new_task("cmd-1", "TASK_TYPE_COMMAND", 1)).await.unwrap();
    store.create_task(new_task("gc-1", "TASK_TYPE_CHECKPOINT_GC", 2)).await.unwrap();
    let err = store.create_task(new_task("cmd-1", "TASK_TYPE_COMMAND", 3)).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { entity: "task", .. }), "{err:?}");
    let mut orphan = new_task("x", "TASK_TYPE_COMMAND", 0);
    orphan.owner_id = Some(4242);
    assert!(matches!(store.create_task(orphan).await, Err(StoreError::NotFound { entity: "user", .. })));

    let first = store.create_allocation(new_allocation("7.abc", 1)).await.unwrap();
    assert_eq!((first.allocation_id.as_str(), first.state.as_str(), first.slots), ("7.abc.1", "STATE_QUEUED", 2));
    assert!(!first.is_ready && first.end_time.is_none() && first.exit_code.is_none());
    store.create_allocation(new_allocation("7.abc", 2)).await.unwrap();
    store.create_allocation(new_allocation("cmd-1", 1)).await.unwrap();
    assert!(matches!(store.create_allocation(new_allocation("7.abc", 1)).await, Err(StoreError::Conflict { .. })));
    let err = store.create_allocation(new_allocation("missing", 1)).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "task", .. }), "{err:?}");

    let fetched = store.task_by_id("7.abc").await.unwrap();
    assert_eq!(fetched.task, created);
    assert_eq!(fetched.allocations.iter().map(|a| a.allocation_id.as_str()).collect::<Vec<_>>(), ["7.abc.1", "7.abc.2"]);
    assert_eq!(fetched.allocations[0], first);
    assert!(matches!(store.task_by_id("nope").await, Err(StoreError::NotFound { entity: "task", .. })));

    let all = store.list_tasks(&TaskFilter::default()).await.unwrap();
    assert_eq!(all.iter().map(|t| t.task.task_id.as_str()).collect::<Vec<_>>(), ["7.abc", "cmd-1", "gc-1"], "by start time");
    assert_eq!(all.iter().map(|t| t.allocations.len()).collect::<Vec<_>>(), [2, 1, 0]);
    let commands = store.list_tasks(&TaskFilter { task_type: Some("TASK_TYPE_COMMAND".into()), ..Default::default() }).await.unwrap();
    assert_eq!(commands.len(), 1);
    assert_eq!(commands[0].allocations[0].allocation_id, "cmd-1.1");
    store.end_task("gc-1", db_now()).await.unwrap();
    let open = store.list_tasks(&TaskFilter { open_only: true, ..Default::default() }).await.unwrap();
    assert_eq!(open.iter().map(|t| t.task.task_id.as_str()).collect::<Vec<_>>(), ["7.abc", "cmd-1"]);
    assert!(matches!(store.end_task("nope", db_now()).await, Err(StoreError::NotFound { .. })));
}

pub async fn allocation_updates(store: &dyn Store) {
    store.create_task(new_task("t", "TASK_TYPE_COMMAND", 0)).await.unwrap();
    store.create_allocation(new_allocation("t", 1)).await.unwrap();
    let running = AllocationPatch {
        state: Some("STATE_RUNNING".into()),
        agent_id: Some("agent-1".into()),
        is_ready: Some(true),
        ..Default::default()
    };
    let updated = store.update_allocation("t.1", &running).await.unwrap();
    assert_eq!((updated.state.as_str(), updated.agent_id.as_deref(), updated.is_ready), ("STATE_RUNNING", Some("agent-1"), true));
    let end = db_now();
    let exited = AllocationPatch {
        state: Some("STATE_TERMINATED".into()),
        end_time: Some(end),
        exit_reason: Some("exited with code 3".into()),
        exit_code: Some(3),
        ..Default::default()
    };
    let updated = store.update_allocation("t.1", &exited).await.unwrap();
    assert_eq!((updated.state.as_str(), updated.end_time, updated.exit_code), ("STATE_TERMINATED", Some(end), Some(3)));
    assert_eq!((updated.agent_id.as_deref(), updated.is_ready), (Some("agent-1"), true), "unset fields are kept");
    assert_eq!(store.allocation_by_id("t.1").await.unwrap(), updated);
    assert!(matches!(store.update_allocation("nope", &exited).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.allocation_by_id("nope").await, Err(StoreError::NotFound { entity: "allocation", .. })));
}

pub async fn allocation_token_lookup(store: &dyn Store) {
    let owner = user_id(store, "runner").await;
    let mut task = new_task("3.xyz", "TASK_TYPE_TRIAL", 0);
    task.owner_id = Some(owner);
    let task = store.create_task(task).await.unwrap();
    let allocation = store.create_allocation(new_allocation("3.xyz", 1)).await.unwrap();
    let now = db_now();
    let session = store
        .create_allocation_session(NewAllocationSession { allocation_id: "3.xyz.1".into(), token_hash: "h1".into(), created_at: now })
        .await
        .unwrap();
    assert_eq!((session.allocation_id.as_str(), session.token_hash.as_str(), session.created_at), ("3.xyz.1", "h1", now));
    store
        .create_allocation_session(NewAllocationSession { allocation_id: "3.xyz.1".into(), token_hash: "h2".into(), created_at: now })
        .await
        .unwrap();

    let found = store.allocation_session_by_token_hash("h1").await.unwrap().expect("token found");
    assert_eq!(found.session_id, session.id);
    assert_eq!(found.allocation, allocation, "the session comes with its allocation");
    assert_eq!(found.task, task, "and its task");
    assert_eq!(store.allocation_session_by_token_hash("other").await.unwrap(), None);

    let dup = NewAllocationSession { allocation_id: "3.xyz.1".into(), token_hash: "h1".into(), created_at: now };
    assert!(matches!(store.create_allocation_session(dup).await, Err(StoreError::Conflict { .. })));
    let orphan = NewAllocationSession { allocation_id: "nope".into(), token_hash: "h3".into(), created_at: now };
    assert!(matches!(store.create_allocation_session(orphan).await, Err(StoreError::NotFound { entity: "allocation", .. })));

    assert_eq!(store.delete_allocation_sessions("3.xyz.1").await.unwrap(), 2);
    assert_eq!(store.allocation_session_by_token_hash("h1").await.unwrap(), None);
    assert_eq!(store.delete_allocation_sessions("3.xyz.1").await.unwrap(), 0);
}
