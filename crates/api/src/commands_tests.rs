//! Payloads below are what the upstream bindings' `to_json` writes for these messages.

use super::*;

const BASE: &str = r#""description": "Command (lively-owl)", "id": "7f1c2d3e-0000-4000-8000-000000000001",
    "jobId": "job-1", "resourcePool": "default", "startTime": "2025-03-19T10:01:02.123456Z",
    "state": "STATE_RUNNING", "username": "determined", "workspaceId": 1,
    "container": {"id": "c1", "state": "STATE_RUNNING", "devices": [{"brand": "cpu", "id": 0,
    "type": "TYPE_CPU", "uuid": "u"}], "parent": "agent-1", "permissionDenied": null},
    "displayName": "", "userId": 2"#;

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(json: &str) -> (T, Value) {
    let parsed: T = serde_json::from_str(json).unwrap();
    let written = serde_json::to_value(&parsed).unwrap();
    let again: T = serde_json::from_value(written.clone()).unwrap();
    assert_eq!(again, parsed);
    (parsed, written)
}

#[test]
fn launch_command_response_round_trips() {
    let json = format!(
        r#"{{"command": {{{BASE}, "exitStatus": "resources exited successfully"}},
        "config": {{"entrypoint": ["echo", "hi"]}}, "warnings": ["LAUNCH_WARNING_CURRENT_SLOTS_EXCEEDED"]}}"#
    );
    let (resp, written): (LaunchCommandResponse, _) = round_trip(&json);
    let base = resp.command.base();
    assert_eq!(base.state, TaskState::Running);
    assert_eq!(base.exit_status.as_deref(), Some("resources exited successfully"));
    assert_eq!(base.container.as_ref().unwrap().state, ContainerState::Running);
    assert_eq!(resp.warnings, vec![LaunchWarning::CurrentSlotsExceeded]);
    // Flattened, camelCase, and every field the bindings index directly is present.
    let cmd = &written["command"];
    for key in ["id", "description", "state", "startTime", "username", "resourcePool", "jobId", "workspaceId"] {
        assert!(cmd.get(key).is_some(), "{key} missing from {cmd}");
    }
    assert_eq!(cmd["startTime"], "2025-03-19T10:01:02.123456Z");
    assert!(cmd.get("base").is_none());
    assert!(cmd["container"].get("permissionDenied").is_none());
}

#[test]
fn running_task_omits_exit_status_and_emits_null_container() {
    let json = format!(
        r#"{{"shell": {{{BASE}, "exitStatus": null, "privateKey": "PEM", "publicKey": "ssh-rsa AAA",
        "agentUserGroup": null, "addresses": [{{"containerPort": 22}}]}}, "config": {{}}}}"#
    );
    let (mut resp, written): (GetShellResponse, _) = round_trip(&json);
    assert!(written["shell"].get("exitStatus").is_none());
    assert_eq!(written["shell"]["agentUserGroup"], Value::Null);
    assert_eq!(resp.shell.private_key, "PEM");
    assert_eq!(resp.shell.addresses.len(), 1);
    resp.shell.base.container = None;
    let written = serde_json::to_value(&resp).unwrap();
    assert_eq!(written["shell"]["container"], Value::Null);
}

#[test]
fn list_responses_are_keyed_by_plural() {
    let json = format!(r#"{{"tensorboards": [{{{BASE}, "experimentIds": [3], "serviceAddress": "/proxy/x/", "trialIds": []}}]}}"#);
    let (resp, written): (GetTensorboardsResponse, _) = round_trip(&json);
    assert_eq!(resp.tensorboards[0].experiment_ids, vec![3]);
    assert_eq!(resp.pagination, None);
    assert_eq!(written["tensorboards"][0]["serviceAddress"], "/proxy/x/");
    let (_, written): (GetCommandsResponse, _) =
        round_trip(r#"{"commands": [], "pagination": {"offset": 0, "limit": 0, "startIndex": 0, "endIndex": 0, "total": 0}}"#);
    assert_eq!(written["pagination"]["total"], 0);
}

#[test]
fn launch_requests_read_what_the_cli_sends() {
    let json = r#"{"config": {"entrypoint": ["ls"]}, "data": "e30=", "files": [{"content": "eA==", "gid": 0,
        "mode": 420, "mtime": 1, "path": "a", "type": 48, "uid": 0}], "workspaceId": 0}"#;
    let (req, written): (LaunchCommandRequest, _) = round_trip(json);
    assert_eq!(req.files[0].mtime, 1);
    assert_eq!(req.workspace_id, Some(0));
    assert!(written.get("templateName").is_none());
    assert_eq!(written["files"][0]["mtime"], "1");

    let json = r#"{"config": {"x": 1}, "experimentIds": [1, 2], "filters": {"states": ["STATE_ACTIVE"]}}"#;
    let (req, _): (LaunchTensorboardRequest, _) = round_trip(json);
    assert_eq!(req.experiment_ids, vec![1, 2]);
    assert_eq!(req.filters.unwrap().states, vec![ExperimentState::Active]);
    // `det tensorboard start 2`, as upstream's bindings write it.
    let json = r#"{"config": {}, "experimentIds": [2], "files": [], "trialIds": null, "workspaceId": null}"#;
    let req: LaunchTensorboardRequest = serde_json::from_str(json).unwrap();
    assert_eq!((req.experiment_ids, req.trial_ids, req.workspace_id), (vec![2], vec![], None));

    let (req, _): (LaunchNotebookRequest, _) = round_trip(r#"{"template_name": "t", "preview": true}"#);
    assert_eq!(req.template_name.as_deref(), Some("t"));
}

#[test]
fn kill_and_priority_shapes() {
    let (resp, written): (KillNotebookResponse, _) = round_trip(r#"{"notebook": null}"#);
    assert_eq!(resp.notebook, None);
    assert_eq!(written, serde_json::json!({"notebook": null}));
    let (req, _): (SetCommandPriorityRequest, _) = round_trip(r#"{"commandId": "x", "priority": 5}"#);
    assert_eq!((req.command_id.as_deref(), req.priority), (Some("x"), Some(5)));
}

#[test]
fn list_query_parses_repeated_keys() {
    let q: GetNtscQuery =
        serde_json::from_value(serde_json::json!({"users": ["a", "b"], "workspaceId": 3, "sortBy": "SORT_BY_ID"})).unwrap();
    assert_eq!(q.users, vec!["a", "b"]);
    assert_eq!((q.workspace_id, q.sort_by), (Some(3), Some(NtscSortBy::Id)));
}
