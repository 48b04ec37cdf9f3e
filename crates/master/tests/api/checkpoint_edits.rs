//! A user's changes to existing checkpoints: metadata (`POST /api/v1/checkpoints/{uuid}/metadata`
//! as the 0.38 SDK sends it), removing files by glob (`POST /api/v1/checkpoints/rm`, on a
//! directory and in S3), listing sorted by any validation metric (`sortByMetric`), and a GC
//! policy change (`PATCH /api/v1/experiments/{id}` with `checkpointStorage`) collecting at once.

use std::path::Path;
use std::time::{Duration, Instant};

use resolute_store::{NewMetricReport, SearcherMetric, TrialRecord, db_now};
use serde_json::{Map, Value, json};

use crate::checkpoint_files::yaml;
use crate::experiments::create;
use crate::harness::{TestMaster, assert_error};
use crate::s3_checkpoints::{KEYS, UPLOAD, python, start_moto};
use crate::seed;

/// The body `Checkpoint.add_metadata` posts.
fn sdk_metadata_body(uuid: &str, metadata: Value) -> Value {
    json!({"checkpoint": {"uuid": uuid, "metadata": metadata, "resources": {}, "training": {}, "state": "STATE_UNSPECIFIED"}})
}

pub async fn checkpoint_metadata_is_replaced_as_the_sdk_sends_it(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let exp = create(m, &admin, &yaml("meta", "{type: shared_fs, host_path: /tmp}"), false).await;
    let trial = seed::trial(m, exp, 1).await;
    seed::checkpoint(m, &trial, "m-1", 100, Some(0.5), "STATE_COMPLETED").await;

    let body = sdk_metadata_body("m-1", json!({"steps_completed": 100, "team": "vision", "nested": {"k": [1, 2]}}));
    let r = m.post("/api/v1/checkpoints/m-1/metadata", Some(&admin), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["checkpoint"]["metadata"]["team"], "vision");
    let read = m.get("/api/v1/checkpoints/m-1", Some(&admin)).await;
    assert_eq!(read.body["checkpoint"]["metadata"], json!({"steps_completed": 100, "team": "vision", "nested": {"k": [1, 2]}}));
    assert_eq!(read.body["checkpoint"]["state"], "STATE_COMPLETED", "only the metadata changed");
    // remove_metadata sends what is left.
    let r = m.post("/api/v1/checkpoints/m-1/metadata", Some(&admin), sdk_metadata_body("m-1", json!({"steps_completed": 100}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(m.get("/api/v1/checkpoints/m-1", Some(&admin)).await.body["checkpoint"]["metadata"], json!({"steps_completed": 100}));

    let r = m.post("/api/v1/checkpoints/m-1/metadata", Some(&admin), sdk_metadata_body("m-2", json!({}))).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("checkpoint.uuid"), "{}", r.text);
    let r = m.post("/api/v1/checkpoints/m-1/metadata", Some(&admin), sdk_metadata_body("m-1", json!([1, 2]))).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("checkpoint.metadata"), "{}", r.text);
    let r = m.post("/api/v1/checkpoints/nope/metadata", Some(&admin), sdk_metadata_body("nope", json!({}))).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert!(r.text.contains("nope"), "{}", r.text);
    m.create_user(&admin, "other", "Passw0rd-other").await;
    let other = m.login("other", "Passw0rd-other").await;
    let r = m.post("/api/v1/checkpoints/m-1/metadata", Some(&other), sdk_metadata_body("m-1", json!({}))).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(m.get("/api/v1/checkpoints/m-1", Some(&admin)).await.body["checkpoint"]["metadata"], json!({"steps_completed": 100}));
}

/// metadata.json, model/w.bin, model/opt/state.bin, logs/events.txt under `root/uuid`.
fn write_tree(root: &Path, uuid: &str) {
    let dir = root.join(uuid);
    std::fs::create_dir_all(dir.join("model/opt")).unwrap();
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(dir.join("metadata.json"), b"{}").unwrap();
    std::fs::write(dir.join("model/w.bin"), vec![1u8; 500]).unwrap();
    std::fs::write(dir.join("model/opt/state.bin"), vec![2u8; 300]).unwrap();
    std::fs::write(dir.join("logs/events.txt"), b"events").unwrap();
}

async fn rm(m: &TestMaster, token: &str, uuids: &[&str], globs: &[&str]) -> crate::harness::Reply {
    m.post("/api/v1/checkpoints/rm", Some(token), json!({"checkpointUuids": uuids, "checkpointGlobs": globs})).await
}

async fn checkpoint(m: &TestMaster, token: &str, uuid: &str) -> Value {
    m.get(&format!("/api/v1/checkpoints/{uuid}"), Some(token)).await.body["checkpoint"].clone()
}

pub async fn remove_files_by_glob_from_a_directory(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let storage = tempfile::tempdir().unwrap();
    let shared = format!("{{type: shared_fs, host_path: {}}}", storage.path().display());
    let exp = create(m, &admin, &yaml("rm", &shared), false).await;
    let trial = seed::trial(m, exp, 1).await;
    for uuid in ["r-1", "r-2"] {
        seed::checkpoint(m, &trial, uuid, 100, Some(0.5), "STATE_COMPLETED").await;
        write_tree(storage.path(), uuid);
    }

    // Bad input first: nothing is touched.
    assert_error(&rm(m, &admin, &[], &["*"]).await, 400, "InvalidArgument");
    assert!(rm(m, &admin, &[], &["*"]).await.text.contains("checkpointUuids"));
    let r = rm(m, &admin, &["r-1"], &["model/*.bin", "/etc/*"]).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("checkpointGlobs[1]"), "{}", r.text);
    let r = rm(m, &admin, &["r-1", "../x"], &["*"]).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("checkpointUuids[1]"), "{}", r.text);
    let r = rm(m, &admin, &["r-1", "missing-one"], &["*"]).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert!(r.text.contains("missing-one"), "{}", r.text);
    m.create_user(&admin, "stranger", "Passw0rd-stranger").await;
    let stranger = m.login("stranger", "Passw0rd-stranger").await;
    assert_eq!(rm(m, &stranger, &["r-1"], &["*"]).await.status, 403);
    assert!(storage.path().join("r-1/model/w.bin").exists(), "refused requests remove nothing");

    // `*` stays in one directory, a directory pattern takes all below it.
    let r = rm(m, &admin, &["r-1"], &["model/*.bin", "logs"]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(!storage.path().join("r-1/model/w.bin").exists());
    assert!(!storage.path().join("r-1/logs").exists(), "an emptied directory goes too");
    assert!(storage.path().join("r-1/model/opt/state.bin").exists());
    let c = checkpoint(m, &admin, "r-1").await;
    assert_eq!(c["state"], "STATE_PARTIALLY_DELETED");
    assert_eq!(c["resources"], json!({"metadata.json": "2", "model/opt/state.bin": "300"}));
    assert_eq!(checkpoint(m, &admin, "r-2").await["state"], "STATE_COMPLETED", "other checkpoints are untouched");

    // No globs: only a refresh from storage.
    std::fs::remove_file(storage.path().join("r-1/metadata.json")).unwrap();
    assert_eq!(rm(m, &admin, &["r-1"], &[]).await.status, 200);
    let c = checkpoint(m, &admin, "r-1").await;
    assert_eq!(c["resources"], json!({"model/opt/state.bin": "300"}));
    assert_eq!(c["state"], "STATE_PARTIALLY_DELETED");

    // Everything gone: DELETED, and then nothing more to remove.
    let r = rm(m, &admin, &["r-1", "r-2"], &["**"]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for uuid in ["r-1", "r-2"] {
        let c = checkpoint(m, &admin, uuid).await;
        assert_eq!(c["state"], "STATE_DELETED", "{uuid}");
        assert_eq!(c["resources"], json!({}), "{uuid}");
    }
    assert!(!storage.path().join("r-1").exists() && !storage.path().join("r-2").exists(), "emptied directories go too");
    let r = rm(m, &admin, &["r-1"], &["*"]).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("r-1") && r.text.contains("STATE_DELETED"), "{}", r.text);
}

pub async fn remove_files_by_glob_from_s3(m: &TestMaster) {
    let moto = start_moto();
    let admin = m.login("admin", "").await;
    let storage =
        format!("{{type: s3, bucket: rmbucket, prefix: team, endpoint_url: \"{}\", access_key: AK, secret_key: SK}}", moto.endpoint);
    let exp = create(m, &admin, &yaml("rm-s3", &storage), false).await;
    let trial = seed::trial(m, exp, 1).await;
    seed::checkpoint(m, &trial, "s3-1", 100, Some(0.5), "STATE_COMPLETED").await;
    python(UPLOAD, &[&moto.endpoint, "rmbucket", "team", "s3-1"]);

    let r = rm(m, &admin, &["s3-1"], &["model"]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let keys = python(KEYS, &[&moto.endpoint, "rmbucket"]);
    assert_eq!(keys.lines().collect::<Vec<_>>(), ["team/s3-1/metadata.json"], "{keys}");
    let c = checkpoint(m, &admin, "s3-1").await;
    assert_eq!(c["state"], "STATE_PARTIALLY_DELETED");
    assert_eq!(c["resources"], json!({"metadata.json": "16"}));

    let r = rm(m, &admin, &["s3-1"], &["*.json"]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(python(KEYS, &[&moto.endpoint, "rmbucket"]).trim(), "");
    assert_eq!(checkpoint(m, &admin, "s3-1").await["state"], "STATE_DELETED");
}

/// A validation report at `steps` with these metrics (and its training report).
async fn validation(m: &TestMaster, trial: &TrialRecord, steps: i64, metrics: Value) {
    let report = |group: &str, avg: Map<String, Value>| NewMetricReport {
        trial_id: trial.id,
        trial_run_id: 1,
        group: group.to_owned(),
        steps_completed: steps,
        report_time: db_now(),
        avg_metrics: avg,
        batch_metrics: Vec::new(),
        searcher_metric: (group == "validation").then(|| SearcherMetric { name: "accuracy".into(), smaller_is_better: false }),
    };
    let avg = metrics.as_object().unwrap().clone();
    m.store
        .insert_metrics(&[report("training", Map::from_iter([("loss".to_owned(), json!(1.0))])), report("validation", avg)])
        .await
        .unwrap();
}

fn uuids(reply: &crate::harness::Reply) -> Vec<String> {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body["checkpoints"].as_array().unwrap().iter().map(|c| c["uuid"].as_str().unwrap().to_owned()).collect()
}

pub async fn checkpoints_sort_by_any_validation_metric(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    // The searcher metric is accuracy, larger is better.
    let exp = create(m, &admin, &yaml("sorts", "{type: shared_fs, host_path: /tmp}"), false).await;
    let t1 = seed::trial(m, exp, 1).await;
    let t2 = seed::trial(m, exp, 2).await;
    for (trial, uuid, steps, accuracy, f1) in [(&t1, "a-100", 100, 0.6, 0.3), (&t1, "a-200", 200, 0.9, 0.1), (&t2, "b-100", 100, 0.7, 0.8)]
    {
        validation(m, trial, steps, json!({"accuracy": accuracy, "f1": f1})).await;
        seed::checkpoint(m, trial, uuid, steps, Some(accuracy), "STATE_COMPLETED").await;
    }
    // No validation at its step: last whichever the order.
    seed::checkpoint(m, &t2, "b-300", 300, None, "STATE_COMPLETED").await;

    let list = |query: &str| format!("/api/v1/experiments/{exp}/checkpoints?{query}");
    assert_eq!(uuids(&m.get(&list("sortByMetric=f1&orderBy=ORDER_BY_ASC"), Some(&admin)).await), ["a-200", "a-100", "b-100", "b-300"]);
    assert_eq!(uuids(&m.get(&list("sortByMetric=f1&orderBy=ORDER_BY_DESC"), Some(&admin)).await), ["b-100", "a-100", "a-200", "b-300"]);
    assert_eq!(uuids(&m.get(&list("sortByMetric=f1"), Some(&admin)).await), ["a-200", "a-100", "b-100", "b-300"], "unspecified: ascending");
    // The searcher metric without an order: best first by smaller_is_better (false here).
    assert_eq!(uuids(&m.get(&list("sortByAttr=SORT_BY_SEARCHER_METRIC"), Some(&admin)).await), ["a-200", "b-100", "a-100", "b-300"]);
    assert_eq!(uuids(&m.get(&list("sortByMetric=accuracy"), Some(&admin)).await), ["a-200", "b-100", "a-100", "b-300"]);
    // Pages and state filters apply after the sort.
    let page = m.get(&list("sortByMetric=f1&orderBy=ORDER_BY_DESC&offset=1&limit=2"), Some(&admin)).await;
    assert_eq!(uuids(&page), ["a-100", "a-200"]);
    assert_eq!(page.body["pagination"]["total"], 4, "{}", page.text);
    assert_eq!(page.body["pagination"]["startIndex"], 1, "{}", page.text);
    let last = m.get(&list("sortByMetric=f1&orderBy=ORDER_BY_DESC&offset=-1"), Some(&admin)).await;
    assert_eq!(uuids(&last), ["b-300"]);
    // A metric nobody reported: every checkpoint, by uuid.
    assert_eq!(uuids(&m.get(&list("sortByMetric=bleu&orderBy=ORDER_BY_DESC"), Some(&admin)).await), ["a-100", "a-200", "b-100", "b-300"]);
    // The validation metrics of each listed checkpoint are those at its step.
    let listed = m.get(&list("sortByMetric=f1&orderBy=ORDER_BY_ASC&limit=1"), Some(&admin)).await;
    assert_eq!(listed.body["checkpoints"][0]["training"]["validationMetrics"]["avgMetrics"]["f1"], 0.1, "{}", listed.text);

    // A trial's checkpoints, the same way.
    let trial_list = |query: &str| format!("/api/v1/trials/{}/checkpoints?{query}", t2.id);
    assert_eq!(uuids(&m.get(&trial_list("sortByMetric=f1&orderBy=ORDER_BY_DESC"), Some(&admin)).await), ["b-100", "b-300"]);
    assert_eq!(m.get("/api/v1/trials/999999/checkpoints?sortByMetric=f1", Some(&admin)).await.status, 404);
}

pub async fn gc_policy_change_collects_at_once(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let storage = tempfile::tempdir().unwrap();
    let shared = format!("{{type: shared_fs, host_path: {}, save_trial_best: 5, save_trial_latest: 5}}", storage.path().display());
    let exp = create(m, &admin, &yaml("policy", &shared), false).await;
    let trial = seed::trial(m, exp, 1).await;
    for (uuid, steps, accuracy) in [("p-100", 100, 0.9), ("p-200", 200, 0.5), ("p-300", 300, 0.7), ("p-400", 400, 0.6)] {
        seed::checkpoint(m, &trial, uuid, steps, Some(accuracy), "STATE_COMPLETED").await;
        write_tree(storage.path(), uuid);
    }
    let path = format!("/api/v1/experiments/{exp}");
    for (field, body) in [
        ("checkpointStorage.saveTrialBest", json!({"checkpointStorage": {"saveTrialBest": -1}})),
        ("checkpointStorage.saveTrialLatest", json!({"checkpointStorage": {"saveTrialLatest": -2}})),
    ] {
        let r = m.patch(&path, Some(&admin), body).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(r.text.contains(field), "{}", r.text);
    }
    m.create_user(&admin, "bystander", "Passw0rd-bystander").await;
    let bystander = m.login("bystander", "Passw0rd-bystander").await;
    let r = m.patch(&path, Some(&bystander), json!({"checkpointStorage": {"saveTrialBest": 0}})).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(m.patch("/api/v1/experiments/999999", Some(&admin), json!({"checkpointStorage": {"saveTrialBest": 0}})).await.status, 404);

    // `det experiment set gc-policy` without --yes previews first: nothing changes.
    validation(m, &trial, 200, json!({"accuracy": 0.5})).await;
    let preview =
        m.get(&format!("/experiments/{exp}/preview_gc?save_experiment_best=0&save_trial_best=1&save_trial_latest=1"), Some(&admin)).await;
    assert_eq!(preview.status, 200, "{}", preview.text);
    assert_eq!(preview.body["metric_name"], "accuracy");
    let rows = preview.body["checkpoints"].as_array().unwrap();
    let mut previewed: Vec<&str> = rows.iter().map(|c| c["UUID"].as_str().unwrap()).collect();
    previewed.sort();
    assert_eq!(previewed, ["p-200", "p-300"]);
    let p200 = rows.iter().find(|c| c["UUID"] == "p-200").unwrap();
    assert_eq!(
        (p200["TrialID"].as_i64(), p200["StepsCompleted"].as_i64(), p200["State"].as_str()),
        (Some(i64::from(trial.id)), Some(200), Some("COMPLETED"))
    );
    assert_eq!(p200["step"]["validation"]["metrics"]["validation_metrics"]["accuracy"], 0.5, "{p200}");
    assert_eq!(p200["ValidationMetrics"]["accuracy"], 0.5);
    assert!(rows.iter().find(|c| c["UUID"] == "p-300").unwrap().get("step").is_none(), "no validation at its step");
    let bad = m.get(&format!("/experiments/{exp}/preview_gc?save_trial_best=-1"), Some(&admin)).await;
    assert_error(&bad, 400, "InvalidArgument");
    assert!(bad.text.contains("saveTrialBest"), "{}", bad.text);
    assert_eq!(m.get("/experiments/999999/preview_gc?save_trial_best=1", Some(&admin)).await.status, 404);
    assert_eq!(states_of(m, &["p-100", "p-200", "p-300", "p-400"]).await, ["STATE_COMPLETED"; 4], "a preview deletes nothing");

    // As `det experiment set gc-policy --yes` sends it: keep the best and the latest only.
    let body = json!({"id": exp, "checkpointStorage": {"saveExperimentBest": 0, "saveTrialBest": 1, "saveTrialLatest": 1}});
    let r = m.patch(&path, Some(&admin), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let config = m.get(&path, Some(&admin)).await.body["config"]["checkpoint_storage"].clone();
    assert_eq!((config["save_trial_best"].clone(), config["save_trial_latest"].clone()), (json!(1), json!(1)), "{config}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let states: Vec<String> = states_of(m, &["p-100", "p-200", "p-300", "p-400"]).await;
        if states == ["STATE_COMPLETED", "STATE_DELETED", "STATE_DELETED", "STATE_COMPLETED"] {
            break;
        }
        assert!(Instant::now() < deadline, "GC after the policy change did not settle: {states:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(storage.path().join("p-100").exists() && storage.path().join("p-400").exists());
    assert!(!storage.path().join("p-200").exists() && !storage.path().join("p-300").exists());
}

async fn states_of(m: &TestMaster, uuids: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for uuid in uuids {
        out.push(m.store.checkpoint_by_uuid(uuid).await.unwrap().state);
    }
    out
}
