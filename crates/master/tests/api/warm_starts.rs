//! Warm starts from `searcher.source_trial_id` / `source_checkpoint_uuid`: the trial's harness
//! gets the checkpoint (`DET_LATEST_CHECKPOINT`, `trial.json`'s `latest_checkpoint`), its own
//! training clock starts at 0, the trial reports it as `warmStartCheckpointUuid`, and a source that
//! names nothing is refused at create.

use serde_json::{Value, json};

use crate::cluster_loop::FakeAgent;
use crate::harness::{Reply, TestMaster, assert_error};
use crate::runtime_support::{running_trial, task_post};

fn config(source: &str) -> String {
    format!(
        "name: warm\nentrypoint: python3 train.py\nsearcher: {{name: single, metric: loss, max_length: {{batches: 10}}, {source}}}\n\
         hyperparameters: {{lr: 0.1}}\n"
    )
}

async fn create(m: &TestMaster, token: &str, config: &str) -> Reply {
    m.post("/api/v1/experiments", Some(token), json!({"config": config, "modelDefinition": [], "activate": true})).await
}

pub async fn trials_start_from_the_source_checkpoint(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    // A finished trial with a checkpoint at batch 500.
    let source = running_trial(m, &admin, "source").await;
    let uuid = uuid::Uuid::new_v4().to_string();
    let body = json!({
        "allocationId": source.allocation_id, "taskId": source.trial.task_id, "uuid": uuid, "state": "STATE_COMPLETED",
        "metadata": {"steps_completed": 500}, "resources": {"model.pt": "64"}, "training": {},
    });
    let r = task_post(m, "/api/v1/checkpoints", &source.token, body).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    for source_key in [format!("source_trial_id: {}", source.trial.id), format!("source_checkpoint_uuid: {uuid}")] {
        let created = create(m, &admin, &config(&source_key)).await;
        assert_eq!(created.status, 200, "{source_key}: {}", created.text);
        let start = agent.next_start().await;
        assert_eq!(start.env.get("DET_LATEST_CHECKPOINT").map(String::as_str), Some(uuid.as_str()), "{source_key}");
        assert_eq!(start.env["DET_STEPS_COMPLETED"], "0", "{source_key}: a warm-started trial counts its own training");
        // The agent's harness shim puts DET_LATEST_CHECKPOINT into trial.json's latest_checkpoint.
        assert_eq!(start.harness_info["trial.json"]["steps_completed"], 0, "{source_key}");
        let trial_id = &start.env["DET_TRIAL_ID"];
        let trial = m.get(&format!("/api/v1/trials/{trial_id}"), Some(&admin)).await;
        assert_eq!(trial.body["trial"]["warmStartCheckpointUuid"], uuid.as_str(), "{source_key}: {}", trial.text);
        let exp_id = created.body["experiment"]["id"].as_i64().unwrap();
        let listed = m.get(&format!("/api/v1/experiments/{exp_id}/trials"), Some(&admin)).await;
        assert_eq!(listed.body["trials"][0]["warmStartCheckpointUuid"], uuid.as_str(), "{}", listed.text);
        agent.exit(&start, 0).await;
    }

    // A trial started from scratch has none.
    let created = create(m, &admin, &config("smaller_is_better: true")).await;
    assert_eq!(created.status, 200, "{}", created.text);
    let start = agent.next_start().await;
    assert!(!start.env.contains_key("DET_LATEST_CHECKPOINT"));
    let trial = m.get(&format!("/api/v1/trials/{}", start.env["DET_TRIAL_ID"]), Some(&admin)).await;
    assert!(trial.body["trial"].get("warmStartCheckpointUuid").is_none_or(Value::is_null), "{}", trial.text);
}

pub async fn unknown_sources_are_refused_at_create(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let r = create(m, &admin, &config("source_trial_id: 987654")).await;
    refused(&r, "searcher.source_trial_id: trial 987654 not found");
    let bare = running_trial(m, &admin, "no-checkpoint").await;
    let r = create(m, &admin, &config(&format!("source_trial_id: {}", bare.trial.id))).await;
    refused(&r, &format!("searcher.source_trial_id: trial {} has no completed checkpoint to start from", bare.trial.id));
    let missing = uuid::Uuid::new_v4();
    let r = create(m, &admin, &config(&format!("source_checkpoint_uuid: {missing}"))).await;
    refused(&r, &format!("searcher.source_checkpoint_uuid: checkpoint \"{missing}\" not found"));
    let r = create(m, &admin, &config("source_checkpoint_uuid: not-a-uuid")).await;
    refused(&r, "searcher.source_checkpoint_uuid: checkpoint \"not-a-uuid\" not found");
}

fn refused(r: &Reply, message: &str) {
    assert_error(r, 400, "InvalidArgument");
    assert_eq!(r.body["error"]["error"], message, "{}", r.text);
}
