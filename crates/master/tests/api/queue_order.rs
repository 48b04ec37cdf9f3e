//! The job queue's order across master restarts and pauses: `det job list` shows the same order
//! after a restart — jobs moved with `POST /api/v1/job-queues` and jobs never moved alike —, a
//! job queued afterwards comes last, and a paused experiment's job leaves the queue and comes back
//! to its place when activated, also when a restart happened in between.

use serde_json::json;

use crate::cluster_loop::FakeAgent;
use crate::harness::TestMaster;
use crate::job_queue::{create, job_id, names, queue_until};
use crate::master_reattach::still_running;

const QUEUED: [&str; 5] = ["first", "second", "third", "fourth", "fifth"];

/// A one-slot agent running `blocker`, with five experiments queued behind it (five, so that
/// recovery's own order matching the expected one by chance is unlikely).
async fn blocked_queue(m: &TestMaster, token: &str) -> (FakeAgent, resolute_api::agent_protocol::StartTask, Vec<i64>) {
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    create(m, token, "blocker", "").await;
    let running = agent.next_start().await;
    let mut ids = Vec::new();
    for name in QUEUED {
        ids.push(create(m, token, name, "").await);
    }
    queue_until(m, token, "all queued", |jobs| names(jobs) == ["blocker", "first", "second", "third", "fourth", "fifth"]).await;
    (agent, running, ids)
}

pub async fn the_queue_order_survives_a_master_restart(m: TestMaster) {
    let token = m.login("determined", "").await;
    let (_agent, running, ids) = blocked_queue(&m, &token).await;
    let (first, fourth) = (ids[0], ids[3]);
    let (job_first, job_fourth) = (job_id(&m, &token, first).await, job_id(&m, &token, fourth).await);
    let r = m.post("/api/v1/job-queues", Some(&token), json!({"updates": [{"jobId": job_fourth, "aheadOf": job_first}]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let moved = ["blocker", "fourth", "first", "second", "third", "fifth"];
    let before = queue_until(&m, &token, "fourth moved ahead", |jobs| names(jobs) == moved).await;

    let m = m.restart().await;
    let token = m.login("determined", "").await;
    // Recovery queues the experiments by id; the stored order puts them back as they were.
    let mut agent = FakeAgent::connect_running(&m, "agent-1", 1, vec![still_running(&running)]).await;
    let after = queue_until(&m, &token, "the order from before the restart", |jobs| jobs.len() == 6).await;
    assert_eq!(names(&after), names(&before), "the same order after the restart");
    let ahead: Vec<_> = after.iter().map(|j| j["summary"]["jobsAhead"].clone()).collect();
    assert_eq!(ahead, (0..6).map(|n| json!(n)).collect::<Vec<_>>(), "{after:#?}");

    create(&m, &token, "later", "").await;
    queue_until(&m, &token, "a new job last", |jobs| names(jobs) == ["blocker", "fourth", "first", "second", "third", "fifth", "later"])
        .await;
    // And the scheduler acts on it: the slot goes to the moved job first.
    agent.exit(&running, 0).await;
    let next = agent.next_start().await;
    assert_eq!(next.env["DET_EXPERIMENT_ID"], fourth.to_string(), "the job moved before the restart starts next");
}

async fn act(m: &TestMaster, token: &str, experiment: i64, action: &str) {
    let r = m.post(&format!("/api/v1/experiments/{experiment}/{action}"), Some(token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

pub async fn a_paused_experiments_job_leaves_the_queue_and_comes_back_to_its_place(m: TestMaster) {
    let token = m.login("determined", "").await;
    let (_agent, running, ids) = blocked_queue(&m, &token).await;
    let first = ids[0];
    act(&m, &token, first, "pause").await;
    queue_until(&m, &token, "the paused job gone", |jobs| names(jobs) == ["blocker", "second", "third", "fourth", "fifth"]).await;
    act(&m, &token, first, "activate").await;
    queue_until(&m, &token, "the activated job at its place", |jobs| {
        names(jobs) == ["blocker", "first", "second", "third", "fourth", "fifth"]
    })
    .await;

    // Paused across a restart: still out of the queue, and back at its place when activated.
    act(&m, &token, first, "pause").await;
    queue_until(&m, &token, "the paused job gone", |jobs| names(jobs) == ["blocker", "second", "third", "fourth", "fifth"]).await;
    let m = m.restart().await;
    let token = m.login("determined", "").await;
    let _agent = FakeAgent::connect_running(&m, "agent-1", 1, vec![still_running(&running)]).await;
    queue_until(&m, &token, "the paused job still gone", |jobs| names(jobs) == ["blocker", "second", "third", "fourth", "fifth"]).await;
    create(&m, &token, "later", "").await;
    act(&m, &token, first, "activate").await;
    queue_until(&m, &token, "the activated job back at its place, ahead of a later one", |jobs| {
        names(jobs) == ["blocker", "first", "second", "third", "fourth", "fifth", "later"]
    })
    .await;
}
