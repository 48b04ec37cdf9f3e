//! Allocation runtime endpoints and task logs, driven as `prep_container`, the preemption
//! watcher and the log shipper do; and the confinement of allocation tokens.

use std::time::Duration;

use resolute_store::{AllocationPatch, LogFilter, db_now};
use serde_json::json;

use crate::harness::{TestMaster, assert_error};
use crate::runtime_support::{metrics_body, running_trial, task_get, task_patch, task_post};

pub async fn preemption_long_poll_and_signals(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let t = running_trial(m, &admin, "preempt").await;
    let path = format!("/api/v1/allocations/{}/signals/preemption", t.allocation_id);

    // The watcher's first, immediate check.
    let r = task_get(m, &format!("{path}?timeout_seconds=0"), &t.token).await;
    assert_eq!((r.status, &r.body), (200, &json!({"preempt": false})), "{}", r.text);

    // A 60 s long poll returns as soon as the allocation is preempted.
    let started = std::time::Instant::now();
    let long_poll = format!("{path}?timeout_seconds=60");
    let poll = task_get(m, &long_poll, &t.token);
    let preempt = async {
        // Give the poll a moment to be waiting; the assertion holds either way.
        tokio::time::sleep(Duration::from_millis(200)).await;
        m.cluster.signals().preempt(&t.allocation_id);
    };
    let (r, ()) = tokio::join!(poll, preempt);
    assert_eq!((r.status, &r.body), (200, &json!({"preempt": true})), "{}", r.text);
    assert!(started.elapsed() < Duration::from_secs(10), "long poll took {:?}", started.elapsed());
    // The bindings' camelCase spelling works too.
    assert_eq!(task_get(m, &format!("{path}?timeoutSeconds=5"), &t.token).await.body["preempt"], true);

    let ack = format!("/api/v1/allocations/{}/signals/ack_preemption", t.allocation_id);
    assert_eq!(task_post(m, &ack, &t.token, json!({"allocationId": t.allocation_id})).await.status, 200);
    let pending = format!("/api/v1/allocations/{}/signals/pending_preemption", t.allocation_id);
    assert_eq!(task_post(m, &pending, &t.token, json!({})).await.status, 200);
    assert_error(&task_get(m, &format!("{path}?timeout_seconds=soon"), &t.token).await, 400, "InvalidArgument");
}

pub async fn prep_container_calls_and_task_logs(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let t = running_trial(m, &admin, "prep").await;
    let alloc = &t.allocation_id;

    let context = task_get(m, &format!("/api/v1/tasks/{}/context_directory", t.trial.task_id), &t.token).await;
    assert_eq!(context.status, 200, "{}", context.text);
    let model_def = m.get(&format!("/api/v1/experiments/{}/model_def", t.experiment_id), Some(&admin)).await;
    assert_eq!(context.body["b64Tgz"], model_def.body["b64Tgz"]);

    let accel = json!({"allocationId": alloc, "acceleratorData": {"containerId": "c-1", "acceleratorType": "cpu", "acceleratorUuids": [],
        "allocationId": alloc, "nodeName": "agent-1", "taskId": t.trial.task_id}});
    assert_eq!(task_post(m, &format!("/api/v1/allocations/{alloc}/acceleratorData"), &t.token, accel).await.status, 200);
    let proxy = json!({"allocationId": alloc, "proxyAddress": "10.0.0.5"});
    assert_eq!(task_post(m, &format!("/api/v1/allocations/{alloc}/proxy_address"), &t.token, proxy).await.status, 200);

    let r = task_get(m, &format!("/api/v1/allocations/{alloc}/resources/c-1/rendezvous"), &t.token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({"rendezvousInfo": {"addresses": ["127.0.0.1:1734"], "rank": 0, "slots": [1]}}));

    let gather = json!({"allocationId": alloc, "requestUuid": "r-1", "numPeers": 1, "data": {"rank": 0, "rendezvous_ip": "10.0.0.5"}});
    let r = task_post(m, &format!("/api/v1/allocations/{alloc}/all_gather"), &t.token, gather).await;
    assert_eq!(r.body, json!({"data": [{"rank": 0, "rendezvous_ip": "10.0.0.5"}]}), "{}", r.text);
    let two = json!({"allocationId": alloc, "numPeers": 2, "data": {}});
    assert_error(&task_post(m, &format!("/api/v1/allocations/{alloc}/all_gather"), &t.token, two).await, 501, "Unimplemented");

    assert_eq!(task_post(m, &format!("/api/v1/allocations/{alloc}/ready"), &t.token, json!({"allocationId": alloc})).await.status, 200);
    assert!(m.store.allocation_by_id(alloc).await.unwrap().is_ready);
    assert_eq!(task_post(m, &format!("/api/v1/allocations/{alloc}/waiting"), &t.token, json!({})).await.status, 200);

    // ship_logs.py sends snake_case; the bindings camelCase.
    let logs = json!({"logs": [
        {"task_id": t.trial.task_id, "allocation_id": alloc, "agent_id": "agent-1", "container_id": "c-1", "rank_id": 0,
         "timestamp": "2025-03-19T10:01:02.123456+00:00", "level": "LOG_LEVEL_INFO", "log": "epoch 1 loss 0.3\n", "source": "task", "stdtype": "stdout"},
        {"taskId": t.trial.task_id, "allocationId": alloc, "timestamp": "2025-03-19T10:01:03", "log": "warn\n", "stdtype": "stderr", "level": null},
    ]});
    let r = task_post(m, "/api/v1/task/logs", &t.token, logs).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let stored = m.store.task_logs(&t.trial.task_id, &LogFilter::default()).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(
        (stored[0].rank_id, stored[0].level.as_deref(), stored[0].log.as_str()),
        (Some(0), Some("LOG_LEVEL_INFO"), "epoch 1 loss 0.3\n")
    );
    assert_eq!(stored[0].timestamp.to_rfc3339(), "2025-03-19T10:01:02.123456+00:00");
    assert_eq!(stored[1].stdtype.as_deref(), Some("stderr"));

    let bad_level = json!({"logs": [{"task_id": t.trial.task_id, "log": "x", "level": "LOUD"}]});
    let r = task_post(m, "/api/v1/task/logs", &t.token, bad_level).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("logs[0].level"), "{}", r.text);
    let bad_time = json!({"logs": [{"task_id": t.trial.task_id, "log": "x", "timestamp": "noon"}]});
    assert_error(&task_post(m, "/api/v1/task/logs", &t.token, bad_time).await, 400, "InvalidArgument");
    let no_log = json!({"logs": [{"task_id": t.trial.task_id}]});
    let r = task_post(m, "/api/v1/task/logs", &t.token, no_log).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("log"), "{}", r.text);
}

pub async fn task_tokens_are_confined(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let a = running_trial(m, &admin, "mine").await;
    let b = running_trial(m, &admin, "theirs").await;
    let (bt, ba) = (b.trial.id, &b.allocation_id);

    let forbidden = [
        task_post(m, &format!("/api/v1/trials/{bt}/metrics"), &a.token, metrics_body(bt, 1, "training", 1, json!({"loss": 1}))).await,
        task_post(m, &format!("/api/v1/trials/{bt}/progress"), &a.token, json!({"progress": 0.5})).await,
        task_post(m, &format!("/api/v1/trials/{bt}/early_exit"), &a.token, json!({"reason": "EXITED_REASON_INVALID_HP"})).await,
        task_post(m, &format!("/api/v1/trials/{bt}/runner/metadata"), &a.token, json!({"state": "x"})).await,
        task_post(m, "/api/v1/runs/start", &a.token, json!({"runId": bt})).await,
        task_get(m, &format!("/api/v1/experiments/{}/searcher/best_searcher_validation_metric", b.experiment_id), &a.token).await,
        task_get(m, &format!("/api/v1/tasks/{}/context_directory", b.trial.task_id), &a.token).await,
        task_get(m, &format!("/api/v1/allocations/{ba}/signals/preemption?timeout_seconds=0"), &a.token).await,
        task_post(m, &format!("/api/v1/allocations/{ba}/signals/ack_preemption"), &a.token, json!({})).await,
        task_post(m, &format!("/api/v1/allocations/{ba}/ready"), &a.token, json!({})).await,
        task_get(m, &format!("/api/v1/allocations/{ba}/resources/c/rendezvous"), &a.token).await,
        task_post(m, &format!("/api/v1/allocations/{ba}/all_gather"), &a.token, json!({"data": {}})).await,
        task_post(m, "/api/v1/task/logs", &a.token, json!({"logs": [{"task_id": b.trial.task_id, "log": "forged\n"}]})).await,
        task_post(
            m,
            "/api/v1/task/logs",
            &a.token,
            json!({"logs": [{"task_id": a.trial.task_id, "allocation_id": ba, "log": "forged\n"}]}),
        )
        .await,
    ];
    for (i, r) in forbidden.iter().enumerate() {
        assert_error(r, 403, "PermissionDenied");
        assert!(r.text.contains("allocation"), "case {i}: {}", r.text);
    }
    assert!(m.store.task_logs(&b.trial.task_id, &LogFilter::default()).await.unwrap().is_empty());

    // Checkpoints: B's own report, then A may neither read it (another experiment) nor patch it,
    // nor report one in B's name.
    let uuid = uuid::Uuid::new_v4().to_string();
    let body = json!({"uuid": uuid, "taskId": b.trial.task_id, "allocationId": ba, "state": "STATE_COMPLETED",
        "resources": {}, "metadata": {"steps_completed": 1}, "training": {}});
    assert_eq!(task_post(m, "/api/v1/checkpoints", &b.token, body.clone()).await.status, 200);
    assert_error(&task_get(m, &format!("/api/v1/checkpoints/{uuid}"), &a.token).await, 403, "PermissionDenied");
    let patch = json!({"checkpoints": [{"uuid": uuid, "resources": {}}]});
    assert_error(&task_patch(m, "/api/v1/checkpoints", &a.token, patch).await, 403, "PermissionDenied");
    let mut forged = body;
    forged["uuid"] = json!(uuid::Uuid::new_v4().to_string());
    assert_error(&task_post(m, "/api/v1/checkpoints", &a.token, forged.clone()).await, 403, "PermissionDenied");
    forged["taskId"] = json!(a.trial.task_id);
    assert_error(&task_post(m, "/api/v1/checkpoints", &a.token, forged).await, 403, "PermissionDenied");

    // A's own calls still work, and B's data is untouched.
    assert_eq!(task_post(m, &format!("/api/v1/trials/{}/progress", a.trial.id), &a.token, json!({"progress": 0.5})).await.status, 200);
    assert_eq!(m.store.trial_by_id(bt).await.unwrap().progress, None);

    // Unknown, malformed and ended-allocation tokens are 401.
    assert_error(&task_get(m, &format!("/api/v1/tasks/{}/context_directory", a.trial.task_id), "garbage").await, 401, "Unauthenticated");
    let empty = m
        .send(
            m.http
                .get(format!("{}/api/v1/tasks/{}/context_directory", m.base, a.trial.task_id))
                .header("Grpc-Metadata-x-allocation-token", "Bearer "),
        )
        .await;
    assert_error(&empty, 401, "Unauthenticated");
    assert_error(&m.get(&format!("/api/v1/tasks/{}/context_directory", a.trial.task_id), None).await, 401, "Unauthenticated");
    m.store
        .update_allocation(
            &a.allocation_id,
            &AllocationPatch { end_time: Some(db_now()), state: Some("STATE_TERMINATED".into()), ..Default::default() },
        )
        .await
        .unwrap();
    let ended = task_get(m, &format!("/api/v1/tasks/{}/context_directory", a.trial.task_id), &a.token).await;
    assert_error(&ended, 401, "Unauthenticated");
    assert!(ended.text.contains("ended"), "{}", ended.text);
}

/// `TrainContext._get_last_validation` reads `GET /api/v1/trials/{id}` with the allocation token.
pub async fn task_token_reads_its_own_trial(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let a = running_trial(m, &admin, "own").await;
    let b = running_trial(m, &admin, "other").await;
    let own = task_get(m, &format!("/api/v1/trials/{}", a.trial.id), &a.token).await;
    assert_eq!(own.status, 200, "{}", own.text);
    assert_eq!(own.body["trial"]["id"], a.trial.id);
    assert_error(&task_get(m, &format!("/api/v1/trials/{}", b.trial.id), &a.token).await, 403, "PermissionDenied");
    assert_eq!(m.get(&format!("/api/v1/trials/{}", b.trial.id), Some(&admin)).await.status, 200);
}
