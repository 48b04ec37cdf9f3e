//! Gangs across agents, with two fake agents on the real websocket: a trial with more slots than
//! either agent has is started on both at once, each process told every process's agent address
//! (the chief's first) and its own rank; one failing stops the other, and the trial restarts as
//! one.

use std::time::Duration;

use resolute_api::agent_protocol::{MasterToAgent, StartTask, TaskExitInfo, TaskState};
use serde_json::{Value, json};

use crate::cluster_loop::FakeAgent;
use crate::harness::TestMaster;
use crate::runtime_support::task_get;

const GANG: &str = "name: gang\nentrypoint: python3 -m determined.launch.torch_distributed python3 train.py\n\
                    searcher: {name: single, metric: loss, max_length: {batches: 10}}\n\
                    hyperparameters: {lr: 0.1}\nresources: {slots_per_trial: 4}\nmax_restarts: 1\n";

async fn wait_agents(m: &TestMaster, token: &str, count: usize) {
    for _ in 0..400 {
        let r = m.get("/api/v1/agents", Some(token)).await;
        if r.body["agents"].as_array().is_some_and(|a| a.len() == count) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{count} agents never registered");
}

async fn wait_state(m: &TestMaster, token: &str, path: &str, want: &str) {
    let mut last = Value::Null;
    for _ in 0..400 {
        let r = m.get(path, Some(token)).await;
        if r.body["experiment"]["state"] == want {
            return;
        }
        last = r.body;
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{path} never became {want}: {last}");
}

/// The two starts of one gang, by rank.
fn by_rank(a: StartTask, b: StartTask) -> [StartTask; 2] {
    let rank = |s: &StartTask| s.rendezvous.as_ref().expect("a gang process gets a rendezvous").container_rank;
    if rank(&a) == 0 { [a, b] } else { [b, a] }
}

pub async fn a_trial_larger_than_any_agent_runs_as_one_gang(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let a = FakeAgent::connect_at(m, "agent-a", 2, vec!["10.1.0.1".into()]).await;
    let b = FakeAgent::connect_at(m, "agent-b", 2, vec!["10.1.0.2".into()]).await;
    let (mut a, mut b) = (a, b);
    wait_agents(m, &token, 2).await;
    let r = m.post("/api/v1/experiments", Some(&token), json!({"config": GANG, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["experiment"]["id"].as_i64().unwrap();

    let (start_a, start_b) = (a.next_start().await, b.next_start().await);
    assert_eq!(start_a.allocation_id, start_b.allocation_id, "one allocation, two processes");
    assert_eq!((start_a.slot_ids.len(), start_b.slot_ids.len()), (2, 2));
    let address = |s: &StartTask| if s.container_id == start_a.container_id { "10.1.0.1" } else { "10.1.0.2" };
    let [chief, worker] = by_rank(start_a.clone(), start_b.clone());
    let (chief_address, worker_address) = (address(&chief), address(&worker));
    for (rank, start) in [&chief, &worker].into_iter().enumerate() {
        let r = start.rendezvous.as_ref().unwrap();
        assert_eq!(r.container_addrs, vec![chief_address, worker_address], "every rank dials the chief's real address first");
        assert_eq!(r.container_rank as usize, rank);
        assert_eq!(r.container_slot_counts, vec![2, 2]);
        // The harness's rendezvous API says the same (rendezvous port appended, as upstream's).
        // It answers once both processes are reported running (no polling needed).
        let path = format!("/api/v1/allocations/{}/resources/{}/rendezvous", start.allocation_id, start.container_id);
        let want = json!({"rendezvousInfo": {"addresses": [format!("{chief_address}:1734"), format!("{worker_address}:1734")], "rank": rank, "slots": [2, 2]}});
        let reply = task_get(m, &path, &start.env["DET_SESSION_TOKEN"]).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.body, want);
    }

    // The worker's process fails: the chief's is stopped with it, and the trial restarts as one.
    let (mut chief_agent, mut worker_agent) = if chief.container_id == start_a.container_id { (a, b) } else { (b, a) };
    worker_agent.exit(&worker, 1).await;
    loop {
        match chief_agent.recv().await {
            MasterToAgent::KillTask { container_id } => {
                assert_eq!(container_id, chief.container_id);
                break;
            }
            MasterToAgent::StartTask(s) => panic!("a new run started before the old one ended: {s:?}"),
            _ => continue,
        }
    }
    let killed = TaskExitInfo { exit_code: None, signal: Some(9), failure: Some("killed".into()) };
    chief_agent.state(&chief, TaskState::Terminated, Some(killed)).await;
    let (again_1, again_2) = (chief_agent.next_start().await, worker_agent.next_start().await);
    assert_eq!(again_1.allocation_id, again_2.allocation_id);
    assert!(again_1.allocation_id.ends_with(".2"), "the second run: {}", again_1.allocation_id);
    assert_eq!(again_1.env["DET_TRIAL_RUN_ID"], "2");
    chief_agent.exit(&again_1, 0).await;
    worker_agent.exit(&again_2, 0).await;
    wait_state(m, &token, &format!("/api/v1/experiments/{id}"), "STATE_COMPLETED").await;
    let trial = m.store.trial_by_id(chief.env["DET_TRIAL_ID"].parse().unwrap()).await.unwrap();
    assert_eq!(trial.restarts, 1, "the gang's failure counts once");
    let allocation = m.store.allocation_by_id(&chief.allocation_id).await.unwrap();
    assert_eq!(allocation.exit_reason.as_deref(), Some("the process exited with code 1"), "the failure that ended it is the worker's");
}

/// Upstream's rendezvous blocks until every container of the allocation has started: a rank
/// that asks while another is still starting waits for it, then gets every address.
pub async fn the_rendezvous_waits_until_every_rank_has_started(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut a = FakeAgent::connect_at(m, "agent-a", 2, vec!["10.1.0.1".into()]).await;
    let mut b = FakeAgent::connect_at(m, "agent-b", 2, vec!["10.1.0.2".into()]).await;
    wait_agents(m, &token, 2).await;
    let r = m.post("/api/v1/experiments", Some(&token), json!({"config": GANG, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (start_a, start_b) = (a.next_start_unreported().await, b.next_start_unreported().await);
    a.running(&start_a).await;
    let path = format!("/api/v1/allocations/{}/resources/{}/rendezvous", start_a.allocation_id, start_a.container_id);
    let ask = task_get(m, &path, &start_a.env["DET_SESSION_TOKEN"]);
    tokio::pin!(ask);
    // agent-b's process has not started: the request must still be waiting.
    let early = tokio::time::timeout(Duration::from_millis(400), ask.as_mut()).await;
    assert!(early.is_err(), "the rendezvous answered before every rank started: {:?}", early.map(|r| r.text));
    b.running(&start_b).await;
    let reply = tokio::time::timeout(Duration::from_secs(30), ask).await.expect("the rendezvous answers once every rank has started");
    assert_eq!(reply.status, 200, "{}", reply.text);
    let info = &reply.body["rendezvousInfo"];
    let addresses: Vec<&str> = info["addresses"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let mut sorted = addresses.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["10.1.0.1:1734", "10.1.0.2:1734"], "{}", reply.text);
    assert_eq!(info["slots"], json!([2, 2]));
    let rank = start_a.rendezvous.as_ref().unwrap().container_rank;
    assert_eq!(info["rank"], rank);
}

/// After a master restart, a gang whose processes come back from only one of its two agents is
/// not continued in part: at the end of `agent_reattach_wait` the process that came back is
/// killed and the trial starts again whole, in a new run, without counting a restart.
pub async fn a_gang_that_reattaches_in_part_after_a_master_restart_ends_whole(m: TestMaster) {
    let token = m.login("determined", "").await;
    let mut a = FakeAgent::connect_at(&m, "agent-a", 2, vec!["10.1.0.1".into()]).await;
    let mut b = FakeAgent::connect_at(&m, "agent-b", 2, vec!["10.1.0.2".into()]).await;
    wait_agents(&m, &token, 2).await;
    let r = m.post("/api/v1/experiments", Some(&token), json!({"config": GANG, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (start_a, start_b) = (a.next_start().await, b.next_start().await);
    assert_eq!(start_a.allocation_id, start_b.allocation_id);
    let trial = start_a.env["DET_TRIAL_ID"].clone();

    let m = m.restart_with(|c| c.agent_reattach_wait = 2).await;
    let token = m.login("determined", "").await;
    // Only agent-a comes back, still running its half of the gang.
    let mut a = FakeAgent::connect_running(&m, "agent-a", 2, vec![crate::master_reattach::still_running(&start_a)]).await;
    loop {
        match a.recv().await {
            MasterToAgent::KillTask { container_id } => {
                assert_eq!(container_id, start_a.container_id, "the half that came back is killed");
                break;
            }
            MasterToAgent::StartTask(start) => panic!("a start before the partial gang ended: {start:?}"),
            _ => {}
        }
    }
    a.exit(&start_a, 137).await;
    // The kill goes out before the loop stores the end: poll for it.
    let mut stored = m.store.allocation_by_id(&start_a.allocation_id).await.unwrap();
    for _ in 0..400 {
        if stored.end_time.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        stored = m.store.allocation_by_id(&start_a.allocation_id).await.unwrap();
    }
    assert!(stored.end_time.is_some(), "the partly reattached allocation ended: {stored:?}");

    // agent-b comes back without its process: the trial runs again as one gang, in run 2.
    let mut b = FakeAgent::connect(&m, "agent-b", 2).await;
    let (next_a, next_b) = (a.next_start().await, b.next_start().await);
    assert_eq!(next_a.allocation_id, next_b.allocation_id, "one new allocation over both agents");
    assert_ne!(next_a.allocation_id, start_a.allocation_id);
    assert_eq!(next_a.env["DET_TRIAL_RUN_ID"], "2");
    let r = m.get(&format!("/api/v1/trials/{trial}"), Some(&token)).await;
    assert_eq!(r.body["trial"]["restarts"], 0, "nothing failed: {}", r.text);
}
