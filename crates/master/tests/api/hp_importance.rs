//! `GET /api/v1/experiments/{id}/hyperparameter-importance`: trials seeded through the store, one
//! hyperparameter (`lr`, log-spaced) deciding the searcher metric and one (`dropout`) not; the
//! endpoint ranks them, reads the searcher metric's best value, and answers bad input clearly.

use resolute_store::{NewMetricReport, NewTrial, SearcherMetric, db_now};
use serde_json::{Map, Value, json};

use crate::experiments::{create, minimal_yaml};
use crate::harness::{TestMaster, assert_error};

async fn seed(m: &TestMaster, experiment_id: i32, i: usize) {
    let lr = 10f64.powf(-4.0 + 0.2 * i as f64);
    let dropout = [0.1, 0.2, 0.3, 0.4][i % 4];
    let trial = m
        .store
        .create_trial(NewTrial {
            experiment_id,
            request_id: format!("seeded-{i}"),
            task_id: format!("{experiment_id}.seeded-{i}"),
            state: "STATE_COMPLETED".into(),
            hparams: json!({"lr": lr, "dropout": dropout, "optimizer": {"name": "adam"}}),
            seed: 1,
            start_time: db_now(),
        })
        .await
        .unwrap();
    // The searcher metric (loss, smaller is better): its best is 0.1·i, reported after a worse one.
    for (steps, loss) in [(10, 0.1 * i as f64), (20, 0.1 * i as f64 + 5.0)] {
        let mut avg = Map::new();
        avg.insert("loss".into(), json!(loss));
        let mut train = Map::new();
        train.insert("acc".into(), json!(dropout));
        let report = |group: &str, avg: Map<String, Value>| NewMetricReport {
            trial_id: trial.id,
            trial_run_id: 1,
            group: group.to_owned(),
            steps_completed: steps,
            report_time: db_now(),
            avg_metrics: avg,
            batch_metrics: Vec::new(),
            searcher_metric: (group == "validation").then(|| SearcherMetric { name: "loss".into(), smaller_is_better: true }),
        };
        m.store.insert_metrics(&[report("training", train), report("validation", avg)]).await.unwrap();
    }
}

pub async fn importance_ranks_the_hyperparameter_that_matters(m: &TestMaster) {
    let token = m.login("admin", "").await;
    let id = create(m, &token, &minimal_yaml("hpi"), false).await;
    let path = format!("/api/v1/experiments/{id}/hyperparameter-importance");

    // Before any trial reported: each named metric says why there is nothing yet.
    let early = m.get(&format!("{path}?metricName=loss"), Some(&token)).await;
    assert_eq!(early.status, 200, "{}", early.text);
    let loss = &early.body["validationMetrics"]["loss"];
    assert_eq!((loss["trialCount"].as_u64(), loss["pending"].as_bool()), (Some(0), Some(true)), "{loss}");
    assert!(loss["error"].as_str().unwrap().contains("at least 3"), "{loss}");

    for i in 0..16 {
        seed(m, i32::try_from(id).unwrap(), i).await;
    }
    let all = m.get(&path, Some(&token)).await;
    assert_eq!(all.status, 200, "{}", all.text);
    let loss = &all.body["validationMetrics"]["loss"];
    assert_eq!(loss["trialCount"], 16, "{loss}");
    assert_eq!((loss["error"].as_str(), loss["pending"].as_bool()), (Some(""), Some(false)), "{loss}");
    let lr = loss["hpImportance"]["lr"].as_f64().unwrap();
    let dropout = loss["hpImportance"]["dropout"].as_f64().unwrap();
    assert!(lr > 0.8, "lr decides the best loss: {loss}");
    assert!(dropout < 0.1, "dropout does not: {loss}");
    assert_eq!(loss["hpImportance"]["optimizer.name"], 0.0, "a constant (nested) hyperparameter: {loss}");
    // The training metric `acc` is the dropout itself.
    let acc = &all.body["trainingMetrics"]["acc"];
    assert!(acc["hpImportance"]["dropout"].as_f64().unwrap() > 0.9, "{acc}");
    assert!(acc["hpImportance"]["lr"].as_f64().unwrap() < 0.1, "{acc}");

    // One metric asked for: only it comes back.
    let one = m.get(&format!("{path}?metricName=acc&metricType=METRIC_TYPE_TRAINING"), Some(&token)).await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.body["validationMetrics"], json!({}));
    assert_eq!(one.body["trainingMetrics"]["acc"]["trialCount"], 16);

    assert_error(&m.get(&format!("{path}?metricType=METRIC_TYPE_PROFILING"), Some(&token)).await, 400, "InvalidArgument");
    assert_error(&m.get(&format!("{path}?metricType=bogus"), Some(&token)).await, 400, "InvalidArgument");
    assert_error(&m.get("/api/v1/experiments/999/hyperparameter-importance", Some(&token)).await, 404, "NotFound");
    assert_error(&m.get("/api/v1/experiments/abc/hyperparameter-importance", Some(&token)).await, 400, "InvalidArgument");
    assert_eq!(m.get(&path, None).await.status, 401);
}
