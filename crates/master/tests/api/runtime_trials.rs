//! Trial runtime endpoints driven as the upstream harness drives them: metric reports (with
//! restart rollback and stale runs), the best validation, progress, early exit, runner state,
//! run preparation, kill.

use serde_json::json;

use crate::harness::{TestMaster, assert_error};
use crate::runtime_support::{metrics_body, running_trial, task_get, task_post, task_post_raw};

pub async fn metrics_are_stored_rolled_back_and_searched(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let t = running_trial(m, &admin, "metrics").await;
    let path = format!("/api/v1/trials/{}/metrics", t.trial.id);

    // No validation yet: the harness reads 404 as "none".
    let best_path = format!("/api/v1/experiments/{}/searcher/best_searcher_validation_metric", t.experiment_id);
    assert_error(&task_get(m, &best_path, &t.token).await, 404, "NotFound");

    for (steps, loss) in [(100, json!(0.9)), (200, json!("NaN"))] {
        let r = task_post(m, &path, &t.token, metrics_body(t.trial.id, 1, "training", steps, json!({"loss": loss}))).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body, json!({}));
    }
    let r =
        task_post(m, &path, &t.token, metrics_body(t.trial.id, 1, "validation", 200, json!({"validation_loss": 0.5, "acc": "Infinity"})))
            .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let best = task_get(m, &best_path, &t.token).await;
    assert_eq!(best.status, 200, "{}", best.text);
    assert_eq!(best.body["metric"], 0.5);

    let trial = m.get(&format!("/api/v1/trials/{}", t.trial.id), Some(&admin)).await;
    assert_eq!(trial.status, 200, "{}", trial.text);
    assert_eq!(trial.body["trial"]["latestValidation"]["totalBatches"], 200);
    assert_eq!(trial.body["trial"]["searcherMetricValue"], 0.5);
    assert_eq!(trial.body["trial"]["totalBatchesProcessed"], 200);

    // The legacy route and a better validation.
    let legacy = format!("/api/v1/trials/{}/validation_metrics", t.trial.id);
    let body = metrics_body(t.trial.id, 1, "", 300, json!({"validation_loss": 0.3}))["metrics"].clone();
    let r = task_post(m, &legacy, &t.token, body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(task_get(m, &best_path, &t.token).await.body["metric"], 0.3);
    // A user session reads it too.
    assert_eq!(m.get(&best_path, Some(&admin)).await.body["metric"], 0.3);

    // A report from a run that is no longer current is refused.
    let stale = task_post(m, &path, &t.token, metrics_body(t.trial.id, 2, "training", 300, json!({"loss": 0.1}))).await;
    assert_error(&stale, 400, "InvalidArgument");
    assert!(stale.body["error"]["error"].as_str().unwrap().contains("trialRunId"), "{}", stale.text);

    // Restart from the checkpoint at 100: run 2's report at 100 archives run 1's later training.
    let restarted = m.store.record_trial_restart(t.trial.id).await.unwrap();
    assert_eq!(restarted.run_id, 2);
    let r = task_post(m, &path, &t.token, metrics_body(t.trial.id, 2, "training", 100, json!({"loss": 0.8}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let live = m.store.metrics_for_trial(t.trial.id, Some("training"), false).await.unwrap();
    assert_eq!(live.iter().map(|r| (r.trial_run_id, r.steps_completed)).collect::<Vec<_>>(), [(1, 100), (2, 100)]);
    let all = m.store.metrics_for_trial(t.trial.id, Some("training"), true).await.unwrap();
    assert!(all.iter().any(|r| r.archived && r.steps_completed == 200 && r.avg_metrics["loss"] == "NaN"), "{all:?}");

    // Bad bodies name the field.
    let mismatch = task_post(m, &path, &t.token, metrics_body(t.trial.id + 1000, 2, "training", 1, json!({}))).await;
    assert_error(&mismatch, 400, "InvalidArgument");
    assert!(mismatch.text.contains("trialId"), "{}", mismatch.text);
    let not_object = task_post(m, &path, &t.token, metrics_body(t.trial.id, 2, "training", 1, json!([1, 2]))).await;
    assert_error(&not_object, 400, "InvalidArgument");
    assert!(not_object.text.contains("avgMetrics"), "{}", not_object.text);
    let missing = task_post(m, &path, &t.token, json!({"group": "training", "metrics": {"trialId": t.trial.id, "trialRunId": 2}})).await;
    assert_error(&missing, 400, "InvalidArgument");
    assert!(missing.text.contains("metrics"), "{}", missing.text);
    let no_group = task_post(m, &path, &t.token, metrics_body(t.trial.id, 2, " ", 1, json!({}))).await;
    assert_error(&no_group, 400, "InvalidArgument");
    let bare_nan = task_post_raw(
        m,
        &path,
        &t.token,
        r#"{"group":"training","metrics":{"trialId":1,"trialRunId":2,"metrics":{"avgMetrics":{"x":NaN}}}}"#,
    )
    .await;
    assert_error(&bare_nan, 400, "InvalidArgument");
}

pub async fn progress_early_exit_runner_state_and_kill(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let t = running_trial(m, &admin, "progress").await;
    let id = t.trial.id;

    // The harness posts `det.util.json_encode({"progress": p, "is_raw": True})`.
    let r = task_post_raw(m, &format!("/api/v1/trials/{id}/progress"), &t.token, r#"{"progress": 0.25, "is_raw": true}"#).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(m.store.trial_by_id(id).await.unwrap().progress, Some(0.25));
    let r = task_post_raw(m, &format!("/api/v1/trials/{id}/progress"), &t.token, "0.5").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(m.store.trial_by_id(id).await.unwrap().progress, Some(0.5));
    assert_error(&task_post(m, &format!("/api/v1/trials/{id}/progress"), &t.token, json!({"progress": 1.5})).await, 400, "InvalidArgument");

    let r = task_post(m, &format!("/api/v1/trials/{id}/runner/metadata"), &t.token, json!({"state": "validating"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(m.store.trial_by_id(id).await.unwrap().runner_state, "validating");
    let r = task_post(m, &format!("/api/v1/trials/{id}/runner/metadata"), &t.token, json!({"metadata": {"state": "training"}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(m.store.trial_by_id(id).await.unwrap().runner_state, "training");

    let exit = format!("/api/v1/trials/{id}/early_exit");
    assert_eq!(task_post(m, &exit, &t.token, json!({"reason": "EXITED_REASON_INVALID_HP"})).await.status, 200);
    // Not a proto value: upstream answers 400 and the harness ignores it.
    assert_error(&task_post(m, &exit, &t.token, json!({"reason": "EXITED_REASON_USER_REQUESTED_STOP"})).await, 400, "InvalidArgument");

    // `core.init` prepares the run; equal storage gives an equal id.
    let storage = json!({"type": "shared_fs", "host_path": "/tmp/ckpts", "storage_path": "x"});
    let a = task_post(m, "/api/v1/runs/start", &t.token, json!({"runId": id, "checkpointStorage": storage})).await;
    assert_eq!(a.status, 200, "{}", a.text);
    let b = task_post(
        m,
        "/api/v1/runs/start",
        &t.token,
        json!({"runId": id, "checkpointStorage": {"storage_path": "x", "host_path": "/tmp/ckpts", "type": "shared_fs"}}),
    )
    .await;
    assert!(a.body["storageId"].as_i64().unwrap() > 0);
    assert_eq!(a.body["storageId"], b.body["storageId"]);
    let default = task_post(m, "/api/v1/runs/start", &t.token, json!({"runId": id})).await;
    assert_eq!(default.status, 200, "{}", default.text);

    // Kill needs a user session: the owner or an admin.
    assert_error(&task_post(m, &format!("/api/v1/trials/{id}/kill"), &t.token, json!({})).await, 401, "Unauthenticated");
    m.create_user(&admin, "mallory", "Mallory1").await;
    let mallory = m.login("mallory", "Mallory1").await;
    assert_error(&m.post(&format!("/api/v1/trials/{id}/kill"), Some(&mallory), json!({})).await, 403, "PermissionDenied");
    // Another user may read but not report.
    let r = m.post(&format!("/api/v1/trials/{id}/progress"), Some(&mallory), json!({"progress": 0.1})).await;
    assert_error(&r, 403, "PermissionDenied");
    assert_eq!(m.post(&format!("/api/v1/trials/{id}/kill"), Some(&admin), json!({})).await.status, 200);
    assert_error(&m.post("/api/v1/trials/999999/kill", Some(&admin), json!({})).await, 404, "NotFound");
}
