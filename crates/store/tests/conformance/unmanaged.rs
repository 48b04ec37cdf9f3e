//! Unmanaged experiments and trials: external ids find what a previous run created, the trial's
//! state is what its script reports, the experiment's follows its most advanced trial, and trials
//! whose heartbeats stopped end in ERROR at their last heartbeat.

use chrono::TimeDelta;
use resolute_store::{NewUnmanagedTrial, Store, StoreError, TrialRecord, UnmanagedStart};
use serde_json::json;

use crate::fixtures::{at, new_experiment, user_id};

async fn unmanaged_experiment(store: &dyn Store, name: &str) -> (i32, i32) {
    let owner = user_id(store, "owner").await;
    let mut new = new_experiment(owner, name);
    new.unmanaged = true;
    new.state = "STATE_PAUSED".to_owned();
    (store.create_experiment(new).await.unwrap().id, owner)
}

async fn unmanaged_trial(store: &dyn Store, experiment_id: i32, owner: i32, external: Option<&str>, n: i64) -> TrialRecord {
    store
        .create_unmanaged_trial(NewUnmanagedTrial {
            experiment_id,
            task_id: format!("{experiment_id}.{}", uuid::Uuid::new_v4()),
            request_id: uuid::Uuid::new_v4().to_string(),
            hparams: json!({"lr": 0.1}),
            external_trial_id: external.map(str::to_owned),
            owner_id: owner,
            job_id: None,
            at: at(n),
        })
        .await
        .unwrap()
}

async fn experiment_state(store: &dyn Store, id: i32) -> (String, bool) {
    let e = store.experiment_by_id(id).await.unwrap();
    (e.state, e.end_time.is_some())
}

pub async fn external_ids_find_earlier_runs(store: &dyn Store) {
    let (exp, owner) = unmanaged_experiment(store, "laptop").await;
    assert_eq!(store.experiment_id_by_external_id("ext-1").await.unwrap(), None);
    store.set_experiment_external_id(exp, "ext-1").await.unwrap();
    assert_eq!(store.experiment_id_by_external_id("ext-1").await.unwrap(), Some((exp, true)));
    assert_eq!(store.experiment_external_id(exp).await.unwrap().as_deref(), Some("ext-1"));
    let (other, _) = unmanaged_experiment(store, "other").await;
    let err = store.set_experiment_external_id(other, "ext-1").await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");

    let first = unmanaged_trial(store, exp, owner, Some("t-1"), 0).await;
    assert_eq!((first.state.as_str(), first.run_id), ("STATE_PAUSED", 0));
    assert!(store.task_by_id(&first.task_id).await.unwrap().allocations.is_empty(), "an unmanaged trial has no allocation");
    let again = unmanaged_trial(store, exp, owner, Some("t-1"), 1).await;
    assert_eq!(again.id, first.id, "the same external trial id is the same trial");
    let second = unmanaged_trial(store, exp, owner, Some("t-2"), 2).await;
    assert_ne!(second.id, first.id);
    let anonymous = unmanaged_trial(store, exp, owner, None, 3).await;
    assert_ne!(anonymous.id, first.id);
    assert_eq!(store.trial_id_by_external_ids("ext-1", "t-2").await.unwrap(), second.id);
    let err = store.trial_id_by_external_ids("ext-1", "t-3").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");

    store.set_unmanaged_experiment_config(exp, &json!({"name": "renamed"}), "renamed").await.unwrap();
    assert_eq!(store.experiment_by_id(exp).await.unwrap().name, "renamed");
}

pub async fn experiment_state_follows_its_trials(store: &dyn Store) {
    let (exp, owner) = unmanaged_experiment(store, "states").await;
    let a = unmanaged_trial(store, exp, owner, Some("a"), 0).await;
    let b = unmanaged_trial(store, exp, owner, Some("b"), 0).await;
    assert_eq!(experiment_state(store, exp).await, ("STATE_PAUSED".to_owned(), false));

    assert_eq!(store.start_unmanaged_trial(a.id, false, at(10)).await.unwrap(), UnmanagedStart::Started { run_id: 1 });
    assert_eq!(store.start_unmanaged_trial(a.id, false, at(11)).await.unwrap(), UnmanagedStart::AlreadyStarted);
    assert_eq!(experiment_state(store, exp).await, ("STATE_RUNNING".to_owned(), false));
    assert_eq!(store.trial_by_id(a.id).await.unwrap().state, "STATE_RUNNING");

    // One trial ends in ERROR while the other runs: still RUNNING.
    store.start_unmanaged_trial(b.id, false, at(12)).await.unwrap();
    store.touch_unmanaged_trial(b.id, Some("STATE_ERROR"), at(20)).await.unwrap();
    assert_eq!(experiment_state(store, exp).await, ("STATE_RUNNING".to_owned(), false));
    let b_now = store.trial_by_id(b.id).await.unwrap();
    assert_eq!((b_now.state.as_str(), b_now.end_time), ("STATE_ERROR", Some(at(20))));
    assert_eq!(store.task_by_id(&b.task_id).await.unwrap().task.end_time, Some(at(20)));

    // COMPLETED ranks over ERROR.
    store.touch_unmanaged_trial(a.id, None, at(25)).await.unwrap();
    store.touch_unmanaged_trial(a.id, Some("STATE_COMPLETED"), at(30)).await.unwrap();
    let e = store.experiment_by_id(exp).await.unwrap();
    assert_eq!((e.state.as_str(), e.end_time), ("STATE_COMPLETED", Some(at(30))));

    // A resumed trial makes it RUNNING again, with no end time.
    assert_eq!(store.start_unmanaged_trial(a.id, true, at(40)).await.unwrap(), UnmanagedStart::Started { run_id: 2 });
    assert_eq!(experiment_state(store, exp).await, ("STATE_RUNNING".to_owned(), false));
    assert_eq!(store.task_by_id(&a.task_id).await.unwrap().task.end_time, None);

    let err = store.touch_unmanaged_trial(99_999, None, at(50)).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "trial", .. }), "{err:?}");
    let err = store.start_unmanaged_trial(99_999, false, at(50)).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "trial", .. }), "{err:?}");
}

pub async fn lost_trials_end_in_error(store: &dyn Store) {
    let (exp, owner) = unmanaged_experiment(store, "lost").await;
    let quiet = unmanaged_trial(store, exp, owner, Some("quiet"), 0).await;
    let alive = unmanaged_trial(store, exp, owner, Some("alive"), 0).await;
    store.start_unmanaged_trial(quiet.id, false, at(0)).await.unwrap();
    store.start_unmanaged_trial(alive.id, false, at(0)).await.unwrap();
    store.touch_unmanaged_trial(alive.id, None, at(400)).await.unwrap();
    // A managed trial that is RUNNING is never touched.
    let managed = crate::fixtures::experiment(store, "managed").await;
    let managed_trial = crate::fixtures::trial(store, managed.id, 1).await;
    store.update_trial_state(managed_trial.id, "STATE_RUNNING", None).await.unwrap();

    let cutoff = at(400) - TimeDelta::minutes(5);
    assert_eq!(store.mark_lost_unmanaged_trials(cutoff, at(400)).await.unwrap(), vec![quiet.id]);
    let lost = store.trial_by_id(quiet.id).await.unwrap();
    assert_eq!((lost.state.as_str(), lost.end_time), ("STATE_ERROR", Some(at(0))), "ended at its last heartbeat");
    assert_eq!(store.trial_by_id(alive.id).await.unwrap().state, "STATE_RUNNING");
    assert_eq!(store.trial_by_id(managed_trial.id).await.unwrap().state, "STATE_RUNNING");
    assert_eq!(experiment_state(store, exp).await, ("STATE_RUNNING".to_owned(), false));

    // Once the other one goes quiet too, the experiment ends in ERROR.
    assert_eq!(store.mark_lost_unmanaged_trials(at(1000), at(1000)).await.unwrap(), vec![alive.id]);
    assert_eq!(experiment_state(store, exp).await, ("STATE_ERROR".to_owned(), true));
    assert!(store.mark_lost_unmanaged_trials(at(2000), at(2000)).await.unwrap().is_empty());
}
