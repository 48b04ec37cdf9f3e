//! Resource pools from master.yaml: `GET /api/v1/resource-pools` in upstream's shape, agents
//! joining (or refused from) pools, tasks naming unknown pools refused with the pools that
//! exist, tasks without a pool going to the default compute pool, and each pool scheduled by its
//! own policy: priority with preemption (a lower-priority trial is preempted through the
//! preemption signal, then resumes on a new run without counting a restart).

use std::time::Duration;

use resolute_master::config::ResourcePools;
use serde_json::{Value, json};

use crate::cluster_loop::{FakeAgent, create, wait_for};
use crate::harness::{TestMaster, assert_error};
use crate::runtime_support::task_get;

fn pools(tree: Value) -> ResourcePools {
    ResourcePools::from_tree(&tree).expect("valid pools").0
}

fn two_pools() -> ResourcePools {
    pools(json!({
        "resource_manager": {"default_compute_resource_pool": "gpu", "default_aux_resource_pool": "cpu"},
        "resource_pools": [
            {"pool_name": "gpu", "description": "GPUs", "scheduler": {"type": "priority", "preemption": true, "default_priority": 60}},
            {"pool_name": "cpu", "scheduler": {"type": "fair_share", "fitting_policy": "worst"}, "max_aux_containers_per_agent": 5},
        ],
    }))
}

fn experiment(name: &str, resources: &str) -> String {
    format!(
        "name: {name}\nentrypoint: python3 train.py\nsearcher: {{name: single, metric: loss, max_length: {{batches: 10}}}}\n\
         hyperparameters: {{lr: 0.1}}\nmax_restarts: 0\nresources: {resources}\n"
    )
}

async fn pool_list(m: &TestMaster, token: &str) -> Vec<Value> {
    let r = m.get("/api/v1/resource-pools", Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["resourcePools"].as_array().cloned().unwrap_or_default()
}

pub async fn pools_are_listed_joined_and_checked(m: TestMaster) {
    let m = m.restart_with(|c| c.resource_pools = two_pools()).await;
    let token = m.login("determined", "").await;
    let admin = m.login("admin", "").await;

    // An agent naming a pool the master lacks is refused, told which exist.
    let refused = FakeAgent::try_connect_in(&m.base, "stray", 1, vec![], None, "default").await.err().expect("refused");
    assert_eq!(refused.0, 101);
    assert!(refused.1.contains("\"default\"") && refused.1.contains("the resource pools are: gpu, cpu"), "{}", refused.1);

    // An agent id may move to another pool once it has no tasks (here: straight after leaving).
    let moving = FakeAgent::try_connect_in(&m.base, "gpu-1", 1, vec![], None, "cpu").await.expect("joins cpu");
    drop(moving);
    let mut joined = None;
    for _ in 0..250 {
        match FakeAgent::try_connect_in(&m.base, "gpu-1", 2, vec![], None, "gpu").await {
            Ok(agent) => {
                joined = Some(agent);
                break;
            }
            // Until the master has seen the first connection close.
            Err((101, message)) if message.contains("already connected") => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(other) => panic!("the agent could not move to pool gpu: {other:?}"),
        }
    }
    let mut agent = joined.expect("joins gpu once its first connection has closed");
    let mut listed = Vec::new();
    for _ in 0..200 {
        listed = pool_list(&m, &token).await;
        if listed.first().is_some_and(|p| p["numAgents"] == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(listed.len(), 2, "{listed:?}");
    let gpu = &listed[0];
    assert_eq!(gpu["name"], "gpu");
    assert_eq!(gpu["description"], "GPUs");
    assert_eq!(gpu["type"], "RESOURCE_POOL_TYPE_STATIC");
    assert_eq!((gpu["numAgents"].as_i64(), gpu["slotsAvailable"].as_i64(), gpu["slotsUsed"].as_i64()), (Some(1), Some(2), Some(0)));
    assert_eq!(gpu["slotType"], "TYPE_CPU");
    assert_eq!((gpu["defaultComputePool"].as_bool(), gpu["defaultAuxPool"].as_bool()), (Some(true), Some(false)));
    assert_eq!(gpu["schedulerType"], "SCHEDULER_TYPE_PRIORITY");
    assert_eq!(gpu["schedulerFittingPolicy"], "FITTING_POLICY_BEST");
    assert_eq!(gpu["details"]["priorityScheduler"], json!({"preemption": true, "defaultPriority": 60}));
    assert_eq!((gpu["auxContainerCapacityPerAgent"].as_i64(), gpu["auxContainerCapacity"].as_i64()), (Some(100), Some(100)));
    assert_eq!(gpu["location"], "on-prem");
    let cpu = &listed[1];
    assert_eq!(
        (cpu["name"].as_str(), cpu["numAgents"].as_i64(), cpu["slotType"].as_str()),
        (Some("cpu"), Some(0), Some("TYPE_UNSPECIFIED"))
    );
    assert_eq!(cpu["schedulerType"], "SCHEDULER_TYPE_FAIR_SHARE");
    assert_eq!(cpu["schedulerFittingPolicy"], "FITTING_POLICY_WORST");
    assert_eq!((cpu["defaultAuxPool"].as_bool(), cpu["auxContainerCapacityPerAgent"].as_i64()), (Some(true), Some(5)));
    let paged = m.get("/api/v1/resource-pools?offset=1&limit=1", Some(&token)).await;
    assert_eq!(paged.body["resourcePools"].as_array().map(|p| p.len()), Some(1), "{}", paged.text);
    assert_eq!(paged.body["resourcePools"][0]["name"], "cpu");
    assert_eq!(paged.body["pagination"]["total"], 2);

    // Unknown pools are refused at create with the pools that exist; nothing is stored.
    let r = m
        .post("/api/v1/experiments", Some(&token), json!({"config": experiment("tpu", "{resource_pool: tpu}"), "modelDefinition": []}))
        .await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("resources.resource_pool") && r.text.contains("\\\"tpu\\\" does not exist"), "{}", r.text);
    assert!(r.text.contains("gpu, cpu"), "{}", r.text);
    let r =
        m.post("/api/v1/commands", Some(&token), json!({"config": {"entrypoint": ["true"], "resources": {"resource_pool": "tpu"}}})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("gpu, cpu"), "{}", r.text);

    // Without a pool, a trial goes to the default compute pool, with that pool's priority.
    let id = create(&m, &token, &experiment("defaults", "{slots_per_trial: 1}")).await;
    let start = agent.next_start().await;
    assert_eq!(start.env["DET_EXPERIMENT_ID"], id.to_string());
    let task = m.store.task_by_id(&start.task_id).await.unwrap();
    assert_eq!(task.allocations.iter().map(|a| a.resource_pool.as_str()).collect::<Vec<_>>(), ["gpu"]);
    agent.exit(&start, 0).await;
    wait_for(&m, &token, &format!("/api/v1/experiments/{id}"), "/experiment/state", "STATE_COMPLETED").await;

    // `det master config` shows the pools as configured, defaults filled in.
    let config = m.get("/api/v1/master/config", Some(&admin)).await;
    assert_eq!(config.status, 200, "{}", config.text);
    assert_eq!(config.body["config"]["resource_manager"]["default_aux_resource_pool"], "cpu");
    assert_eq!(config.body["config"]["resource_pools"][0]["scheduler"]["default_priority"], 60);
    assert_eq!(config.body["config"]["resource_pools"][1]["scheduler"]["type"], "fair_share");
}

/// Priority with preemption: a priority-10 experiment preempts the priority-50 trial holding the
/// only slot; the victim sees the signal, exits 0 (checkpointed), waits, and resumes on run 2
/// once the slot is free, with no restart counted.
pub async fn priority_preemption_requeues_without_a_restart(m: TestMaster) {
    let m = m
        .restart_with(|c| {
            c.resource_pools =
                pools(json!({"resource_pools": [{"pool_name": "default", "scheduler": {"type": "priority", "preemption": true}}]}))
        })
        .await;
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(&m, "agent-1", 1).await;
    let low = create(&m, &token, &experiment("low", "{priority: 50}")).await;
    let victim = agent.next_start().await;
    let signal = format!("/api/v1/allocations/{}/signals/preemption?timeout_seconds=0", victim.allocation_id);
    let r = task_get(&m, &signal, &victim.env["DET_SESSION_TOKEN"]).await;
    assert_eq!(r.body, json!({"preempt": false}), "{}", r.text);

    let high = create(&m, &token, &experiment("high", "{priority: 10}")).await;
    let long_poll = format!("/api/v1/allocations/{}/signals/preemption?timeout_seconds=10", victim.allocation_id);
    let r = task_get(&m, &long_poll, &victim.env["DET_SESSION_TOKEN"]).await;
    assert_eq!(r.body, json!({"preempt": true}), "the low-priority trial is told to checkpoint and stop: {}", r.text);
    // Checkpointed and exited: the slot goes to the high-priority trial.
    agent.exit(&victim, 0).await;
    let winner = agent.next_start().await;
    assert_eq!(winner.env["DET_EXPERIMENT_ID"], high.to_string());
    let victim_trial = format!("/api/v1/trials/{}", victim.env["DET_TRIAL_ID"]);
    // Requeued, not ended (the display state follows the loop's pass).
    wait_for(&m, &token, &victim_trial, "/trial/state", "STATE_QUEUED").await;
    agent.exit(&winner, 0).await;
    wait_for(&m, &token, &format!("/api/v1/experiments/{high}"), "/experiment/state", "STATE_COMPLETED").await;

    // The preempted trial resumes on its next run, restarts untouched.
    let resumed = agent.next_start().await;
    assert_eq!((resumed.env["DET_EXPERIMENT_ID"].as_str(), resumed.env["DET_TRIAL_RUN_ID"].as_str()), (low.to_string().as_str(), "2"));
    assert_eq!(resumed.task_id, victim.task_id);
    agent.exit(&resumed, 0).await;
    wait_for(&m, &token, &format!("/api/v1/experiments/{low}"), "/experiment/state", "STATE_COMPLETED").await;
    let trial = m.store.trial_by_id(victim.env["DET_TRIAL_ID"].parse().unwrap()).await.unwrap();
    assert_eq!(trial.restarts, 0, "a preemption is not a failure");
}

/// Without preemption (upstream's default), the high-priority experiment waits for the slot.
pub async fn without_preemption_higher_priority_waits(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let low = create(m, &token, &experiment("low", "{priority: 50}")).await;
    let first = agent.next_start().await;
    let high = create(m, &token, &experiment("high", "{priority: 10}")).await;
    let signal = format!("/api/v1/allocations/{}/signals/preemption?timeout_seconds=1", first.allocation_id);
    let r = task_get(m, &signal, &first.env["DET_SESSION_TOKEN"]).await;
    assert_eq!(r.body, json!({"preempt": false}), "{}", r.text);
    agent.exit(&first, 0).await;
    let second = agent.next_start().await;
    assert_eq!(second.env["DET_EXPERIMENT_ID"], high.to_string());
    agent.exit(&second, 0).await;
    wait_for(m, &token, &format!("/api/v1/experiments/{low}"), "/experiment/state", "STATE_COMPLETED").await;
}

/// Fair share honours `resources.max_slots`: a capped search holds two of four slots even with
/// more trials waiting, and the next start goes to another experiment.
pub async fn fair_share_caps_a_job_at_its_max_slots(m: TestMaster) {
    let m = m
        .restart_with(|c| {
            c.resource_pools = pools(json!({"resource_pools": [{"pool_name": "default", "scheduler": {"type": "fair_share"}}]}))
        })
        .await;
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(&m, "agent-1", 4).await;
    let search = "name: capped\nentrypoint: python3 train.py\nmax_restarts: 0\nresources: {max_slots: 2}\n\
                  searcher: {name: random, metric: loss, max_trials: 4, max_concurrent_trials: 4, max_length: {batches: 10}}\n\
                  hyperparameters: {lr: 0.1}\n";
    let capped = create(&m, &token, search).await;
    let first = agent.next_start().await;
    let second = agent.next_start().await;
    assert!([&first, &second].iter().all(|s| s.env["DET_EXPERIMENT_ID"] == capped.to_string()));
    let other = create(&m, &token, &experiment("other", "{slots_per_trial: 1}")).await;
    let third = agent.next_start().await;
    assert_eq!(third.env["DET_EXPERIMENT_ID"], other.to_string(), "the capped search's other trials wait");
    // A slot of its own freed comes back to it.
    agent.exit(&first, 0).await;
    let fourth = agent.next_start().await;
    assert_eq!(fourth.env["DET_EXPERIMENT_ID"], capped.to_string());
}
