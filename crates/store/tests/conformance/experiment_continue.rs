//! Continuing a finished experiment: one transaction, only from the state the caller saw.

use resolute_store::{NewTask, Store, StoreError, db_now};
use serde_json::json;

use crate::fixtures::{experiment, trial};

pub async fn continue_reopens_trials_and_zeroes_restarts(store: &dyn Store) {
    let e = experiment(store, "continue").await;
    let done = trial(store, e.id, 1).await;
    let failed = trial(store, e.id, 2).await;
    store.record_trial_restart(failed.id).await.unwrap();
    store.update_trial_state(done.id, "STATE_COMPLETED", Some(db_now())).await.unwrap();
    store.update_trial_state(failed.id, "STATE_ERROR", Some(db_now())).await.unwrap();
    let task = NewTask {
        task_id: failed.task_id.clone(),
        task_type: "TASK_TYPE_TRIAL".into(),
        start_time: db_now(),
        job_id: None,
        owner_id: None,
    };
    store.create_task(task).await.unwrap();
    store.end_task(&failed.task_id, db_now()).await.unwrap();
    store.update_experiment_state_if(e.id, &[e.state.as_str()], "STATE_ERROR", Some(db_now())).await.unwrap();
    store.set_experiment_progress(e.id, Some(1.0)).await.unwrap();

    // Not from a state the experiment is not in.
    let config = json!({"searcher": {"name": "random", "max_length": {"batches": 20}}});
    let err = store.continue_experiment(e.id, "STATE_COMPLETED", "STATE_ACTIVE", &config, &[failed.id], "STATE_PAUSED").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    assert_eq!(store.trial_by_id(failed.id).await.unwrap().restarts, 1, "nothing changed");

    store.continue_experiment(e.id, "STATE_ERROR", "STATE_ACTIVE", &config, &[failed.id], "STATE_PAUSED").await.unwrap();
    let after = store.experiment_by_id(e.id).await.unwrap();
    assert_eq!((after.state.as_str(), after.end_time, after.progress), ("STATE_ACTIVE", None, Some(0.0)));
    assert_eq!(*after.config, config);
    let reopened = store.trial_by_id(failed.id).await.unwrap();
    assert_eq!((reopened.state.as_str(), reopened.restarts, reopened.end_time), ("STATE_PAUSED", 0, None));
    assert_eq!(reopened.run_id, failed.run_id + 2, "a new run after the restart's");
    assert_eq!(reopened.start_time, failed.start_time, "the trial keeps its start time");
    let kept = store.trial_by_id(done.id).await.unwrap();
    assert_eq!((kept.state.as_str(), kept.end_time), ("STATE_COMPLETED", None));
    let task = store.task_by_id(&failed.task_id).await.unwrap();
    assert_eq!(task.task.end_time, None, "the reopened trial's task is open again");
}
