//! Changing experiments: state actions, archiving, deletion, labels, PATCH, permissions.

use serde_json::{Value, json};

use crate::experiments::{create, minimal_yaml};
use crate::harness::{TestMaster, assert_error};

async fn state(m: &TestMaster, token: &str, id: i64) -> Value {
    let r = m.get(&format!("/api/v1/experiments/{id}"), Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["experiment"].clone()
}

/// Waits for the loop to settle the experiment in `want`.
async fn settled(m: &TestMaster, token: &str, id: i64, want: &str) -> Value {
    for _ in 0..200 {
        let exp = state(m, token, id).await;
        if exp["state"] == want {
            return exp;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("experiment {id} never reached {want}: {}", state(m, token, id).await);
}

async fn act(m: &TestMaster, token: &str, id: i64, action: &str) -> crate::harness::Reply {
    m.post(&format!("/api/v1/experiments/{id}/{action}"), Some(token), json!({})).await
}

pub async fn state_transitions_follow_upstream(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = create(m, &admin, &minimal_yaml("states"), true).await;
    // Active, and with no agent its trial waits for slots: QUEUED, as upstream shows it.
    for (action, expected) in
        [("pause", "STATE_PAUSED"), ("pause", "STATE_PAUSED"), ("activate", "STATE_QUEUED"), ("activate", "STATE_QUEUED")]
    {
        let r = act(m, &admin, id, action).await;
        assert_eq!(r.status, 200, "{action}: {}", r.text);
        assert_eq!(r.body, json!({}));
        settled(m, &admin, id, expected).await;
    }
    // No agent, so the trial never started: the cancel settles in CANCELED, with an end time.
    assert_eq!(act(m, &admin, id, "cancel").await.status, 200);
    let exp = settled(m, &admin, id, "STATE_CANCELED").await;
    assert!(exp["endTime"].is_string(), "{exp}");
    for action in ["activate", "pause"] {
        let r = act(m, &admin, id, action).await;
        assert_error(&r, 400, "FailedPrecondition");
        assert!(r.text.contains("STATE_CANCELED"), "{}", r.text);
    }
    // Stopping a stopped experiment changes nothing, as upstream.
    assert_eq!(act(m, &admin, id, "kill").await.status, 200);
    assert_eq!(act(m, &admin, id, "cancel").await.status, 200);
    assert_eq!(state(m, &admin, id).await["state"], "STATE_CANCELED");

    let killed = create(m, &admin, &minimal_yaml("killed"), false).await;
    assert_eq!(act(m, &admin, killed, "kill").await.status, 200);
    assert_eq!(state(m, &admin, killed).await["state"], "STATE_CANCELED", "kill also ends in CANCELED");

    assert_error(&act(m, &admin, 999, "pause").await, 404, "NotFound");
    assert_error(&act(m, &admin, 0, "archive").await, 404, "NotFound");
    assert_error(&m.post("/api/v1/experiments/abc/pause", Some(&admin), json!({})).await, 400, "InvalidArgument");
}

pub async fn archive_and_delete_only_finished_experiments(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = create(m, &admin, &minimal_yaml("arch"), true).await;
    let r = act(m, &admin, id, "archive").await;
    assert_error(&r, 400, "FailedPrecondition");
    assert!(r.text.contains("STATE_QUEUED"), "{}", r.text);
    assert_error(&m.delete(&format!("/api/v1/experiments/{id}"), Some(&admin)).await, 400, "FailedPrecondition");

    act(m, &admin, id, "cancel").await;
    settled(m, &admin, id, "STATE_CANCELED").await;
    for _ in 0..2 {
        assert_eq!(act(m, &admin, id, "archive").await.status, 200);
        assert_eq!(state(m, &admin, id).await["archived"], true);
    }
    let listed = m.get("/api/v1/experiments?archived=false", Some(&admin)).await;
    assert_eq!(listed.body["pagination"]["total"], 0, "{}", listed.text);
    let listed = m.get("/api/v1/experiments?archived=true", Some(&admin)).await;
    assert_eq!(listed.body["pagination"]["total"], 1, "{}", listed.text);
    assert_eq!(act(m, &admin, id, "unarchive").await.status, 200);
    assert_eq!(state(m, &admin, id).await["archived"], false);

    let r = m.delete(&format!("/api/v1/experiments/{id}"), Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_error(&m.get(&format!("/api/v1/experiments/{id}"), Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get(&format!("/api/v1/experiments/{id}/model_def"), Some(&admin)).await, 404, "NotFound");
    assert_error(&m.delete(&format!("/api/v1/experiments/{id}"), Some(&admin)).await, 404, "NotFound");
}

pub async fn labels_and_patch(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let yaml = format!("{}labels: [seed]\ndescription: first\n", minimal_yaml("labelled"));
    let id = create(m, &admin, &yaml, true).await;
    let exp = state(m, &admin, id).await;
    assert_eq!(exp["labels"], json!(["seed"]));
    assert_eq!(exp["description"], "first");

    for (label, expected) in
        [("a", json!(["seed", "a"])), ("my label", json!(["seed", "a", "my label"])), ("a", json!(["seed", "a", "my label"]))]
    {
        let r = m.put(&format!("/api/v1/experiments/{id}/labels/{}", label.replace(' ', "%20")), Some(&admin)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["labels"], expected);
    }
    let r = m.delete(&format!("/api/v1/experiments/{id}/labels/seed"), Some(&admin)).await;
    assert_eq!(r.body["labels"], json!(["a", "my label"]));
    let r = m.delete(&format!("/api/v1/experiments/{id}/labels/absent"), Some(&admin)).await;
    assert_eq!(r.body["labels"], json!(["a", "my label"]));

    // `det experiment label add`: the experiment's own fields sent back with one more label.
    let mut patch = json!({"id": id, "name": exp["name"], "description": exp["description"], "notes": exp["notes"]});
    patch["labels"] = json!(["a", "my label", "cli"]);
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&admin), patch).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["experiment"]["labels"], json!(["a", "my label", "cli"]));
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&admin), json!({"name": "renamed", "notes": "n", "description": "d"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let exp = state(m, &admin, id).await;
    assert_eq!((exp["name"].as_str(), exp["notes"].as_str(), exp["description"].as_str()), (Some("renamed"), Some("n"), Some("d")));
    assert_eq!(exp["labels"], json!(["a", "my label", "cli"]), "labels untouched when absent");

    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&admin), json!({"name": "  "})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&admin), json!({"labels": [1, 2]})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("labels"), "{}", r.text);
    // `det experiment set max-slots`: the job's cap, kept in the stored config.
    let r = m.patch(&format!("/api/v1/experiments/{id}"), Some(&admin), json!({"resources": {"maxSlots": 4}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["experiment"]["config"]["resources"]["max_slots"], 4, "{}", r.text);
    let r = m.get("/api/v1/experiments?labels=cli&labels=a&name=RENAMED", Some(&admin)).await;
    assert_eq!(r.body["pagination"]["total"], 1, "{}", r.text);
}

pub async fn only_owner_or_admin_can_change(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    m.create_user(&admin, "alice", "Alice123").await;
    m.create_user(&admin, "bob", "Bob12345").await;
    let alice = m.login("alice", "Alice123").await;
    let bob = m.login("bob", "Bob12345").await;
    let id = create(m, &alice, &minimal_yaml("alices"), true).await;
    assert_eq!(state(m, &alice, id).await["username"], "alice");

    for action in ["pause", "activate", "cancel", "kill", "archive", "unarchive"] {
        let r = act(m, &bob, id, action).await;
        assert_error(&r, 403, "PermissionDenied");
        assert!(r.text.contains("alice"), "{}", r.text);
    }
    assert_error(&m.patch(&format!("/api/v1/experiments/{id}"), Some(&bob), json!({"name": "mine"})).await, 403, "PermissionDenied");
    assert_error(&m.put(&format!("/api/v1/experiments/{id}/labels/x"), Some(&bob)).await, 403, "PermissionDenied");
    assert_error(&m.delete(&format!("/api/v1/experiments/{id}/labels/x"), Some(&bob)).await, 403, "PermissionDenied");
    assert_error(&m.delete(&format!("/api/v1/experiments/{id}"), Some(&bob)).await, 403, "PermissionDenied");
    // Reading is open to everyone.
    assert_eq!(m.get(&format!("/api/v1/experiments/{id}"), Some(&bob)).await.status, 200);
    assert_eq!(m.get(&format!("/api/v1/experiments/{id}/model_def"), Some(&bob)).await.status, 200);
    assert_eq!(m.get(&format!("/api/v1/experiments/{id}/trials"), Some(&bob)).await.status, 200);
    assert_eq!(state(m, &bob, id).await["state"], "STATE_QUEUED", "untouched");
    // The owner and admins can.
    assert_eq!(act(m, &alice, id, "pause").await.status, 200);
    assert_eq!(m.patch(&format!("/api/v1/experiments/{id}"), Some(&admin), json!({"name": "adm"})).await.status, 200);
    assert_eq!(act(m, &admin, id, "kill").await.status, 200);
    // The loop settles STOPPING_KILLED into CANCELED; only a finished experiment can be deleted.
    settled(m, &alice, id, "STATE_CANCELED").await;
    assert_eq!(m.delete(&format!("/api/v1/experiments/{id}"), Some(&alice)).await.status, 200);
    assert_error(&m.get("/api/v1/experiments", None).await, 401, "Unauthenticated");
}
