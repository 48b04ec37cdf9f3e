//! `/api/v1/workspaces…` and `/api/v1/projects…`: the status codes and messages a client sees,
//! pins per user, deletion that reports `completed: false` with the reason, experiments into and
//! between projects, and workspace checkpoint storage merged into an experiment's config.

use serde_json::json;

use crate::experiments::minimal_yaml;
use crate::harness::{TestMaster, assert_error};

pub async fn workspace_errors_name_the_cause(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let r = m.post("/api/v1/workspaces", Some(&admin), json!({"name": "team"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["workspace"]["id"].as_i64().unwrap();
    assert_eq!(r.body["workspace"]["state"], "WORKSPACE_STATE_UNSPECIFIED");
    assert_eq!(r.body["namespaceBindings"], json!({}));

    let dup = m.post("/api/v1/workspaces", Some(&admin), json!({"name": "team"})).await;
    assert_error(&dup, 409, "AlreadyExists");
    assert!(dup.body["error"]["error"].as_str().unwrap().contains("\"team\" is already taken"), "{}", dup.text);
    assert_error(&m.post("/api/v1/workspaces", Some(&admin), json!({"name": "  "})).await, 400, "InvalidArgument");
    assert_error(&m.post("/api/v1/workspaces", Some(&admin), json!({"name": "x".repeat(81)})).await, 400, "InvalidArgument");
    let storage = m.post("/api/v1/workspaces", Some(&admin), json!({"name": "s", "checkpointStorageConfig": {"type": "tape"}})).await;
    assert_error(&storage, 400, "InvalidArgument");
    assert!(storage.text.contains("checkpointStorageConfig.type"), "{}", storage.text);
    let group = json!({"name": "g", "agentUserGroup": {"agentUid": 5, "agentGid": 5, "agentUser": "u"}});
    let missing = m.post("/api/v1/workspaces", Some(&admin), group).await;
    assert_error(&missing, 400, "InvalidArgument");
    assert!(missing.text.contains("agentUserGroup.agentGroup"), "{}", missing.text);

    assert_error(&m.get("/api/v1/workspaces/4242", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get("/api/v1/workspaces/abc", Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.patch("/api/v1/workspaces/1", Some(&admin), json!({"name": "x"})).await, 400, "InvalidArgument");
    assert_error(&m.delete("/api/v1/workspaces/1", Some(&admin)).await, 400, "InvalidArgument");

    // Another user: may pin (pins are their own), may not change or delete it, nor set groups.
    m.create_user(&admin, "wsuser", "WsUser1x").await;
    let user = m.login("wsuser", "WsUser1x").await;
    assert_eq!(m.post(&format!("/api/v1/workspaces/{id}/pin"), Some(&user), json!({})).await.status, 200);
    let mine = m.get(&format!("/api/v1/workspaces/{id}"), Some(&user)).await;
    assert_eq!(mine.body["workspace"]["pinned"], true, "{}", mine.text);
    assert_eq!(m.get(&format!("/api/v1/workspaces/{id}"), Some(&admin)).await.body["workspace"]["pinned"], false);
    assert_error(&m.patch(&format!("/api/v1/workspaces/{id}"), Some(&user), json!({"name": "mine"})).await, 403, "PermissionDenied");
    assert_error(&m.delete(&format!("/api/v1/workspaces/{id}"), Some(&user)).await, 403, "PermissionDenied");
    let g = json!({"name": "ug", "agentUserGroup": {"agentUid": 5, "agentGid": 5, "agentUser": "u", "agentGroup": "g"}});
    assert_error(&m.post("/api/v1/workspaces", Some(&user), g).await, 403, "PermissionDenied");

    let del = m.delete(&format!("/api/v1/workspaces/{id}"), Some(&admin)).await;
    assert_eq!((del.status, &del.body), (200, &json!({"completed": true})), "{}", del.text);
    assert_error(&m.get(&format!("/api/v1/workspaces/{id}"), Some(&admin)).await, 404, "NotFound");
}

pub async fn projects_and_experiments(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let storage = json!({"type": "shared_fs", "host_path": "/ws-ckpts", "save_trial_best": 4});
    let w = m.post("/api/v1/workspaces", Some(&admin), json!({"name": "lab", "checkpointStorageConfig": storage})).await;
    let ws = w.body["workspace"]["id"].as_i64().unwrap();
    let p = m.post(&format!("/api/v1/workspaces/{ws}/projects"), Some(&admin), json!({"name": "p1", "workspaceId": ws})).await;
    assert_eq!(p.status, 200, "{}", p.text);
    let p1 = p.body["project"]["id"].as_i64().unwrap();
    assert_eq!(p.body["project"]["key"], "P1");
    assert_eq!(p.body["project"]["notes"], json!([]));
    let dup = m.post(&format!("/api/v1/workspaces/{ws}/projects"), Some(&admin), json!({"name": "p1"})).await;
    assert_error(&dup, 409, "AlreadyExists");
    let key = m.post(&format!("/api/v1/workspaces/{ws}/projects"), Some(&admin), json!({"name": "k", "key": "TOOLONG"})).await;
    assert_error(&key, 400, "InvalidArgument");
    let p2 = m.post(&format!("/api/v1/workspaces/{ws}/projects"), Some(&admin), json!({"name": "p2"})).await.body["project"]["id"]
        .as_i64()
        .unwrap();

    // Created by projectId: the workspace's storage is merged in and the response names the project.
    let body = json!({"config": minimal_yaml("in-p1"), "modelDefinition": [], "activate": false, "projectId": p1});
    let e = m.post("/api/v1/experiments", Some(&admin), body).await;
    assert_eq!(e.status, 200, "{}", e.text);
    let exp = &e.body["experiment"];
    assert_eq!((exp["projectId"].as_i64(), exp["workspaceId"].as_i64()), (Some(p1), Some(ws)));
    assert_eq!((exp["projectName"].as_str(), exp["workspaceName"].as_str()), (Some("p1"), Some("lab")));
    assert_eq!(e.body["config"]["checkpoint_storage"]["host_path"], "/ws-ckpts");
    assert_eq!(e.body["config"]["checkpoint_storage"]["save_trial_best"], 4);
    let exp_id = exp["id"].as_i64().unwrap();

    // By the config's names.
    let yaml = format!("{}workspace: lab\nproject: p2\n", minimal_yaml("by-names"));
    let e = m.post("/api/v1/experiments", Some(&admin), json!({"config": yaml, "modelDefinition": [], "activate": false})).await;
    assert_eq!(e.body["experiment"]["projectId"].as_i64(), Some(p2), "{}", e.text);
    let yaml = format!("{}workspace: lab\nproject: nope\n", minimal_yaml("missing"));
    let e = m.post("/api/v1/experiments", Some(&admin), json!({"config": yaml, "modelDefinition": [], "activate": false})).await;
    assert_error(&e, 404, "NotFound");

    let listed = m.get(&format!("/api/v1/experiments?projectId={p1}"), Some(&admin)).await;
    assert_eq!(listed.body["experiments"].as_array().map(Vec::len), Some(1), "{}", listed.text);
    let summary = m.get(&format!("/api/v1/projects/{p1}"), Some(&admin)).await;
    assert_eq!(summary.body["project"]["numExperiments"], 1, "{}", summary.text);

    let moved = m.post(&format!("/api/v1/experiments/{exp_id}/move"), Some(&admin), json!({"destinationProjectId": p2})).await;
    assert_eq!(moved.status, 200, "{}", moved.text);
    let bad = m.post(&format!("/api/v1/experiments/{exp_id}/move"), Some(&admin), json!({"destinationProjectId": 4242})).await;
    assert_error(&bad, 404, "NotFound");
    let bulk = m
        .post(
            &format!("/api/v1/projects/{p2}/experiments/move"),
            Some(&admin),
            json!({"destinationProjectId": p1, "experimentIds": [exp_id, 4242]}),
        )
        .await;
    assert_eq!(bulk.status, 200, "{}", bulk.text);
    assert_eq!(bulk.body["results"][0], json!({"error": "", "id": exp_id}));
    assert!(!bulk.body["results"][1]["error"].as_str().unwrap().is_empty());

    // Archived project, archived workspace: refused with the name.
    assert_eq!(m.post(&format!("/api/v1/projects/{p1}/archive"), Some(&admin), json!({})).await.status, 200);
    let body = json!({"config": minimal_yaml("x"), "modelDefinition": [], "projectId": p1});
    let refused = m.post("/api/v1/experiments", Some(&admin), body.clone()).await;
    assert_error(&refused, 400, "InvalidArgument");
    assert!(refused.text.contains("project \\\"p1\\\" is archived"), "{}", refused.text);
    m.post(&format!("/api/v1/projects/{p1}/unarchive"), Some(&admin), json!({})).await;
    m.post(&format!("/api/v1/workspaces/{ws}/archive"), Some(&admin), json!({})).await;
    let refused = m.post("/api/v1/experiments", Some(&admin), body).await;
    assert!(refused.status == 400 && refused.text.contains("workspace \\\"lab\\\" is archived"), "{}", refused.text);
    let listed = m.get("/api/v1/workspaces?archived=true", Some(&admin)).await;
    assert_eq!(listed.body["workspaces"][0]["name"], "lab", "{}", listed.text);
    m.post(&format!("/api/v1/workspaces/{ws}/unarchive"), Some(&admin), json!({})).await;

    // A project with an unfinished experiment: not deleted; its state and message say why.
    let del = m.delete(&format!("/api/v1/projects/{p1}"), Some(&admin)).await;
    assert_eq!(del.body, json!({"completed": false}), "{}", del.text);
    let p = m.get(&format!("/api/v1/projects/{p1}"), Some(&admin)).await;
    assert_eq!(p.body["project"]["state"], "WORKSPACE_STATE_DELETE_FAILED");
    assert!(p.body["project"]["errorMessage"].as_str().unwrap().contains(&exp_id.to_string()), "{}", p.text);

    let edited = m.patch(&format!("/api/v1/projects/{p2}"), Some(&admin), json!({"name": "p2b", "description": "d"})).await;
    assert_eq!((edited.body["project"]["name"].as_str(), edited.body["project"]["description"].as_str()), (Some("p2b"), Some("d")));
    let listed = m.get(&format!("/api/v1/workspaces/{ws}/projects?sortBy=SORT_BY_NAME&orderBy=ORDER_BY_DESC"), Some(&admin)).await;
    let names: Vec<&str> = listed.body["projects"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["p2b", "p1"], "{}", listed.text);
    assert_eq!(listed.body["pagination"]["total"], 2);
    assert_error(&m.get("/api/v1/workspaces/4242/projects", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.patch("/api/v1/projects/1", Some(&admin), json!({"name": "x"})).await, 400, "InvalidArgument");
}
