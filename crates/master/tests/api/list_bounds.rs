//! Lists are bounded and paged in the database: a long history costs a page, not the history,
//! and a limit past the maximum (or "all") returns one bounded page whose `pagination` tells the
//! client where to read on.

use resolute_store::{NewMetricReport, TRAINING_GROUP, db_now};
use serde_json::{Map, json};

use crate::experiments::{create, minimal_yaml};
use crate::harness::TestMaster;
use crate::seed;

/// Training reports a trial holds: more than one page of the maximum (1000).
const REPORTS: i64 = 1500;

pub async fn workloads_cost_their_page_not_the_history(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let exp = create(m, &admin, &minimal_yaml("long-history"), false).await;
    let trial = seed::trial(m, exp, 1).await;
    let reports: Vec<NewMetricReport> = (1..=REPORTS)
        .map(|step| {
            let mut avg = Map::new();
            avg.insert("loss".into(), json!(1.0 / step as f64));
            NewMetricReport {
                trial_id: trial.id,
                trial_run_id: 1,
                group: TRAINING_GROUP.to_owned(),
                steps_completed: step,
                report_time: db_now(),
                avg_metrics: avg,
                batch_metrics: Vec::new(),
                searcher_metric: None,
            }
        })
        .collect();
    m.store.insert_metrics(&reports).await.unwrap();
    let base = format!("/api/v1/trials/{}/workloads", trial.id);

    // `limit=10`: ten rows decoded, whatever the trial's history.
    let before = m.store.metric_rows_decoded();
    let r = m.get(&format!("{base}?limit=10&offset=700"), Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(m.store.metric_rows_decoded() - before, 10, "the page's rows only");
    assert_eq!(r.body["workloads"].as_array().unwrap().len(), 10);
    assert_eq!(r.body["workloads"][0]["training"]["totalBatches"], 701);
    assert_eq!(r.body["pagination"], json!({"offset": 700, "limit": 10, "startIndex": 700, "endIndex": 710, "total": REPORTS}));

    // "All" is one page of at most 1000; the client reads on from `endIndex`.
    for query in ["", "?limit=100000"] {
        let r = m.get(&format!("{base}{query}"), Some(&admin)).await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        assert_eq!(r.body["workloads"].as_array().unwrap().len(), 1000, "{query}");
        assert_eq!((r.body["pagination"]["endIndex"].as_i64(), r.body["pagination"]["total"].as_i64()), (Some(1000), Some(REPORTS)));
    }
    let rest = m.get(&format!("{base}?offset=1000"), Some(&admin)).await;
    assert_eq!(rest.body["workloads"].as_array().unwrap().len(), (REPORTS - 1000) as usize);
    assert_eq!(rest.body["pagination"]["endIndex"], REPORTS);

    // The legacy metrics stream reads the history in keyset batches and sends all of it.
    let r = m.get(&format!("/api/v1/trials/metrics/trial_metrics?trialIds={}&group=training", trial.id), Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let sent: usize =
        r.text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["result"]["metrics"].as_array().unwrap().len()).sum();
    assert_eq!(sent, REPORTS as usize);
}

pub async fn experiment_list_all_is_one_bounded_page(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    for i in 0..3 {
        create(m, &admin, &minimal_yaml(&format!("bounded-{i}")), false).await;
    }
    // -1 (all) and a limit past the maximum are served as pages of at most 1000 rows, in SQL.
    for limit in ["-1", "5000"] {
        let r = m.get(&format!("/api/v1/experiments?limit={limit}"), Some(&admin)).await;
        assert_eq!(r.status, 200, "{limit}: {}", r.text);
        assert_eq!(r.body["experiments"].as_array().unwrap().len(), 3, "{limit}");
        assert_eq!(r.body["pagination"]["endIndex"], 3);
    }
    let r = m.get("/api/v1/experiments?limit=-3", Some(&admin)).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("limit"), "{}", r.text);
}
