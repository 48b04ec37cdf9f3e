//! The job queue over HTTP with a fake agent: `GET /api/v1/job-queues[-v2]` lists jobs in the
//! order the scheduler runs them with why each waits; `POST /api/v1/job-queues` and `PATCH
//! /api/v1/experiments/{id}` `resources` change what starts next; a job that cannot fit says why
//! in the queue, in `GET /api/v1/experiments/{id}` and once in its trial's logs.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cluster_loop::FakeAgent;
use crate::harness::{Reply, TestMaster};

const ONE_SLOT: &str = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n\
                        hyperparameters: {lr: 0.1}\n";

pub(crate) async fn create(m: &TestMaster, token: &str, name: &str, extra: &str) -> i64 {
    let config = format!("name: {name}\n{ONE_SLOT}{extra}");
    let r = m.post("/api/v1/experiments", Some(token), json!({"config": config, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["experiment"]["id"].as_i64().unwrap()
}

pub(crate) async fn job_id(m: &TestMaster, token: &str, experiment: i64) -> String {
    let r = m.get(&format!("/api/v1/experiments/{experiment}"), Some(token)).await;
    m.store.experiment_by_id(i32::try_from(experiment).unwrap()).await.map(|e| e.job_id).unwrap_or_else(|_| panic!("{}", r.text))
}

/// Polls the v2 queue until `done` holds for its jobs (`full` objects), for up to 10 s.
pub(crate) async fn queue_until(m: &TestMaster, token: &str, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut last = Vec::new();
    for _ in 0..400 {
        let r = m.get("/api/v1/job-queues-v2", Some(token)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        last = r.body["jobs"].as_array().unwrap().iter().map(|j| j["full"].clone()).collect();
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the job queue never showed {what}: {last:#?}");
}

/// A refusal with `status` whose message names `what`.
fn refused(r: &Reply, status: u16, what: &str) {
    assert_eq!(r.status, status, "{}", r.text);
    assert!(r.body["error"]["error"].as_str().is_some_and(|m| m.contains(what)), "the error should name {what:?}: {}", r.text);
}

pub(crate) fn names(jobs: &[Value]) -> Vec<String> {
    jobs.iter().map(|j| j["name"].as_str().unwrap_or_default().to_owned()).collect()
}

pub async fn queue_lists_jobs_in_order_and_updates_reorder_them(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let a = create(m, &token, "first", "").await;
    let first = agent.next_start().await;
    assert_eq!(first.env["DET_EXPERIMENT_ID"], a.to_string());
    let b = create(m, &token, "second", "").await;
    let c = create(m, &token, "third", "").await;
    let jobs = queue_until(m, &token, "three jobs", |jobs| jobs.len() == 3).await;
    assert_eq!(names(&jobs), ["first", "second", "third"]);
    assert_eq!(jobs[0]["summary"], json!({"state": "STATE_SCHEDULED", "jobsAhead": 0}));
    assert_eq!((jobs[1]["summary"]["state"].as_str(), jobs[1]["summary"]["jobsAhead"].as_i64()), (Some("STATE_QUEUED"), Some(1)));
    let third = &jobs[2];
    assert_eq!(third["type"], "TYPE_EXPERIMENT");
    assert_eq!(third["entityId"], c.to_string());
    assert_eq!(third["username"], "determined");
    assert_eq!((third["requestedSlots"].as_i64(), third["allocatedSlots"].as_i64()), (Some(1), Some(0)));
    assert_eq!(third["priority"], 42);
    assert_eq!(third["isPreemptible"], true);
    assert_eq!(third["resourcePool"], "default");
    assert_eq!(third["waitReason"], "needs 1 slot; 0 of 1 free in resource pool default; 1 job queued ahead of it");
    assert_eq!(third["summary"]["waitReason"], third["waitReason"]);
    // The v1 listing (`GetJobs`) has the same jobs unwrapped; filters and order apply.
    let r = m.get("/api/v1/job-queues?states=STATE_QUEUED&orderBy=ORDER_BY_DESC", Some(&token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(names(r.body["jobs"].as_array().unwrap()), ["third", "second"]);
    assert_eq!(r.body["pagination"]["total"], 2);
    let r = m.get("/api/v1/job-queues?limit=1&offset=1", Some(&token)).await;
    assert_eq!(
        (names(r.body["jobs"].as_array().unwrap()), r.body["pagination"]["endIndex"].as_i64()),
        (vec!["second".to_owned()], Some(2))
    );
    // The experiment's own view of its place.
    let r = m.get(&format!("/api/v1/experiments/{c}"), Some(&token)).await;
    assert_eq!(r.body["jobSummary"]["state"], "STATE_QUEUED", "{}", r.text);
    assert_eq!(r.body["jobSummary"]["jobsAhead"], 2);

    // `det job update THIRD --priority 10`: third now runs before second.
    let (job_b, job_c) = (job_id(m, &token, b).await, job_id(m, &token, c).await);
    let body = json!({"updates": [{"jobId": job_c, "priority": 10, "weight": null, "resourcePool": null}]});
    let r = m.post("/api/v1/job-queues", Some(&token), body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let jobs = queue_until(m, &token, "third ahead of second", |jobs| names(jobs) == ["third", "first", "second"]).await;
    assert_eq!(jobs[0]["priority"], 10);
    assert_eq!(jobs[2]["waitReason"], "needs 1 slot; 0 of 1 free in resource pool default; 1 job queued ahead of it");
    // The experiment's stored config follows, so its later trials and a restart keep it.
    let r = m.get(&format!("/api/v1/experiments/{c}"), Some(&token)).await;
    assert_eq!(r.body["config"]["resources"]["priority"], 10, "{}", r.text);
    agent.exit(&first, 0).await;
    let next = agent.next_start().await;
    assert_eq!(next.env["DET_EXPERIMENT_ID"], c.to_string(), "the raised job starts next");

    // `aheadOf`: a fourth job jumps ahead of second (and takes its priority).
    let d = create(m, &token, "fourth", "").await;
    let job_d = job_id(m, &token, d).await;
    queue_until(m, &token, "fourth queued", |jobs| names(jobs).contains(&"fourth".to_owned())).await;
    let r = m.post("/api/v1/job-queues", Some(&token), json!({"updates": [{"jobId": job_d, "aheadOf": job_b}]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    queue_until(m, &token, "fourth ahead of second", |jobs| names(jobs) == ["third", "fourth", "second"]).await;
    agent.exit(&next, 0).await;
    let next = agent.next_start().await;
    assert_eq!(next.env["DET_EXPERIMENT_ID"], d.to_string(), "the moved job starts next");
    // `behindOf` back and forth is accepted for a queued job.
    let r = m.post("/api/v1/job-queues", Some(&token), json!({"updates": [{"jobId": job_b, "behindOf": job_d}]})).await;
    assert_eq!(r.status, 200, "{}", r.text);

    // Bad input names the field or the job, with the right status.
    let bad = [
        (json!({"updates": []}), 400, "updates"),
        (json!({"updates": [{"jobId": job_b, "priority": 0}]}), 400, "updates[0].priority"),
        (json!({"updates": [{"jobId": job_b, "priority": 100}]}), 400, "out of range"),
        (json!({"updates": [{"jobId": job_b, "weight": -1}]}), 400, "updates[0].weight"),
        (json!({"updates": [{"jobId": job_b, "priority": 5, "weight": 2}]}), 400, "only one"),
        (json!({"updates": [{"jobId": job_b}]}), 400, "set one of"),
        (json!({"updates": [{"jobId": "", "priority": 5}]}), 400, "updates[0].jobId"),
        (json!({"updates": [{"jobId": "no-such-job", "priority": 5}]}), 404, "no-such-job"),
        (json!({"updates": [{"jobId": job_b, "aheadOf": "no-such-job"}]}), 404, "no-such-job"),
        (json!({"updates": [{"jobId": job_b, "aheadOf": job_b.clone()}]}), 400, "itself"),
        (json!({"updates": [{"jobId": job_b, "resourcePool": "elsewhere"}]}), 400, "resourcePool"),
    ];
    for (body, status, reason) in bad {
        let r = m.post("/api/v1/job-queues", Some(&token), body.clone()).await;
        refused(&r, status, reason);
    }
    // Only the owner or an admin changes a job.
    let admin = m.login("admin", "").await;
    m.create_user(&admin, "someone-else", "Passw0rd-long").await;
    let other = m.login("someone-else", "Passw0rd-long").await;
    let r = m.post("/api/v1/job-queues", Some(&other), json!({"updates": [{"jobId": job_b, "priority": 1}]})).await;
    refused(&r, 403, "only its owner or an admin");
    let r = m.post("/api/v1/job-queues", Some(&admin), json!({"updates": [{"jobId": job_b, "priority": 30}]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = m.get("/api/v1/job-queues?states=STATE_BOGUS", Some(&token)).await;
    refused(&r, 400, "states");
    let r = m.get("/api/v1/job-queues?orderBy=sideways", Some(&token)).await;
    refused(&r, 400, "orderBy");
}

pub async fn a_job_that_cannot_fit_says_why(m: &TestMaster) {
    let token = m.login("determined", "").await;
    // No agent yet: the 8-slot experiment is accepted and waits.
    let id = create(m, &token, "big", "resources: {slots_per_trial: 8}\n").await;
    let jobs = queue_until(m, &token, "the big job waiting", |jobs| jobs.first().is_some_and(|j| j["waitReason"].is_string())).await;
    assert_eq!(jobs[0]["waitReason"], "no agents in resource pool default; start or enable an agent there");
    let _agent = FakeAgent::connect(m, "agent-1", 1).await;
    let want =
        "needs 8 slots at once; resource pool default has 1 usable in all (the largest agent has 1); lower slots_per_trial or add agents";
    queue_until(m, &token, "the pool-size reason", |jobs| jobs.first().is_some_and(|j| j["waitReason"] == want)).await;
    let r = m.get(&format!("/api/v1/experiments/{id}"), Some(&token)).await;
    assert_eq!(r.body["jobSummary"]["waitReason"], want, "{}", r.text);
    assert_eq!(r.body["jobSummary"]["state"], "STATE_QUEUED");
    // Once in the trial's logs, when it first became blocked.
    let trials = m.get(&format!("/api/v1/experiments/{id}/trials"), Some(&token)).await;
    let task_id = trials.body["trials"][0]["taskId"].as_str().unwrap_or_default().to_owned();
    let logs = m.store.task_logs(&task_id, &Default::default()).await.unwrap();
    let waits: Vec<&str> = logs.iter().map(|l| l.log.as_str()).filter(|l| l.contains("waiting for resources")).collect();
    assert_eq!(
        waits,
        ["waiting for resources in resource pool default: no agents in resource pool default; start or enable an agent there\n"]
    );
}

pub async fn experiment_resources_change_through_the_queue(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 4).await;
    // An adaptive search with four concurrent 1-slot trials, capped at 2 slots.
    let config = "name: capped\nentrypoint: python3 train.py\nresources: {max_slots: 2}\n\
                  searcher: {name: random, metric: loss, max_trials: 4, max_length: {batches: 10}}\n\
                  hyperparameters: {lr: {type: double, minval: 0.1, maxval: 1.0}}\n";
    let r = m.post("/api/v1/experiments", Some(&token), json!({"config": config, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["experiment"]["id"].as_i64().unwrap();
    let _one = agent.next_start().await;
    let _two = agent.next_start().await;
    let jobs = queue_until(m, &token, "max_slots reached", |jobs| {
        jobs.first().is_some_and(|j| j["waitReason"].as_str().is_some_and(|r| r.starts_with("max_slots")))
    })
    .await;
    assert_eq!(jobs[0]["waitReason"], "max_slots 2 reached (its job holds 2 slots)");
    assert_eq!((jobs[0]["allocatedSlots"].as_i64(), jobs[0]["requestedSlots"].as_i64()), (Some(2), Some(4)));
    // `det experiment set max-slots ID 3` lets one more start; priority and weight are stored.
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&token), json!({"resources": {"maxSlots": 3}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let _three = agent.next_start().await;
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&token), json!({"resources": {"priority": 7}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&token), json!({"resources": {"weight": 2.5}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let config = m.get(&format!("/api/v1/experiments/{id}"), Some(&token)).await.body["config"]["resources"].clone();
    assert_eq!((config["max_slots"].as_i64(), config["priority"].as_i64(), config["weight"].as_f64()), (Some(3), Some(7), Some(2.5)));
    queue_until(m, &token, "priority 7", |jobs| jobs.first().is_some_and(|j| j["priority"] == 7 && j["weight"] == 2.5)).await;
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&token), json!({"resources": {"priority": 0}})).await;
    refused(&r, 400, "resources.priority");
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&token), json!({"resources": {"maxSlots": 0}})).await;
    refused(&r, 400, "resources.maxSlots");
    // `det experiment set max-slots ID none` sends `maxSlots: null`: the cap goes, the fourth
    // trial starts, and the stored config says so; priority and weight stay as they were.
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&token), json!({"id": id, "resources": {"maxSlots": null}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body["experiment"]["config"]["resources"]["max_slots"].is_null(), "{}", r.text);
    let _four = agent.next_start().await;
    let config = m.get(&format!("/api/v1/experiments/{id}"), Some(&token)).await.body["config"]["resources"].clone();
    assert_eq!((config["max_slots"].is_null(), config["priority"].as_i64(), config["weight"].as_f64()), (true, Some(7), Some(2.5)));
}

pub async fn a_changed_priority_survives_a_master_restart(m: TestMaster) {
    let token = m.login("determined", "").await;
    let id = create(&m, &token, "kept", "").await;
    queue_until(&m, &token, "the job queued", |jobs| jobs.len() == 1).await;
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&token), json!({"resources": {"priority": 9}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    queue_until(&m, &token, "priority 9", |jobs| jobs.first().is_some_and(|j| j["priority"] == 9)).await;
    let m = m.restart().await;
    let token = m.login("determined", "").await;
    queue_until(&m, &token, "priority 9 after the restart", |jobs| jobs.first().is_some_and(|j| j["priority"] == 9 && j["name"] == "kept"))
        .await;
}

/// A job keeps its place in the queue between its allocations: an experiment moved ahead of
/// another (`POST /api/v1/job-queues` `aheadOf`) whose trial fails and restarts gets the slot
/// again before the other, instead of queueing anew at the back.
pub async fn a_moved_job_keeps_its_place_between_allocations(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let blocker = create(m, &token, "blocker", "").await;
    let running = agent.next_start().await;
    assert_eq!(running.env["DET_EXPERIMENT_ID"], blocker.to_string());
    let a = create(m, &token, "older", "").await;
    let b = create(m, &token, "moved", "max_restarts: 2\n").await;
    queue_until(m, &token, "both queued", |jobs| names(jobs) == ["blocker", "older", "moved"]).await;
    let (job_a, job_b) = (job_id(m, &token, a).await, job_id(m, &token, b).await);
    let r = m.post("/api/v1/job-queues", Some(&token), json!({"updates": [{"jobId": job_b, "aheadOf": job_a}]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    queue_until(m, &token, "moved ahead of older", |jobs| names(jobs) == ["blocker", "moved", "older"]).await;
    agent.exit(&running, 0).await;
    let first_run = agent.next_start().await;
    assert_eq!(first_run.env["DET_EXPERIMENT_ID"], b.to_string(), "the moved job starts first");
    // Its trial fails: the restart is a new allocation of the same job, still ahead of `older`.
    agent.exit(&first_run, 1).await;
    let second_run = agent.next_start().await;
    assert_eq!(
        (second_run.env["DET_EXPERIMENT_ID"].as_str(), second_run.env["DET_TRIAL_RUN_ID"].as_str()),
        (b.to_string().as_str(), "2"),
        "the restarted trial keeps its job's place ahead of `older`"
    );
    agent.exit(&second_run, 0).await;
    let last = agent.next_start().await;
    assert_eq!(last.env["DET_EXPERIMENT_ID"], a.to_string());
    agent.exit(&last, 0).await;
}

/// `det job update JOB --priority N` on a command's job is stored with the task, as `det command
/// set priority` is, so the task's later allocations (a generic task unpaused) queue with it.
pub async fn a_commands_job_priority_is_stored_with_the_task(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let r = m.post("/api/v1/commands", Some(&token), json!({"config": {"entrypoint": ["true"], "resources": {"slots": 1}}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let task_id = r.body["command"]["id"].as_str().unwrap().to_owned();
    let jobs = queue_until(m, &token, "the command queued", |jobs| jobs.len() == 1).await;
    let job = jobs[0]["jobId"].as_str().unwrap().to_owned();
    let r = m.post("/api/v1/job-queues", Some(&token), json!({"updates": [{"jobId": job, "priority": 17}]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    queue_until(m, &token, "priority 17", |jobs| jobs.first().is_some_and(|j| j["priority"] == 17)).await;
    assert_eq!(m.store.command_task_by_id(&task_id).await.unwrap().priority, Some(17), "stored with the task");
}
