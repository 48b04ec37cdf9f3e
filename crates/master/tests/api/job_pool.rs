//! Moving a job to another resource pool (`POST /api/v1/job-queues` `resourcePool`, upstream's
//! `det job update JOB --resource-pool POOL`): a queued experiment's trial is requeued in the new
//! pool at once; a running one is told to checkpoint and stop, then resumes there without
//! counting a restart; the experiment's config names the new pool; an unknown pool is refused
//! naming the pools that exist.

use resolute_master::config::ResourcePools;
use serde_json::{Value, json};

use crate::cluster_loop::{FakeAgent, create, wait_for};
use crate::harness::TestMaster;
use crate::runtime_support::task_get;

fn experiment(name: &str) -> String {
    format!(
        "name: {name}\nentrypoint: python3 train.py\nsearcher: {{name: single, metric: loss, max_length: {{batches: 10}}}}\n\
         hyperparameters: {{lr: 0.1}}\nmax_restarts: 0\n"
    )
}

async fn job_of(m: &TestMaster, experiment: i64) -> String {
    m.store.experiment_by_id(i32::try_from(experiment).unwrap()).await.unwrap().job_id
}

async fn move_to(m: &TestMaster, token: &str, job: &str, pool: &str) -> crate::harness::Reply {
    m.post("/api/v1/job-queues", Some(token), json!({"updates": [{"jobId": job, "resourcePool": pool}]})).await
}

pub async fn queued_and_running_jobs_move_to_another_pool(m: TestMaster) {
    let tree = json!({"resource_pools": [{"pool_name": "default"}, {"pool_name": "other"}]});
    let m = m.restart_with(|c| c.resource_pools = ResourcePools::from_tree(&tree).expect("valid pools").0).await;
    let token = m.login("determined", "").await;
    let mut home = FakeAgent::try_connect_in(&m.base, "agent-home", 1, vec![], None, "default").await.expect("admitted");
    let mut away = FakeAgent::try_connect_in(&m.base, "agent-away", 1, vec![], None, "other").await.expect("admitted");
    let running = create(&m, &token, &experiment("running")).await;
    let first = home.next_start().await;
    let queued = create(&m, &token, &experiment("queued")).await;

    // An unknown pool is refused with the pools that exist.
    let r = move_to(&m, &token, &job_of(&m, queued).await, "nowhere").await;
    assert_eq!(r.status, 400, "{}", r.text);
    let message = r.body["error"]["error"].as_str().unwrap_or_default();
    assert!(message.contains("updates[0].resourcePool") && message.contains("default, other"), "{message}");

    // The queued experiment moves and starts at once on the other pool's agent.
    let r = move_to(&m, &token, &job_of(&m, queued).await, "other").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let moved = away.next_start().await;
    assert_eq!(moved.env["DET_EXPERIMENT_ID"], queued.to_string());
    let config = m.get(&format!("/api/v1/experiments/{queued}"), Some(&token)).await.body["config"].clone();
    assert_eq!(config["resources"]["resource_pool"], "other");

    // The running one is told to stop, checkpoints and exits, and waits for the other pool.
    let r = move_to(&m, &token, &job_of(&m, running).await, "other").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let signal = format!("/api/v1/allocations/{}/signals/preemption?timeout_seconds=10", first.allocation_id);
    let r = task_get(&m, &signal, &first.env["DET_SESSION_TOKEN"]).await;
    assert_eq!(r.body, json!({"preempt": true}), "{}", r.text);
    home.exit(&first, 0).await;
    let jobs = wait_queue(&m, &token, |jobs| jobs.iter().any(|j| j["name"] == "running" && j["resourcePool"] == "other")).await;
    assert!(jobs.iter().all(|j| j["resourcePool"] == "other"), "{jobs:#?}");
    away.exit(&moved, 0).await;
    let resumed = away.next_start().await;
    assert_eq!((resumed.env["DET_EXPERIMENT_ID"].as_str(), resumed.env["DET_TRIAL_RUN_ID"].as_str()), (running.to_string().as_str(), "2"));
    away.exit(&resumed, 0).await;
    wait_for(&m, &token, &format!("/api/v1/experiments/{running}"), "/experiment/state", "STATE_COMPLETED").await;
    let trial = m.store.trial_by_id(first.env["DET_TRIAL_ID"].parse().unwrap()).await.unwrap();
    assert_eq!(trial.restarts, 0, "moving is not a failure");
}

/// Polls the v2 queue (the `full` objects) until `done` holds, for up to 10 s.
async fn wait_queue(m: &TestMaster, token: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = m.get("/api/v1/job-queues-v2", Some(token)).await;
        let jobs: Vec<Value> = r.body["jobs"].as_array().cloned().unwrap_or_default().into_iter().map(|j| j["full"].clone()).collect();
        if done(&jobs) {
            return jobs;
        }
        assert!(std::time::Instant::now() < deadline, "the queue never got there: {jobs:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}
