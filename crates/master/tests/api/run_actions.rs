//! `/api/v1/runs/{kill,pause,resume}` as 0.38's bindings send them: one `{id, error}` per run;
//! a search's runs refuse pause/resume with upstream's message.

use resolute_store::{NewTrial, db_now};
use serde_json::json;

use crate::harness::{TestMaster, assert_error};
use crate::runtime_support::running_trial;

async fn state(m: &TestMaster, token: &str, experiment_id: i32) -> String {
    let r = m.get(&format!("/api/v1/experiments/{experiment_id}"), Some(token)).await;
    r.body["experiment"]["state"].as_str().unwrap_or_default().to_owned()
}

pub async fn run_actions_by_id(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let single = running_trial(m, &admin, "run-single").await;
    let run = single.trial.id;

    let r = m.post("/api/v1/runs/resume", Some(&admin), json!({"runIds": [run], "projectId": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["results"], json!([{"id": run, "error": ""}]));
    // Active, or one of its substates once the loop has seen the trial queue or run.
    let resumed = state(m, &admin, single.experiment_id).await;
    assert!(
        ["STATE_ACTIVE", "STATE_QUEUED", "STATE_STARTING", "STATE_RUNNING"].contains(&resumed.as_str()),
        "resuming a single-trial run activates its experiment: {resumed}"
    );
    let r = m.post("/api/v1/runs/pause", Some(&admin), json!({"runIds": [run], "projectId": 1})).await;
    assert_eq!(r.body["results"], json!([{"id": run, "error": ""}]), "{}", r.text);
    assert_eq!(state(m, &admin, single.experiment_id).await, "STATE_PAUSED");

    // A search's run.
    let config = "name: run-search\nentrypoint: python3 train.py\nhyperparameters: {lr: {type: double, minval: 0.1, maxval: 0.2}}\n\
                  searcher: {name: random, metric: loss, max_trials: 2, max_length: {batches: 10}}\n";
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": config, "modelDefinition": [], "activate": false})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let search_id = i32::try_from(r.body["experiment"]["id"].as_i64().unwrap()).unwrap();
    let trial = NewTrial {
        experiment_id: search_id,
        request_id: "seeded".into(),
        task_id: format!("{search_id}.seeded"),
        state: "STATE_PAUSED".into(),
        hparams: json!({"lr": 0.15}),
        seed: 1,
        start_time: db_now(),
    };
    let search_run = m.store.create_trial(trial).await.unwrap().id;
    for action in ["pause", "resume"] {
        let r = m.post(&format!("/api/v1/runs/{action}"), Some(&admin), json!({"runIds": [search_run], "projectId": 1})).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            r.body["results"],
            json!([{"id": search_run, "error": format!("Cannot pause/unpause run '{search_run}' (part of multi-trial).")}])
        );
    }
    assert_eq!(state(m, &admin, search_id).await, "STATE_PAUSED", "the search was left alone");

    // Kill: each run its own result.
    let r = m.post("/api/v1/runs/kill", Some(&admin), json!({"runIds": [search_run, 999_999], "projectId": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["results"], json!([{"id": search_run, "error": ""}, {"id": 999_999, "error": "run 999999 not found in project 1"}]));
    let r = m.post("/api/v1/runs/kill", Some(&admin), json!({"runIds": [run], "projectId": 7})).await;
    assert_eq!(r.body["results"], json!([{"id": run, "error": format!("run {run} not found in project 7")}]), "{}", r.text);

    // Someone else's runs.
    m.create_user(&admin, "mallory", "Mallory1").await;
    let mallory = m.login("mallory", "Mallory1").await;
    let r = m.post("/api/v1/runs/kill", Some(&mallory), json!({"runIds": [run]})).await;
    assert_eq!(r.body["results"][0]["error"], format!("only the owner (admin) or an admin can kill run {run}"), "{}", r.text);

    // What cannot be carried out at all.
    let r = m.post("/api/v1/runs/kill", Some(&admin), json!({"runIds": []})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post("/api/v1/runs/pause", Some(&admin), json!({"runIds": [run], "filter": "{\"filterGroup\": {}}"})).await;
    assert_error(&r, 400, "InvalidArgument");
}
