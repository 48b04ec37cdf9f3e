use chrono::TimeDelta;
use resolute_store::{
    AllocationPatch, DEFAULT_PROJECT_ID, DEFAULT_WORKSPACE_ID, ExperimentFilter, ExperimentPage, ExperimentPatch, ExperimentSort,
    LogFilter, NewAllocation, NewAllocationSession, NewTask, OrderDirection, Store, StoreError, TRAINING_GROUP, db_now,
};
use serde_json::json;

use crate::fixtures::{checkpoint, experiment, new_experiment, report, trial, user_id};
use crate::logs::log_line;

pub async fn default_project_exists(store: &dyn Store) {
    let project = store.project_by_id(DEFAULT_PROJECT_ID).await.unwrap();
    assert_eq!(project.name, "Uncategorized");
    assert_eq!(project.workspace_id, DEFAULT_WORKSPACE_ID);
    assert_eq!(project.workspace_name, "Uncategorized");
    assert!(project.immutable && !project.archived);
    assert_eq!(store.project_by_names("Uncategorized", "Uncategorized").await.unwrap(), project);
    assert!(matches!(store.project_by_id(2).await, Err(StoreError::NotFound { entity: "project", .. })));
    assert!(matches!(store.project_by_names("Uncategorized", "other").await, Err(StoreError::NotFound { entity: "project", .. })));
}

pub async fn create_and_fetch_experiment(store: &dyn Store) {
    let owner = user_id(store, "olga").await;
    let mut new = new_experiment(owner, "mnist");
    new.description = "first try".into();
    new.labels = vec!["vision".into(), "baseline".into()];
    new.unmanaged = true;
    let start = new.start_time;
    let created = store.create_experiment(new.clone()).await.unwrap();
    assert!(created.id > 0);
    assert_eq!(created.name, "mnist");
    assert_eq!(created.description, "first try");
    assert_eq!(created.state, "STATE_ACTIVE");
    assert_eq!((created.owner_id, created.owner_username.as_str()), (owner, "olga"));
    assert_eq!((created.project_id, created.workspace_id), (DEFAULT_PROJECT_ID, DEFAULT_WORKSPACE_ID));
    assert_eq!(*created.config, new.config);
    assert_eq!(created.original_config, "name: mnist\n");
    assert_eq!(created.labels, ["vision", "baseline"]);
    assert_eq!(created.start_time, start);
    assert_eq!((created.end_time, created.progress, created.parent_id, created.end_reason.as_deref()), (None, None, None, None));
    assert!(created.unmanaged && !created.archived);
    assert_eq!(created.job_id, new.job_id);

    assert_eq!(store.experiment_by_id(created.id).await.unwrap(), created);
    assert_eq!(store.experiment_model_definition(created.id).await.unwrap(), new.model_definition);
    assert_eq!(store.searcher_snapshot(created.id).await.unwrap(), None);
    let snapshot = json!({"searcher_state": {"trials_requested": 1}, "rand": [1, 2, 3]});
    store.save_searcher_snapshot(created.id, &snapshot.to_string()).await.unwrap();
    assert_eq!(store.searcher_snapshot(created.id).await.unwrap(), Some(snapshot));

    let mut child = new_experiment(owner, "mnist-fork");
    child.parent_id = Some(created.id);
    assert_eq!(store.create_experiment(child).await.unwrap().parent_id, Some(created.id));

    assert!(matches!(store.experiment_by_id(9999).await, Err(StoreError::NotFound { entity: "experiment", .. })));
    assert!(matches!(store.experiment_model_definition(9999).await, Err(StoreError::NotFound { .. })));
    let mut bad = new_experiment(owner, "x");
    bad.project_id = 77;
    assert!(matches!(store.create_experiment(bad).await, Err(StoreError::NotFound { entity: "project", .. })));
    assert!(matches!(store.create_experiment(new_experiment(4242, "x")).await, Err(StoreError::NotFound { entity: "user", .. })));
    let mut orphan = new_experiment(owner, "x");
    orphan.parent_id = Some(4242);
    assert!(matches!(store.create_experiment(orphan).await, Err(StoreError::NotFound { entity: "experiment", .. })));
    assert_eq!(store.list_experiments(&ExperimentFilter::default()).await.unwrap().total, 2, "failed creates wrote nothing");
}

fn ids(page: ExperimentPage) -> Vec<i32> {
    page.experiments.into_iter().map(|e| e.id).collect()
}

pub async fn list_experiments_filters_sorts_and_pages(store: &dyn Store) {
    let ann = user_id(store, "ann").await;
    let zed = user_id(store, "Zed").await;
    let now = db_now();
    let mut made = Vec::new();
    for (owner, name, state, progress, labels, offset) in [
        (zed, "Bravo", "STATE_ACTIVE", Some(0.5), vec!["a", "b"], 3),
        (ann, "alpha", "STATE_COMPLETED", None, vec!["b"], 1),
        (ann, "charlie", "STATE_PAUSED", Some(0.25), vec![], 2),
        (zed, "delta-alpha", "STATE_COMPLETED", Some(1.0), vec!["a"], 0),
    ] {
        let mut e = new_experiment(owner, name);
        e.state = state.into();
        e.labels = labels.into_iter().map(String::from).collect();
        e.start_time = now + TimeDelta::seconds(offset);
        let e = store.create_experiment(e).await.unwrap();
        store.set_experiment_progress(e.id, progress).await.unwrap();
        made.push(e.id);
    }
    let [bravo, alpha, charlie, delta] = made[..] else { unreachable!() };
    store.set_experiment_archived(delta, true).await.unwrap();
    let list = |f: ExperimentFilter| async move { store.list_experiments(&f).await.unwrap() };

    let all = list(ExperimentFilter::default()).await;
    assert_eq!(all.total, 4);
    assert_eq!(ids(all), [bravo, alpha, charlie, delta], "default order is by id");
    assert_eq!(ids(list(ExperimentFilter { archived: Some(false), ..Default::default() }).await), [bravo, alpha, charlie]);
    assert_eq!(ids(list(ExperimentFilter { owner_ids: vec![ann], ..Default::default() }).await), [alpha, charlie]);
    assert_eq!(ids(list(ExperimentFilter { owner_ids: vec![ann, zed], ..Default::default() }).await).len(), 4);
    let completed = ExperimentFilter { states: vec!["STATE_COMPLETED".into()], ..Default::default() };
    assert_eq!(ids(list(completed).await), [alpha, delta]);
    let by_name = ExperimentFilter { name: Some("ALPHA".into()), ..Default::default() };
    assert_eq!(ids(list(by_name).await), [alpha, delta], "name filter is a case-insensitive substring");
    assert_eq!(ids(list(ExperimentFilter { labels: vec!["a".into()], ..Default::default() }).await), [bravo, delta]);
    let both = ExperimentFilter { labels: vec!["a".into(), "b".into()], ..Default::default() };
    assert_eq!(ids(list(both).await), [bravo], "every label must be present");
    assert_eq!(ids(list(ExperimentFilter { project_id: Some(DEFAULT_PROJECT_ID), ..Default::default() }).await).len(), 4);
    assert_eq!(list(ExperimentFilter { project_id: Some(5), ..Default::default() }).await.total, 0);

    let sorted = |sort, order| ExperimentFilter { sort, order, ..Default::default() };
    use ExperimentSort::*;
    use OrderDirection::*;
    assert_eq!(ids(list(sorted(Name, Asc)).await), [alpha, bravo, charlie, delta], "names sort case-insensitively");
    assert_eq!(ids(list(sorted(StartTime, Asc)).await), [delta, alpha, charlie, bravo]);
    assert_eq!(ids(list(sorted(Progress, Asc)).await), [charlie, bravo, delta, alpha], "no progress sorts last");
    assert_eq!(ids(list(sorted(Progress, Desc)).await), [delta, bravo, charlie, alpha], "no progress sorts last descending too");
    assert_eq!(ids(list(sorted(State, Asc)).await), [bravo, alpha, delta, charlie], "ties break by id");
    assert_eq!(ids(list(sorted(Owner, Asc)).await), [alpha, charlie, bravo, delta]);
    assert_eq!(ids(list(sorted(Owner, Desc)).await), [delta, bravo, charlie, alpha]);
    store.update_experiment_state(alpha, "STATE_COMPLETED", Some(now + TimeDelta::hours(1))).await.unwrap();
    assert_eq!(ids(list(sorted(EndTime, Desc)).await), [alpha, delta, charlie, bravo], "running experiments sort last");

    let page = list(ExperimentFilter { sort: Name, offset: 1, limit: Some(2), ..Default::default() }).await;
    assert_eq!(page.total, 4, "total counts every match, not just the page");
    assert_eq!(ids(page), [bravo, charlie]);
    assert!(list(ExperimentFilter { offset: 10, limit: Some(2), ..Default::default() }).await.experiments.is_empty());
}

pub async fn label_filter_matches_whole_labels(store: &dyn Store) {
    let owner = user_id(store, "owner").await;
    let mut made = Vec::new();
    for labels in [vec!["a"], vec!["ab", "ba"], vec![r#"x,"a""#], vec!["50%", "a_b"], vec![r"back\slash"]] {
        let mut e = new_experiment(owner, "e");
        e.labels = labels.into_iter().map(String::from).collect();
        made.push(store.create_experiment(e).await.unwrap().id);
    }
    let with = |label: &str| {
        let f = ExperimentFilter { labels: vec![label.to_owned()], ..Default::default() };
        async move { ids(store.list_experiments(&f).await.unwrap()) }
    };
    assert_eq!(with("a").await, [made[0]], "a label never matches part of another");
    assert_eq!(with("b").await, Vec::<i32>::new());
    assert_eq!(with(r#"x,"a""#).await, [made[2]]);
    assert_eq!(with("50%").await, [made[3]]);
    assert_eq!(with("5%").await, Vec::<i32>::new(), "LIKE wildcards in a label are literal");
    assert_eq!(with("a_b").await, [made[3]]);
    assert_eq!(with("axb").await, Vec::<i32>::new());
    assert_eq!(with(r"back\slash").await, [made[4]]);
}

pub async fn experiment_state_compare_and_set(store: &dyn Store) {
    let e = experiment(store, "cas").await;
    assert!(store.update_experiment_state_if(e.id, &["STATE_ACTIVE"], "STATE_PAUSED", None).await.unwrap());
    assert_eq!(store.experiment_by_id(e.id).await.unwrap().state, "STATE_PAUSED");
    assert!(!store.update_experiment_state_if(e.id, &["STATE_ACTIVE"], "STATE_PAUSED", None).await.unwrap(), "no longer active");
    assert!(!store.update_experiment_state_if(e.id, &[], "STATE_ACTIVE", None).await.unwrap(), "an empty `from` never matches");
    let end = db_now();
    let from = ["STATE_ACTIVE", "STATE_PAUSED"];
    assert!(store.update_experiment_state_if(e.id, &from, "STATE_CANCELED", Some(end)).await.unwrap());
    let after = store.experiment_by_id(e.id).await.unwrap();
    assert_eq!((after.state.as_str(), after.end_time), ("STATE_CANCELED", Some(end)));
    let err = store.update_experiment_state_if(9999, &from, "STATE_CANCELED", None).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "experiment", .. }), "{err:?}");

    // The unconditional write; a non-terminal state clears the end time.
    store.update_experiment_state(e.id, "STATE_ACTIVE", None).await.unwrap();
    let after = store.experiment_by_id(e.id).await.unwrap();
    assert_eq!((after.state.as_str(), after.end_time), ("STATE_ACTIVE", None));
    assert!(matches!(store.update_experiment_state(9999, "STATE_ACTIVE", None).await, Err(StoreError::NotFound { .. })));
}

pub async fn archive_labels_patch_and_progress(store: &dyn Store) {
    let e = experiment(store, "edit").await;
    store.set_experiment_archived(e.id, true).await.unwrap();
    store.set_experiment_labels(e.id, &["x".into(), "y \"quoted\"".into()]).await.unwrap();
    store.set_experiment_progress(e.id, Some(0.75)).await.unwrap();
    store.set_experiment_end_reason(e.id, Some("user requested")).await.unwrap();
    let patch = ExperimentPatch { notes: Some("## notes".into()), description: Some("desc".into()), ..Default::default() };
    let patched = store.patch_experiment(e.id, &patch).await.unwrap();
    assert!(patched.archived);
    assert_eq!(patched.labels, ["x", "y \"quoted\""]);
    assert_eq!(patched.progress, Some(0.75));
    assert_eq!(patched.end_reason.as_deref(), Some("user requested"));
    assert_eq!((patched.name.as_str(), patched.description.as_str(), patched.notes.as_str()), ("edit", "desc", "## notes"));
    let renamed = store.patch_experiment(e.id, &ExperimentPatch { name: Some("renamed".into()), ..Default::default() }).await.unwrap();
    assert_eq!((renamed.name.as_str(), renamed.notes.as_str()), ("renamed", "## notes"), "unset fields are kept");
    store.set_experiment_archived(e.id, false).await.unwrap();
    store.set_experiment_labels(e.id, &[]).await.unwrap();
    store.set_experiment_progress(e.id, None).await.unwrap();
    let back = store.experiment_by_id(e.id).await.unwrap();
    assert!(!back.archived && back.labels.is_empty() && back.progress.is_none());
    for result in [
        store.set_experiment_archived(9999, true).await,
        store.set_experiment_labels(9999, &[]).await,
        store.set_experiment_progress(9999, None).await,
        store.save_searcher_snapshot(9999, "{}").await,
    ] {
        assert!(matches!(result, Err(StoreError::NotFound { entity: "experiment", .. })), "{result:?}");
    }
    assert!(matches!(store.patch_experiment(9999, &ExperimentPatch::default()).await, Err(StoreError::NotFound { .. })));
}

pub async fn delete_cascades(store: &dyn Store) {
    let doomed = experiment(store, "doomed").await;
    let kept = experiment(store, "kept").await;
    let mut task_ids = Vec::new();
    for e in [&doomed, &kept] {
        let t = trial(store, e.id, 1).await;
        store.insert_metrics(&[report(t.id, 1, TRAINING_GROUP, 10, json!({"loss": 1.0}))]).await.unwrap();
        store.report_checkpoint(checkpoint(&t, &format!("ckpt-{}", e.id), 10, None)).await.unwrap();
        store
            .create_task(NewTask {
                task_id: t.task_id.clone(),
                task_type: "TASK_TYPE_TRIAL".into(),
                start_time: db_now(),
                job_id: Some(e.job_id.clone()),
                owner_id: Some(e.owner_id),
            })
            .await
            .unwrap();
        let allocation_id = format!("{}.1", t.task_id);
        let alloc = NewAllocation {
            allocation_id: allocation_id.clone(),
            task_id: t.task_id.clone(),
            state: "STATE_RUNNING".into(),
            slots: 1,
            resource_pool: "default".into(),
            agent_id: None,
            start_time: db_now(),
        };
        store.create_allocation(alloc).await.unwrap();
        store.update_allocation(&allocation_id, &AllocationPatch { is_ready: Some(true), ..Default::default() }).await.unwrap();
        let session = NewAllocationSession { allocation_id, token_hash: format!("hash-{}", e.id), created_at: db_now() };
        store.create_allocation_session(session).await.unwrap();
        store.insert_logs(&[log_line(&t.task_id, 0), log_line(&t.task_id, 1)]).await.unwrap();
        task_ids.push((t.id, t.task_id));
    }
    store.delete_experiment(doomed.id).await.unwrap();

    let (gone_trial, gone_task) = &task_ids[0];
    assert!(matches!(store.experiment_by_id(doomed.id).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.trial_by_id(*gone_trial).await, Err(StoreError::NotFound { .. })));
    assert!(store.metrics_for_trial(*gone_trial, None, true).await.unwrap().is_empty());
    assert!(matches!(store.checkpoint_by_uuid(&format!("ckpt-{}", doomed.id)).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.task_by_id(gone_task).await, Err(StoreError::NotFound { .. })));
    assert!(store.allocation_session_by_token_hash(&format!("hash-{}", doomed.id)).await.unwrap().is_none());
    assert!(store.task_logs(gone_task, &LogFilter::default()).await.unwrap().is_empty());

    let (kept_trial, kept_task) = &task_ids[1];
    assert_eq!(store.trial_by_id(*kept_trial).await.unwrap().experiment_id, kept.id);
    assert_eq!(store.metrics_for_trial(*kept_trial, None, true).await.unwrap().len(), 1);
    assert!(store.checkpoint_by_uuid(&format!("ckpt-{}", kept.id)).await.is_ok());
    assert_eq!(store.task_by_id(kept_task).await.unwrap().allocations.len(), 1);
    assert!(store.allocation_session_by_token_hash(&format!("hash-{}", kept.id)).await.unwrap().is_some());
    assert_eq!(store.task_logs(kept_task, &LogFilter::default()).await.unwrap().len(), 2);

    assert!(matches!(store.delete_experiment(doomed.id).await, Err(StoreError::NotFound { .. })));
}
