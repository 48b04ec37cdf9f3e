//! Bulk experiment actions as 0.38's bindings send them: by ids or by filter within a project,
//! one `{id, error}` result per experiment.

use serde_json::{Value, json};

use crate::harness::{TestMaster, assert_error};

const CONFIG: &str =
    "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\nhyperparameters: {lr: 0.1}\n";

async fn create_paused(m: &TestMaster, token: &str, name: &str) -> i64 {
    let config = format!("name: {name}\n{CONFIG}");
    let r = m.post("/api/v1/experiments", Some(token), json!({"config": config, "modelDefinition": [], "activate": false})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["experiment"]["id"].as_i64().unwrap()
}

async fn experiment(m: &TestMaster, token: &str, id: i64) -> Value {
    m.get(&format!("/api/v1/experiments/{id}"), Some(token)).await.body["experiment"].clone()
}

pub async fn bulk_actions_by_ids_and_by_filter(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let a = create_paused(m, &admin, "bulk-a").await;
    let b = create_paused(m, &admin, "bulk-b").await;
    let c = create_paused(m, &admin, "bulk-c").await;

    // By ids: each named experiment gets its own result; one that does not exist says so.
    let r = m.post("/api/v1/projects/1/experiments/kill", Some(&admin), json!({"experimentIds": [b, a, 999_999], "projectId": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["results"],
        json!([{"id": a, "error": ""}, {"id": b, "error": ""}, {"id": 999_999, "error": "experiment 999999 not found in project 1"}])
    );
    for id in [a, b] {
        assert_eq!(experiment(m, &admin, id).await["state"], "STATE_CANCELED", "no trial ran, so the kill settles at once");
    }
    assert_eq!(experiment(m, &admin, c).await["state"], "STATE_PAUSED");

    // By filter: every canceled experiment of the project but the excluded one.
    let filters = json!({"states": ["STATE_CANCELED"], "excludedExperimentIds": [b], "name": "bulk"});
    let r = m
        .post("/api/v1/projects/1/experiments/archive", Some(&admin), json!({"experimentIds": [], "projectId": 1, "filters": filters}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["results"], json!([{"id": a, "error": ""}]));
    assert_eq!(experiment(m, &admin, a).await["archived"], true);
    assert_eq!(experiment(m, &admin, b).await["archived"], false);

    // A per-experiment refusal is that experiment's error, with the single action's message.
    let r = m.post("/api/v1/projects/1/experiments/archive", Some(&admin), json!({"experimentIds": [c], "projectId": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let error = r.body["results"][0]["error"].as_str().unwrap();
    assert!(error.starts_with(&format!("cannot archive experiment {c}: it is")), "{}", r.text);

    let r = m.post("/api/v1/projects/1/experiments/unarchive", Some(&admin), json!({"experimentIds": [a], "projectId": 1})).await;
    assert_eq!(r.body["results"], json!([{"id": a, "error": ""}]), "{}", r.text);
    assert_eq!(experiment(m, &admin, a).await["archived"], false);

    // Delete (DELETE, as the bindings send it).
    let req = m
        .http
        .delete(format!("{}/api/v1/projects/1/experiments/delete", m.base))
        .bearer_auth(&admin)
        .json(&json!({"experimentIds": [b], "projectId": 1}));
    let r = m.send(req).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["results"], json!([{"id": b, "error": ""}]));
    assert_eq!(m.get(&format!("/api/v1/experiments/{b}"), Some(&admin)).await.status, 404);

    // Another user's experiments are theirs: the action is refused per experiment.
    m.create_user(&admin, "mallory", "Mallory1").await;
    let mallory = m.login("mallory", "Mallory1").await;
    let r = m.post("/api/v1/projects/1/experiments/pause", Some(&mallory), json!({"experimentIds": [c], "projectId": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body["results"][0]["error"].as_str().unwrap().contains("only the owner"), "{}", r.text);

    // Requests that cannot be carried out at all.
    let r = m.post("/api/v1/projects/1/experiments/pause", Some(&admin), json!({"experimentIds": [], "projectId": 1})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post("/api/v1/projects/1/experiments/pause", Some(&admin), json!({"experimentIds": [c], "projectId": 2})).await;
    assert_error(&r, 400, "InvalidArgument");
    let bad = json!({"experimentIds": [], "projectId": 1, "filters": {"states": ["STATE_BOGUS"]}});
    let r = m.post("/api/v1/projects/1/experiments/cancel", Some(&admin), bad).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.body["error"]["error"].as_str().unwrap().contains("filters.states"), "{}", r.text);
    let r = m.post("/api/v1/projects/x/experiments/cancel", Some(&admin), json!({"experimentIds": [c]})).await;
    assert_eq!(r.status, 400, "{}", r.text);
}

/// `POST /api/v1/experiments/continue` refuses what it cannot continue, naming why.
pub async fn continue_refuses_what_it_cannot_continue(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let paused = create_paused(m, &admin, "continue-paused").await;
    let r = m.post("/api/v1/experiments/continue", Some(&admin), json!({"id": paused, "overrideConfig": ""})).await;
    assert_error(&r, 400, "FailedPrecondition");
    assert_eq!(r.body["error"]["error"], "experiment in non terminal state 'PAUSED', try again later", "{}", r.text);
    let r = m.post("/api/v1/experiments/continue", Some(&admin), json!({"id": 424_242})).await;
    assert_eq!(r.status, 404, "{}", r.text);
    // A finished one: bad overrides are refused with the field.
    let r = m.post("/api/v1/projects/1/experiments/kill", Some(&admin), json!({"experimentIds": [paused], "projectId": 1})).await;
    assert_eq!(r.body["results"][0]["error"], "", "{}", r.text);
    let r = m.post("/api/v1/experiments/continue", Some(&admin), json!({"id": paused, "overrideConfig": "searcher: {name: random}"})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.body["error"]["error"].as_str().unwrap().contains("searcher.name cannot change"), "{}", r.text);
    let r = m
        .post(
            "/api/v1/experiments/continue",
            Some(&admin),
            json!({"id": paused, "overrideConfig": "searcher: {max_length: {batches: -3}}"}),
        )
        .await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.body["error"]["error"].as_str().unwrap().contains("searcher.max_length.batches"), "{}", r.text);
    let r = m.post("/api/v1/experiments/continue", Some(&admin), json!({"id": paused, "overrideConfig": "- a list"})).await;
    assert_error(&r, 400, "InvalidArgument");
    // Someone else's experiment.
    m.create_user(&admin, "mallory", "Mallory1").await;
    let mallory = m.login("mallory", "Mallory1").await;
    let r = m.post("/api/v1/experiments/continue", Some(&mallory), json!({"id": paused})).await;
    assert_eq!(r.status, 403, "{}", r.text);
}
