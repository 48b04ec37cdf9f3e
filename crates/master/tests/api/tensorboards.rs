//! `POST /api/v1/tensorboards`: which trials a TensorBoard shows, and what the task carries.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use crate::experiments::{create, minimal_yaml};
use crate::harness::{TestMaster, assert_error};
use crate::seed;

/// The launcher's input file among the task's `extra.files`.
fn sources(extra: &Value) -> Value {
    let file = extra["files"].as_array().unwrap().iter().find(|f| f["path"] == "tensorboard_sources.json").expect("sources file");
    serde_json::from_slice(&BASE64.decode(file["contentB64"].as_str().unwrap()).unwrap()).unwrap()
}

pub async fn launch_resolves_trials_and_sends_stored_metrics(m: &TestMaster) {
    let user = m.login("determined", "").await;
    let yaml = format!("{}checkpoint_storage:\n  type: shared_fs\n  host_path: /tmp/resolute-tb-api\n", minimal_yaml("tb"));
    let exp = create(m, &user, &yaml, false).await;
    let first = seed::trial(m, exp, 1).await;
    let second = seed::trial(m, exp, 2).await;
    seed::metrics(m, &first, 100, 0.5).await;
    seed::metrics(m, &first, 200, 0.8).await;

    let r = m.post("/api/v1/tensorboards", Some(&user), json!({"experimentIds": [exp], "trialIds": null, "files": []})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let tb = &r.body["tensorboard"];
    assert_eq!(tb["experimentIds"], json!([exp]));
    let mut trial_ids: Vec<i64> = tb["trialIds"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    trial_ids.sort();
    // The searcher's own (paused) trial, created with the experiment, and the two seeded ones.
    let all = m.store.experiment_trial_ids(first.experiment_id).await.unwrap();
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(trial_ids.contains(&i64::from(first.id)) && trial_ids.contains(&i64::from(second.id)));
    assert_eq!(trial_ids, all.iter().map(|t| i64::from(*t)).collect::<Vec<_>>());
    assert_eq!(tb["serviceAddress"], format!("/proxy/{}/", tb["id"].as_str().unwrap()));
    assert_eq!(r.body["config"]["resources"]["slots"], 0, "an aux task: {}", r.body["config"]);

    let record = m.store.command_task_by_id(tb["id"].as_str().unwrap()).await.unwrap();
    let sources = sources(&record.extra);
    assert_eq!(sources["pathPrefix"], format!("/proxy/{}", record.task_id));
    let trial = sources["trials"].as_array().unwrap().iter().find(|t| t["trialId"] == first.id).unwrap();
    let cluster_id = m.store.cluster_id().await.unwrap();
    assert_eq!(trial["eventDir"], format!("/tmp/resolute-tb-api/{cluster_id}/tensorboard/experiment/{exp}/trial/{}", first.id));
    assert_eq!(trial["metrics"]["validation"]["accuracy"].as_array().unwrap().len(), 2);
    assert_eq!(trial["metrics"]["training"]["loss"][1][0], 200, "[steps, time, value]");

    // Named trials of any experiment; the response lists their experiments.
    let r = m.post("/api/v1/tensorboards", Some(&user), json!({"trialIds": [second.id]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (r.body["tensorboard"]["experimentIds"].clone(), r.body["tensorboard"]["trialIds"].clone()),
        (json!([exp]), json!([second.id]))
    );
}

pub async fn launch_refuses_unknown_or_missing_sources(m: &TestMaster) {
    let user = m.login("determined", "").await;
    let r = m.post("/api/v1/tensorboards", Some(&user), json!({"experimentIds": [987654]})).await;
    assert_error(&r, 404, "NotFound");
    assert!(r.text.contains("experiment 987654 not found"), "{}", r.text);
    let r = m.post("/api/v1/tensorboards", Some(&user), json!({"trialIds": [987654]})).await;
    assert_error(&r, 404, "NotFound");
    assert!(r.text.contains("trial 987654 not found"), "{}", r.text);
    let r = m.post("/api/v1/tensorboards", Some(&user), json!({"config": {}})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post("/api/v1/tensorboards", Some(&user), json!({"filters": {"name": "x"}})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post("/api/v1/tensorboards", None, json!({"experimentIds": [1]})).await;
    assert_eq!(r.status, 401, "{}", r.text);
}
