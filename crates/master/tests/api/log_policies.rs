//! Log policies with the real loop and a fake agent: a line shipped through
//! `POST /api/v1/task/logs` that matches `cancel_retries` makes the trial's failure final (ERROR,
//! restarts 0, the log names the policy); an agent line matching `exclude_node` sends the restarted
//! trial to another agent.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cluster_loop::FakeAgent;
use crate::harness::TestMaster;
use crate::runtime_support::task_post;

const CONFIG: &str = "name: policies\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n\
                      max_restarts: 3\nlog_policies:\n  - {name: oom, pattern: 'CUDA out of memory', action: {type: cancel_retries}}\n  \
                      - {pattern: 'ECC error', action: exclude_node}\n";

async fn create(m: &TestMaster, token: &str) -> i64 {
    let r = m.post("/api/v1/experiments", Some(token), json!({"config": CONFIG, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["experiment"]["id"].as_i64().unwrap()
}

async fn wait_state(m: &TestMaster, token: &str, id: i64, want: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..400 {
        let r = m.get(&format!("/api/v1/experiments/{id}"), Some(token)).await;
        if r.body["experiment"]["state"] == want {
            return r.body;
        }
        last = r.body;
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("experiment {id} never reached {want}: {last}");
}

pub async fn a_shipped_line_matching_cancel_retries_ends_the_trial(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let id = create(m, &token).await;
    let start = agent.next_start().await;
    let task_token = start.env["DET_SESSION_TOKEN"].clone();
    let line = json!({"taskId": start.task_id, "allocationId": start.allocation_id, "log": "RuntimeError: CUDA out of memory\n"});
    let r = task_post(m, "/api/v1/task/logs", &task_token, json!({"logs": [line]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    agent.exit(&start, 1).await;
    wait_state(m, &token, id, "STATE_ERROR").await;
    let trial = m.store.trial_by_task_id(&start.task_id).await.unwrap();
    assert_eq!((trial.state.as_str(), trial.restarts), ("STATE_ERROR", 0));
    let reason = trial.end_reason.unwrap_or_default();
    assert!(reason.contains("log policy \"oom\" (pattern `CUDA out of memory`) cancelled its retries"), "{reason}");
    let logs: Vec<String> = m.store.task_logs(&start.task_id, &Default::default()).await.unwrap().into_iter().map(|l| l.log).collect();
    assert!(logs.iter().any(|l| l.contains("log policy \"oom\" (pattern `CUDA out of memory`) matched: cancel_retries")), "{logs:?}");
}

pub async fn an_agent_line_matching_exclude_node_moves_the_restart(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut first = FakeAgent::connect(m, "agent-a", 1).await;
    let id = create(m, &token).await;
    let start = first.next_start().await;
    first.log(&start, "kernel: uncorrectable ECC error on GPU 0").await;
    first.exit(&start, 1).await;
    // The restart is not placed on agent-a, though its slot is free: it waits for another agent.
    let mut second = FakeAgent::connect(m, "agent-b", 1).await;
    let restart = second.next_start().await;
    assert_eq!(restart.task_id, start.task_id);
    assert!(restart.allocation_id.ends_with(".2"), "{}", restart.allocation_id);
    second.exit(&restart, 0).await;
    wait_state(m, &token, id, "STATE_COMPLETED").await;
    let trial = m.store.trial_by_task_id(&start.task_id).await.unwrap();
    assert_eq!(trial.restarts, 1);
    let logs: Vec<String> = m.store.task_logs(&start.task_id, &Default::default()).await.unwrap().into_iter().map(|l| l.log).collect();
    assert!(
        logs.iter().any(|l| l.contains("(pattern `ECC error`) matched: exclude_node, the trial's next runs will not be placed on agent-a")),
        "{logs:?}"
    );
}
