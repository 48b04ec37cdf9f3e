//! The experiment `metrics-stream` endpoints on a terminal experiment (one update, then the stream
//! ends): metric names from the trials' summaries, the batches of a metric, a snapshot at a point of
//! progress, a sample of the series; and every bad input a 400 or 404 naming the parameter.

use resolute_store::{NewMetricReport, NewTrial, SearcherMetric, TrialRecord, db_now};
use serde_json::{Value, json};

use crate::experiments::create;
use crate::harness::{TestMaster, assert_error};

async fn trial(m: &TestMaster, experiment_id: i32, n: usize) -> TrialRecord {
    m.store
        .create_trial(NewTrial {
            experiment_id,
            request_id: format!("ms-req-{n}"),
            task_id: format!("{experiment_id}.ms-{n}"),
            state: "STATE_COMPLETED".to_owned(),
            hparams: json!({"lr": n}),
            seed: 7,
            start_time: db_now(),
        })
        .await
        .unwrap()
}

fn report(t: &TrialRecord, group: &str, steps: i64, avg: Value) -> NewMetricReport {
    let Value::Object(avg_metrics) = avg else { panic!("object") };
    NewMetricReport {
        trial_id: t.id,
        trial_run_id: 1,
        group: group.to_owned(),
        steps_completed: steps,
        report_time: db_now(),
        avg_metrics,
        batch_metrics: Vec::new(),
        searcher_metric: (group == "validation").then(|| SearcherMetric { name: "accuracy".into(), smaller_is_better: false }),
    }
}

/// The `result`s of a finished stream.
fn updates(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["result"].clone()).collect()
}

pub async fn streams_of_a_terminal_experiment_send_one_update(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let yaml = "name: ms\nentrypoint: python3 train.py\nsearcher: {name: single, metric: accuracy, smaller_is_better: false}\n";
    let id = i32::try_from(create(m, &admin, yaml, false).await).unwrap();
    let (a, b) = (trial(m, id, 1).await, trial(m, id, 2).await);
    // Out of step order, as reports may arrive.
    for s in [30, 10, 20] {
        m.store.insert_metrics(&[report(&a, "training", s, json!({"loss": 1.0 / s as f64}))]).await.unwrap();
    }
    m.store.insert_metrics(&[report(&a, "validation", 20, json!({"accuracy": 0.5}))]).await.unwrap();
    m.store.insert_metrics(&[report(&b, "validation", 24, json!({"accuracy": 0.9, "f1": 0.7}))]).await.unwrap();
    m.store.insert_metrics(&[report(&b, "inference", 24, json!({"latency": 3}))]).await.unwrap();
    m.store.update_experiment_state(id, "STATE_COMPLETED", Some(db_now())).await.unwrap();

    let r = m.get(&format!("/api/v1/experiments/metrics-stream/metric-names?ids={id}&periodSeconds=1"), Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let names = updates(&r.text);
    assert_eq!(names.len(), 1, "{}", r.text);
    assert_eq!(names[0]["searcherMetrics"], json!(["accuracy"]));
    assert_eq!(names[0]["trainingMetrics"], json!(["loss"]));
    assert_eq!(names[0]["validationMetrics"], json!(["accuracy", "f1"]));
    assert_eq!(
        names[0]["metricNames"],
        json!([{"group": "inference", "name": "latency"}, {"group": "training", "name": "loss"},
               {"group": "validation", "name": "accuracy"}, {"group": "validation", "name": "f1"}])
    );

    let r = m.get(&format!("/api/v1/experiments/{id}/metrics-stream/batches?metricName=accuracy&group=validation"), Some(&admin)).await;
    assert_eq!(updates(&r.text), vec![json!({"batches": [20, 24]})], "{}", r.text);
    let r = m
        .get(&format!("/api/v1/experiments/{id}/metrics-stream/batches?metricName=loss&metricType=METRIC_TYPE_TRAINING"), Some(&admin))
        .await;
    assert_eq!(updates(&r.text), vec![json!({"batches": [10, 20, 30]})], "{}", r.text);

    let path = format!(
        "/api/v1/experiments/{id}/metrics-stream/trials-snapshot?metricName=accuracy&group=validation&batchesProcessed=22&batchesMargin=2"
    );
    let snap = updates(&m.get(&path, Some(&admin)).await.text);
    assert_eq!(
        snap[0]["trials"],
        json!([{"trialId": a.id, "hparams": {"lr": 1}, "metric": 0.5, "batchesProcessed": 20},
               {"trialId": b.id, "hparams": {"lr": 2}, "metric": 0.9, "batchesProcessed": 24}])
    );

    let path =
        format!("/api/v1/experiments/{id}/metrics-stream/trials-sample?metricName=loss&group=training&maxDatapoints=2&startBatches=10");
    let sample = updates(&m.get(&path, Some(&admin)).await.text);
    assert_eq!(sample.len(), 1);
    let ours = sample[0]["trials"].as_array().unwrap().iter().find(|t| t["trialId"] == json!(a.id)).unwrap().clone();
    let points: Vec<i64> = ours["data"].as_array().unwrap().iter().map(|p| p["batches"].as_i64().unwrap()).collect();
    assert_eq!(points, [10, 30], "downsampled to 2, the ends kept: {ours}");
    assert_eq!(ours["data"][0]["values"], json!({"loss": 0.1}));
    assert!(sample[0]["promotedTrials"].as_array().unwrap().contains(&json!(a.id)));
    assert_eq!(sample[0]["demotedTrials"], json!([]));
}

pub async fn bad_metrics_stream_requests_name_the_parameter(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let cases: &[(&str, u16, &str)] = &[
        ("/api/v1/experiments/metrics-stream/metric-names", 400, "ids"),
        ("/api/v1/experiments/metrics-stream/metric-names?ids=424242", 404, "424242"),
        ("/api/v1/experiments/metrics-stream/metric-names?ids=1&periodSeconds=-3", 400, "periodSeconds"),
        ("/api/v1/experiments/1/metrics-stream/batches?group=training", 400, "metricName"),
        ("/api/v1/experiments/1/metrics-stream/batches?metricName=loss", 400, "group"),
        ("/api/v1/experiments/1/metrics-stream/batches?metricName=loss&metricType=METRIC_TYPE_NOPE", 400, "metricType"),
        ("/api/v1/experiments/424242/metrics-stream/batches?metricName=loss&group=training", 404, "424242"),
        ("/api/v1/experiments/1/metrics-stream/trials-snapshot?metricName=loss&group=training", 400, "batchesProcessed"),
        (
            "/api/v1/experiments/1/metrics-stream/trials-snapshot?metricName=loss&group=training&batchesProcessed=5&batchesMargin=-1",
            400,
            "batchesMargin",
        ),
        ("/api/v1/experiments/1/metrics-stream/trials-sample?metricName=loss&group=training&maxTrials=-1", 400, "maxTrials"),
        ("/api/v1/experiments/1/metrics-stream/trials-sample?metricName=loss&group=training&maxDatapoints=-1", 400, "maxDatapoints"),
    ];
    for (path, status, names) in cases {
        let r = m.get(path, Some(&admin)).await;
        assert_error(&r, *status, if *status == 404 { "NotFound" } else { "InvalidArgument" });
        assert!(r.body["error"]["error"].as_str().unwrap().contains(names), "{path}: {}", r.text);
    }
    assert_eq!(m.get("/api/v1/experiments/metrics-stream/metric-names?ids=1", None).await.status, 401);
}
