//! Cluster-wide endpoints: `GET /api/v1/master/config` (admin only, secrets redacted, the keys
//! clients read at start-up) and `GET /api/v1/master/logs` (the master's own recent lines, with
//! offset/limit and follow).

use resolute_master::master_logs::MASTER_LOGS;
use serde_json::Value;
use tracing::Level;

use crate::harness::{TestMaster, assert_error};

pub async fn master_config_is_admin_only_and_redacted(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let r = m.get("/api/v1/master/config", Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let config = &r.body["config"];
    assert_eq!(config["resource_manager"]["type"], "agent", "{config}");
    assert_eq!(config["resource_manager"]["default_compute_resource_pool"], "default");
    assert!(config["feature_switches"].is_array());
    assert!(config["port"].is_u64() && config["db"].is_object(), "{config}");
    if let Some(password) = config["db"]["password"].as_str().filter(|p| !p.is_empty()) {
        assert_eq!(password, "********");
    }

    m.create_user(&admin, "viewer", "Viewer123").await;
    let viewer = m.login("viewer", "Viewer123").await;
    assert_error(&m.get("/api/v1/master/config", Some(&viewer)).await, 403, "PermissionDenied");
    assert_error(&m.get("/api/v1/master/config", None).await, 401, "Unauthenticated");
}

fn messages(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| v["result"]["logEntry"]["message"].as_str().unwrap().to_owned())
        .collect()
}

pub async fn master_logs_tail_and_follow(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    // The ring is the process's: tag the lines with this master (the backends run side by side).
    let tag = format!("tail-check {}", m.base);
    for i in 0..5 {
        MASTER_LOGS.push(Level::WARN, format!("{tag} line {i}"));
    }
    // `det master logs --tail 3`: the last three lines (other tests may log in between, so look
    // for ours in a generous tail).
    let r = m.get("/api/v1/master/logs?offset=-3", Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let first: Value = serde_json::from_str(r.text.lines().next().unwrap()).unwrap();
    assert_eq!(first["result"]["logEntry"]["level"], "LOG_LEVEL_WARNING", "{first}");
    assert!(first["result"]["logEntry"]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert!(first["result"]["id"].is_i64());
    assert!(messages(&r.text).len() <= 3);
    let r = m.get("/api/v1/master/logs?offset=-10000&limit=0", Some(&admin)).await;
    let all = messages(&r.text);
    let ours: Vec<&String> = all.iter().filter(|l| l.starts_with(&tag)).collect();
    assert_eq!(ours.len(), 5, "every line, in order: {all:?}");
    assert!(ours.windows(2).all(|w| w[0] < w[1]));
    let r = m.get("/api/v1/master/logs?limit=2", Some(&admin)).await;
    assert_eq!(messages(&r.text).len(), 2);

    // `det master logs -f`: lines logged after the request are streamed; limit ends the stream.
    let start = MASTER_LOGS.next_id() - MASTER_LOGS.first_id();
    let url = format!("{}/api/v1/master/logs?follow=true&offset={start}&limit=3", m.base);
    let request = m.http.get(url).bearer_auth(&admin).send();
    let pusher = async {
        for i in 0..3 {
            MASTER_LOGS.push(Level::INFO, format!("follow-check {i}"));
            tokio::task::yield_now().await;
        }
    };
    let (response, ()) = tokio::join!(request, pusher);
    let text = response.unwrap().text().await.unwrap();
    let followed = messages(&text);
    assert_eq!(followed.len(), 3, "{text}");

    assert_error(&m.get("/api/v1/master/logs?limit=-1", Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.get("/api/v1/master/logs", None).await, 401, "Unauthenticated");
}
