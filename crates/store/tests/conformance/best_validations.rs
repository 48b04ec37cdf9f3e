//! `Store::best_validations`: a page of experiments' best trials in one read (the experiments
//! list's `bestTrialSearcherMetric`).

use resolute_store::{BestTrialValue, SearcherMetric, Store, VALIDATION_GROUP};
use serde_json::json;

use crate::fixtures::{experiment, report, trial};

fn validation(trial_id: i32, steps: i64, loss: f64, smaller_is_better: bool) -> resolute_store::NewMetricReport {
    let mut r = report(trial_id, 1, VALIDATION_GROUP, steps, json!({"loss": loss}));
    r.searcher_metric = Some(SearcherMetric { name: "loss".into(), smaller_is_better });
    r
}

pub async fn best_validations_of_a_page_of_experiments(store: &dyn Store) {
    let smaller = experiment(store, "smaller").await;
    let (a, b) = (trial(store, smaller.id, 1).await, trial(store, smaller.id, 2).await);
    let larger = experiment(store, "larger").await;
    let (c, d) = (trial(store, larger.id, 1).await, trial(store, larger.id, 2).await);
    let none = experiment(store, "no-validations").await;
    trial(store, none.id, 1).await;
    let unlisted = experiment(store, "unlisted").await;
    let u = trial(store, unlisted.id, 1).await;
    store
        .insert_metrics(&[
            validation(a.id, 100, 0.5, true),
            validation(b.id, 100, 0.25, true),
            validation(c.id, 100, 0.5, false),
            validation(d.id, 100, 0.75, false),
            validation(u.id, 100, 0.1, true),
        ])
        .await
        .unwrap();
    let got = store.best_validations(&[(smaller.id, true), (larger.id, false), (none.id, true)]).await.unwrap();
    assert_eq!(
        got,
        [
            BestTrialValue { experiment_id: smaller.id, trial_id: b.id, value: 0.25 },
            BestTrialValue { experiment_id: larger.id, trial_id: d.id, value: 0.75 },
        ],
        "each experiment's best in its own direction; one without validations is left out, and so is one not asked for"
    );
    assert!(store.best_validations(&[]).await.unwrap().is_empty());
}
