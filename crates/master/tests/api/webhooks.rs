//! Webhooks end to end: the CRUD calls of the upstream bindings with their permissions and 400s,
//! and delivery to a receiver on loopback — an experiment reaching COMPLETED (default and Slack
//! shapes, signed), a task-log pattern (once per task), experiment-selected webhooks, and a
//! master restart between the state change and the delivery (the event is delivered after the
//! restart, exactly once in that run: delivery is at-least-once, and nothing was sent before).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use resolute_store::WebhookEventStatus;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::cluster_loop::FakeAgent;
use crate::harness::{TestMaster, assert_error};

/// What the receiver got: path, signature headers, body.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub timestamp: String,
    pub signature: String,
    pub body: Vec<u8>,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A webhook receiver on loopback: records every POST and answers `status`.
pub struct Receiver {
    pub addr: SocketAddr,
    pub got: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), StatusCode::OK).await
    }

    pub async fn start_on(addr: SocketAddr, status: StatusCode) -> Receiver {
        let got: Arc<Mutex<Vec<Received>>> = Default::default();
        let sink = got.clone();
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri, headers: HeaderMap, body: axum::body::Bytes| {
            let sink = sink.clone();
            async move {
                let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
                sink.lock().unwrap().push(Received {
                    path: uri.path().to_owned(),
                    timestamp: header("x-determined-ai-signature-timestamp"),
                    signature: header("x-determined-ai-signature"),
                    body: body.to_vec(),
                });
                status
            }
        });
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver { addr, got, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Polls until `n` requests arrived at `path` (deadline 15 s).
    pub async fn wait_for(&self, path: &str, n: usize) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let at: Vec<Received> = self.received().into_iter().filter(|r| r.path == path).collect();
            if at.len() >= n {
                return at;
            }
            assert!(tokio::time::Instant::now() < deadline, "{path} got {} of {n} requests: {at:?}", at.len());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops serving and closes the listener (its port refuses connections afterwards).
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

fn verify_signature(key: &str, r: &Received) {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(format!("{},", r.timestamp).as_bytes());
    mac.update(&r.body);
    assert_eq!(r.signature, hex::encode(mac.finalize().into_bytes()), "signature of {}", r.path);
    let ts: i64 = r.timestamp.parse().unwrap();
    assert!((chrono::Utc::now().timestamp() - ts).abs() < 120);
}

fn hook(name: &str, url: &str, kind: &str, triggers: Value) -> Value {
    json!({"name": name, "url": url, "webhookType": kind, "mode": "WEBHOOK_MODE_WORKSPACE", "triggers": triggers})
}

fn on_state(state: &str) -> Value {
    json!([{"triggerType": "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE", "condition": {"state": state}}])
}

async fn create_hook(m: &TestMaster, token: &str, body: Value) -> Value {
    let r = m.post("/api/v1/webhooks", Some(token), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["webhook"].clone()
}

async fn wait_state(m: &TestMaster, token: &str, id: i64, want: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let r = m.get(&format!("/api/v1/experiments/{id}"), Some(token)).await;
        if r.body["experiment"]["state"] == want {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "experiment {id} never became {want}: {}", r.text);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const CONFIG: &str = "name: hooked\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n\
                      hyperparameters: {lr: 0.1}\nintegrations: {webhooks: {webhook_name: [chosen]}}\n";

async fn run_experiment(m: &TestMaster, token: &str, agent: &mut FakeAgent, logs: &[&str]) -> (i64, String) {
    let r = m.post("/api/v1/experiments", Some(token), json!({"config": CONFIG, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["experiment"]["id"].as_i64().unwrap();
    let start = agent.next_start().await;
    for line in logs {
        agent.log(&start, line).await;
    }
    agent.exit(&start, 0).await;
    wait_state(m, token, id, "STATE_COMPLETED").await;
    (id, start.task_id.clone())
}

/// Posts a webhook that must be refused with a 400 whose message starts with `field`.
async fn refused(m: &TestMaster, admin: &str, body: Value, field: &str) -> String {
    let r = m.post("/api/v1/webhooks", Some(admin), body).await;
    assert_error(&r, 400, "InvalidArgument");
    let message = r.body["error"]["error"].as_str().unwrap().to_owned();
    assert!(message.starts_with(field), "{message} should name {field}");
    message
}

pub async fn crud_permissions_and_clear_errors(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    m.create_user(&admin, "alice", "pw-Alice-1").await;
    let alice = m.login("alice", "pw-Alice-1").await;
    let rx = Receiver::start().await;

    let created = create_hook(m, &admin, hook("a", &rx.url("/a"), "WEBHOOK_TYPE_DEFAULT", on_state("COMPLETED"))).await;
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["name"], "a");
    assert_eq!(created["webhookType"], "WEBHOOK_TYPE_DEFAULT");
    assert_eq!(created["mode"], "WEBHOOK_MODE_WORKSPACE");
    assert_eq!(created["triggers"][0]["triggerType"], "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE");
    assert_eq!(created["triggers"][0]["condition"], json!({"state": "COMPLETED"}));
    assert_eq!(created["triggers"][0]["webhookId"], id);
    assert!(created.get("workspaceId").is_none(), "a cluster-wide webhook: {created}");
    let in_ws = create_hook(
        m,
        &admin,
        json!({"name": "b", "url": rx.url("/b"), "webhookType": "WEBHOOK_TYPE_SLACK", "workspaceId": 1,
            "triggers": [{"triggerType": "TRIGGER_TYPE_TASK_LOG", "condition": {"regex": "OOM|out of memory"}}]}),
    )
    .await;
    assert_eq!((in_ws["workspaceId"].as_i64(), &in_ws["mode"]), (Some(1), &json!("WEBHOOK_MODE_WORKSPACE")));

    let list = m.get("/api/v1/webhooks", Some(&admin)).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.body["webhooks"].as_array().unwrap().len(), 2);
    assert_eq!(list.body["webhooks"][0], created);

    // Only the URL can change.
    let r = m.patch(&format!("/api/v1/webhooks/{id}"), Some(&admin), json!({"url": rx.url("/a2")})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let list = m.get("/api/v1/webhooks", Some(&admin)).await;
    assert_eq!(list.body["webhooks"][0]["url"], rx.url("/a2"));
    assert_error(&m.patch(&format!("/api/v1/webhooks/{id}"), Some(&admin), json!({"url": "ftp://x"})).await, 400, "InvalidArgument");

    // The test event: upstream's test payload, signed.
    let r = m.post(&format!("/api/v1/webhooks/{id}/test"), Some(&admin), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({"completed": true}));
    let got = rx.wait_for("/a2", 1).await;
    let body = got[0].json();
    assert_eq!(
        (&body["event_type"], &body["condition"], &body["event_data"]),
        (&json!("EXPERIMENT_STATE_CHANGE"), &json!({"state": "COMPLETED"}), &json!({"data": "test"}))
    );
    assert_eq!(got[0].signature.len(), 64);
    let r = m.post(&format!("/api/v1/webhooks/{}/test", in_ws["id"]), Some(&admin), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        rx.wait_for("/b", 1).await[0].json(),
        json!({"blocks": [{"type": "section", "text": {"type": "plain_text", "text": "test"}}]})
    );

    // Not an admin (and not the workspace's owner): refused; the list hides workspace webhooks.
    assert_error(
        &m.post("/api/v1/webhooks", Some(&alice), hook("c", &rx.url("/c"), "WEBHOOK_TYPE_DEFAULT", on_state("ERROR"))).await,
        403,
        "PermissionDenied",
    );
    assert_error(&m.delete(&format!("/api/v1/webhooks/{id}"), Some(&alice)).await, 403, "PermissionDenied");
    assert_error(&m.patch(&format!("/api/v1/webhooks/{id}"), Some(&alice), json!({"url": rx.url("/x")})).await, 403, "PermissionDenied");
    assert_error(&m.post(&format!("/api/v1/webhooks/{id}/test"), Some(&alice), json!({})).await, 403, "PermissionDenied");
    let seen = m.get("/api/v1/webhooks", Some(&alice)).await;
    assert_eq!(seen.status, 200, "{}", seen.text);
    assert_eq!(seen.body["webhooks"].as_array().unwrap().iter().map(|w| w["name"].clone()).collect::<Vec<_>>(), [json!("a")]);
    assert_error(&m.get("/api/v1/webhooks", None).await, 401, "Unauthenticated");

    // Every refusal names the field.
    refused(m, &admin, hook("x", "not a url", "WEBHOOK_TYPE_DEFAULT", on_state("COMPLETED")), "url").await;
    refused(m, &admin, hook("x", "", "WEBHOOK_TYPE_DEFAULT", on_state("COMPLETED")), "url").await;
    refused(m, &admin, hook("", &rx.url("/x"), "WEBHOOK_TYPE_DEFAULT", on_state("COMPLETED")), "name").await;
    refused(m, &admin, hook("x", &rx.url("/x"), "WEBHOOK_TYPE_TEAMS", on_state("COMPLETED")), "webhookType").await;
    refused(m, &admin, hook("x", &rx.url("/x"), "WEBHOOK_TYPE_DEFAULT", json!([])), "triggers").await;
    let m1 = refused(
        m,
        &admin,
        hook("x", &rx.url("/x"), "WEBHOOK_TYPE_DEFAULT", json!([{"triggerType": "TRIGGER_TYPE_SOMETIMES", "condition": {}}])),
        "triggers[0].triggerType",
    )
    .await;
    assert!(m1.contains("TRIGGER_TYPE_SOMETIMES"), "{m1}");
    refused(
        m,
        &admin,
        hook("x", &rx.url("/x"), "WEBHOOK_TYPE_DEFAULT", json!([{"triggerType": "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE"}])),
        "triggers[0].condition",
    )
    .await;
    let m2 =
        refused(m, &admin, hook("x", &rx.url("/x"), "WEBHOOK_TYPE_DEFAULT", on_state("FINISHED")), "triggers[0].condition.state").await;
    assert!(m2.contains("COMPLETED"), "lists the states: {m2}");
    refused(
        m,
        &admin,
        hook(
            "x",
            &rx.url("/x"),
            "WEBHOOK_TYPE_DEFAULT",
            json!([{"triggerType": "TRIGGER_TYPE_TASK_LOG", "condition": {"regex": "(unclosed"}}]),
        ),
        "triggers[0].condition.regex",
    )
    .await;
    let mut elsewhere = hook("x", &rx.url("/x"), "WEBHOOK_TYPE_DEFAULT", on_state("COMPLETED"));
    elsewhere["workspaceId"] = json!(4242);
    refused(m, &admin, elsewhere, "workspaceId").await;
    assert_eq!(m.get("/api/v1/webhooks", Some(&admin)).await.body["webhooks"].as_array().unwrap().len(), 2, "nothing half-created");

    // Unknown ids and a receiver that refuses the test.
    assert_error(&m.delete("/api/v1/webhooks/4242", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.delete("/api/v1/webhooks/abc", Some(&admin)).await, 400, "InvalidArgument");
    let refusing = Receiver::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), StatusCode::FORBIDDEN).await;
    let r = m.patch(&format!("/api/v1/webhooks/{id}"), Some(&admin), json!({"url": refusing.url("/no")})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = m.post(&format!("/api/v1/webhooks/{id}/test"), Some(&admin), json!({})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("403"), "{}", r.text);

    let r = m.delete(&format!("/api/v1/webhooks/{id}"), Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let list = m.get("/api/v1/webhooks", Some(&admin)).await;
    assert_eq!(list.body["webhooks"].as_array().unwrap().len(), 1);
    rx.stop().await;
    refusing.stop().await;
}

pub async fn completed_experiment_and_log_pattern_are_delivered(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let token = m.login("determined", "").await;
    let rx = Receiver::start().await;
    create_hook(m, &admin, hook("default", &rx.url("/default"), "WEBHOOK_TYPE_DEFAULT", on_state("COMPLETED"))).await;
    create_hook(m, &admin, hook("slack", &rx.url("/slack"), "WEBHOOK_TYPE_SLACK", on_state("COMPLETED"))).await;
    create_hook(m, &admin, hook("errors-only", &rx.url("/errors"), "WEBHOOK_TYPE_DEFAULT", on_state("ERROR"))).await;
    let logs = json!([{"triggerType": "TRIGGER_TYPE_TASK_LOG", "condition": {"regex": "CUDA out of memory"}}]);
    create_hook(m, &admin, hook("oom", &rx.url("/oom"), "WEBHOOK_TYPE_DEFAULT", logs)).await;
    let mut chosen = hook("chosen", &rx.url("/chosen"), "WEBHOOK_TYPE_DEFAULT", on_state("COMPLETED"));
    chosen["mode"] = json!("WEBHOOK_MODE_SPECIFIC");
    create_hook(m, &admin, chosen).await;
    let mut other = hook("not-chosen", &rx.url("/not-chosen"), "WEBHOOK_TYPE_DEFAULT", on_state("COMPLETED"));
    other["mode"] = json!("WEBHOOK_MODE_SPECIFIC");
    let other = create_hook(m, &admin, other).await;

    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let lines = ["step 1", "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB", "CUDA out of memory again"];
    let (id, task_id) = run_experiment(m, &token, &mut agent, &lines).await;

    let default = rx.wait_for("/default", 1).await;
    let body = default[0].json();
    assert_eq!(body["event_type"], "EXPERIMENT_STATE_CHANGE");
    assert_eq!(body["condition"], json!({"state": "COMPLETED"}));
    assert_eq!(body["event_id"].as_str().unwrap().len(), 36);
    assert!(body["timestamp"].as_i64().unwrap() > 1_600_000_000);
    let exp = &body["event_data"]["experiment"];
    assert_eq!((exp["id"].as_i64(), &exp["state"], &exp["name"]), (Some(id), &json!("COMPLETED"), &json!("hooked")));
    assert_eq!((&exp["resource_pool"], &exp["slots_per_trial"]), (&json!("default"), &json!(1)));
    assert_eq!((&exp["workspace"], &exp["project"]), (&json!("Uncategorized"), &json!("Uncategorized")));
    assert!(exp["duration"].as_i64().unwrap() >= 0);
    let key = m.store.webhook_signing_key("unused").await.unwrap();
    verify_signature(&key, &default[0]);

    let slack = rx.wait_for("/slack", 1).await[0].json();
    assert_eq!(slack["blocks"][0]["text"], json!({"type": "plain_text", "text": "Your experiment completed successfully 🎉"}));
    assert_eq!(slack["attachments"][0]["color"], "#13B670");
    assert_eq!(slack["attachments"][0]["blocks"][0]["text"]["text"], format!("✅ hooked (#{id})"));
    assert_eq!(slack["attachments"][0]["blocks"][0]["fields"][0]["text"], "*Status*: Completed");

    // The log pattern fired once for the task, with the first matching line.
    let oom = rx.wait_for("/oom", 1).await;
    let body = oom[0].json();
    assert_eq!(body["event_type"], "TASK_LOG");
    assert_eq!(body["condition"], json!({"regex": "CUDA out of memory"}));
    assert_eq!(
        body["event_data"]["task_log"],
        json!({"task_id": task_id, "node_name": "agent-1", "triggering_log": "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"})
    );
    verify_signature(&key, &oom[0]);

    // The experiment names "chosen" in integrations.webhooks: it gets the event, "not-chosen" is skipped.
    rx.wait_for("/chosen", 1).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let events = m.store.webhook_events(i32::try_from(other["id"].as_i64().unwrap()).unwrap()).await.unwrap();
        if events.iter().all(|e| e.status == WebhookEventStatus::Skipped) && !events.is_empty() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "not-chosen's event was not skipped: {events:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A second experiment fires the log webhook again (a new task); nothing went to the others.
    let (_, second_task) = run_experiment(m, &token, &mut agent, &["CUDA out of memory"]).await;
    let oom = rx.wait_for("/oom", 2).await;
    assert_eq!(oom[1].json()["event_data"]["task_log"]["task_id"], second_task);
    rx.wait_for("/default", 2).await;
    let received = rx.received();
    let count = |p: &str| received.iter().filter(|r| r.path == p).count();
    assert_eq!((count("/oom"), count("/errors"), count("/not-chosen")), (2, 0, 0), "{received:?}");
    rx.stop().await;
}

pub async fn restart_between_state_change_and_delivery_loses_nothing(m: TestMaster) {
    let admin = m.login("admin", "").await;
    let token = m.login("determined", "").await;
    // The receiver is down: its port is taken, then released.
    let placeholder = Receiver::start().await;
    let addr = placeholder.addr;
    placeholder.stop().await;
    let url = format!("http://{addr}/down-then-up");
    create_hook(&m, &admin, hook("durable", &url, "WEBHOOK_TYPE_DEFAULT", on_state("COMPLETED"))).await;
    let mut agent = FakeAgent::connect(&m, "agent-1", 1).await;
    let (id, _) = run_experiment(&m, &token, &mut agent, &[]).await;

    // The event is recorded with the state change; the first attempt fails (connection refused).
    let webhook_id = m.store.list_webhooks().await.unwrap()[0].id;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let event = loop {
        let events = m.store.webhook_events(webhook_id).await.unwrap();
        if let Some(e) = events.first().filter(|e| e.attempts >= 1) {
            break e.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "no failed attempt recorded: {events:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(event.status, WebhookEventStatus::Pending, "{event:?}");
    assert!(event.last_error.as_deref().unwrap_or_default().contains("request to the webhook failed"), "{event:?}");
    drop(agent);

    let m = m.restart().await;
    let rx = Receiver::start_on(addr, StatusCode::OK).await;
    let got = rx.wait_for("/down-then-up", 1).await;
    let body = got[0].json();
    assert_eq!((body["event_data"]["experiment"]["id"].as_i64(), &body["event_id"]), (Some(id), &json!(event.event_uuid)));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let events = m.store.webhook_events(webhook_id).await.unwrap();
        if events[0].status == WebhookEventStatus::Delivered {
            assert!(events[0].attempts >= 2, "{events:?}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "not marked delivered: {events:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Delivered once: no further request arrives.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.received().len(), 1, "{:?}", rx.received());
    rx.stop().await;
}

/// State changes racing other writes (experiments being created, the loop creating their trials)
/// all succeed and each fires its webhook: the change and its events take the write lock first.
pub async fn state_changes_racing_other_writes_all_fire(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let rx = Receiver::start().await;
    create_hook(m, &admin, hook("paused", &rx.url("/paused"), "WEBHOOK_TYPE_DEFAULT", on_state("PAUSED"))).await;
    let config = "name: race\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n";
    let mut ids = Vec::new();
    for round in 0..4 {
        let creates =
            (0..5).map(|_| m.post("/api/v1/experiments", Some(&admin), json!({"config": config, "modelDefinition": [], "activate": true})));
        let created: Vec<i64> = futures_util::future::join_all(creates)
            .await
            .into_iter()
            .map(|r| {
                assert_eq!(r.status, 200, "round {round}: {}", r.text);
                r.body["experiment"]["id"].as_i64().unwrap()
            })
            .collect();
        // Pause these while the next round's creates (and their trials) are written.
        let next =
            (0..5).map(|_| m.post("/api/v1/experiments", Some(&admin), json!({"config": config, "modelDefinition": [], "activate": true})));
        let paths: Vec<String> = created.iter().map(|id| format!("/api/v1/experiments/{id}/pause")).collect();
        let pauses = paths.iter().map(|path| m.post(path, Some(&admin), json!({})));
        let (paused, others) = tokio::join!(futures_util::future::join_all(pauses), futures_util::future::join_all(next));
        for r in paused.iter().chain(others.iter()) {
            assert_eq!(r.status, 200, "{}", r.text);
        }
        ids.extend(created);
    }
    let got = rx.wait_for("/paused", ids.len()).await;
    let mut seen: Vec<i64> = got.iter().map(|r| r.json()["event_data"]["experiment"]["id"].as_i64().unwrap()).collect();
    seen.sort_unstable();
    ids.sort_unstable();
    assert_eq!(seen, ids, "one event per paused experiment");
    rx.stop().await;
}
