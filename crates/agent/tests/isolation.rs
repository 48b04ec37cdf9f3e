//! Tasks run as their account (`TaskSpec::run_as`), on a runtime running as root: the process has
//! that uid and gid and no supplementary groups, its work dir is that account's alone, and a task
//! of another account can read neither its work-dir files nor its token in `/proc/<pid>/environ`.
//! Skipped (with a note) when the tests do not run as root, which cannot switch accounts; CI runs
//! as root.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use resolute_agent::{AgentConfig, Entrypoint, LogLine, Runtime, RuntimeEvent, RuntimeOptions, TaskAccount, TaskExit, TaskSpec, TaskType};
use tokio::sync::mpsc::Receiver;

const DEADLINE: Duration = Duration::from_secs(30);
const ALICE: u32 = 20001;
const BOB: u32 = 20002;

fn is_root() -> bool {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: only root can run tasks as other accounts");
        return false;
    }
    true
}

/// A runtime whose work root other accounts can traverse (temp dirs are 0700), as an agent's
/// work root must be when its tasks run as several accounts.
fn runtime() -> (Runtime, Receiver<RuntimeEvent>, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = AgentConfig {
        agent_id: Some("isolation".into()),
        work_root: Some(root.path().join("work")),
        python: "/bin/sh".into(),
        ..AgentConfig::default()
    };
    let (runtime, events) = Runtime::new(RuntimeOptions::from_config(&config).unwrap());
    (runtime, events, root)
}

fn account(uid: u32, gid: u32) -> TaskAccount {
    TaskAccount { uid, gid, user: format!("u{uid}"), group: format!("g{gid}") }
}

fn spec(task_id: &str, run_as: Option<TaskAccount>, script: &str, env: &[(&str, &str)]) -> TaskSpec {
    TaskSpec {
        task_id: task_id.into(),
        allocation_id: format!("{task_id}.1"),
        task_type: TaskType::Command,
        container_id: Some(format!("{task_id}-c")),
        devices: vec![],
        work_dir_archive: None,
        entrypoint: Entrypoint::Argv(vec!["sh".into(), "-c".into(), script.into()]),
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        python: None,
        port_env: vec![],
        files: vec![],
        run_as,
        task_dirs: vec![],
    }
}

/// Lines of `container_id` until it exits (other tasks' events are dropped).
async fn run_to_exit(events: &mut Receiver<RuntimeEvent>, container_id: &str) -> (Vec<String>, TaskExit) {
    let mut lines = Vec::new();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await.expect("no exit before the deadline").expect("channel closed") {
            RuntimeEvent::Log(LogLine { container_id: id, log, .. }) if id == container_id => lines.push(log),
            RuntimeEvent::Exited { container_id: id, exit, .. } if id == container_id => return (lines, exit),
            _ => {}
        }
    }
}

async fn wait_for_line(events: &mut Receiver<RuntimeEvent>, container_id: &str, wanted: &str) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await.expect("no line before the deadline").expect("channel closed") {
            RuntimeEvent::Log(LogLine { container_id: id, log, .. }) if id == container_id && log == wanted => return,
            RuntimeEvent::Exited { container_id: id, exit, .. } if id == container_id => panic!("exited ({exit:?}) before {wanted:?}"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_task_runs_as_its_account_without_supplementary_groups() {
    if !is_root() {
        return;
    }
    let (runtime, mut events, _root) = runtime();
    let script = "id -u; id -g; grep '^Groups:' /proc/self/status; echo \"HOME=$HOME USER=$USER LOGNAME=$LOGNAME\"; \
                  stat -c 'workdir %u %g %a' .; echo mine > own.txt && cat own.txt";
    let handle = runtime.start(spec("alice", Some(account(ALICE, 30001)), script, &[])).await.unwrap();
    let work_dir = handle.info().work_dir.clone();
    let (lines, exit) = run_to_exit(&mut events, "alice-c").await;
    assert!(exit.success(), "{lines:?}");
    let lines: Vec<String> = lines.iter().map(|l| l.trim_end().to_string()).collect();
    let home = work_dir.display();
    assert_eq!(
        lines,
        [
            "20001".to_string(),
            "30001".to_string(),
            "Groups:".to_string(),
            format!("HOME={home} USER=u20001 LOGNAME=u20001"),
            "workdir 20001 30001 700".to_string(),
            "mine".to_string(),
        ]
    );
}

#[tokio::test]
async fn another_account_cannot_read_a_tasks_token_or_files() {
    if !is_root() {
        return;
    }
    let (runtime, mut events, _root) = runtime();
    let alice = runtime
        .start(spec(
            "alice",
            Some(account(ALICE, ALICE)),
            "echo alice-file-secret > secret.txt && echo $$ > task.pid && echo ready && exec sleep 60",
            &[("DET_SESSION_TOKEN", "alice-token-secret")],
        ))
        .await
        .unwrap();
    wait_for_line(&mut events, "alice-c", "ready").await;
    // The task's own process (the group leader, `info().pid`, is its exit recorder, which runs as the agent).
    let dir = alice.info().work_dir.display().to_string();
    let pid = std::fs::read_to_string(alice.info().work_dir.join("task.pid")).unwrap().trim().to_string();
    let probe = format!("tr '\\0' '\\n' < /proc/{pid}/environ | grep DET_SESSION_TOKEN; cat {dir}/secret.txt; ls {dir}; true");

    // Bob: another account.
    runtime.start(spec("bob", Some(account(BOB, BOB)), &probe, &[])).await.unwrap();
    let (bob, _) = run_to_exit(&mut events, "bob-c").await;
    let bob = bob.join("\n");
    assert!(!bob.contains("alice-token-secret") && !bob.contains("alice-file-secret"), "{bob}");
    assert_eq!(bob.matches("Permission denied").count(), 3, "environ, the file and the dir are refused:\n{bob}");

    // Alice's own account reads both: the refusals above are the accounts', not the paths'.
    runtime.start(spec("alice2", Some(account(ALICE, ALICE)), &probe, &[])).await.unwrap();
    let (own, _) = run_to_exit(&mut events, "alice2-c").await;
    let own = own.join("\n");
    assert!(own.contains("DET_SESSION_TOKEN=alice-token-secret") && own.contains("alice-file-secret"), "{own}");

    alice.kill().unwrap();
    let _ = run_to_exit(&mut events, "alice-c").await;
}

#[tokio::test]
async fn without_an_account_the_task_runs_as_the_agent() {
    let (runtime, mut events, _root) = runtime();
    runtime.start(spec("plain", None, "id -u", &[])).await.unwrap();
    let (lines, _) = run_to_exit(&mut events, "plain-c").await;
    assert_eq!(lines, [nix::unistd::geteuid().as_raw().to_string()]);
}
