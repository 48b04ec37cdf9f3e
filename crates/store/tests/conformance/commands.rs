//! Command tasks: a `tasks` row plus a command row, written together and read joined.

use resolute_store::{CommandTaskFilter, DEFAULT_WORKSPACE_ID, NewCommandTask, NewTask, Store, StoreError, TaskFilter, db_now};
use serde_json::json;

use crate::fixtures::{at, user_id};

fn new_command(task_id: &str, task_type: &str, owner_id: i32, offset: i64) -> NewCommandTask {
    NewCommandTask {
        task_id: task_id.to_owned(),
        task_type: task_type.to_owned(),
        job_id: format!("job-{task_id}"),
        owner_id,
        workspace_id: DEFAULT_WORKSPACE_ID,
        description: format!("Command ({task_id})"),
        config: json!({"entrypoint": ["python3", "-c", "print(1)"], "resources": {"slots": 1}}),
        context: Vec::new(),
        extra: json!({}),
        start_time: at(offset),
    }
}

/// A few MB that do not compress: what a tar.gz context looks like to the database.
fn blob(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn ids(records: &[resolute_store::CommandTaskRecord]) -> Vec<&str> {
    records.iter().map(|r| r.task_id.as_str()).collect()
}

pub async fn create_get_and_context(store: &dyn Store) {
    let owner = user_id(store, "commander").await;
    let mut task = new_command("c0ffee00-0000-4000-8000-000000000001", "TASK_TYPE_NOTEBOOK", owner, 0);
    task.context = blob(3 * 1024 * 1024 + 17);
    task.extra = json!({"experiment_ids": [1, 2], "trial_ids": [], "key": "ssh-rsa AAAA\u{0}"});
    task.description = "Notebook (merry-ox) – ünïcode".to_owned();
    let created = store.create_command_task(task.clone()).await.unwrap();
    assert_eq!((created.task_id.as_str(), created.task_type.as_str()), (task.task_id.as_str(), "TASK_TYPE_NOTEBOOK"));
    assert_eq!((created.job_id.as_str(), created.owner_id, created.owner_username.as_str()), (task.job_id.as_str(), owner, "commander"));
    assert_eq!((created.workspace_id, created.description.as_str()), (DEFAULT_WORKSPACE_ID, task.description.as_str()));
    assert_eq!((&created.config, &created.extra), (&task.config, &task.extra), "JSON documents round-trip, NUL in a string included");
    assert_eq!((created.start_time, created.end_time), (task.start_time, None));
    assert_eq!((created.exit_status.as_deref(), created.priority), (None, None));
    assert_eq!(store.command_task_by_id(&task.task_id).await.unwrap(), created);

    let context = store.command_task_context(&task.task_id).await.unwrap();
    assert!(context == task.context, "the context comes back byte for byte ({} of {} bytes)", context.len(), task.context.len());
    store.create_command_task(new_command("no-context", "TASK_TYPE_COMMAND", owner, 1)).await.unwrap();
    assert_eq!(store.command_task_context("no-context").await.unwrap(), Vec::<u8>::new());

    // The tasks row is an ordinary task: task lists and lookups see it.
    let row = store.task_by_id(&task.task_id).await.unwrap().task;
    assert_eq!((row.task_type.as_str(), row.start_time, row.end_time), ("TASK_TYPE_NOTEBOOK", task.start_time, None));
    assert_eq!((row.job_id.as_deref(), row.owner_id), (Some(task.job_id.as_str()), Some(owner)));

    // A trial's task is not a command task.
    let trial_task = NewTask {
        task_id: "1.trial".into(),
        task_type: "TASK_TYPE_TRIAL".into(),
        start_time: db_now(),
        job_id: None,
        owner_id: Some(owner),
    };
    store.create_task(trial_task).await.unwrap();
    for id in ["1.trial", "unknown"] {
        let err = store.command_task_by_id(id).await.unwrap_err();
        assert!(matches!(&err, StoreError::NotFound { entity: "task", key } if key == id), "{err:?}");
        assert!(matches!(store.command_task_context(id).await, Err(StoreError::NotFound { entity: "task", .. })));
    }
    let listed = store.list_command_tasks(&CommandTaskFilter::default()).await.unwrap();
    assert_eq!(ids(&listed), [task.task_id.as_str(), "no-context"], "trials are not listed");
}

pub async fn list_filters(store: &dyn Store) {
    let (alice, bob) = (user_id(store, "alice").await, user_id(store, "bob").await);
    // Start times out of insertion order; "b" and "a" share one, so the id breaks the tie.
    for (id, task_type, owner, offset) in [
        ("d", "TASK_TYPE_SHELL", bob, 30),
        ("b", "TASK_TYPE_COMMAND", alice, 10),
        ("a", "TASK_TYPE_TENSORBOARD", bob, 10),
        ("c", "TASK_TYPE_COMMAND", bob, 20),
        ("e", "TASK_TYPE_GENERIC", alice, 0),
    ] {
        store.create_command_task(new_command(id, task_type, owner, offset)).await.unwrap();
    }
    let list = |filter: CommandTaskFilter| async move { store.list_command_tasks(&filter).await.unwrap() };

    assert_eq!(ids(&list(CommandTaskFilter::default()).await), ["e", "a", "b", "c", "d"], "by start time, then id");
    let commands = list(CommandTaskFilter { task_types: vec!["TASK_TYPE_COMMAND".into()], ..Default::default() }).await;
    assert_eq!(ids(&commands), ["b", "c"]);
    let two_types = CommandTaskFilter { task_types: vec!["TASK_TYPE_SHELL".into(), "TASK_TYPE_TENSORBOARD".into()], ..Default::default() };
    assert_eq!(ids(&list(two_types).await), ["a", "d"]);
    assert_eq!(ids(&list(CommandTaskFilter { owner_ids: vec![alice], ..Default::default() }).await), ["e", "b"]);
    assert_eq!(ids(&list(CommandTaskFilter { owner_ids: vec![alice, bob], ..Default::default() }).await).len(), 5);
    assert!(list(CommandTaskFilter { owner_ids: vec![4242], ..Default::default() }).await.is_empty());
    let in_default = list(CommandTaskFilter { workspace_id: Some(DEFAULT_WORKSPACE_ID), ..Default::default() }).await;
    assert_eq!(in_default.len(), 5);
    assert!(list(CommandTaskFilter { workspace_id: Some(2), ..Default::default() }).await.is_empty());
    let combined = CommandTaskFilter {
        task_types: vec!["TASK_TYPE_COMMAND".into()],
        owner_ids: vec![bob],
        workspace_id: Some(DEFAULT_WORKSPACE_ID),
        open_only: true,
    };
    assert_eq!(ids(&list(combined).await), ["c"]);
    let bobs = list(CommandTaskFilter { owner_ids: vec![bob], ..Default::default() }).await;
    assert!(bobs.iter().all(|r| r.owner_username == "bob"), "each record carries its owner's name");
}

pub async fn end_closes_the_task(store: &dyn Store) {
    let owner = user_id(store, "ender").await;
    for (id, offset) in [("one", 0), ("two", 1)] {
        store.create_command_task(new_command(id, "TASK_TYPE_COMMAND", owner, offset)).await.unwrap();
    }
    let end = db_now();
    store.end_command_task("one", "resources exited successfully", end).await.unwrap();

    let ended = store.command_task_by_id("one").await.unwrap();
    assert_eq!((ended.exit_status.as_deref(), ended.end_time), (Some("resources exited successfully"), Some(end)));
    assert_eq!(store.task_by_id("one").await.unwrap().task.end_time, Some(end), "the tasks row ends too");
    let open = store.list_command_tasks(&CommandTaskFilter { open_only: true, ..Default::default() }).await.unwrap();
    assert_eq!(ids(&open), ["two"]);
    let open_tasks = store.list_tasks(&TaskFilter { open_only: true, ..Default::default() }).await.unwrap();
    assert_eq!(open_tasks.iter().map(|t| t.task.task_id.as_str()).collect::<Vec<_>>(), ["two"]);
    assert_eq!(ids(&store.list_command_tasks(&CommandTaskFilter::default()).await.unwrap()), ["one", "two"], "ended tasks stay listed");

    let err = store.end_command_task("unknown", "killed", end).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "task", .. }), "{err:?}");
    // A trial's task is not ended through here: nothing changes.
    let trial_task =
        NewTask { task_id: "9.trial".into(), task_type: "TASK_TYPE_TRIAL".into(), start_time: at(5), job_id: None, owner_id: None };
    store.create_task(trial_task).await.unwrap();
    assert!(matches!(store.end_command_task("9.trial", "killed", end).await, Err(StoreError::NotFound { .. })));
    assert_eq!(store.task_by_id("9.trial").await.unwrap().task.end_time, None);
}

pub async fn failed_creates_leave_no_rows(store: &dyn Store) {
    let owner = user_id(store, "dup").await;
    let first = store.create_command_task(new_command("same", "TASK_TYPE_COMMAND", owner, 0)).await.unwrap();

    let mut again = new_command("same", "TASK_TYPE_SHELL", owner, 5);
    again.description = "second".into();
    let err = store.create_command_task(again).await.unwrap_err();
    assert!(matches!(&err, StoreError::Conflict { entity: "task", key } if key == "same"), "{err:?}");
    assert_eq!(store.command_task_by_id("same").await.unwrap(), first, "the first task is untouched");

    // An id taken by a task that is not a command task: refused, and no command row appears.
    let trial_task =
        NewTask { task_id: "2.trial".into(), task_type: "TASK_TYPE_TRIAL".into(), start_time: at(1), job_id: None, owner_id: None };
    store.create_task(trial_task).await.unwrap();
    let err = store.create_command_task(new_command("2.trial", "TASK_TYPE_COMMAND", owner, 1)).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { entity: "task", .. }), "{err:?}");
    assert!(matches!(store.command_task_by_id("2.trial").await, Err(StoreError::NotFound { .. })));
    assert_eq!(store.task_by_id("2.trial").await.unwrap().task.task_type, "TASK_TYPE_TRIAL");

    // A missing workspace fails the second insert: the tasks row written before it is rolled back.
    let mut elsewhere = new_command("no-workspace", "TASK_TYPE_COMMAND", owner, 2);
    elsewhere.workspace_id = 4242;
    let err = store.create_command_task(elsewhere).await.unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { entity: "workspace", key } if key == "4242"), "{err:?}");
    assert!(matches!(store.task_by_id("no-workspace").await, Err(StoreError::NotFound { .. })), "no tasks row");

    let err = store.create_command_task(new_command("no-owner", "TASK_TYPE_COMMAND", 4242, 3)).await.unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { entity: "user", key } if key == "4242"), "{err:?}");
    assert!(matches!(store.task_by_id("no-owner").await, Err(StoreError::NotFound { .. })));

    assert_eq!(ids(&store.list_command_tasks(&CommandTaskFilter::default()).await.unwrap()), ["same"]);
    let all_tasks = store.list_tasks(&TaskFilter::default()).await.unwrap();
    assert_eq!(all_tasks.iter().map(|t| t.task.task_id.as_str()).collect::<Vec<_>>(), ["same", "2.trial"]);
}

pub async fn extra_and_priority_updates(store: &dyn Store) {
    let owner = user_id(store, "updater").await;
    let created = store.create_command_task(new_command("t", "TASK_TYPE_TENSORBOARD", owner, 0)).await.unwrap();

    let extra = json!({"experiment_ids": [7], "trial_ids": [70, 71], "private_key": "-----BEGIN"});
    store.set_command_task_extra("t", &extra).await.unwrap();
    store.set_command_task_priority("t", 42).await.unwrap();
    let updated = store.command_task_by_id("t").await.unwrap();
    assert_eq!((&updated.extra, updated.priority), (&extra, Some(42)));
    assert_eq!((&updated.config, &updated.description, updated.start_time), (&created.config, &created.description, created.start_time));
    store.set_command_task_priority("t", 7).await.unwrap();
    assert_eq!(store.command_task_by_id("t").await.unwrap().priority, Some(7));

    assert!(matches!(store.set_command_task_extra("nope", &extra).await, Err(StoreError::NotFound { entity: "task", .. })));
    assert!(matches!(store.set_command_task_priority("nope", 1).await, Err(StoreError::NotFound { entity: "task", .. })));
}

/// PostgreSQL cannot store a NUL in text; both backends refuse it the same way.
pub async fn nul_text_is_refused_alike(store: &dyn Store) {
    let owner = user_id(store, "nul").await;
    let mut bad = new_command("nul-desc", "TASK_TYPE_COMMAND", owner, 0);
    bad.description = "a\0b".into();
    let err = store.create_command_task(bad).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { field: "description", .. }), "{err:?}");
    assert!(matches!(store.task_by_id("nul-desc").await, Err(StoreError::NotFound { .. })), "nothing written");
    let err = store.create_command_task(new_command("nul\0id", "TASK_TYPE_COMMAND", owner, 0)).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { field: "task id", .. }), "{err:?}");

    store.create_command_task(new_command("ok", "TASK_TYPE_COMMAND", owner, 0)).await.unwrap();
    let err = store.end_command_task("ok", "exit\0", db_now()).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { field: "exit status", .. }), "{err:?}");
    assert_eq!(store.command_task_by_id("ok").await.unwrap().end_time, None);

    assert!(matches!(store.command_task_by_id("ok\0").await, Err(StoreError::NotFound { entity: "task", .. })));
    assert!(matches!(store.command_task_context("ok\0").await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.set_command_task_priority("ok\0", 1).await, Err(StoreError::NotFound { .. })));
    let filter = CommandTaskFilter { task_types: vec!["TASK_TYPE_COMMAND\0".into()], ..Default::default() };
    assert!(store.list_command_tasks(&filter).await.unwrap().is_empty());
}
