//! Which Unix account the loop tells the agent to run a task as (`StartTask.run_as`): the
//! owner's linked agent user, else `security.default_task_user` (nobody by default, never root),
//! decided when the allocation starts; trials also get their checkpoint storage prepared.

use resolute_api::agent_protocol::{AgentUnixUser, TaskDir};
use serde_json::json;

use crate::cluster_loop::FakeAgent;
use crate::harness::TestMaster;

const CONFIG: &str = "name: as-owner\nentrypoint: model_def:Trial\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n\
                      checkpoint_storage: {type: shared_fs, host_path: /srv/ckpt}\n";

pub async fn tasks_run_as_their_owners_agent_user(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 2).await;

    // Not linked: the unprivileged default.
    let r = m.post("/api/v1/experiments", Some(&token), json!({"config": CONFIG, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let start = agent.next_start().await;
    assert_eq!(start.run_as, Some(AgentUnixUser { user: "nobody".into(), uid: 65534, group: "nogroup".into(), gid: 65534 }));
    let (experiment, trial) = (&start.env["DET_EXPERIMENT_ID"], &start.env["DET_TRIAL_ID"]);
    let cluster = &start.env["DET_CLUSTER_ID"];
    assert_eq!(
        start.task_dirs,
        [
            TaskDir { path: "/srv/ckpt".into(), shared: true },
            TaskDir { path: format!("/srv/ckpt/{cluster}/tensorboard/experiment/{experiment}/trial/{trial}"), shared: false },
        ]
    );
    agent.exit(&start, 0).await;

    // Linked: every later task of the user runs as the link.
    let me = m.get("/api/v1/me", Some(&token)).await.body["user"]["id"].as_i64().unwrap();
    let link = json!({"agentUserGroup": {"agentUid": 20001, "agentGid": 20002, "agentUser": "det", "agentGroup": "ml"}});
    let r = m.patch(&format!("/api/v1/users/{me}"), Some(&admin), link).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = m.post("/api/v1/commands", Some(&token), json!({"config": {"entrypoint": ["id", "-u"], "resources": {"slots": 1}}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let start = agent.next_start().await;
    assert_eq!(start.task_type, "COMMAND");
    assert_eq!(start.run_as, Some(AgentUnixUser { user: "det".into(), uid: 20001, group: "ml".into(), gid: 20002 }));
    assert!(start.task_dirs.is_empty());

    // A shell's sshd runs as that account too, so `det shell open` logs in as it.
    let r = m.post("/api/v1/shells", Some(&token), json!({"config": {"resources": {"slots": 0}}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["shell"]["id"].as_str().unwrap().to_owned();
    let shell = m.get(&format!("/api/v1/shells/{id}"), Some(&token)).await;
    assert_eq!(shell.body["shell"]["agentUserGroup"]["user"], "det", "{}", shell.text);
    assert_eq!(agent.next_start().await.run_as.map(|u| u.uid), Some(20001));
}
