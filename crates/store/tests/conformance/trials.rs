use chrono::TimeDelta;
use resolute_store::{OrderDirection, SearcherMetric, Store, StoreError, TrialFilter, TrialPage, TrialSort, VALIDATION_GROUP, db_now};
use serde_json::json;

use crate::fixtures::{experiment, new_trial, report, trial};

pub async fn create_and_fetch_trial(store: &dyn Store) {
    let e = experiment(store, "trials").await;
    let new = new_trial(e.id, 1);
    let created = store.create_trial(new.clone()).await.unwrap();
    assert!(created.id > 0);
    assert_eq!(created.experiment_id, e.id);
    assert_eq!((created.request_id.as_str(), created.task_id.as_str()), (new.request_id.as_str(), new.task_id.as_str()));
    assert_eq!(created.state, "STATE_ACTIVE");
    assert_eq!(created.hparams, json!({"lr": 0.01, "layers": 1}));
    assert_eq!((created.seed, created.start_time), (1001, new.start_time));
    assert_eq!((created.restarts, created.run_id, created.total_batches), (0, 1, 0), "the first run is run 1");
    assert_eq!(created.summary_metrics, json!({}));
    assert_eq!(created.runner_state, "");
    assert_eq!((created.end_time, created.best_validation, created.progress), (None, None, None));
    assert_eq!((created.latest_checkpoint_uuid.as_deref(), created.end_reason.as_deref()), (None, None));
    assert_eq!(store.trial_by_id(created.id).await.unwrap(), created);
    assert_eq!(store.trial_by_task_id(&created.task_id).await.unwrap(), created);

    let mut same_request = new_trial(e.id, 2);
    same_request.request_id = new.request_id.clone();
    let err = store.create_trial(same_request).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { entity: "trial", .. }), "{err:?}");
    let other = experiment(store, "other").await;
    let mut reused = new_trial(other.id, 1);
    assert!(store.create_trial(reused.clone()).await.is_ok(), "request ids are unique per experiment only");
    reused.request_id = "fresh".into();
    assert!(matches!(store.create_trial(reused).await, Err(StoreError::Conflict { .. })), "task ids are unique");
    // Experiments carry their trial counts, read and listed.
    assert_eq!(store.experiment_by_id(e.id).await.unwrap().num_trials, 1);
    let listed = store.list_experiments(&Default::default()).await.unwrap().experiments;
    let counts: Vec<(i32, i64)> = listed.iter().map(|x| (x.id, x.num_trials)).collect();
    assert!(counts.contains(&(e.id, 1)) && counts.contains(&(other.id, 1)), "{counts:?}");
    let err = store.create_trial(new_trial(9999, 1)).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "experiment", .. }), "{err:?}");
    assert!(matches!(store.trial_by_id(9999).await, Err(StoreError::NotFound { entity: "trial", .. })));
    assert!(matches!(store.trial_by_task_id("nope").await, Err(StoreError::NotFound { .. })));
}

pub async fn restart_counters(store: &dyn Store) {
    let e = experiment(store, "restarts").await;
    let t = trial(store, e.id, 1).await;
    let restarted = store.record_trial_restart(t.id).await.unwrap();
    assert_eq!((restarted.restarts, restarted.run_id), (1, 2));
    let resumed = store.advance_trial_run(t.id).await.unwrap();
    assert_eq!((resumed.restarts, resumed.run_id), (1, 3), "a resume is a new run, not a failure");
    let again = store.record_trial_restart(t.id).await.unwrap();
    assert_eq!((again.restarts, again.run_id), (2, 4));
    assert_eq!(store.trial_by_id(t.id).await.unwrap(), again);
    assert!(matches!(store.record_trial_restart(9999).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.advance_trial_run(9999).await, Err(StoreError::NotFound { .. })));
}

/// The many-trial compare-and-set: only the listed trials in a `from` state move, past the
/// statement's chunk size, and ids of no trial are skipped.
pub async fn many_trials_move_state_together(store: &dyn Store) {
    let e = experiment(store, "many-states").await;
    let mut ids = Vec::new();
    for n in 0..160 {
        ids.push(trial(store, e.id, n).await.id);
    }
    let ended = ids[3];
    store.update_trial_state(ended, "STATE_COMPLETED", Some(db_now())).await.unwrap();
    let unlisted = ids.pop().unwrap();
    ids.push(424_242);
    let active = ["STATE_ACTIVE", "STATE_QUEUED"];
    assert_eq!(store.update_trial_states_if(&ids, &active, "STATE_QUEUED").await.unwrap(), 158);
    assert_eq!(store.update_trial_states_if(&ids, &active, "STATE_RUNNING").await.unwrap(), 158, "QUEUED is among `from`");
    assert_eq!(store.update_trial_states_if(&ids, &active, "STATE_RUNNING").await.unwrap(), 0, "RUNNING is not");
    assert_eq!(store.update_trial_states_if(&[], &active, "STATE_RUNNING").await.unwrap(), 0);
    assert_eq!(store.update_trial_states_if(&ids, &[], "STATE_QUEUED").await.unwrap(), 0);
    for (id, state) in [(ids[0], "STATE_RUNNING"), (ids[158], "STATE_RUNNING"), (ended, "STATE_COMPLETED"), (unlisted, "STATE_ACTIVE")] {
        assert_eq!(store.trial_by_id(id).await.unwrap().state, state, "trial {id}");
    }
    assert!(store.trial_by_id(ended).await.unwrap().end_time.is_some(), "a trial left alone keeps its end time");
}

pub async fn state_and_runner_updates(store: &dyn Store) {
    let e = experiment(store, "states").await;
    let t = trial(store, e.id, 1).await;
    let active = ["STATE_ACTIVE"];
    assert!(store.update_trial_state_if(t.id, &active, "STATE_STOPPING_COMPLETED", None).await.unwrap());
    assert!(!store.update_trial_state_if(t.id, &active, "STATE_STOPPING_CANCELED", None).await.unwrap());
    let end = db_now();
    assert!(store.update_trial_state_if(t.id, &["STATE_STOPPING_COMPLETED"], "STATE_COMPLETED", Some(end)).await.unwrap());
    assert!(matches!(store.update_trial_state_if(9999, &active, "STATE_COMPLETED", None).await, Err(StoreError::NotFound { .. })));
    store.set_trial_runner_state(t.id, "validating").await.unwrap();
    store.set_trial_progress(t.id, Some(0.5)).await.unwrap();
    store.set_trial_end_reason(t.id, Some("EXITED_REASON_INVALID_HP")).await.unwrap();
    let after = store.trial_by_id(t.id).await.unwrap();
    assert_eq!((after.state.as_str(), after.end_time), ("STATE_COMPLETED", Some(end)));
    assert_eq!(after.runner_state, "validating");
    assert_eq!(after.progress, Some(0.5));
    assert_eq!(after.end_reason.as_deref(), Some("EXITED_REASON_INVALID_HP"));
    store.update_trial_state(t.id, "STATE_ACTIVE", None).await.unwrap();
    store.set_trial_end_reason(t.id, None).await.unwrap();
    let after = store.trial_by_id(t.id).await.unwrap();
    assert_eq!((after.state.as_str(), after.end_time, after.end_reason), ("STATE_ACTIVE", None, None));
    assert!(matches!(store.set_trial_runner_state(9999, "x").await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.update_trial_state(9999, "x", None).await, Err(StoreError::NotFound { .. })));
}

fn ids(page: TrialPage) -> Vec<i32> {
    page.trials.into_iter().map(|t| t.id).collect()
}

pub async fn list_trials_filters_sorts_and_pages(store: &dyn Store) {
    let e = experiment(store, "list").await;
    let other = experiment(store, "other").await;
    trial(store, other.id, 1).await;
    let now = db_now();
    let mut made = Vec::new();
    // (state, validation loss, steps, start offset)
    for (n, (state, loss, steps, offset)) in [
        ("STATE_ACTIVE", Some(0.5), 300, 2),
        ("STATE_COMPLETED", None, 100, 0),
        ("STATE_ERROR", Some(0.2), 200, 1),
        ("STATE_ACTIVE", Some(0.9), 0, 3),
    ]
    .into_iter()
    .enumerate()
    {
        let mut new = new_trial(e.id, n as u32);
        new.state = state.into();
        new.start_time = now + TimeDelta::seconds(offset);
        let t = store.create_trial(new).await.unwrap();
        if let Some(loss) = loss {
            let mut r = report(t.id, 1, VALIDATION_GROUP, steps, json!({"loss": loss}));
            r.searcher_metric = Some(SearcherMetric { name: "loss".into(), smaller_is_better: true });
            store.insert_metrics(&[r]).await.unwrap();
        } else {
            store.insert_metrics(&[report(t.id, 1, "training", steps, json!({"loss": 1}))]).await.unwrap();
        }
        made.push(t.id);
    }
    let [t0, t1, t2, t3] = made[..] else { unreachable!() };
    let list = |sort, order, states: &[&str]| {
        let filter =
            TrialFilter { experiment_id: e.id, states: states.iter().map(|s| s.to_string()).collect(), sort, order, ..Default::default() };
        async move { store.list_trials(&filter).await.unwrap() }
    };
    use OrderDirection::*;
    use TrialSort::*;
    let all = list(Id, Asc, &[]).await;
    assert_eq!(all.total, 4, "only this experiment's trials");
    assert_eq!(ids(all), [t0, t1, t2, t3]);
    assert_eq!(ids(list(Id, Desc, &["STATE_ACTIVE"]).await), [t3, t0]);
    assert_eq!(ids(list(Id, Asc, &["STATE_ERROR", "STATE_COMPLETED"]).await), [t1, t2]);
    assert_eq!(ids(list(StartTime, Asc, &[]).await), [t1, t2, t0, t3]);
    assert_eq!(ids(list(State, Asc, &[]).await), [t0, t3, t1, t2]);
    assert_eq!(ids(list(BestValidation, Asc, &[]).await), [t2, t0, t3, t1], "no validation sorts last");
    assert_eq!(ids(list(BestValidation, Desc, &[]).await), [t3, t0, t2, t1], "no validation sorts last descending too");
    assert_eq!(ids(list(TotalBatches, Desc, &[]).await), [t0, t2, t1, t3]);
    store.update_trial_state(t2, "STATE_ERROR", Some(now)).await.unwrap();
    assert_eq!(ids(list(EndTime, Asc, &[]).await), [t2, t0, t1, t3]);

    let page = TrialFilter { experiment_id: e.id, offset: 1, limit: Some(2), ..Default::default() };
    let page = store.list_trials(&page).await.unwrap();
    assert_eq!(page.total, 4);
    assert_eq!(ids(page), [t1, t2]);
}
