//! `preemption_timeout`: a preempted trial that ignores the signal (neither checkpoints nor
//! exits) is killed once the timeout passes; the kill is the master's, not the trial's failure,
//! so the trial resumes later from its latest checkpoint without counting a restart (upstream
//! ignores the errors of an allocation it killed on purpose).

use resolute_api::agent_protocol::{MasterToAgent, TaskExitInfo, TaskState};
use resolute_master::config::ResourcePools;
use serde_json::json;

use crate::cluster_loop::{FakeAgent, create, wait_for};
use crate::harness::TestMaster;
use crate::runtime_support::task_get;

fn experiment(name: &str, extra: &str) -> String {
    format!(
        "name: {name}\nentrypoint: python3 train.py\nsearcher: {{name: single, metric: loss, max_length: {{batches: 10}}}}\n\
         hyperparameters: {{lr: 0.1}}\nmax_restarts: 0\n{extra}\n"
    )
}

pub async fn a_preempted_trial_that_ignores_the_signal_is_killed_without_a_restart(m: TestMaster) {
    let preempting = json!({"resource_pools": [{"pool_name": "default", "scheduler": {"type": "priority", "preemption": true}}]});
    let m = m.restart_with(|c| c.resource_pools = ResourcePools::from_tree(&preempting).expect("valid pools").0).await;
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(&m, "agent-1", 1).await;
    // max_restarts 0: a kill counted as a failure would end the trial in error.
    let low = create(&m, &token, &experiment("stubborn", "resources: {priority: 50}\npreemption_timeout: 1")).await;
    let victim = agent.next_start().await;
    let high = create(&m, &token, &experiment("urgent", "resources: {priority: 10}")).await;
    let long_poll = format!("/api/v1/allocations/{}/signals/preemption?timeout_seconds=10", victim.allocation_id);
    let r = task_get(&m, &long_poll, &victim.env["DET_SESSION_TOKEN"]).await;
    assert_eq!(r.body, json!({"preempt": true}), "{}", r.text);
    // The victim ignores the signal. A second later the master kills it.
    let killed = loop {
        match agent.recv().await {
            MasterToAgent::KillTask { container_id } => break container_id,
            MasterToAgent::StartTask(s) => panic!("started {} before the victim was gone", s.allocation_id),
            _ => continue,
        }
    };
    assert_eq!(killed, victim.container_id);
    let by_signal = TaskExitInfo { exit_code: None, signal: Some(9), failure: Some("killed by signal 9".into()) };
    agent.state(&victim, TaskState::Terminated, Some(by_signal)).await;
    let winner = agent.next_start().await;
    assert_eq!(winner.env["DET_EXPERIMENT_ID"], high.to_string());
    let allocation = m.store.allocation_by_id(&victim.allocation_id).await.unwrap();
    let reason = allocation.exit_reason.unwrap_or_default();
    assert!(reason.contains("preemption_timeout (1 s)"), "the allocation says why it was killed: {reason}");
    let victim_trial = format!("/api/v1/trials/{}", victim.env["DET_TRIAL_ID"]);
    wait_for(&m, &token, &victim_trial, "/trial/state", "STATE_QUEUED").await;
    agent.exit(&winner, 0).await;

    // It resumes on its next run, restarts untouched.
    let resumed = agent.next_start().await;
    assert_eq!((resumed.task_id.as_str(), resumed.env["DET_TRIAL_RUN_ID"].as_str()), (victim.task_id.as_str(), "2"));
    agent.exit(&resumed, 0).await;
    wait_for(&m, &token, &format!("/api/v1/experiments/{low}"), "/experiment/state", "STATE_COMPLETED").await;
    let trial = m.store.trial_by_id(victim.env["DET_TRIAL_ID"].parse().unwrap()).await.unwrap();
    assert_eq!(trial.restarts, 0, "a kill at the preemption deadline is not a failure");
}
