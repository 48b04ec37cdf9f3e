//! The model definition's files one at a time (the web UI's Model code tab, upstream's WebUI
//! calls): `GET /api/v1/experiments/{id}/file_tree` and `POST /api/v1/experiments/{id}/file`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use crate::context::{read_v1_context, write_sample_context};
use crate::experiments::minimal_yaml;
use crate::harness::{TestMaster, assert_error};

async fn create_with_context(m: &TestMaster, token: &str) -> i64 {
    let dir = tempfile::tempdir().unwrap();
    write_sample_context(dir.path());
    let body = json!({"config": minimal_yaml("files"), "modelDefinition": read_v1_context(dir.path()), "activate": false});
    let r = m.post("/api/v1/experiments", Some(token), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["experiment"]["id"].as_i64().unwrap()
}

fn paths(nodes: &Value) -> Vec<String> {
    nodes.as_array().unwrap().iter().map(|n| n["path"].as_str().unwrap().to_owned()).collect()
}

pub async fn the_tree_lists_the_uploaded_context(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = create_with_context(m, &admin).await;
    let r = m.get(&format!("/api/v1/experiments/{id}/file_tree"), Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let files = &r.body["files"];
    // Directories first, then files by name; `.detignore` was never uploaded.
    assert_eq!(paths(files), ["data", "model_def.py", "startup-hook.sh"]);
    let data = &files[0];
    assert_eq!((data["name"].as_str(), data["isDir"].as_bool(), data["contentLength"].as_i64()), (Some("data"), Some(true), Some(0)));
    assert_eq!(paths(&data["files"]), ["data/empty", "data/iris.csv"]);
    let csv = &data["files"][1];
    assert_eq!(csv["name"], "iris.csv");
    assert_eq!(csv["contentLength"], "5.1,3.5,1.4,0.2,setosa\n".len());
    assert_eq!(csv["contentType"], "text/plain; charset=utf-8");
    assert_eq!(csv["isDir"], false);
    assert_eq!(files[1]["contentType"], "text/x-python");
    assert!(files[1]["modifiedTime"].as_str().unwrap().ends_with('Z'), "{}", r.text);
    assert_eq!(files[1]["files"], json!([]));
}

pub async fn a_file_is_read_by_path(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = create_with_context(m, &admin).await;
    let url = format!("/api/v1/experiments/{id}/file");
    let r = m.post(&url, Some(&admin), json!({"experimentId": id, "path": "data/iris.csv"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(BASE64.decode(r.body["file"].as_str().unwrap()).unwrap(), b"5.1,3.5,1.4,0.2,setosa\n");
    let r = m.post(&url, Some(&admin), json!({"path": "model_def.py"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(BASE64.decode(r.body["file"].as_str().unwrap()).unwrap(), b"class IrisTrial:\n    pass\n");

    // Bad input: each answer names the cause.
    let r = m.post(&url, Some(&admin), json!({"path": "nope.py"})).await;
    assert_error(&r, 404, "NotFound");
    assert!(r.text.contains("no file \\\"nope.py\\\""), "{}", r.text);
    let r = m.post(&url, Some(&admin), json!({"path": "data"})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("is a directory"), "{}", r.text);
    let r = m.post(&url, Some(&admin), json!({})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("path"), "{}", r.text);
    let r = m.post(&url, Some(&admin), json!({"experimentId": id + 1, "path": "model_def.py"})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("experimentId"), "{}", r.text);
    let r = m.post("/api/v1/experiments/999999/file", Some(&admin), json!({"path": "model_def.py"})).await;
    assert_eq!(r.status, 404, "{}", r.text);
    let r = m.get("/api/v1/experiments/999999/file_tree", Some(&admin)).await;
    assert_eq!(r.status, 404, "{}", r.text);
    let r = m.get("/api/v1/experiments/x/file_tree", Some(&admin)).await;
    assert_error(&r, 400, "InvalidArgument");
    // Without a session: 401.
    let r = m.get(&format!("/api/v1/experiments/{id}/file_tree"), None).await;
    assert_eq!(r.status, 401, "{}", r.text);
}
