//! The model registry over HTTP, in the shapes the upstream CLI and SDK send and parse: models by
//! name or id, filters and pages, patches, archive, permissions; versions registering checkpoints;
//! registered checkpoints kept from GC and deletion.

use std::time::{Duration, Instant};

use resolute_master::services::checkpoint_gc::collect_experiment_checkpoints;
use serde_json::{Value, json};

use crate::experiments::create;
use crate::harness::{TestMaster, assert_error};
use crate::seed;

/// Keys `v1Model.from_json` reads without a default.
const MODEL_REQUIRED: [&str; 10] =
    ["archived", "creationTime", "id", "lastUpdatedTime", "metadata", "name", "numVersions", "userId", "username", "workspaceId"];

/// What `client.create_model(name, description)` posts (unset fields as null).
fn sdk_create(name: &str) -> Value {
    json!({"name": name, "description": "", "labels": null, "metadata": null, "notes": null, "workspaceName": null})
}

fn names(reply: &crate::harness::Reply) -> Vec<String> {
    reply.body["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap().to_owned()).collect()
}

pub async fn models_create_get_list_patch_delete(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let r = m
        .post(
            "/api/v1/models",
            Some(&admin),
            json!({"name": "mnist-cnn", "description": "digits", "metadata": {"framework": "torch"}, "labels": ["prod"], "workspaceName": "Uncategorized"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let model = &r.body["model"];
    for key in MODEL_REQUIRED {
        assert!(model.get(key).is_some(), "model lacks {key}: {model}");
    }
    assert_eq!(
        (&model["name"], &model["description"], &model["metadata"], &model["labels"]),
        (&json!("mnist-cnn"), &json!("digits"), &json!({"framework": "torch"}), &json!(["prod"]))
    );
    assert_eq!(
        (&model["workspaceId"], &model["numVersions"], &model["archived"], &model["username"]),
        (&json!(1), &json!(0), &json!(false), &json!("admin"))
    );
    let id = model["id"].as_i64().unwrap();

    let again = m.post("/api/v1/models", Some(&admin), sdk_create("mnist-cnn")).await;
    assert_error(&again, 409, "AlreadyExists");
    assert!(again.text.contains("\\\"mnist-cnn\\\" already exists"), "{}", again.text);
    for (bad, says) in [("42", "only numbers"), ("a/b", "'/'"), ("  ", "needs a name")] {
        let r = m.post("/api/v1/models", Some(&admin), sdk_create(bad)).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(r.text.contains(says), "{bad:?}: {}", r.text);
    }
    let r = m.post("/api/v1/models", Some(&admin), json!({"name": "x", "workspaceName": "nowhere"})).await;
    assert_error(&r, 404, "NotFound");
    assert!(r.text.contains("nowhere"), "{}", r.text);
    let r = m.post("/api/v1/models", Some(&admin), json!({"name": "x", "metadata": [1]})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("metadata"), "{}", r.text);

    // By name, by id, and an unknown one named in the 404.
    assert_eq!(m.get("/api/v1/models/mnist-cnn", Some(&admin)).await.body["model"]["id"], id);
    assert_eq!(m.get(&format!("/api/v1/models/{id}"), Some(&admin)).await.body["model"]["name"], "mnist-cnn");
    let missing = m.get("/api/v1/models/no-such-model", Some(&admin)).await;
    assert_error(&missing, 404, "NotFound");
    assert!(missing.text.contains("no-such-model"), "{}", missing.text);
    assert_error(&m.get("/api/v1/models/mnist-cnn", None).await, 401, "Unauthenticated");

    // Any user creates; only the owner or an admin changes or deletes.
    m.create_user(&admin, "mallory", "Mallory1").await;
    let mallory = m.login("mallory", "Mallory1").await;
    let r = m.post("/api/v1/models", Some(&mallory), sdk_create("mallorys")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["model"]["username"], "mallory");
    let denied = m.patch("/api/v1/models/mnist-cnn", Some(&mallory), json!({"description": "mine"})).await;
    assert_error(&denied, 403, "PermissionDenied");
    assert!(denied.text.contains("admin"), "{}", denied.text);
    assert_error(&m.delete("/api/v1/models/mnist-cnn", Some(&mallory)).await, 403, "PermissionDenied");
    assert_error(&m.post("/api/v1/models/mnist-cnn/archive", Some(&mallory), json!({})).await, 403, "PermissionDenied");
    assert_eq!(m.patch("/api/v1/models/mallorys", Some(&admin), json!({"labels": ["cv", "prod"]})).await.status, 200);

    // Patches change only what they name (the SDK's add_metadata sends the merged document).
    let r = m
        .patch("/api/v1/models/mnist-cnn", Some(&admin), json!({"metadata": {"framework": "torch", "acc": 0.9}, "notes": "# Readme"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (&r.body["model"]["metadata"]["acc"], &r.body["model"]["notes"], &r.body["model"]["description"]),
        (&json!(0.9), &json!("# Readme"), &json!("digits"))
    );
    assert_error(&m.patch("/api/v1/models/mnist-cnn", Some(&admin), json!({"name": "mallorys"})).await, 409, "AlreadyExists");
    assert_eq!(m.post("/api/v1/models/mnist-cnn/archive", Some(&admin), json!({})).await.body, json!({}));
    assert_eq!(m.get("/api/v1/models/mnist-cnn", Some(&admin)).await.body["model"]["archived"], true);

    // Filters, sorts and pages as `det model list` and `client.list_models` ask.
    let all = m.get("/api/v1/models?sortBy=SORT_BY_NAME&orderBy=ORDER_BY_DESC", Some(&admin)).await;
    assert_eq!(names(&all), ["mnist-cnn", "mallorys"]);
    assert_eq!(all.body["pagination"]["total"], 2);
    assert_eq!(names(&m.get("/api/v1/models?archived=false", Some(&admin)).await), ["mallorys"]);
    assert_eq!(names(&m.get("/api/v1/models?labels=cv&labels=prod", Some(&admin)).await), ["mallorys"]);
    assert_eq!(names(&m.get("/api/v1/models?labels=prod&sortBy=SORT_BY_NAME", Some(&admin)).await), ["mallorys", "mnist-cnn"]);
    assert_eq!(names(&m.get("/api/v1/models?name=MNIST", Some(&admin)).await), ["mnist-cnn"]);
    assert_eq!(names(&m.get("/api/v1/models?users=mallory", Some(&admin)).await), ["mallorys"]);
    assert_eq!(names(&m.get("/api/v1/models?workspaceNames=Uncategorized&sortBy=SORT_BY_LAST_UPDATED_TIME", Some(&admin)).await).len(), 2);
    assert_eq!(names(&m.get("/api/v1/models?workspaceIds=99", Some(&admin)).await), Vec::<String>::new());
    let page = m.get("/api/v1/models?sortBy=SORT_BY_NAME&offset=1&limit=1", Some(&admin)).await;
    assert_eq!(names(&page), ["mnist-cnn"]);
    assert_eq!(page.body["pagination"], json!({"offset": 1, "limit": 1, "startIndex": 1, "endIndex": 2, "total": 2}));
    let tail = m.get("/api/v1/models?sortBy=SORT_BY_NAME&offset=-1", Some(&admin)).await;
    assert_eq!(names(&tail), ["mnist-cnn"], "a negative offset counts from the end");
    assert_error(&m.get("/api/v1/models?sortBy=SORT_BY_COLOR", Some(&admin)).await, 400, "InvalidArgument");

    assert_eq!(m.post("/api/v1/models/mnist-cnn/unarchive", Some(&admin), json!({})).await.status, 200);
    assert_eq!(m.delete(&format!("/api/v1/models/{id}"), Some(&admin)).await.status, 200);
    assert_error(&m.get("/api/v1/models/mnist-cnn", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.delete("/api/v1/models/mnist-cnn", Some(&admin)).await, 404, "NotFound");
    assert_eq!(m.delete("/api/v1/models/mallorys", Some(&mallory)).await.status, 200, "the owner deletes");
}

fn yaml(name: &str, storage: &str) -> String {
    format!(
        "name: {name}\nentrypoint: python3 train.py\nsearcher: {{name: single, metric: accuracy, smaller_is_better: false}}\n\
         checkpoint_storage: {storage}\n"
    )
}

pub async fn versions_register_list_patch_delete(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let exp = create(m, &admin, &yaml("versions", "{type: shared_fs, host_path: /tmp}"), false).await;
    let trial = seed::trial(m, exp, 1).await;
    seed::metrics(m, &trial, 100, 0.75).await;
    seed::checkpoint(m, &trial, "ck-100", 100, Some(0.75), "STATE_COMPLETED").await;
    seed::checkpoint(m, &trial, "ck-200", 200, None, "STATE_COMPLETED").await;
    seed::checkpoint(m, &trial, "ck-live", 300, None, "STATE_ACTIVE").await;
    assert_eq!(m.post("/api/v1/models", Some(&admin), sdk_create("iris")).await.status, 200);

    // `model.register_version(uuid)`.
    let r = m.post("/api/v1/models/iris/versions", Some(&admin), json!({"checkpointUuid": "ck-100", "modelName": "iris"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let v = &r.body["modelVersion"];
    assert_eq!((&v["version"], &v["model"]["name"], &v["model"]["numVersions"]), (&json!(1), &json!("iris"), &json!(1)));
    let c = &v["checkpoint"];
    assert_eq!((&c["uuid"], &c["state"], &c["metadata"]["steps_completed"]), (&json!("ck-100"), &json!("STATE_COMPLETED"), &json!(100)));
    assert_eq!((&c["training"]["trialId"], &c["training"]["experimentId"]), (&json!(trial.id), &json!(exp)));
    assert_eq!(c["training"]["validationMetrics"]["avgMetrics"]["accuracy"], 0.75);
    let r = m
        .post(
            "/api/v1/models/iris/versions",
            Some(&admin),
            json!({"checkpointUuid": "ck-200", "name": "v-two", "comment": "later", "labels": ["best"], "metadata": {"k": 1}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (&r.body["modelVersion"]["version"], &r.body["modelVersion"]["name"], &r.body["modelVersion"]["labels"]),
        (&json!(2), &json!("v-two"), &json!(["best"]))
    );

    // Bad input names what is wrong.
    let r = m.post("/api/v1/models/iris/versions", Some(&admin), json!({"checkpointUuid": "no-such-ckpt"})).await;
    assert_error(&r, 404, "NotFound");
    assert!(r.text.contains("no-such-ckpt"), "{}", r.text);
    let r = m.post("/api/v1/models/iris/versions", Some(&admin), json!({"checkpointUuid": "ck-live"})).await;
    assert_error(&r, 400, "FailedPrecondition");
    assert!(r.text.contains("STATE_ACTIVE"), "{}", r.text);
    let r = m.post("/api/v1/models/nope/versions", Some(&admin), json!({"checkpointUuid": "ck-100"})).await;
    assert_error(&r, 404, "NotFound");
    assert!(r.text.contains("nope"), "{}", r.text);
    assert_error(&m.post("/api/v1/models/iris/versions", Some(&admin), json!({})).await, 400, "InvalidArgument");

    // `model.get_version()`: the newest through the list; `get_version(n)`; `list_versions()`.
    let newest = m.get("/api/v1/models/iris/versions?limit=1&sortBy=SORT_BY_VERSION&orderBy=ORDER_BY_DESC", Some(&admin)).await;
    assert_eq!(newest.status, 200, "{}", newest.text);
    assert_eq!(newest.body["modelVersions"][0]["version"], 2);
    assert_eq!(newest.body["model"]["name"], "iris");
    assert_eq!(newest.body["pagination"]["total"], 2);
    let listed = m.get("/api/v1/models/iris/versions?offset=0&orderBy=ORDER_BY_DESC", Some(&admin)).await;
    let numbers: Vec<i64> = listed.body["modelVersions"].as_array().unwrap().iter().map(|v| v["version"].as_i64().unwrap()).collect();
    assert_eq!(numbers, [2, 1]);
    let model_id = listed.body["model"]["id"].as_i64().unwrap();
    let one = m.get(&format!("/api/v1/models/{model_id}/versions/1"), Some(&admin)).await;
    assert_eq!(one.body["modelVersion"]["checkpoint"]["uuid"], "ck-100", "{}", one.text);
    let r = m.get("/api/v1/models/iris/versions/9", Some(&admin)).await;
    assert_error(&r, 404, "NotFound");
    assert!(r.text.contains("no version 9"), "{}", r.text);
    assert_error(&m.get("/api/v1/models/iris/versions/two", Some(&admin)).await, 400, "InvalidArgument");

    // `set_name`, `set_notes`; only the owners or an admin.
    let r = m.patch("/api/v1/models/iris/versions/1", Some(&admin), json!({"name": "first", "notes": "baseline"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!((&r.body["modelVersion"]["name"], &r.body["modelVersion"]["notes"]), (&json!("first"), &json!("baseline")));
    m.create_user(&admin, "mallory", "Mallory1").await;
    let mallory = m.login("mallory", "Mallory1").await;
    assert_error(&m.patch("/api/v1/models/iris/versions/1", Some(&mallory), json!({"name": "x"})).await, 403, "PermissionDenied");
    assert_error(&m.delete("/api/v1/models/iris/versions/1", Some(&mallory)).await, 403, "PermissionDenied");

    assert_eq!(m.delete("/api/v1/models/iris/versions/2", Some(&admin)).await.status, 200);
    assert_error(&m.get("/api/v1/models/iris/versions/2", Some(&admin)).await, 404, "NotFound");
    assert_eq!(m.get("/api/v1/models/iris", Some(&admin)).await.body["model"]["numVersions"], 1);

    // An archived model takes no new versions.
    m.post("/api/v1/models/iris/archive", Some(&admin), json!({})).await;
    let r = m.post("/api/v1/models/iris/versions", Some(&admin), json!({"checkpointUuid": "ck-200"})).await;
    assert_error(&r, 400, "FailedPrecondition");
    assert!(r.text.contains("archived"), "{}", r.text);
}

pub async fn registered_checkpoints_survive_gc_and_deletion(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let storage = tempfile::tempdir().unwrap();
    let dir = format!("{{type: directory, container_path: {}}}", storage.path().display());
    let exp = create(m, &admin, &yaml("registered", &dir), false).await;
    let trial = seed::trial(m, exp, 1).await;
    // Upstream's default policy keeps the best (200) and the latest (300); 100 would go.
    for (uuid, steps, metric) in [("r-100", 100, Some(0.5)), ("r-200", 200, Some(0.9)), ("r-300", 300, None)] {
        seed::checkpoint(m, &trial, uuid, steps, metric, "STATE_COMPLETED").await;
        std::fs::create_dir_all(storage.path().join(uuid)).unwrap();
        std::fs::write(storage.path().join(uuid).join("metadata.json"), "{}").unwrap();
    }
    assert_eq!(m.post("/api/v1/models", Some(&admin), sdk_create("kept")).await.status, 200);
    let r = m.post("/api/v1/models/kept/versions", Some(&admin), json!({"checkpointUuid": "r-100"})).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let experiment_id = i32::try_from(exp).unwrap();
    let config = m.store.experiment_by_id(experiment_id).await.unwrap().config;
    let report = collect_experiment_checkpoints(m.store.as_ref(), experiment_id, &config, &[]).await.unwrap();
    assert!(report.deleted.is_empty(), "the registered checkpoint is not collected: {report:?}");
    assert!(storage.path().join("r-100").exists());
    assert_eq!(m.store.checkpoint_by_uuid("r-100").await.unwrap().state, "STATE_COMPLETED");

    let body = json!({"checkpointUuids": ["r-300", "r-100"]});
    let r = m.send(m.http.delete(format!("{}/api/v1/checkpoints", m.base)).bearer_auth(&admin).json(&body)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("r-100") && r.text.contains("model registry"), "{}", r.text);
    assert!(storage.path().join("r-300").exists(), "nothing is deleted when one is registered");

    // Deleting the experiment would take the version's checkpoint: refused, naming it.
    assert_eq!(m.post(&format!("/api/v1/experiments/{exp}/cancel"), Some(&admin), json!({})).await.status, 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    while m.get(&format!("/api/v1/experiments/{exp}"), Some(&admin)).await.body["experiment"]["state"] != "STATE_CANCELED" {
        assert!(Instant::now() < deadline, "experiment {exp} never settled as canceled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = m.delete(&format!("/api/v1/experiments/{exp}"), Some(&admin)).await;
    assert_error(&r, 400, "FailedPrecondition");
    assert!(r.text.contains("r-100") && r.text.contains("model versions"), "{}", r.text);

    // Once the version is gone, the policy applies again.
    assert_eq!(m.delete("/api/v1/models/kept/versions/1", Some(&admin)).await.status, 200);
    let report = collect_experiment_checkpoints(m.store.as_ref(), experiment_id, &config, &[]).await.unwrap();
    assert_eq!(report.deleted, ["r-100"]);
    assert_eq!(m.delete(&format!("/api/v1/experiments/{exp}"), Some(&admin)).await.status, 200);
}
