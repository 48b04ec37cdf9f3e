//! Commands whose master endpoints are still being written (logs, tasks, agents, checkpoint
//! download, following a new experiment), against [`FakeMaster`]. Expected tables in
//! `fixtures/` were printed by upstream's own CLI functions from the same data
//! (`fixtures/gen_expected.py`).

use std::io::Write;

use serde_json::{Value, json};

use super::Det;
use super::fake_master::FakeMaster;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/fixtures");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).expect("fixture")
}

/// A token from the environment: no login round trip against the fake.
const AUTH: [(&str, &str); 2] = [("DET_USER", "determined"), ("DET_USER_TOKEN", "fake-token")];

fn cluster() -> FakeMaster {
    let fake = FakeMaster::start();
    let data: Value = serde_json::from_str(&fixture("data.json")).expect("data.json");
    fake.json("GET", "/api/v1/agents", &data["agents"]);
    fake.json("GET", "/api/v1/tasks", &data["tasks"]);
    fake
}

fn log_lines(entries: &[(&str, &str)]) -> String {
    entries
        .iter()
        .map(|(id, msg)| format!("{}\n", json!({"result": {"id": id, "message": msg, "level": "LOG_LEVEL_INFO", "trialId": 7}})))
        .collect()
}

#[test]
fn agent_slot_and_task_lists_match_upstream() {
    let fake = cluster();
    let det = Det::new(&fake.url);
    assert_eq!(det.ok_env(&["agent", "list"], "", &AUTH), fixture("agents.txt"));
    assert_eq!(det.ok_env(&["agent", "list", "--json"], "", &AUTH), fixture("agents.json"));
    assert_eq!(det.ok_env(&["slot", "list"], "", &AUTH), fixture("slots.txt"));
    assert_eq!(det.ok_env(&["slot", "ls", "--json"], "", &AUTH), fixture("slots.json"));
    assert_eq!(det.ok_env(&["task", "list"], "", &AUTH), fixture("tasks.txt"));
    assert_eq!(det.ok_env(&["task", "--json"], "", &AUTH).len(), det.ok_env(&["task", "list", "--json"], "", &AUTH).len());
    assert_eq!(det.ok_env(&["task", "list", "--csv"], "", &AUTH), fixture("tasks.csv"));
    let tasks: Value = serde_json::from_str(&det.ok_env(&["task", "list", "--json"], "", &AUTH)).expect("json");
    assert_eq!(tasks["3.abc.1"]["name"], "Trial 3 (Experiment 2)");
    assert!(fake.requests().iter().all(|r| r.method == "GET"));
}

#[test]
fn trial_and_task_logs_stream_messages() {
    let fake = FakeMaster::start();
    fake.route("GET", "/api/v1/trials/7/logs", 200, log_lines(&[("1", "epoch 1\n"), ("2", "epoch 2\n")]));
    let det = Det::new(&fake.url);
    let out = det.ok_env(&["trial", "logs", "7"], "", &AUTH);
    assert_eq!(out, "epoch 1\nepoch 2\nTrial log stream ended. To reopen log stream, run: det trial logs -f 7\n");
    assert_eq!(fake.queries("/api/v1/trials/7/logs"), ["follow=false"]);

    // --tail asks for the newest first and prints them oldest first.
    fake.route("GET", "/api/v1/trials/7/logs", 200, log_lines(&[("9", "last\n"), ("8", "before\n")]));
    let out = det.ok_env(&["trial", "logs", "7", "--tail", "2", "--level", "WARNING", "--rank-id", "0"], "", &AUTH);
    assert!(out.starts_with("before\nlast\n"), "{out}");
    let q = fake.queries("/api/v1/trials/7/logs").pop().unwrap_or_default();
    assert_eq!(
        q,
        "follow=false&levels=LOG_LEVEL_WARNING&levels=LOG_LEVEL_ERROR&levels=LOG_LEVEL_CRITICAL&limit=2&orderBy=ORDER_BY_DESC&rankIds=0"
    );
    let err = det.fails(&["trial", "logs", "7", "-f", "--head", "2"], "", &AUTH);
    assert!(err.contains("at most one of head, tail, or follow"), "{err}");

    // JSON mode prints each entry; task logs end with the task's reopen hint.
    fake.route("GET", "/api/v1/tasks/abc/logs", 200, log_lines(&[("1", "hello\n")]));
    let out = det.ok_env(&["task", "logs", "abc", "--json", "-f", "--allocation-id", "abc.1"], "", &AUTH);
    let (first, rest) = out.split_once("\n}\n").expect("a JSON object");
    let entry: Value = serde_json::from_str(&format!("{first}\n}}")).expect("entry");
    assert_eq!(entry["message"], "hello\n");
    assert_eq!(rest, "Task log stream ended. To reopen log stream, run: det task logs -f abc\n");
    assert_eq!(fake.queries("/api/v1/tasks/abc/logs"), ["allocationIds=abc.1&follow=true"]);

    // An error object inside the stream is the command's error.
    fake.route("GET", "/api/v1/trials/8/logs", 200, "{\"error\":{\"code\":5,\"message\":\"trial 8 not found\"}}\n");
    let err = det.fails(&["trial", "logs", "8"], "", &AUTH);
    assert!(err.contains("trial 8 not found"), "{err}");
    let fake404 = det.fails(&["trial", "logs", "9"], "", &AUTH);
    assert!(fake404.contains("not found"), "{fake404}");
}

fn tar_gz(files: &[(&str, &str)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (path, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, path, content.as_bytes()).expect("append");
    }
    tar.into_inner().expect("tar").finish().expect("gzip")
}

#[test]
fn checkpoint_download_through_the_master_and_describe() {
    let fake = FakeMaster::start();
    let uuid = "6f1c0000-0000-4000-8000-000000000001";
    let checkpoint = json!({"checkpoint": {
        "uuid": uuid, "state": "STATE_COMPLETED", "reportTime": "2025-03-19T10:05:01Z",
        "resources": {"metadata.json": "20", "model/": "0", "model/w.bin": "7"},
        "metadata": {"steps_completed": 500},
        "training": {"trialId": 3, "experimentId": 2, "experimentConfig": {"checkpoint_storage": {"type": "s3", "bucket": "b"}},
                     "validationMetrics": {"avgMetrics": {"loss": 0.25}}}}});
    fake.json("GET", &format!("/api/v1/checkpoints/{uuid}"), &checkpoint);
    fake.route(
        "GET",
        &format!("/checkpoints/{uuid}"),
        200,
        tar_gz(&[("model/w.bin", "weights"), ("metadata.json", "{\"steps_completed\": 500}")]),
    );
    let det = Det::new(&fake.url);
    let dir = tempfile::tempdir().expect("dir");
    let out_dir = dir.path().join("ck");
    let out_arg = out_dir.display().to_string();
    let out = det.ok_env(&["checkpoint", "download", uuid, "-o", &out_arg, "-q"], "", &AUTH);
    assert_eq!(out, format!("{out_arg}\n"));
    assert_eq!(std::fs::read_to_string(out_dir.join("model/w.bin")).expect("file"), "weights");
    let download = fake.requests().into_iter().find(|r| r.target == format!("/checkpoints/{uuid}")).expect("download request");
    assert_eq!(download.method, "GET");

    // Upstream's describe table, byte for byte.
    assert_eq!(det.ok_env(&["checkpoint", "describe", uuid], "", &AUTH), fixture("checkpoint_describe.txt"));

    // Unfinished checkpoints are refused before anything is fetched.
    let mut active = checkpoint.clone();
    active["checkpoint"]["state"] = json!("STATE_ACTIVE");
    fake.json("GET", "/api/v1/checkpoints/active", &active);
    let err = det.fails(&["checkpoint", "download", "active"], "", &AUTH);
    assert!(err.contains("Only COMPLETED or PARTIALLY_DELETED checkpoints can be downloaded"), "{err}");
}

#[test]
fn create_follow_streams_the_first_trial_and_fails_unless_completed() {
    let fake = FakeMaster::start();
    fake.json("POST", "/api/v1/experiments", &json!({"experiment": {"id": 5}, "config": {}, "warnings": []}));
    fake.json(
        "GET",
        "/api/v1/experiments/5/trials",
        &json!({"trials": [{"id": 12}, {"id": 11}], "pagination": {"endIndex": 2, "total": 2}}),
    );
    fake.route("GET", "/api/v1/trials/11/logs", 200, log_lines(&[("1", "training\n")]));
    fake.json("GET", "/api/v1/experiments/5", &json!({"experiment": {"id": 5, "state": "STATE_ERROR"}}));
    let det = Det::new(&fake.url);
    let ctx = tempfile::tempdir().expect("ctx");
    std::fs::write(ctx.path().join("train.py"), "print(1)\n").expect("write");
    let mut cfg = tempfile::NamedTempFile::new().expect("cfg");
    cfg.write_all(b"name: x  # kept verbatim\nentrypoint: python3 train.py\n").expect("write cfg");
    let cfg_path = cfg.path().display().to_string();
    let ctx_path = ctx.path().display().to_string();

    let out = det.run(&["experiment", "create", &cfg_path, &ctx_path, "-f"], "", &AUTH);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("\nCreated experiment 5\nWaiting for first trial to begin...\nFollowing first trial with ID 11\ntraining\n"),
        "{stdout:?}"
    );
    assert!(stdout.ends_with("Trial log stream ended. To reopen log stream, run: det trial logs -f 11\n"), "{stdout:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Error: experiment 5 ended in state ERROR"));

    let post = fake.requests().into_iter().find(|r| r.method == "POST").expect("create request");
    let body: Value = serde_json::from_str(&post.body).expect("body");
    assert_eq!(body["config"], "name: x  # kept verbatim\nentrypoint: python3 train.py\n");
    assert_eq!(body["activate"], true);
    assert_eq!(body["modelDefinition"][0]["path"], "train.py");
    assert_eq!(body["modelDefinition"][0]["content"], "cHJpbnQoMSkK");

    fake.json("GET", "/api/v1/experiments/5", &json!({"experiment": {"id": 5, "state": "STATE_COMPLETED"}}));
    det.ok_env(&["e", "create", &cfg_path, &ctx_path, "--follow-first-trial", "--config", "resources.slots_per_trial=2"], "", &AUTH);
    let post = fake.requests().into_iter().rfind(|r| r.method == "POST").expect("create request");
    let body: Value = serde_json::from_str(&post.body).expect("body");
    let config: Value = serde_norway::from_str(body["config"].as_str().unwrap_or_default()).expect("yaml");
    assert_eq!(config["resources"]["slots_per_trial"], 2);
}
