//! A master restarted mid-search with reattachment on (the default): the agent that outlived it
//! lists the processes it still runs, and the new master adopts them — no kill, no new start, the
//! same runs and tokens, their slots held again — and the search goes on from its snapshot.

use resolute_api::agent_protocol::{MasterToAgent, RunningTask, StartTask};
use serde_json::json;

use crate::cluster_loop::FakeAgent;
use crate::harness::TestMaster;
use crate::master_restart::{asha_with_the_first_trial_promoted, searcher_trial};
use crate::runtime_support::{metrics_body, report_validation, task_post};

pub(crate) fn still_running(start: &StartTask) -> RunningTask {
    RunningTask {
        container_id: start.container_id.clone(),
        allocation_id: start.allocation_id.clone(),
        task_id: start.task_id.clone(),
        slot_ids: start.slot_ids.clone(),
        ports: Default::default(),
        ready: true,
    }
}

pub async fn restarted_master_reattaches_running_trials(m: TestMaster) {
    let (exp, first, second) = asha_with_the_first_trial_promoted(&m).await;

    let m = m.restart().await;
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect_running(&m, "agent-1", 2, vec![still_running(&first), still_running(&second)]).await;

    // Both processes are the master's again: their slots are held (the view shows them).
    let mut held = Vec::new();
    for _ in 0..200 {
        let r = m.get("/api/v1/agents", Some(&token)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        held = r.body["agents"][0]["slots"]
            .as_object()
            .map(|slots| slots.values().filter_map(|s| s["container"]["id"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        if held.len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    held.sort_unstable();
    let mut expected = vec![first.container_id.clone(), second.container_id.clone()];
    expected.sort_unstable();
    assert_eq!(held, expected, "the reattached processes hold the agent's slots");

    // Same run, same token: the old process's reports are admitted, once.
    let trial: i32 = first.env["DET_TRIAL_ID"].parse().unwrap();
    let body = metrics_body(trial, 1, "training", 11, json!({"loss": 0.09}));
    let path = format!("/api/v1/trials/{trial}/metrics");
    let report = task_post(&m, &path, &first.env["DET_SESSION_TOKEN"], body.clone()).await;
    assert_eq!(report.status, 200, "{}", report.text);
    let retry = task_post(&m, &path, &first.env["DET_SESSION_TOKEN"], body).await;
    assert_eq!(retry.status, 200, "a retried report is answered OK: {}", retry.text);
    let r = m.get(&format!("/api/v1/trials/{trial}"), Some(&token)).await;
    assert_eq!(r.body["trial"]["restarts"], 0, "{}", r.text);
    let stored = m.store.metrics_for_trial(trial, Some("training"), true).await.unwrap();
    assert_eq!(stored.iter().filter(|r| r.steps_completed == 11).count(), 1, "stored once: {stored:?}");
    assert!(stored.iter().all(|r| r.trial_run_id == 1), "{stored:?}");

    // The search goes on with the reattached processes: the second, worse at rung 0, is stopped.
    report_validation(&m, &second, 10, 0.9).await;
    searcher_trial(&m, &token, exp, &second.env["DET_TRIAL_ID"], 0, "stopped_early").await;
    // Its process ends; the freed slot goes to the search's next trial, a new start.
    agent.exit(&second, 0).await;
    let next = loop {
        match agent.recv().await {
            MasterToAgent::StartTask(start) => break *start,
            MasterToAgent::KillTask { container_id } => panic!("the master killed reattached process {container_id}"),
            _ => {}
        }
    };
    assert_ne!(next.env["DET_TRIAL_ID"], first.env["DET_TRIAL_ID"]);
    assert_ne!(next.env["DET_TRIAL_ID"], second.env["DET_TRIAL_ID"]);
    assert_eq!(next.slot_ids, second.slot_ids, "the new trial takes the slot the stopped one freed");
}
