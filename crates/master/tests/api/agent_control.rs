//! Agent and slot control over HTTP with fake agents: a disabled agent's trial is preempted and
//! resumes on another agent without counting a restart; drain and slot state show in
//! `GET /api/v1/agents`, survive a reconnect and a master restart; admins only; bad input is a 400.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cluster_loop::FakeAgent;
use crate::harness::{TestMaster, assert_error};

const CONFIG: &str = "name: control\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n\
                      hyperparameters: {lr: 0.1}\nmax_restarts: 0\n";

async fn agent(m: &TestMaster, token: &str, id: &str) -> Value {
    let r = m.get(&format!("/api/v1/agents/{id}"), Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["agent"].clone()
}

async fn wait_agent(m: &TestMaster, token: &str, id: &str) -> Value {
    for _ in 0..200 {
        let r = m.get(&format!("/api/v1/agents/{id}"), Some(token)).await;
        if r.status == 200 && r.body["agent"]["slots"].as_object().is_some_and(|s| !s.is_empty()) {
            return r.body["agent"].clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("agent {id} did not register");
}

pub async fn disabled_agent_trial_moves_and_state_survives_restart(m: TestMaster) {
    let admin = m.login("admin", "").await;
    let user = m.login("determined", "").await;
    let mut a1 = FakeAgent::connect(&m, "a1", 1).await;
    wait_agent(&m, &admin, "a1").await;
    let r = m.post("/api/v1/experiments", Some(&user), json!({"config": CONFIG, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let first = a1.next_start().await;
    let mut a2 = FakeAgent::connect(&m, "a2", 2).await;
    wait_agent(&m, &admin, "a2").await;

    // Only admins; bad input names its cause; unknown agents and slots are 404s.
    assert_error(&m.post("/api/v1/agents/a1/disable", Some(&user), json!({})).await, 403, "PermissionDenied");
    assert_error(&m.post_raw("/api/v1/agents/a1/disable", Some(&admin), "{\"drain\": 1}").await, 400, "InvalidArgument");
    assert_error(&m.post_raw("/api/v1/agents/a2/slots/one/disable", Some(&admin), "").await, 400, "InvalidArgument");
    assert_error(&m.post_raw("/api/v1/agents/zz/disable", Some(&admin), "").await, 404, "NotFound");
    assert_error(&m.post_raw("/api/v1/agents/a2/slots/9/disable", Some(&admin), "").await, 404, "NotFound");

    // Disabled (no body, as `det agent disable` sends): the trial is preempted; exiting 0 after
    // its checkpoint, it runs again on a2 as run 2, with no restart counted.
    let r = m.post_raw("/api/v1/agents/a1/disable", Some(&admin), "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!((r.body["agent"]["enabled"].clone(), r.body["agent"]["draining"].clone()), (json!(false), json!(false)), "{}", r.text);
    a1.exit(&first, 0).await;
    let second = a2.next_start().await;
    assert_eq!(second.task_id, first.task_id);
    assert_eq!(second.env["DET_TRIAL_RUN_ID"], "2");
    let trial_id = &first.env["DET_TRIAL_ID"];
    let trial = m.get(&format!("/api/v1/trials/{trial_id}"), Some(&admin)).await;
    assert_eq!(trial.body["trial"]["restarts"], 0, "{}", trial.text);

    // Drain a2 (it keeps the trial), disable a2's slot 1 and re-enable a1.
    let r = m.post("/api/v1/agents/a2/disable", Some(&admin), json!({"drain": true})).await;
    assert_eq!((r.body["agent"]["enabled"].clone(), r.body["agent"]["draining"].clone()), (json!(false), json!(true)), "{}", r.text);
    let r = m.post_raw("/api/v1/agents/a2/slots/1/disable", Some(&admin), "").await;
    assert_eq!(r.body["slot"]["enabled"], false, "{}", r.text);
    let r = m.post_raw("/api/v1/agents/a1/enable", Some(&admin), "").await;
    assert_eq!(r.body["agent"]["enabled"], true, "{}", r.text);
    let shown = agent(&m, &admin, "a2").await;
    assert_eq!(shown["slotStats"]["typeStats"]["TYPE_CPU"]["disabled"], 1, "{shown}");
    assert_eq!(shown["slotStats"]["typeStats"]["TYPE_CPU"]["draining"], 2, "{shown}");
    assert!(shown["slots"].as_object().unwrap().values().any(|s| s["container"]["id"] == second.container_id.as_str()), "{shown}");

    // A master restart keeps it: the agents come back drained and with the slot disabled.
    drop((a1, a2));
    let m = m.restart().await;
    let admin = m.login("admin", "").await;
    let _a2 = FakeAgent::connect(&m, "a2", 2).await;
    let shown = wait_agent(&m, &admin, "a2").await;
    assert_eq!((shown["enabled"].clone(), shown["draining"].clone()), (json!(false), json!(true)), "{shown}");
    assert_eq!(shown["slots"]["/agents/a2/slots/1"]["enabled"], false, "{shown}");
    assert_eq!(shown["slots"]["/agents/a2/slots/0"]["enabled"], true, "{shown}");
    let _a1 = FakeAgent::connect(&m, "a1", 1).await;
    assert_eq!(wait_agent(&m, &admin, "a1").await["enabled"], true);
}
