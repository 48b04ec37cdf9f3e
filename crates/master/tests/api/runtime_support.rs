//! Seeding for the trial runtime tests: an experiment, a trial with its task, a running
//! allocation and its token, as the cluster loop would create them; and requests that
//! authenticate as the harness does (`Grpc-Metadata-x-allocation-token`).

use resolute_api::agent_protocol::StartTask;
use resolute_master::auth::allocation_tokens::issue_allocation_token;
use resolute_store::{NewAllocation, NewTask, NewTrial, TrialRecord, db_now};
use serde_json::{Value, json};

use crate::harness::{Reply, TestMaster};

pub const TOKEN_HEADER: &str = "Grpc-Metadata-x-allocation-token";

/// A trial running in its first allocation.
pub struct RunningTrial {
    pub experiment_id: i32,
    pub trial: TrialRecord,
    pub allocation_id: String,
    pub token: String,
}

/// The YAML of the experiments the runtime tests run: validation_loss, smaller is better.
pub fn runtime_yaml(name: &str) -> String {
    format!(
        "name: {name}\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: validation_loss\n  smaller_is_better: true\n  max_length: 100\n"
    )
}

/// Creates a paused experiment (so no loop starts trials for it) and seeds one running trial.
pub async fn running_trial(m: &TestMaster, user_token: &str, name: &str) -> RunningTrial {
    let r = m
        .post("/api/v1/experiments", Some(user_token), json!({"config": runtime_yaml(name), "modelDefinition": [], "activate": false}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let experiment_id = i32::try_from(r.body["experiment"]["id"].as_i64().unwrap()).unwrap();
    let task_id = format!("{experiment_id}.{}", uuid::Uuid::new_v4());
    let now = db_now();
    m.store
        .create_task(NewTask {
            task_id: task_id.clone(),
            task_type: "TASK_TYPE_TRIAL".into(),
            start_time: now,
            job_id: None,
            owner_id: None,
        })
        .await
        .unwrap();
    let trial = m
        .store
        .create_trial(NewTrial {
            experiment_id,
            request_id: uuid::Uuid::new_v4().to_string(),
            task_id: task_id.clone(),
            state: "STATE_ACTIVE".into(),
            hparams: json!({"lr": 0.1, "layers": {"hidden": 64}}),
            seed: 42,
            start_time: now,
        })
        .await
        .unwrap();
    let allocation_id = format!("{task_id}.{}", trial.run_id);
    m.store
        .create_allocation(NewAllocation {
            allocation_id: allocation_id.clone(),
            task_id,
            state: "STATE_RUNNING".into(),
            slots: 1,
            resource_pool: "default".into(),
            agent_id: Some("agent-1".into()),
            start_time: now,
        })
        .await
        .unwrap();
    let token = issue_allocation_token(m.store.as_ref(), &allocation_id).await.unwrap();
    RunningTrial { experiment_id, trial, allocation_id, token }
}

fn url(m: &TestMaster, path: &str) -> String {
    format!("{}{}", m.base, path)
}

/// A GET authenticated with an allocation token.
pub async fn task_get(m: &TestMaster, path: &str, token: &str) -> Reply {
    m.send(m.http.get(url(m, path)).header(TOKEN_HEADER, format!("Bearer {token}"))).await
}

/// A POST with a JSON body authenticated with an allocation token.
pub async fn task_post(m: &TestMaster, path: &str, token: &str, body: Value) -> Reply {
    m.send(m.http.post(url(m, path)).header(TOKEN_HEADER, format!("Bearer {token}")).json(&body)).await
}

/// A POST with a raw body (as `det.util.json_encode` produces) authenticated with a token.
pub async fn task_post_raw(m: &TestMaster, path: &str, token: &str, body: &str) -> Reply {
    m.send(m.http.post(url(m, path)).header(TOKEN_HEADER, format!("Bearer {token}")).body(body.to_owned())).await
}

pub async fn task_patch(m: &TestMaster, path: &str, token: &str, body: Value) -> Reply {
    m.send(m.http.patch(url(m, path)).header(TOKEN_HEADER, format!("Bearer {token}")).json(&body)).await
}

/// The body `core.train.report_*_metrics` posts.
pub fn metrics_body(trial_id: i32, run_id: i32, group: &str, steps: i64, avg: Value) -> Value {
    json!({
        "group": group,
        "metrics": {
            "trialId": trial_id,
            "trialRunId": run_id,
            "stepsCompleted": steps,
            "reportTime": "2025-03-19T10:05:00.000000+00:00",
            "metrics": {"avgMetrics": avg, "batchMetrics": null},
        },
    })
}

/// Reports a validation from the task `start` launched, as the harness would, expecting 200.
pub async fn report_validation(m: &TestMaster, start: &StartTask, batches: i64, loss: f64) {
    let trial: i32 = start.env["DET_TRIAL_ID"].parse().unwrap();
    let run: i32 = start.env["DET_TRIAL_RUN_ID"].parse().unwrap();
    let body = metrics_body(trial, run, "validation", batches, json!({"loss": loss, "batches": batches}));
    let r = task_post(m, &format!("/api/v1/trials/{trial}/metrics"), &start.env["DET_SESSION_TOKEN"], body).await;
    assert_eq!(r.status, 200, "{}", r.text);
}
