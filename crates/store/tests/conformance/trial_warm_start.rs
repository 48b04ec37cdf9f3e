//! A trial's warm-start checkpoint: set once known, read back with the trial and in lists.

use resolute_store::{Store, StoreError, TrialFilter};

use crate::fixtures::{experiment, trial};

pub async fn warm_start_is_recorded_on_the_trial(store: &dyn Store) {
    let e = experiment(store, "warm").await;
    let t = trial(store, e.id, 1).await;
    assert_eq!(t.warm_start_checkpoint_uuid, None, "a trial starts from scratch unless told");
    let uuid = "7f1c2c58-8a4e-4c55-9f5b-3d3d1c0b2a11";
    store.set_trial_warm_start(t.id, uuid).await.unwrap();
    assert_eq!(store.trial_by_id(t.id).await.unwrap().warm_start_checkpoint_uuid.as_deref(), Some(uuid));
    let listed = store.list_trials(&TrialFilter { experiment_id: e.id, ..Default::default() }).await.unwrap().trials;
    assert_eq!(listed[0].warm_start_checkpoint_uuid.as_deref(), Some(uuid));
    let err = store.set_trial_warm_start(9999, uuid).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "trial", .. }), "{err:?}");
}
