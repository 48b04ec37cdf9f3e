//! Creating experiments: config validation, the model definition, projects, limits.

use serde_json::{Value, json};

use crate::context::{read_v1_context, untar, write_sample_context};
use crate::harness::{TestMaster, assert_error};

/// The seed 001 const.yaml, verbatim.
pub const CONST_YAML: &str = include_str!("fixtures/const.yaml");

/// Keys the upstream Python bindings index directly on a `v1Experiment`.
pub const EXPERIMENT_REQUIRED: &[&str] = &[
    "id",
    "name",
    "startTime",
    "state",
    "archived",
    "numTrials",
    "username",
    "jobId",
    "searcherType",
    "projectId",
    "originalConfig",
    "projectOwnerId",
    "config",
];

pub fn minimal_yaml(name: &str) -> String {
    format!("name: {name}\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n")
}

/// Creates an experiment from YAML with no files; returns its id.
pub async fn create(m: &TestMaster, token: &str, yaml: &str, activate: bool) -> i64 {
    let r = m.post("/api/v1/experiments", Some(token), json!({"config": yaml, "modelDefinition": [], "activate": activate})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["experiment"]["id"].as_i64().unwrap()
}

pub fn assert_required_keys(experiment: &Value) {
    for key in EXPERIMENT_REQUIRED {
        assert!(experiment.get(key).is_some(), "experiment lacks {key}: {experiment}");
    }
}

async fn experiment_count(m: &TestMaster, token: &str) -> i64 {
    let r = m.get("/api/v1/experiments?limit=-2", Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["pagination"]["total"].as_i64().unwrap()
}

pub async fn seed_const_yaml_with_cli_context(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let dir = tempfile::tempdir().unwrap();
    write_sample_context(dir.path());
    let files = read_v1_context(dir.path());
    // The body `det experiment create const.yaml <dir>` sends (bindings' to_json keeps set Nones).
    let body = json!({"activate": true, "config": CONST_YAML, "modelDefinition": files, "parentId": null,
                      "projectId": null, "template": null, "validateOnly": false});
    let r = m.post("/api/v1/experiments", Some(&admin), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let exp = &r.body["experiment"];
    assert_required_keys(exp);
    assert_eq!(exp["name"], "iris_const_testuser1");
    // Its trial exists when the create call returns and, with no agent, waits for a slot.
    assert_eq!(exp["state"], "STATE_QUEUED");
    assert_eq!(exp["username"], "admin");
    assert_eq!(exp["searcherType"], "single");
    assert_eq!(exp["searcherMetric"], "val_categorical_accuracy");
    assert_eq!(exp["originalConfig"], CONST_YAML);
    assert_eq!(exp["projectId"], 1);
    assert_eq!(exp["workspaceName"], "Uncategorized");
    assert_eq!(exp["numTrials"], 1);
    assert_eq!(exp["checkpointSize"], "0", "int64 as a string");
    assert_eq!(exp["labels"], json!([]));
    assert!(exp.get("endTime").is_none());
    assert!(!exp["jobId"].as_str().unwrap().is_empty());
    assert_eq!(r.body["warnings"], json!([]));
    // The fully defaulted config: master storage default, schema defaults, the user's values.
    let config = &r.body["config"];
    assert_eq!(config["checkpoint_storage"]["type"], "shared_fs");
    assert!(config["checkpoint_storage"]["host_path"].as_str().unwrap().ends_with("/checkpoints"), "{config}");
    assert_eq!(config["max_restarts"], 5);
    assert_eq!(config["searcher"]["smaller_is_better"], false);
    assert_eq!(config["hyperparameters"]["global_batch_size"]["val"], 30);
    assert_eq!(exp["config"], *config);

    let id = exp["id"].as_i64().unwrap();
    let got = m.get(&format!("/api/v1/experiments/{id}"), Some(&admin)).await;
    assert_eq!(got.status, 200, "{}", got.text);
    assert_required_keys(&got.body["experiment"]);
    // No agent: once the loop queued its trial the job waits, and says why.
    let summary = &got.body["jobSummary"];
    assert!(summary.is_null() || summary["state"] == "STATE_QUEUED", "{}", got.text);
    assert_eq!(got.body["config"], *config);
    // The loop creates the single trial right after the create; it may or may not be there yet.
    assert!(got.body["experiment"]["trialIds"].as_array().is_some_and(|ids| ids.len() <= 1), "{}", got.text);

    // The model definition comes back as the same files.
    let def = m.get(&format!("/api/v1/experiments/{id}/model_def"), Some(&admin)).await;
    assert_eq!(def.status, 200, "{}", def.text);
    let entries = untar(def.body["b64Tgz"].as_str().unwrap());
    let paths: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["data", "model_def.py", "startup-hook.sh", "data/empty", "data/iris.csv"]);
    for (entry, sent) in entries.iter().zip(&files) {
        assert_eq!(entry.is_dir, sent["type"] == 53, "{}", entry.path);
        assert_eq!(entry.mtime.to_string(), sent["mtime"].as_str().unwrap());
        assert_eq!(i64::from(entry.mode), sent["mode"].as_i64().unwrap() & 0o7777);
    }
    let csv = entries.iter().find(|e| e.path == "data/iris.csv").unwrap();
    assert_eq!(csv.content, b"5.1,3.5,1.4,0.2,setosa\n");
}

pub async fn bad_config_lists_every_field_error(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let yaml =
        "entrypoint: python3 train.py\nsearcher:\n  name: bogus\n  metric: loss\nresources:\n  slots_per_trial: two\nmax_restarts: -1\n";
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": yaml, "activate": true})).await;
    assert_error(&r, 400, "InvalidArgument");
    let message = r.body["error"]["error"].as_str().unwrap();
    for path in ["searcher.name", "resources.slots_per_trial", "max_restarts"] {
        assert!(message.contains(path), "{path} missing from {message}");
    }
    assert_eq!(message.matches("; ").count(), 2, "one message, errors joined: {message}");

    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": "name: [unclosed", "activate": true})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("invalid YAML"), "{}", r.text);
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"activate": true})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("entrypoint") && r.text.contains("searcher"), "{}", r.text);
    assert_eq!(experiment_count(m, &admin).await, 0, "nothing stored");
}

pub async fn validate_only_and_paused_creates(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let body = json!({"config": minimal_yaml("check"), "validateOnly": true, "activate": true,
                      "modelDefinition": [{"path": "a.py", "type": 48, "content": "eA==", "mtime": "0", "mode": 33188, "uid": 0, "gid": 0}]});
    let r = m.post("/api/v1/experiments", Some(&admin), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["experiment"]["id"], 0);
    assert_eq!(r.body["config"]["searcher"]["metric"], "loss");
    // Files are checked even when only validating.
    let bad = json!({"config": minimal_yaml("check"), "validateOnly": true,
                     "modelDefinition": [{"path": "../a.py", "type": 48, "content": "", "mtime": "0", "mode": 0, "uid": 0, "gid": 0}]});
    assert_error(&m.post("/api/v1/experiments", Some(&admin), bad).await, 400, "InvalidArgument");
    assert_eq!(experiment_count(m, &admin).await, 0);

    let paused = create(m, &admin, &minimal_yaml("paused"), false).await;
    let r = m.get(&format!("/api/v1/experiments/{paused}"), Some(&admin)).await;
    assert_eq!(r.body["experiment"]["state"], "STATE_PAUSED");
    // Without `activate`, as upstream: created paused.
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": minimal_yaml("implicit")})).await;
    assert_eq!(r.body["experiment"]["state"], "STATE_PAUSED", "{}", r.text);
}

pub async fn malformed_files_are_400(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let file = |path: &str, kind: i64, content: &str, mtime: Value| json!({"path": path, "type": kind, "content": content, "mtime": mtime, "mode": 33188, "uid": 0, "gid": 0});
    let cases = [
        (file("a.py", 48, "not base64!", json!("0")), "base64"),
        (file("../x", 48, "", json!("0")), "no '..'"),
        (file("a/../../x", 48, "", json!("0")), "no '..'"),
        (file("/etc/passwd", 48, "", json!("0")), "relative"),
        (file("link", 50, "", json!("0")), "type 50"),
        (file("a.py", 48, "", json!("yesterday")), "modelDefinition[1].mtime"),
    ];
    for (bad, expected) in cases {
        let body = json!({"config": minimal_yaml("x"), "activate": true, "modelDefinition": [file("ok.py", 48, "", json!(1)), bad]});
        let r = m.post("/api/v1/experiments", Some(&admin), body).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(r.text.contains(expected), "expected {expected:?} in {}", r.text);
        if expected != "modelDefinition[1].mtime" {
            assert!(r.text.contains("modelDefinition[1]"), "{}", r.text);
        }
    }
    assert_eq!(experiment_count(m, &admin).await, 0);
}

pub async fn oversized_uploads_are_413(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    // Decoded over 95 MiB, but the body itself within the route's limit.
    let content = "A".repeat(96 * 1024 * 1024 / 3 * 4);
    let body = format!(
        r#"{{"config": {}, "activate": true, "modelDefinition": [{{"path": "big.bin", "type": 48, "content": "{content}", "mtime": "0", "mode": 33188, "uid": 0, "gid": 0}}]}}"#,
        Value::from(minimal_yaml("big"))
    );
    drop(content);
    let r = m.post_raw("/api/v1/experiments", Some(&admin), &body).await;
    assert_error(&r, 413, "ResourceExhausted");
    assert!(r.text.contains("95 MiB") && r.text.contains(".detignore"), "{}", r.text);
    drop(body);
    // Over the body limit itself: a JSON error naming the limit, not a dropped connection.
    let huge = "x".repeat(137 * 1024 * 1024);
    let r = m.post_raw("/api/v1/experiments", Some(&admin), &huge).await;
    assert_eq!(r.status, 413, "{}", &r.text[..r.text.len().min(300)]);
    assert!(r.text.contains("136 MiB"), "{}", r.text);
    assert_eq!(experiment_count(m, &admin).await, 0);
}

pub async fn projects_resolve_from_id_or_config(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": minimal_yaml("p"), "projectId": 999})).await;
    assert_error(&r, 404, "NotFound");
    let named = format!("{}workspace: Uncategorized\nproject: Uncategorized\n", minimal_yaml("named"));
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": named, "projectId": 0})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["experiment"]["projectId"], 1);
    let missing = format!("{}workspace: Research\nproject: Vision\n", minimal_yaml("missing"));
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": missing})).await;
    assert_error(&r, 404, "NotFound");
    assert!(r.text.contains("Vision"), "{}", r.text);
    let half = format!("{}workspace: Research\n", minimal_yaml("half"));
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": half})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": minimal_yaml("fork"), "parentId": 4242})).await;
    assert_error(&r, 404, "NotFound");
    let r = m.post("/api/v1/experiments", Some(&admin), json!({"config": minimal_yaml("t"), "template": "tpl"})).await;
    assert_error(&r, 404, "NotFound");
    assert_eq!(r.body["error"]["error"], "template \"tpl\" not found");
    // A stored template is merged under the experiment's config; the config's own values win.
    let r = m
        .post(
            "/api/v1/templates/tpl",
            Some(&admin),
            json!({"name": "tpl", "config": {"description": "from the template", "max_restarts": 2}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = m
        .post("/api/v1/experiments", Some(&admin), json!({"config": format!("{}max_restarts: 7\n", minimal_yaml("t")), "template": "tpl"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["config"]["description"], "from the template");
    assert_eq!(r.body["config"]["max_restarts"], 7);
    assert_eq!(experiment_count(m, &admin).await, 2);
}
