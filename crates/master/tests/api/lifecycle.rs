//! The experiment lifecycle as upstream reports it: QUEUED while a trial waits for slots, RUNNING
//! while one runs, trials that exist when the create call returns, a killed only trial that cancels
//! its experiment, pause/activate of a queued experiment in a tight loop, an errored search's
//! progress, and each trial's own start time.

use std::time::Duration;

use chrono::{DateTime, Utc};
use resolute_api::agent_protocol::MasterToAgent;
use serde_json::{Value, json};

use crate::cluster_loop::FakeAgent;
use crate::harness::TestMaster;

const SINGLE: &str = "name: life\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n\
                      hyperparameters: {lr: 0.1}\nmax_restarts: 0\n";
const GRID: &str = "name: grid\nentrypoint: python3 train.py\nsearcher: {name: grid, metric: loss, max_length: {batches: 10}}\n\
                    hyperparameters: {lr: {type: categorical, vals: [0.1, 0.2]}}\nmax_restarts: 0\n";

async fn create(m: &TestMaster, token: &str, config: &str, activate: bool) -> Value {
    let r = m.post("/api/v1/experiments", Some(token), json!({"config": config, "modelDefinition": [], "activate": activate})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["experiment"].clone()
}

async fn experiment(m: &TestMaster, token: &str, id: i64) -> Value {
    let r = m.get(&format!("/api/v1/experiments/{id}"), Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["experiment"].clone()
}

async fn trials(m: &TestMaster, token: &str, id: i64) -> Vec<Value> {
    let r = m.get(&format!("/api/v1/experiments/{id}/trials?orderBy=ORDER_BY_ASC"), Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["trials"].as_array().cloned().unwrap_or_default()
}

/// Polls until `check` holds for the experiment and its trials (a deadline, never a fixed sleep).
async fn until(m: &TestMaster, token: &str, id: i64, what: &str, check: impl Fn(&Value, &[Value]) -> bool) -> (Value, Vec<Value>) {
    // Generous: the whole API suite runs at once on CI's two cores.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (exp, ts) = (experiment(m, token, id).await, trials(m, token, id).await);
        if check(&exp, &ts) {
            return (exp, ts);
        }
        assert!(tokio::time::Instant::now() < deadline, "experiment {id} never got {what}: {exp} {ts:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn states(trials: &[Value]) -> Vec<&str> {
    trials.iter().map(|t| t["state"].as_str().unwrap_or_default()).collect()
}

fn time(v: &Value) -> DateTime<Utc> {
    v.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not a time: {v}"))
}

pub async fn queued_then_running_with_trials_from_the_start(m: &TestMaster) {
    let token = m.login("determined", "").await;
    // No agent yet: the trials wait for slots.
    let created = create(m, &token, GRID, true).await;
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["state"], "STATE_QUEUED", "{created}");
    let listed = trials(m, &token, id).await;
    assert_eq!(states(&listed), ["STATE_QUEUED", "STATE_QUEUED"], "the grid's trials exist when the create call returns");
    // A script asking for active experiments still finds a queued one.
    let active = m.get("/api/v1/experiments?states=STATE_ACTIVE", Some(&token)).await;
    assert_eq!(active.body["experiments"][0]["id"], id, "{}", active.text);
    let queued = m.get(&format!("/api/v1/experiments/{id}/trials?states=STATE_ACTIVE"), Some(&token)).await;
    assert_eq!(queued.body["trials"].as_array().map(Vec::len), Some(2), "{}", queued.text);

    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let first = agent.next_start().await;
    let first_id: i64 = first.env["DET_TRIAL_ID"].parse().unwrap();
    let (_, ts) = until(m, &token, id, "RUNNING", |e, ts| e["state"] == "STATE_RUNNING" && states(ts).contains(&"STATE_RUNNING")).await;
    let running: Vec<_> = ts.iter().map(|t| (t["id"].as_i64().unwrap(), t["state"].as_str().unwrap().to_owned())).collect();
    assert!(running.contains(&(first_id, "STATE_RUNNING".into())) && running.iter().any(|(_, s)| s == "STATE_QUEUED"), "{running:?}");
    let running_list = m.get("/api/v1/experiments?states=STATE_RUNNING", Some(&token)).await;
    assert_eq!(running_list.body["experiments"][0]["id"], id, "{}", running_list.text);

    // The second trial starts only when the first is done: its start time says so.
    agent.exit(&first, 0).await;
    let second = agent.next_start().await;
    let (_, ts) = until(m, &token, id, "the second trial running", |_, ts| states(ts).contains(&"STATE_RUNNING")).await;
    let first_trial = ts.iter().find(|t| t["id"] == first_id).unwrap();
    let second_trial = ts.iter().find(|t| t["id"] != first_id).unwrap();
    assert_eq!(first_trial["state"], "STATE_COMPLETED");
    assert!(
        time(&second_trial["startTime"]) >= time(&first_trial["endTime"]),
        "a trial's start time is its own start, not the experiment's: {second_trial} {first_trial}"
    );
    assert!(time(&second_trial["startTime"]) > time(&created["startTime"]));

    // A running experiment pauses; its trial goes back to PAUSED, the experiment to PAUSED.
    let r = m.post(&format!("/api/v1/experiments/{id}/pause"), Some(&token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    agent.exit(&second, 0).await;
    until(m, &token, id, "PAUSED", |e, ts| e["state"] == "STATE_PAUSED" && states(ts).contains(&"STATE_PAUSED")).await;
    let r = m.post(&format!("/api/v1/experiments/{id}/activate"), Some(&token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let resumed = agent.next_start().await;
    until(m, &token, id, "RUNNING again", |e, _| e["state"] == "STATE_RUNNING").await;
    agent.exit(&resumed, 0).await;
    until(m, &token, id, "COMPLETED", |e, _| e["state"] == "STATE_COMPLETED").await;
}

pub async fn a_paused_experiment_has_its_trials(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let created = create(m, &token, GRID, false).await;
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["state"], "STATE_PAUSED");
    assert_eq!(states(&trials(m, &token, id).await), ["STATE_PAUSED", "STATE_PAUSED"]);
    let mut agent = FakeAgent::connect(m, "agent-1", 2).await;
    let r = m.post(&format!("/api/v1/experiments/{id}/activate"), Some(&token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (a, b) = (agent.next_start().await, agent.next_start().await);
    assert_ne!(a.env["DET_TRIAL_ID"], b.env["DET_TRIAL_ID"]);
    assert_eq!(a.env["DET_TRIAL_RUN_ID"], "1", "no run was used up while paused");
    until(m, &token, id, "both trials running", |e, ts| e["state"] == "STATE_RUNNING" && states(ts) == ["STATE_RUNNING"; 2]).await;
}

pub async fn killing_the_only_trial_cancels_the_experiment(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let id = create(m, &token, SINGLE, true).await["id"].as_i64().unwrap();
    let start = agent.next_start().await;
    let r = m.post(&format!("/api/v1/trials/{}/kill", start.env["DET_TRIAL_ID"]), Some(&token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    match agent.recv().await {
        MasterToAgent::KillTask { container_id } => assert_eq!(container_id, start.container_id),
        other => panic!("expected a kill, got {other:?}"),
    }
    agent.exit(&start, 137).await;
    let (exp, ts) = until(m, &token, id, "an end", |e, _| e["endTime"].is_string()).await;
    assert_eq!((exp["state"].as_str(), states(&ts)), (Some("STATE_CANCELED"), vec!["STATE_CANCELED"]), "{exp}");
}

pub async fn pause_and_activate_in_a_tight_loop(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let id = create(m, &token, SINGLE, true).await["id"].as_i64().unwrap();
    for round in 0..20 {
        for action in ["pause", "activate"] {
            let r = m.post(&format!("/api/v1/experiments/{id}/{action}"), Some(&token), json!({})).await;
            assert_eq!(r.status, 200, "round {round} {action}: {}", r.text);
        }
    }
    until(m, &token, id, "QUEUED", |e, ts| e["state"] == "STATE_QUEUED" && states(ts) == ["STATE_QUEUED"]).await;
    // The trial still gets its slot: every activate queued a fresh allocation.
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let start = agent.next_start().await;
    until(m, &token, id, "RUNNING", |e, _| e["state"] == "STATE_RUNNING").await;
    agent.exit(&start, 0).await;
    until(m, &token, id, "COMPLETED", |e, _| e["state"] == "STATE_COMPLETED").await;
    let task = m.get(&format!("/api/v1/tasks/{}", start.task_id), Some(&token)).await;
    let allocations = task.body["task"]["allocations"].as_array().cloned().unwrap_or_default();
    let ids: std::collections::HashSet<_> = allocations.iter().map(|a| a["allocationId"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(ids.len(), allocations.len(), "allocation ids are never reused: {allocations:?}");
}

/// The race behind the tight loop above, ordered by hand: a pause and an activate both stored
/// before the loop reads the experiment, so the loop sees ACTIVE twice and never the pause. The
/// store then says ACTIVE (the activate's write) while the loop last wrote QUEUED; it must write
/// QUEUED again rather than trust what it wrote before.
pub async fn a_pause_and_activate_the_loop_never_saw_still_show_queued(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let id = create(m, &token, SINGLE, true).await["id"].as_i64().unwrap();
    until(m, &token, id, "QUEUED", |e, _| e["state"] == "STATE_QUEUED").await;
    let exp_id = i32::try_from(id).unwrap();
    assert!(m.store.update_experiment_state_if(exp_id, &["STATE_QUEUED"], "STATE_PAUSED", None).await.unwrap());
    assert!(m.store.update_experiment_state_if(exp_id, &["STATE_PAUSED"], "STATE_ACTIVE", None).await.unwrap());
    for _ in 0..2 {
        m.cluster.notify(resolute_master::cluster::ClusterEvent::ExperimentChanged { experiment_id: exp_id });
    }
    until(m, &token, id, "QUEUED again", |e, ts| e["state"] == "STATE_QUEUED" && states(ts) == ["STATE_QUEUED"]).await;
}

pub async fn an_errored_search_is_not_done(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let id = create(m, &token, SINGLE, true).await["id"].as_i64().unwrap();
    let start = agent.next_start().await;
    let path = format!("/api/v1/trials/{}/progress", start.env["DET_TRIAL_ID"]);
    let r = crate::runtime_support::task_post_raw(m, &path, &start.env["DET_SESSION_TOKEN"], r#"{"progress": 0.25, "is_raw": true}"#).await;
    assert_eq!(r.status, 200, "{}", r.text);
    agent.exit(&start, 1).await;
    let (exp, _) = until(m, &token, id, "ERROR", |e, _| e["state"] == "STATE_ERROR").await;
    let progress = exp["progress"].as_f64().unwrap_or(0.0);
    assert!(progress < 1.0, "an errored experiment is not 100% done: {exp}");
}

/// A killed experiment keeps the progress it had (its trial closing early is no finished search):
/// the UI showed a killed experiment at 100 %.
pub async fn a_killed_experiment_keeps_its_progress(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let id = create(m, &token, SINGLE, true).await["id"].as_i64().unwrap();
    let start = agent.next_start().await;
    let path = format!("/api/v1/trials/{}/progress", start.env["DET_TRIAL_ID"]);
    let r = crate::runtime_support::task_post_raw(m, &path, &start.env["DET_SESSION_TOKEN"], r#"{"progress": 0.25, "is_raw": true}"#).await;
    assert_eq!(r.status, 200, "{}", r.text);
    until(m, &token, id, "progress 0.25", |e, _| e["progress"].as_f64().is_some_and(|p| (p - 0.25).abs() < 1e-9)).await;
    let r = m.post(&format!("/api/v1/experiments/{id}/kill"), Some(&token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    match agent.recv().await {
        MasterToAgent::KillTask { container_id } => assert_eq!(container_id, start.container_id),
        other => panic!("expected a kill, got {other:?}"),
    }
    agent.exit(&start, 137).await;
    let (exp, _) = until(m, &token, id, "CANCELED", |e, _| e["state"] == "STATE_CANCELED").await;
    assert_eq!(exp["progress"].as_f64(), Some(0.25), "a killed experiment shows the progress it reached: {exp}");
    let listed = m.get("/api/v1/experiments", Some(&token)).await;
    let row = listed.body["experiments"].as_array().and_then(|xs| xs.iter().find(|x| x["id"] == id).cloned()).unwrap_or_default();
    assert_eq!(row["progress"].as_f64(), Some(0.25), "{row}");
}
