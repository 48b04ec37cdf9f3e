//! User edits: a checkpoint's metadata replaced (the SDK's `add_metadata`/`remove_metadata`),
//! an experiment's stored config replaced (a GC policy change).

use resolute_store::{Store, StoreError};
use serde_json::json;

use crate::fixtures::{checkpoint, experiment, trial};

pub async fn checkpoint_metadata_is_replaced(store: &dyn Store) {
    let e = experiment(store, "ckpt-meta").await;
    let t = trial(store, e.id, 1).await;
    store.report_checkpoint(checkpoint(&t, "c-meta", 10, Some(0.5))).await.unwrap();
    let metadata = json!({"steps_completed": 10, "note": "best so far", "nested": {"a": [1, 2]}, "odd": "nul\u{0}inside"});
    store.set_checkpoint_metadata("c-meta", &metadata).await.unwrap();
    let read = store.checkpoint_by_uuid("c-meta").await.unwrap();
    assert_eq!(read.metadata, metadata);
    assert_eq!(read.state, "STATE_COMPLETED", "only the metadata changes");
    assert_eq!(read.searcher_metric, Some(0.5));
    store.set_checkpoint_metadata("c-meta", &json!({})).await.unwrap();
    assert_eq!(store.checkpoint_by_uuid("c-meta").await.unwrap().metadata, json!({}));
    for missing in ["c-none", "nul\0uuid"] {
        let err = store.set_checkpoint_metadata(missing, &json!({})).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound { entity: "checkpoint", .. }), "{err:?}");
    }
}

pub async fn experiment_config_is_replaced(store: &dyn Store) {
    let e = experiment(store, "gc-policy").await;
    let mut config = e.config.clone().into_value();
    config["checkpoint_storage"] = json!({"type": "shared_fs", "host_path": "/tmp", "save_trial_best": 3});
    store.set_experiment_config(e.id, &config).await.unwrap();
    assert_eq!(*store.experiment_by_id(e.id).await.unwrap().config, config);
    let err = store.set_experiment_config(9999, &config).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "experiment", .. }), "{err:?}");
}
