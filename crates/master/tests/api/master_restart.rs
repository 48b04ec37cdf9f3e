//! A master restarted mid-search with reattachment off (`agent_reattach_wait: 0`): it ends the
//! allocations that were running, restarts those trials, and resumes the search from its stored
//! snapshot, so the decisions it makes afterwards are the ones an uninterrupted master would make.
//! (`master_reattach.rs` has the default, where the running processes are reattached.)

use std::time::Duration;

use resolute_api::agent_protocol::{MasterToAgent, StartTask};
use serde_json::{Value, json};

use crate::cluster_loop::FakeAgent;
use crate::harness::TestMaster;
use crate::runtime_support::{metrics_body, report_validation, task_post};

/// Async halving: 4 trials, rungs at 10 / 40 batches, two at a time.
pub const ASHA: &str = "name: restart\nentrypoint: python3 train.py\n\
    searcher: {name: async_halving, metric: loss, smaller_is_better: true, num_rungs: 2, divisor: 4, max_trials: 4, \
    max_concurrent_trials: 2, max_length: {batches: 40}}\n\
    hyperparameters: {lr: {type: double, minval: 0.01, maxval: 0.1}}\n";

/// Waits until the searcher has `trial` at `rung` with `decision`.
pub async fn searcher_trial(m: &TestMaster, token: &str, exp: i64, trial: &str, rung: u64, decision: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let r = m.get(&format!("/api/v1/experiments/{exp}/searcher/state"), Some(token)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let id: i64 = trial.parse().unwrap();
        last = r.body["trials"].as_array().unwrap().iter().find(|t| t["trialId"].as_i64() == Some(id)).cloned().unwrap_or_default();
        if last["decision"] == decision && last["rung"] == rung {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("trial {trial} never reached rung {rung} with decision {decision}: {last}");
}

/// The ASHA search both restart tests begin with: two trials started on one 2-slot agent, the
/// first reaching rung 0 alone and promoted (training on toward rung 1); then the agent is gone.
/// The experiment and the two starts.
pub async fn asha_with_the_first_trial_promoted(m: &TestMaster) -> (i64, StartTask, StartTask) {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 2).await;
    let r = m.post("/api/v1/experiments", Some(&token), json!({"config": ASHA, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let exp = r.body["experiment"]["id"].as_i64().unwrap();
    let (first, second) = (agent.next_start().await, agent.next_start().await);
    report_validation(m, &first, 10, 0.1).await;
    searcher_trial(m, &token, exp, &first.env["DET_TRIAL_ID"], 1, "training").await;
    drop(agent);
    (exp, first, second)
}

pub async fn restarted_master_resumes_trials_and_search(m: TestMaster) {
    let (exp, first, second) = asha_with_the_first_trial_promoted(&m).await;

    let m = m.restart_with(|c| c.agent_reattach_wait = 0).await;
    let token = m.login("determined", "").await;
    // The agent outlived the master and still runs the old processes: they are orphans now.
    let old_containers = vec![first.container_id.clone(), second.container_id.clone()];
    let mut agent = FakeAgent::connect_with(&m, "agent-1", 2, old_containers.clone()).await;
    let (mut killed, mut starts) = (Vec::new(), Vec::new());
    while starts.len() < 2 || killed.len() < 2 {
        match agent.recv().await {
            MasterToAgent::KillTask { container_id } => killed.push(container_id),
            MasterToAgent::StartTask(start) => {
                agent.running(&start).await;
                starts.push(*start);
            }
            _ => {}
        }
    }
    killed.sort_unstable();
    let mut expected = old_containers;
    expected.sort_unstable();
    assert_eq!(killed, expected, "the orphaned processes are killed");
    let restarted = [starts.remove(0), starts.remove(0)];
    let mut trial_ids: Vec<&str> = restarted.iter().map(|s| s.env["DET_TRIAL_ID"].as_str()).collect();
    trial_ids.sort_unstable();
    let mut before = vec![first.env["DET_TRIAL_ID"].as_str(), second.env["DET_TRIAL_ID"].as_str()];
    before.sort_unstable();
    assert_eq!(trial_ids, before, "the same two trials run again, no new ones");
    for start in &restarted {
        assert_eq!(start.env["DET_TRIAL_RUN_ID"], "2", "a new run of the trial");
        let old = if start.env["DET_TRIAL_ID"] == first.env["DET_TRIAL_ID"] { &first } else { &second };
        assert_ne!(start.allocation_id, old.allocation_id);
    }
    // The old allocations' tokens died with them.
    let stale = task_post(
        &m,
        &format!("/api/v1/trials/{}/metrics", first.env["DET_TRIAL_ID"]),
        &first.env["DET_SESSION_TOKEN"],
        metrics_body(first.env["DET_TRIAL_ID"].parse().unwrap(), 1, "training", 5, json!({"loss": 1.0})),
    )
    .await;
    assert_eq!(stale.status, 401, "{}", stale.text);

    // The search stood where it was: the first is still promoted, and the second, now worse than
    // the rung-0 record it is compared with, is stopped.
    let promoted = searcher_trial(&m, &token, exp, &first.env["DET_TRIAL_ID"], 1, "training").await;
    assert_eq!(promoted["lastMetric"], 0.1, "{promoted}");
    let second_now = restarted.iter().find(|s| s.env["DET_TRIAL_ID"] == second.env["DET_TRIAL_ID"]).unwrap();
    report_validation(&m, second_now, 10, 0.9).await;
    searcher_trial(&m, &token, exp, &second.env["DET_TRIAL_ID"], 0, "stopped_early").await;
    let state = m.get(&format!("/api/v1/experiments/{exp}/searcher/state"), Some(&token)).await;
    assert_eq!(state.body["brackets"][0]["rungs"][0]["recorded"], 2, "{}", state.text);
    // Stopping the second frees its slot for the third (and last) new trial; nothing is requested
    // twice.
    let requests: Vec<(u64, i64)> = state.body["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["requestId"].as_u64().unwrap(), t["trialId"].as_i64().unwrap_or(0)))
        .collect();
    assert_eq!(requests.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2, 3], "{}", state.text);
    assert!(requests.iter().all(|r| r.1 > 0) && requests[2].1 > requests[1].1, "{}", state.text);
}
