//! Commands, notebooks, templates and generic tasks against [`FakeMaster`]: what the CLI sends,
//! what it prints, and its exit status.

use serde_json::{Value, json};

use super::Det;
use super::fake_master::FakeMaster;

const AUTH: [(&str, &str); 2] = [("DET_USER", "determined"), ("DET_USER_TOKEN", "fake-token")];
const CMD_A: &str = "7f1c2d3e-0000-4000-8000-000000000001";
const CMD_B: &str = "7f1c9999-0000-4000-8000-000000000002";
const CMD_C: &str = "a0000000-0000-4000-8000-000000000003";

/// A `v1Command`/`v1Notebook` as the master writes it.
fn task(id: &str, state: &str, exit_status: Option<&str>) -> Value {
    let mut t = json!({"id": id, "description": format!("Command ({})", &id[..4]), "state": state,
        "startTime": "2025-03-19T10:01:02Z", "container": null, "displayName": "", "userId": 1,
        "username": "determined", "resourcePool": "default", "jobId": "job", "workspaceId": 1,
        "serviceAddress": format!("/proxy/{id}/")});
    if let Some(s) = exit_status {
        t["exitStatus"] = json!(s);
    }
    t
}

/// `GET /api/v1/workspaces` as the master writes it.
fn workspaces() -> Value {
    json!({"workspaces": [{"id": 1, "name": "Uncategorized", "archived": false, "username": "admin", "immutable": true,
        "numProjects": 1, "pinned": false, "userId": 1, "numExperiments": 0, "state": "WORKSPACE_STATE_UNSPECIFIED",
        "errorMessage": "", "agentUserGroup": null, "checkpointStorageConfig": null, "defaultComputePool": "",
        "defaultAuxPool": ""}],
        "pagination": {"offset": 0, "limit": 0, "startIndex": 0, "endIndex": 1, "total": 1}})
}

fn log_lines(lines: &[&str]) -> String {
    lines
        .iter()
        .enumerate()
        .map(|(i, msg)| format!("{}\n", json!({"result": {"id": i.to_string(), "message": format!("{msg}\n"), "level": "LOG_LEVEL_INFO"}})))
        .collect()
}

fn posted(fake: &FakeMaster, path: &str) -> Value {
    let req = fake.requests().into_iter().rfind(|r| r.method == "POST" && r.target == path).expect("request sent");
    serde_json::from_str(&req.body).expect("JSON body")
}

#[test]
fn cmd_run_follows_logs_and_exits_with_the_commands_outcome() {
    let fake = FakeMaster::start();
    let det = Det::new(&fake.url);
    fake.json("POST", "/api/v1/commands", &json!({"command": task(CMD_A, "STATE_QUEUED", None), "config": {}, "warnings": []}));
    fake.route("GET", &format!("/api/v1/tasks/{CMD_A}/logs"), 200, log_lines(&["hello", "resources exited successfully"]));
    fake.json(
        "GET",
        &format!("/api/v1/commands/{CMD_A}"),
        &json!({"command": task(CMD_A, "STATE_TERMINATED", Some("resources exited successfully")), "config": {}}),
    );
    let out = det.ok_env(&["cmd", "run", "--config", "resources.slots=0", "echo", "-n", "hello"], "", &AUTH);
    assert_eq!(
        out,
        format!(
            "Launched command (id: {CMD_A}, name: Command (7f1c)).\nhello\nresources exited successfully\n\
             Task log stream ended. To reopen log stream, run: det task logs -f {CMD_A}\n"
        )
    );
    let body = posted(&fake, "/api/v1/commands");
    assert_eq!(body["config"], json!({"resources": {"slots": 0}, "entrypoint": ["echo", "-n", "hello"]}));
    assert_eq!(fake.queries(&format!("/api/v1/tasks/{CMD_A}/logs")), ["follow=true"]);

    // A failed command prints its log and fails the CLI.
    fake.json("POST", "/api/v1/commands", &json!({"command": task(CMD_B, "STATE_QUEUED", None), "config": {}}));
    fake.route("GET", &format!("/api/v1/tasks/{CMD_B}/logs"), 200, log_lines(&["boom", "resources failed with non-zero exit code"]));
    fake.json_sequence(
        "GET",
        &format!("/api/v1/commands/{CMD_B}"),
        &[
            json!({"command": task(CMD_B, "STATE_TERMINATING", None), "config": {}}),
            json!({"command": task(CMD_B, "STATE_TERMINATED", Some("resources failed with non-zero exit code: exit code 3")), "config": {}}),
        ],
    );
    let out = det.run(&["command", "run", "false"], "", &AUTH);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("\nboom\nresources failed with non-zero exit code\n"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("Error: command {CMD_B} failed: resources failed with non-zero exit code: exit code 3")), "{stderr}");

    // -d prints only the id and follows nothing.
    let before = fake.requests().len();
    assert_eq!(det.ok_env(&["cmd", "run", "-d", "sleep", "1"], "", &AUTH), format!("{CMD_B}\n"));
    assert_eq!(fake.requests().len(), before + 1);

    // The master's refusal is the error.
    fake.route(
        "POST",
        "/api/v1/commands",
        400,
        r#"{"error":{"code":3,"reason":"InvalidArgument","error":"resources.slots must be >= 0"}}"#,
    );
    let err = det.fails(&["cmd", "run", "true"], "", &AUTH);
    assert!(err.contains("resources.slots must be >= 0"), "{err}");
}

fn command_list(fake: &FakeMaster) {
    let list = json!({"commands": [
        task(CMD_B, "STATE_RUNNING", None),
        task(CMD_A, "STATE_TERMINATED", Some("resources exited successfully")),
        task(CMD_C, "STATE_QUEUED", None),
    ]});
    fake.json("GET", "/api/v1/commands", &list);
    fake.json("GET", "/api/v1/workspaces", &workspaces());
}

#[test]
fn cmd_list_describe_kill_expand_prefixes() {
    let fake = FakeMaster::start();
    let det = Det::new(&fake.url);
    command_list(&fake);

    let out = det.ok_env(&["cmd", "list"], "", &AUTH);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["id", "|", "username", "|", "description", "|", "state", "|", "exitStatus", "|", "resourcePool", "|", "workspaceName"]
    );
    assert_eq!(lines.len(), 5, "{out}");
    assert!(lines[2].contains("RUNNING") && lines[2].contains("N/A") && lines[2].contains("Uncategorized"), "{out}");
    assert!(lines[3].contains("resources exited successfully"), "{out}");
    assert_eq!(fake.queries("/api/v1/commands"), ["users=determined"]);
    assert_eq!(det.ok_env(&["cmd", "ls", "--all", "-q"], "", &AUTH), format!("{CMD_B}\n{CMD_A}\n{CMD_C}\n"));
    assert_eq!(fake.queries("/api/v1/commands").last().map(String::as_str), Some(""));
    let listed: Value = serde_json::from_str(&det.ok_env(&["cmd", "list", "--json"], "", &AUTH)).expect("json");
    assert_eq!(listed[0]["state"], "RUNNING");
    assert_eq!(listed[0]["workspaceName"], "Uncategorized");

    // Unique prefixes expand against the list; full ids are used as given.
    fake.json(
        "GET",
        &format!("/api/v1/commands/{CMD_C}"),
        &json!({"command": task(CMD_C, "STATE_QUEUED", None), "config": {"entrypoint": ["sleep", "9"]}}),
    );
    let described: Value = serde_json::from_str(&det.ok_env(&["cmd", "describe", "a0", "--json"], "", &AUTH)).expect("json");
    assert_eq!(described["id"], CMD_C);
    assert_eq!(described["state"], "QUEUED");
    assert_eq!(det.ok_env(&["cmd", "config", "a0"], "", &AUTH), "entrypoint:\n- sleep\n- '9'\n");

    fake.json("POST", &format!("/api/v1/commands/{CMD_C}/kill"), &json!({"command": null}));
    fake.json("POST", &format!("/api/v1/commands/{CMD_A}/kill"), &json!({"command": null}));
    let out = det.ok_env(&["cmd", "kill", "a0", CMD_A], "", &AUTH);
    assert_eq!(out, format!("Killed command {CMD_C}\nKilled command {CMD_A}\n"));
    let err = det.fails(&["cmd", "kill", "7f1c"], "", &AUTH);
    assert!(err.contains("partial UUID '7f1c' not unique"), "{err}");
    let err = det.fails(&["cmd", "kill", "beef"], "", &AUTH);
    assert!(err.contains("partial UUID 'beef' not found"), "{err}");

    // The first failure stops the rest, naming them.
    let out = det.run(&["cmd", "kill", CMD_B, CMD_A], "", &AUTH);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("Cowardly not killing {CMD_A}\n"));

    fake.json("POST", &format!("/api/v1/commands/{CMD_C}/set_priority"), &json!({"command": null}));
    assert_eq!(det.ok_env(&["cmd", "set", "priority", "a0", "42"], "", &AUTH), format!("Set priority of command {CMD_C} to 42\n"));
    assert_eq!(posted(&fake, &format!("/api/v1/commands/{CMD_C}/set_priority")), json!({"priority": 42}));

    // Bad flags are clap's errors (exit 2).
    assert_eq!(det.run(&["cmd", "list", "--sort-by", "nope"], "", &AUTH).status.code(), Some(2));
}

#[test]
fn notebook_start_detached_waits_until_ready() {
    let fake = FakeMaster::start();
    let det = Det::new(&fake.url);
    fake.json("POST", "/api/v1/notebooks", &json!({"notebook": task(CMD_A, "STATE_QUEUED", None), "config": {}, "warnings": []}));
    let allocation = |ready: Option<bool>| {
        let mut a = json!({"taskId": CMD_A, "allocationId": format!("{CMD_A}.1"), "state": "STATE_RUNNING", "slots": 0});
        if let Some(r) = ready {
            a["isReady"] = json!(r);
        }
        json!({"task": {"taskId": CMD_A, "taskType": "TASK_TYPE_NOTEBOOK", "startTime": "2025-03-19T10:01:02Z", "allocations": [a]}})
    };
    let path = format!("/api/v1/tasks/{CMD_A}");
    fake.json_sequence("GET", &path, &[allocation(None), allocation(Some(false)), allocation(Some(true))]);
    assert_eq!(det.ok_env(&["notebook", "start", "-d", "--config", "resources.slots=0"], "", &AUTH), format!("{CMD_A}\n"));
    let polls = fake.requests().iter().filter(|r| r.target == path).count();
    assert_eq!(polls, 3);
    assert_eq!(posted(&fake, "/api/v1/notebooks")["config"], json!({"resources": {"slots": 0}}));

    // Attached, it announces the proxied address.
    let out = det.ok_env(&["notebook", "start", "--no-browser"], "", &AUTH);
    assert!(out.ends_with(&format!("Jupyter Notebook is running at: {}/proxy/{CMD_A}/\n", fake.url)), "{out}");
    fake.json("GET", "/api/v1/notebooks", &json!({"notebooks": [task(CMD_A, "STATE_RUNNING", None)]}));
    fake.json("GET", &format!("/api/v1/notebooks/{CMD_A}"), &json!({"notebook": task(CMD_A, "STATE_RUNNING", None), "config": {}}));
    assert_eq!(det.ok_env(&["notebook", "open", "7f", "--no-browser"], "", &AUTH), format!("{}/proxy/{CMD_A}/\n", fake.url));

    // A notebook that ends before it is ready fails the start.
    let mut ended = allocation(None);
    ended["task"]["endTime"] = json!("2025-03-19T10:02:00Z");
    fake.json("GET", &path, &ended);
    let err = det.fails(&["notebook", "start", "-d"], "", &AUTH);
    assert!(err.contains("has been terminated"), "{err}");
}

#[test]
fn templates_set_describe_delete() {
    let fake = FakeMaster::start();
    let det = Det::new(&fake.url);
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("tpl.yaml");
    std::fs::write(&file, "resources:\n  slots: 2\n").expect("write");
    let file = file.display().to_string();

    // Unknown name: created with POST.
    fake.json("POST", "/api/v1/templates/gpu", &json!({"template": {"name": "gpu", "config": {}, "workspaceId": 0}}));
    assert_eq!(det.ok_env(&["template", "set", "gpu", &file], "", &AUTH), "Set template gpu\n");
    assert_eq!(posted(&fake, "/api/v1/templates/gpu"), json!({"name": "gpu", "config": {"resources": {"slots": 2}}, "workspaceId": 0}));

    // Known name: its config is replaced with PATCH.
    let stored = json!({"template": {"name": "gpu", "config": {"resources": {"slots": 2}}, "workspaceId": 1}});
    fake.json("GET", "/api/v1/templates/gpu", &stored);
    fake.json("PATCH", "/api/v1/templates/gpu", &stored);
    det.ok_env(&["tpl", "set", "gpu", &file], "", &AUTH);
    let patch = fake.requests().into_iter().find(|r| r.method == "PATCH").expect("patch");
    assert_eq!(serde_json::from_str::<Value>(&patch.body).expect("json"), json!({"resources": {"slots": 2}}));

    assert_eq!(det.ok_env(&["template", "describe", "gpu"], "", &AUTH), "resources:\n  slots: 2\n\n");
    fake.json(
        "GET",
        "/api/v1/templates",
        &json!({"templates": [stored["template"]], "pagination": {"offset": 0, "limit": 0, "startIndex": 0, "endIndex": 1, "total": 1}}),
    );
    fake.json("GET", "/api/v1/workspaces", &workspaces());
    let out = det.ok_env(&["template", "list"], "", &AUTH);
    assert!(out.lines().nth(2).is_some_and(|l| l.contains("gpu") && l.contains("Uncategorized")), "{out}");

    fake.json("DELETE", "/api/v1/templates/gpu", &json!({}));
    assert_eq!(det.ok_env(&["template", "delete", "gpu"], "", &AUTH), "Removed template gpu\n");
    let err = det.fails(&["template", "describe", "nope"], "", &AUTH);
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn generic_task_create_and_controls() {
    let fake = FakeMaster::start();
    let det = Det::new(&fake.url);
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("run.py"), "print(1)\n").expect("write");
    let cfg = dir.path().join("task.yaml");
    std::fs::write(&cfg, "entrypoint: python3 run.py\n").expect("write");
    let ctx = dir.path().display().to_string();
    fake.json("POST", "/api/v1/generic-tasks", &json!({"taskId": CMD_A, "warnings": []}));
    let out = det.ok_env(&["task", "create", &cfg.display().to_string(), &ctx, "--project_id", "3"], "", &AUTH);
    assert!(out.ends_with(&format!("Created task {CMD_A}\n")), "{out}");
    let body = posted(&fake, "/api/v1/generic-tasks");
    assert_eq!(body["config"], "entrypoint: python3 run.py\n");
    assert_eq!(body["projectId"], 3);
    let paths: Vec<&str> = body["contextDirectory"].as_array().expect("files").iter().filter_map(|f| f["path"].as_str()).collect();
    assert!(paths.contains(&"run.py"), "{paths:?}");

    for action in ["kill", "pause", "unpause"] {
        fake.json("POST", &format!("/api/v1/tasks/{CMD_A}/{action}"), &json!({}));
    }
    assert_eq!(det.ok_env(&["task", "kill", CMD_A], "", &AUTH), format!("Sucessfully killed task: {CMD_A}\n"));
    assert_eq!(posted(&fake, &format!("/api/v1/tasks/{CMD_A}/kill")), json!({"taskId": CMD_A, "killFromRoot": false}));
    assert_eq!(det.ok_env(&["task", "pause", CMD_A], "", &AUTH), format!("Paused task: {CMD_A}\n"));
    assert_eq!(det.ok_env(&["task", "unpause", CMD_A], "", &AUTH), format!("Unpaused task: {CMD_A}\n"));
}
