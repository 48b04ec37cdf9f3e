//! `GET /api/v1/trials/time-series` (upstream `CompareTrials`), the SDK's metric streams and the
//! trial's summary metrics: reports stored out of step order read back sorted and complete,
//! series are downsampled to `maxDatapoints` keeping their extremes, summaries use upstream's keys;
//! `…/time-series/columns` answers the same rows as columns.

use resolute_store::{NewMetricReport, NewTrial, SearcherMetric, TrialRecord, db_now};
use serde_json::{Value, json};

use crate::experiments::create;
use crate::harness::{TestMaster, assert_error};

async fn trial(m: &TestMaster, experiment_id: i64, n: usize) -> TrialRecord {
    let experiment_id = i32::try_from(experiment_id).unwrap();
    m.store
        .create_trial(NewTrial {
            experiment_id,
            request_id: format!("ts-req-{n}"),
            task_id: format!("{experiment_id}.ts-{n}"),
            state: "STATE_ACTIVE".to_owned(),
            hparams: json!({"lr": 0.1}),
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

/// Loss at step `s` (1-based): falling, with a spike at 777 and a dip at 1234.
fn loss(s: i64) -> f64 {
    match s {
        777 => 50.0,
        1234 => -5.0,
        _ => 10.0 - s as f64 / 1000.0,
    }
}

fn batches(series: &Value) -> Vec<i64> {
    series["data"].as_array().unwrap().iter().map(|p| p["batches"].as_i64().unwrap()).collect()
}

pub async fn compare_trials_downsamples_out_of_order_reports(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let yaml = "name: ts\nentrypoint: python3 train.py\nsearcher: {name: single, metric: accuracy, smaller_is_better: false}\n";
    let id = create(m, &admin, yaml, false).await;
    let (a, b) = (trial(m, id, 1).await, trial(m, id, 2).await);
    // 2000 training reports for `a`, stored in a scrambled (not step) order, in a few batches.
    let mut steps: Vec<i64> = (1..=2000).collect();
    steps.sort_by_key(|s| (s * 7919) % 2003);
    for chunk in steps.chunks(500) {
        let reports: Vec<_> = chunk.iter().map(|&s| report(&a, "training", s, json!({"loss": loss(s), "epoch": s / 100}))).collect();
        m.store.insert_metrics(&reports).await.unwrap();
    }
    for s in [300, 100, 200] {
        m.store.insert_metrics(&[report(&a, "validation", s, json!({"accuracy": s as f64 / 1000.0}))]).await.unwrap();
    }
    m.store.insert_metrics(&[report(&b, "training", 5, json!({"loss": 1.0}))]).await.unwrap();

    let path = format!(
        "/api/v1/trials/time-series?trialIds={}&trialIds={}&maxDatapoints=100&metricNames=loss&metricType=METRIC_TYPE_TRAINING",
        a.id, b.id
    );
    let r = m.get(&path, Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let trials = r.body["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2);
    assert_eq!((trials[0]["trial"]["id"].as_i64(), trials[1]["trial"]["id"].as_i64()), (Some(a.id as i64), Some(b.id as i64)));
    let series = &trials[0]["metrics"][0];
    assert_eq!((series["group"].as_str(), series["type"].as_str()), (Some("training"), Some("METRIC_TYPE_TRAINING")));
    let kept = batches(series);
    assert!(kept.len() <= 100 && kept.len() >= 90, "budget respected and used: {}", kept.len());
    assert!(kept.windows(2).all(|w| w[0] < w[1]), "sorted by batches: {kept:?}");
    for must in [1, 2000, 777, 1234] {
        assert!(kept.contains(&must), "keeps step {must} (ends and extremes): {kept:?}");
    }
    let spike = series["data"].as_array().unwrap().iter().find(|p| p["batches"] == 777).unwrap();
    assert_eq!(spike["values"], json!({"loss": 50.0}), "only the selected metric");
    assert_eq!(spike["epoch"], 7.0);
    assert!(spike["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(batches(&trials[1]["metrics"][0]), [5]);

    // Without a budget: up to 1000 points; the full series reads back complete and sorted.
    let r = m.get(&format!("/api/v1/trials/time-series?trialIds={}&maxDatapoints=5000&metricIds=training.loss", a.id), Some(&admin)).await;
    assert_eq!(batches(&r.body["trials"][0]["metrics"][0]), (1..=2000).collect::<Vec<_>>());
    let r = m.get(&format!("/api/v1/trials/time-series?trialIds={}&metricIds=validation.accuracy", a.id), Some(&admin)).await;
    assert_eq!(r.body["trials"][0]["metrics"].as_array().unwrap().len(), 1, "{}", r.text);
    assert_eq!(batches(&r.body["trials"][0]["metrics"][0]), [100, 200, 300]);
    let r = m
        .get(&format!("/api/v1/trials/time-series?trialIds={}&metricIds=training.loss&startBatches=10&endBatches=20", a.id), Some(&admin))
        .await;
    assert_eq!(batches(&r.body["trials"][0]["metrics"][0]), (10..=20).collect::<Vec<_>>());
    let r = m.get(&format!("/api/v1/trials/time-series?trialIds={}", a.id), Some(&admin)).await;
    let groups: Vec<&str> = r.body["trials"][0]["metrics"].as_array().unwrap().iter().map(|s| s["group"].as_str().unwrap()).collect();
    assert_eq!(groups, ["training", "validation"]);
    let points = r.body["trials"][0]["metrics"][0]["data"].as_array().unwrap().len();
    assert!((950..=1000).contains(&points), "the default budget is 1000 points: {points}");

    // The SDK's stream (`Trial.iter_metrics`) is sorted and complete too.
    let r = m.get(&format!("/api/v1/trials/metrics/trial_metrics?trialIds={}&group=training", a.id), Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let streamed: Vec<i64> = r
        .text
        .lines()
        .flat_map(|l| serde_json::from_str::<Value>(l).unwrap()["result"]["metrics"].as_array().unwrap().clone())
        .map(|m| m["totalBatches"].as_i64().unwrap())
        .collect();
    assert_eq!(streamed, (1..=2000).collect::<Vec<_>>());

    // Summary metrics in upstream's shape.
    let r = m.get(&format!("/api/v1/trials/{}", a.id), Some(&admin)).await;
    let summary = &r.body["trial"]["summaryMetrics"];
    assert_eq!(summary["avg_metrics"]["loss"]["count"], 2000, "{summary}");
    assert_eq!((summary["avg_metrics"]["loss"]["min"].as_f64(), summary["avg_metrics"]["loss"]["max"].as_f64()), (Some(-5.0), Some(50.0)));
    assert_eq!(summary["validation_metrics"]["accuracy"]["max"], 0.3);
    assert!(summary.get("training").is_none() && summary.get("validation").is_none(), "{summary}");

    // A report arriving after the series was read (the store keeps read series in memory) is in
    // the next answer, never a stale one: a new last point and a new extreme.
    m.store.insert_metrics(&[report(&a, "training", 2001, json!({"loss": 99.0}))]).await.unwrap();
    let r = m.get(&path, Some(&admin)).await;
    let kept = batches(&r.body["trials"][0]["metrics"][0]);
    assert!(kept.contains(&2001) && kept.len() <= 100, "the new report is kept: {kept:?}");

    assert_error(&m.get("/api/v1/trials/time-series", Some(&admin)).await, 400, "InvalidArgument");
    let bad = m.get(&format!("/api/v1/trials/time-series?trialIds={}&maxDatapoints=-1", a.id), Some(&admin)).await;
    assert_error(&bad, 400, "InvalidArgument");
    assert!(bad.text.contains("maxDatapoints"), "{}", bad.text);
    let bad = m.get(&format!("/api/v1/trials/time-series?trialIds={}&metricIds=loss", a.id), Some(&admin)).await;
    assert!(bad.text.contains("metricIds"), "{}", bad.text);
    assert_error(&m.get("/api/v1/trials/time-series?trialIds=999999", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get(&format!("/api/v1/trials/time-series?trialIds={}", a.id), None).await, 401, "Unauthenticated");
}

pub async fn time_series_columns_answer_the_same_rows(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let yaml = "name: ts-columns\nentrypoint: python3 train.py\nsearcher: {name: single, metric: accuracy, smaller_is_better: false}\n";
    let id = create(m, &admin, yaml, false).await;
    let (a, b) = (trial(m, id, 1).await, trial(m, id, 2).await);
    let reports: Vec<_> =
        (1..=2000).map(|s| report(&a, "training", s, json!({"loss": loss(s), "epoch": s / 100, "phase": "warm"}))).collect();
    m.store.insert_metrics(&reports).await.unwrap();
    m.store.insert_metrics(&[report(&b, "training", 5, json!({"loss": 1.0}))]).await.unwrap();

    let query = format!("trialIds={}&trialIds={}&maxDatapoints=100&metricIds=training.loss&metricIds=training.phase", a.id, b.id);
    let points = m.get(&format!("/api/v1/trials/time-series?{query}"), Some(&admin)).await;
    let columns = m.get(&format!("/api/v1/trials/time-series/columns?{query}"), Some(&admin)).await;
    assert_eq!(columns.status, 200, "{}", columns.text);
    let trials = columns.body["trials"].as_array().unwrap();
    assert_eq!((trials[0]["trialId"].as_i64(), trials[1]["trialId"].as_i64()), (Some(a.id as i64), Some(b.id as i64)));
    let series = &trials[0]["metrics"][0];
    let kept: Vec<i64> = series["batches"].as_array().unwrap().iter().map(|b| b.as_i64().unwrap()).collect();
    assert_eq!(kept, batches(&points.body["trials"][0]["metrics"][0]), "the same rows as the upstream form");
    let at = |step: i64| kept.iter().position(|&b| b == step).unwrap_or_else(|| panic!("step {step} kept: {kept:?}"));
    assert_eq!(series["values"]["loss"][at(777)], 50.0);
    assert_eq!(series["values"]["loss"][at(1234)], -5.0);
    assert_eq!(series["values"]["phase"][at(1)], Value::Null, "a non-numeric value is null in a column");
    assert_eq!(series["epochs"][at(777)], 7.0);
    assert_eq!(series["times"].as_array().unwrap().len(), kept.len());
    assert!(series["times"][0].as_f64().unwrap() > 1.7e9, "seconds since the epoch: {}", series["times"][0]);
    assert_eq!(trials[1]["metrics"][0]["batches"], json!([5]));
    assert!(trials[1]["metrics"][0].get("epochs").is_none(), "no epochs column without epochs");

    // A repeated request is answered from the kept rows; a new report (a new extreme) is in the next.
    let again = m.get(&format!("/api/v1/trials/time-series/columns?{query}"), Some(&admin)).await;
    assert_eq!(again.body, columns.body);
    m.store.insert_metrics(&[report(&a, "training", 2001, json!({"loss": 99.0}))]).await.unwrap();
    let r = m.get(&format!("/api/v1/trials/time-series/columns?{query}"), Some(&admin)).await;
    let kept: Vec<i64> = r.body["trials"][0]["metrics"][0]["batches"].as_array().unwrap().iter().map(|b| b.as_i64().unwrap()).collect();
    assert!(kept.contains(&2001) && kept.len() <= 100, "the new report is kept: {kept:?}");

    assert_error(&m.get("/api/v1/trials/time-series/columns", Some(&admin)).await, 400, "InvalidArgument");
    let bad = m.get(&format!("/api/v1/trials/time-series/columns?trialIds={}&maxDatapoints=-1", a.id), Some(&admin)).await;
    assert_error(&bad, 400, "InvalidArgument");
    assert!(bad.text.contains("maxDatapoints"), "{}", bad.text);
    assert_error(&m.get("/api/v1/trials/time-series/columns?trialIds=999999", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get(&format!("/api/v1/trials/time-series/columns?trialIds={}", a.id), None).await, 401, "Unauthenticated");
}
