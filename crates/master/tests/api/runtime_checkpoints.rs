//! Checkpoints reported and read as the harness and the SDK do.

use serde_json::{Value, json};

use crate::harness::{TestMaster, assert_error};
use crate::runtime_support::{RunningTrial, metrics_body, running_trial, task_get, task_patch, task_post};

/// What `CheckpointContext._report_checkpoint` posts.
fn report_body(t: &RunningTrial, uuid: &str, steps: i64, storage_id: &Value) -> Value {
    json!({
        "allocationId": t.allocation_id,
        "metadata": {"steps_completed": steps, "framework": "torch-2.3", "format": "pickle"},
        "resources": {"metadata.json": "64", "model/": "0", "model/state_dict.pth": "1048576"},
        "taskId": t.trial.task_id,
        "training": {},
        "uuid": uuid,
        "reportTime": "2025-03-19T10:05:01.123456+00:00",
        "state": "STATE_COMPLETED",
        "storageId": storage_id,
    })
}

pub async fn report_get_and_patch_round_trip(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let t = running_trial(m, &admin, "ckpt").await;
    let prepared = task_post(
        m,
        "/api/v1/runs/start",
        &t.token,
        json!({"runId": t.trial.id, "checkpointStorage": {"type": "shared_fs", "host_path": "/tmp"}}),
    )
    .await;
    let storage_id = prepared.body["storageId"].clone();
    let metrics = format!("/api/v1/trials/{}/metrics", t.trial.id);
    task_post(m, &metrics, &t.token, metrics_body(t.trial.id, 1, "training", 500, json!({"loss": 0.4}))).await;
    task_post(m, &metrics, &t.token, metrics_body(t.trial.id, 1, "validation", 500, json!({"validation_loss": 0.21}))).await;

    let uuid = uuid::Uuid::new_v4().to_string();
    let r = task_post(m, "/api/v1/checkpoints", &t.token, report_body(&t, &uuid, 500, &storage_id)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({}));

    for (who, reply) in [
        ("task", task_get(m, &format!("/api/v1/checkpoints/{uuid}"), &t.token).await),
        ("user", m.get(&format!("/api/v1/checkpoints/{uuid}"), Some(&admin)).await),
    ] {
        assert_eq!(reply.status, 200, "{who}: {}", reply.text);
        let c = &reply.body["checkpoint"];
        // `v1Checkpoint.from_json` indexes these directly; `_from_bindings` asserts the training ones.
        for key in ["uuid", "resources", "metadata", "training", "state"] {
            assert!(c.get(key).is_some(), "{who}: checkpoint lacks {key}: {c}");
        }
        assert_eq!(c["uuid"], uuid.as_str());
        assert_eq!(c["taskId"], t.trial.task_id.as_str());
        assert_eq!(c["allocationId"], t.allocation_id.as_str());
        assert_eq!(c["state"], "STATE_COMPLETED");
        assert_eq!(c["resources"]["model/state_dict.pth"], "1048576");
        assert_eq!(c["metadata"]["framework"], "torch-2.3");
        assert_eq!(c["storageId"], storage_id);
        assert_eq!(c["reportTime"], "2025-03-19T10:05:01.123456Z");
        let training = &c["training"];
        assert_eq!(training["trialId"], t.trial.id);
        assert_eq!(training["experimentId"], t.experiment_id);
        assert_eq!(training["experimentConfig"]["searcher"]["metric"], "validation_loss");
        assert_eq!(training["hparams"]["layers"]["hidden"], 64);
        assert_eq!(training["validationMetrics"]["avgMetrics"]["validation_loss"], 0.21);
        assert_eq!(training["trainingMetrics"]["avgMetrics"]["loss"], 0.4);
        assert_eq!(training["searcherMetric"], 0.21);
    }
    assert_eq!(m.store.trial_by_id(t.trial.id).await.unwrap().latest_checkpoint_uuid.as_deref(), Some(uuid.as_str()));

    // Deletions reported by the harness (`_report_checkpoint_deleted`): ints, not strings.
    let partial = json!({"checkpoints": [{"uuid": uuid, "resources": {"resources": {"metadata.json": 64}}}]});
    assert_eq!(task_patch(m, "/api/v1/checkpoints", &t.token, partial).await.status, 200);
    let stored = m.store.checkpoint_by_uuid(&uuid).await.unwrap();
    assert_eq!((stored.state.as_str(), stored.size), ("STATE_PARTIALLY_DELETED", 64));
    let all = json!({"checkpoints": [{"uuid": uuid, "resources": {}}]});
    assert_eq!(task_patch(m, "/api/v1/checkpoints", &t.token, all).await.status, 200);
    assert_eq!(m.store.checkpoint_by_uuid(&uuid).await.unwrap().state, "STATE_DELETED");
    let missing = json!({"checkpoints": [{"uuid": uuid::Uuid::new_v4().to_string(), "resources": {}}]});
    assert_error(&task_patch(m, "/api/v1/checkpoints", &t.token, missing).await, 404, "NotFound");

    // Bad reports.
    let mut bad = report_body(&t, "not-a-uuid", 1, &storage_id);
    assert_error(&task_post(m, "/api/v1/checkpoints", &t.token, bad.clone()).await, 400, "InvalidArgument");
    bad["uuid"] = json!(uuid::Uuid::new_v4().to_string());
    bad["metadata"] = json!({"framework": "x"});
    let r = task_post(m, "/api/v1/checkpoints", &t.token, bad.clone()).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("steps_completed"), "{}", r.text);
    bad["metadata"] = json!({"steps_completed": 1});
    bad["resources"] = json!({"a": "lots"});
    let r = task_post(m, "/api/v1/checkpoints", &t.token, bad).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("resources"), "{}", r.text);
    assert_error(&m.get(&format!("/api/v1/checkpoints/{}", uuid::Uuid::new_v4()), Some(&admin)).await, 404, "NotFound");
}
