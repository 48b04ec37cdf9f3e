//! Generic tasks over HTTP without an agent (so they stay queued): create from YAML, the generic
//! fields of `GET /api/v1/tasks/{id}`, config, pause/unpause/kill and their refusals; and
//! `task_container_defaults` reaching command and experiment configs.

use std::time::{Duration, Instant};

use resolute_master::MasterConfig;
use serde_json::{Value, json};

use crate::harness::{TestMaster, assert_error};

async fn task(m: &TestMaster, token: &str, id: &str) -> Value {
    let r = m.get(&format!("/api/v1/tasks/{id}"), Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["task"].clone()
}

/// Polls until the task's `taskState` is `state` (the loop applies actions after the reply).
async fn wait_state(m: &TestMaster, token: &str, id: &str, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let t = task(m, token, id).await;
        // The row and the generic fields are read one after the other: wait for both.
        let settled = state != "GENERIC_TASK_STATE_CANCELED" || t["endTime"].is_string();
        if t["taskState"] == state && settled {
            return t;
        }
        assert!(Instant::now() < deadline, "task {id} never reached {state}: {t}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn generic_tasks_create_pause_unpause_kill(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let body = json!({"config": "entrypoint: [echo, hi]\nresources: {slots: 0}\n", "contextDirectory": [], "noPause": false});
    let r = m.post("/api/v1/generic-tasks", Some(&admin), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["warnings"], json!([]));
    let id = r.body["taskId"].as_str().unwrap().to_owned();

    let t = task(m, &admin, &id).await;
    assert_eq!(
        (&t["taskType"], &t["taskState"], &t["noPause"]),
        (&json!("TASK_TYPE_GENERIC"), &json!("GENERIC_TASK_STATE_ACTIVE"), &json!(false))
    );
    let config: Value = serde_json::from_str(t["config"].as_str().unwrap()).unwrap();
    assert_eq!(config["entrypoint"], json!(["echo", "hi"]));
    let c = m.get(&format!("/api/v1/tasks/{id}/config"), Some(&admin)).await;
    assert_eq!(serde_json::from_str::<Value>(c.body["config"].as_str().unwrap()).unwrap(), config);
    // The loop queues the allocation after the reply.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listed = m.get("/api/v1/tasks", Some(&admin)).await;
        let summary = &listed.body["allocationIdToSummary"][format!("{id}.1")];
        if !summary.is_null() {
            assert_eq!(summary["name"], format!("Generic Task {id}"), "{}", listed.text);
            break;
        }
        assert!(Instant::now() < deadline, "never listed: {}", listed.text);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A child of the task, and a fork of it that inherits its config.
    let child = m
        .post("/api/v1/generic-tasks", Some(&admin), json!({"config": "entrypoint: [echo]\n", "parentId": id, "inheritContext": true}))
        .await;
    assert_eq!(child.status, 200, "{}", child.text);
    let child_id = child.body["taskId"].as_str().unwrap().to_owned();
    assert_eq!(task(m, &admin, &child_id).await["parentId"], id.as_str());
    let fork = m.post("/api/v1/generic-tasks", Some(&admin), json!({"config": "", "forkedFrom": id})).await;
    assert_eq!(fork.status, 200, "{}", fork.text);
    let fork_task = task(m, &admin, fork.body["taskId"].as_str().unwrap()).await;
    assert_eq!(fork_task["forkedFrom"], id.as_str());
    assert!(fork_task["config"].as_str().unwrap().contains("\"echo\""), "{fork_task}");

    // Pause stops the (queued) task but leaves it open; the child, created without noPause, stays.
    assert_eq!(m.post(&format!("/api/v1/tasks/{id}/pause"), Some(&admin), json!({})).await.body, json!({}));
    let paused = wait_state(m, &admin, &id, "GENERIC_TASK_STATE_PAUSED").await;
    assert!(paused.get("endTime").is_none(), "{paused}");
    assert_eq!(task(m, &admin, &child_id).await["taskState"], "GENERIC_TASK_STATE_ACTIVE");
    assert_error(&m.post(&format!("/api/v1/tasks/{id}/pause"), Some(&admin), json!({})).await, 400, "FailedPrecondition");
    // Unpause queues a second allocation.
    assert_eq!(m.post(&format!("/api/v1/tasks/{id}/unpause"), Some(&admin), json!({})).await.status, 200);
    wait_state(m, &admin, &id, "GENERIC_TASK_STATE_ACTIVE").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let resumed = task(m, &admin, &id).await;
        let allocations: Vec<&str> =
            resumed["allocations"].as_array().unwrap().iter().map(|a| a["allocationId"].as_str().unwrap()).collect();
        if allocations.len() == 2 {
            assert_eq!(allocations, [format!("{id}.1"), format!("{id}.2")]);
            break;
        }
        assert!(Instant::now() < deadline, "no second allocation: {resumed}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_error(&m.post(&format!("/api/v1/tasks/{id}/unpause"), Some(&admin), json!({})).await, 400, "FailedPrecondition");

    // Someone else may not touch it; kill reaches the child too.
    m.create_user(&admin, "generic-other", "").await;
    let other = m.login("generic-other", "").await;
    assert_error(&m.post(&format!("/api/v1/tasks/{id}/kill"), Some(&other), json!({})).await, 403, "PermissionDenied");
    assert_error(&m.post(&format!("/api/v1/tasks/{id}/pause"), Some(&other), json!({})).await, 403, "PermissionDenied");
    let r = m.post(&format!("/api/v1/tasks/{id}/kill"), Some(&admin), json!({"taskId": id, "killFromRoot": false})).await;
    assert_eq!((r.status, &r.body), (200, &json!({})), "{}", r.text);
    let killed = wait_state(m, &admin, &id, "GENERIC_TASK_STATE_CANCELED").await;
    assert!(killed["endTime"].is_string(), "{killed}");
    wait_state(m, &admin, &child_id, "GENERIC_TASK_STATE_CANCELED").await;
    assert_error(&m.post(&format!("/api/v1/tasks/{id}/kill"), Some(&admin), json!({})).await, 400, "FailedPrecondition");

    // A paused task can be killed.
    let r = m.post("/api/v1/generic-tasks", Some(&admin), json!({"config": "entrypoint: sleep 1\n"})).await;
    let lone = r.body["taskId"].as_str().unwrap().to_owned();
    m.post(&format!("/api/v1/tasks/{lone}/pause"), Some(&admin), json!({})).await;
    wait_state(m, &admin, &lone, "GENERIC_TASK_STATE_PAUSED").await;
    m.post(&format!("/api/v1/tasks/{lone}/kill"), Some(&admin), json!({})).await;
    wait_state(m, &admin, &lone, "GENERIC_TASK_STATE_CANCELED").await;
}

pub async fn generic_tasks_refuse_bad_requests(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let missing = m.post("/api/v1/generic-tasks", Some(&admin), json!({"config": "resources: {slots: 0}\n"})).await;
    assert_error(&missing, 400, "InvalidArgument");
    assert!(missing.text.contains("entrypoint"), "{}", missing.text);
    assert_error(&m.post("/api/v1/generic-tasks", Some(&admin), json!({"config": "entrypoint: [a\n"})).await, 400, "InvalidArgument");
    assert_error(&m.post("/api/v1/generic-tasks", Some(&admin), json!({"config": "- a\n"})).await, 400, "InvalidArgument");
    let no_project = json!({"config": "entrypoint: [a]\n", "projectId": 999});
    assert_error(&m.post("/api/v1/generic-tasks", Some(&admin), no_project).await, 404, "NotFound");
    let no_parent = json!({"config": "entrypoint: [a]\n", "parentId": "nope"});
    assert_error(&m.post("/api/v1/generic-tasks", Some(&admin), no_parent).await, 404, "NotFound");
    let orphan = json!({"config": "entrypoint: [a]\n", "inheritContext": true});
    assert_error(&m.post("/api/v1/generic-tasks", Some(&admin), orphan).await, 400, "InvalidArgument");
    for action in ["kill", "pause", "unpause"] {
        assert_error(&m.post(&format!("/api/v1/tasks/nope/{action}"), Some(&admin), json!({})).await, 404, "NotFound");
    }
    assert_error(&m.get("/api/v1/tasks/nope/config", Some(&admin)).await, 404, "NotFound");
    let r = m.post("/api/v1/generic-tasks", Some(&admin), json!({"config": "entrypoint: [a]\n", "noPause": true})).await;
    let id = r.body["taskId"].as_str().unwrap();
    let refused = m.post(&format!("/api/v1/tasks/{id}/pause"), Some(&admin), json!({})).await;
    assert_error(&refused, 400, "FailedPrecondition");
    assert!(refused.text.contains("no_pause"), "{}", refused.text);
    assert_error(&m.post("/api/v1/generic-tasks", None, json!({"config": "entrypoint: [a]\n"})).await, 401, "Unauthenticated");
}

#[tokio::test]
async fn task_container_defaults_reach_commands_generic_tasks_and_experiments() {
    let config = MasterConfig::from_tree(json!({
        "task_container_defaults": {"environment_variables": ["FROM_DEFAULTS=master", "SHARED=master"], "shm_size_bytes": 1},
        // The default pools must be configured ones: `default` holds the tasks naming none.
        "resource_pools": [{"pool_name": "default"},
            {"pool_name": "other", "task_container_defaults": {"environment_variables": {"cpu": ["FROM_POOL=1"]}}}],
    }))
    .unwrap();
    assert!(config.warnings.iter().any(|w| w.contains("`shm_size_bytes`")), "{:?}", config.warnings);
    let m = TestMaster::start(config).await;
    let admin = m.login("admin", "").await;
    let launch = json!({"config": {"entrypoint": ["true"], "resources": {"slots": 0},
        "environment": {"environment_variables": ["SHARED=mine"]}}});
    let r = m.post("/api/v1/commands", Some(&admin), launch).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["config"]["environment"]["environment_variables"], json!(["SHARED=mine", "FROM_DEFAULTS=master"]));
    let in_pool = json!({"config": "entrypoint: [a]\nresources: {resource_pool: other, slots: 0}\n"});
    let r = m.post("/api/v1/generic-tasks", Some(&admin), in_pool).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let t = task(&m, &admin, r.body["taskId"].as_str().unwrap()).await;
    let config: Value = serde_json::from_str(t["config"].as_str().unwrap()).unwrap();
    assert_eq!(config["environment"]["environment_variables"]["cpu"], json!(["FROM_POOL=1"]), "the pool's replace the master's");

    let yaml = crate::experiments::minimal_yaml("tcd");
    let exp = crate::experiments::create(&m, &admin, &yaml, false).await;
    let e = m.get(&format!("/api/v1/experiments/{exp}"), Some(&admin)).await;
    let vars = &e.body["config"]["environment"]["environment_variables"];
    assert!(vars.to_string().contains("FROM_DEFAULTS=master"), "{}", e.text);
}
