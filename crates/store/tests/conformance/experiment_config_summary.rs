//! The experiment's config summary (`config_summary`): the config's list fields in the config's
//! shape, written with the config on create and on every config change, read by single reads and
//! lists alike, hyperparameters byte for byte as the config's text holds them.

use resolute_store::{ExperimentFilter, ExperimentRecord, Store, config_summary_text};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::fixtures::{new_experiment, user_id};

fn config(searcher: &str, pool: &str) -> Value {
    json!({
        "name": "summary",
        "searcher": {"name": searcher, "metric": "val_acc", "smaller_is_better": false, "max_trials": 4},
        "resources": {"resource_pool": pool, "slots_per_trial": 2},
        "hyperparameters": {"lr": {"type": "log", "minval": -4.5, "maxval": -1, "base": 10}, "tag": "é\"x"},
        "environment": {"image": "not in the summary"},
    })
}

/// The record's summary as stored, and the same row as the list reads it.
async fn summaries(store: &dyn Store, id: i32) -> (ExperimentRecord, ExperimentRecord) {
    let one = store.experiment_by_id(id).await.unwrap();
    let page = store.list_experiments(&ExperimentFilter { limit: Some(100), ..Default::default() }).await.unwrap();
    let listed = page.experiments.into_iter().find(|e| e.id == id).expect("listed");
    (one, listed)
}

fn assert_summarises(record: &ExperimentRecord, config: &Value) {
    assert_eq!(record.config_summary.raw().get(), config_summary_text(config));
    assert_eq!(
        *record.config_summary,
        json!({
            "searcher": {"name": config["searcher"]["name"], "metric": "val_acc", "smaller_is_better": false},
            "resources": {"resource_pool": config["resources"]["resource_pool"]},
            "hyperparameters": config["hyperparameters"],
        })
    );
    // The hyperparameters' text is the config's own.
    #[derive(serde::Deserialize)]
    struct Hp<'a> {
        #[serde(borrow)]
        hyperparameters: &'a RawValue,
    }
    let from_summary: Hp = record.config_summary.read().unwrap();
    let from_config: Hp = record.config.read().unwrap();
    assert_eq!(from_summary.hyperparameters.get(), from_config.hyperparameters.get());
}

pub async fn config_summary_follows_every_config_write(store: &dyn Store) {
    let owner = user_id(store, "summarised").await;
    let mut new = new_experiment(owner, "summary");
    new.config = config("grid", "default");
    let created = store.create_experiment(new).await.unwrap();
    assert_summarises(&created, &config("grid", "default"));
    let (one, listed) = summaries(store, created.id).await;
    assert_summarises(&one, &config("grid", "default"));
    assert_summarises(&listed, &config("grid", "default"));

    store.set_experiment_config(created.id, &config("random", "gpu")).await.unwrap();
    let (one, listed) = summaries(store, created.id).await;
    assert_summarises(&one, &config("random", "gpu"));
    assert_summarises(&listed, &config("random", "gpu"));

    store.update_experiment_state_if(created.id, &[created.state.as_str()], "STATE_COMPLETED", None).await.unwrap();
    store.continue_experiment(created.id, "STATE_COMPLETED", "STATE_ACTIVE", &config("single", "cpu"), &[], "STATE_PAUSED").await.unwrap();
    let (one, listed) = summaries(store, created.id).await;
    assert_summarises(&one, &config("single", "cpu"));
    assert_summarises(&listed, &config("single", "cpu"));

    let mut unmanaged = new_experiment(owner, "detached");
    unmanaged.unmanaged = true;
    unmanaged.config = config("single", "default");
    let detached = store.create_experiment(unmanaged).await.unwrap();
    store.set_unmanaged_experiment_config(detached.id, &config("custom", "laptop"), "detached").await.unwrap();
    let (one, listed) = summaries(store, detached.id).await;
    assert_summarises(&one, &config("custom", "laptop"));
    assert_summarises(&listed, &config("custom", "laptop"));
}
