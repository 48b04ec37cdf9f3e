//! The agent daemon against a fake master: registration, task output and exits, termination,
//! start failures, reconnects, master refusal, and the harness shim with real Python.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use resolute_agent::daemon::{self, DaemonError};
use resolute_agent::harness_shim::ShimDir;
use resolute_api::agent_protocol::{LineLevel, MasterToAgent, StartTask, StdType, TaskEntrypoint, TaskState, archive_chunks};
use support::{
    DEADLINE, FakeMaster, config, exit_of, harness_python, shell, spawn_agent, start_task, until_running, until_terminated, wait_until,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_with_artificial_slots() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    assert_eq!(conn.query.id, "test-agent");
    assert_eq!(conn.query.resource_pool, "default");
    assert!(!conn.query.reconnect);
    assert!(!conn.query.version.is_empty());
    let started = conn.register(vec![]).await;
    assert_eq!(started.devices.len(), 2);
    assert!(started.devices.iter().all(|d| d.device_type == "cpu" && d.brand == "Artificial"), "{:?}", started.devices);
    assert_eq!(started.devices.iter().map(|d| d.id).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(started.resource_pool, "default");
    assert!(started.tasks_reattached.is_empty());
    assert_eq!(started.addresses, ["127.0.0.1"]);
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_logs_arrive_parsed_before_its_exit() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    conn.send(MasterToAgent::StartTask(Box::new(start_task("c1", shell(r#"echo hi; echo "[rank=0] INFO: x" >&2; exit 3"#)))));

    let (states, logs) = until_terminated(&mut conn, "c1").await;
    assert_eq!(states.iter().map(|s| s.state).collect::<Vec<_>>(), [TaskState::Running, TaskState::Terminated]);
    assert!(states[0].pid.is_some());
    let exit = exit_of(&states);
    assert_eq!(exit.exit_code, Some(3));
    assert!(exit.failure.as_deref().is_some_and(|f| f.contains("exit code: 3")), "{exit:?}");

    let stdout = logs.iter().find(|l| l.stdtype == StdType::Stdout).expect("stdout line");
    assert_eq!((stdout.log.as_str(), stdout.rank_id, stdout.level), ("hi\n", None, None));
    let stderr = logs.iter().find(|l| l.stdtype == StdType::Stderr).expect("stderr line");
    assert_eq!((stderr.log.as_str(), stderr.rank_id, stderr.level), ("x\n", Some(0), Some(LineLevel::Info)));

    // The work dir and the harness info go once the task has ended.
    let task_dir = agent.work_root.path().join("task-c1");
    wait_until("the task's dirs are removed", || !task_dir.exists()).await;
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_ends_a_sleeping_task_with_a_signal() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    conn.send(MasterToAgent::StartTask(Box::new(start_task("sleeper", shell("sleep 600")))));
    until_running(&mut conn, "sleeper").await;

    let asked = Instant::now();
    conn.send(MasterToAgent::TerminateTask { container_id: "sleeper".into() });
    let (states, _) = until_terminated(&mut conn, "sleeper").await;
    let exit = exit_of(&states);
    assert_eq!((exit.exit_code, exit.signal), (None, Some(15)), "{exit:?}");
    assert!(exit.failure.as_deref().is_some_and(|f| f.contains("signal 15")), "{exit:?}");
    assert!(asked.elapsed() < Duration::from_secs(4), "terminate took {:?}", asked.elapsed());
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_failures_are_reported_as_terminated() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;

    let mut no_python = start_task("p", shell("true"));
    no_python.python = Some("/no/such/python3".into());
    conn.send(MasterToAgent::StartTask(Box::new(no_python)));
    let (states, _) = until_terminated(&mut conn, "p").await;
    assert_eq!(states.len(), 1, "no Running for a task that never started: {states:?}");
    let failure = exit_of(&states).failure.clone().unwrap_or_default();
    assert!(failure.contains("could not start") && failure.contains("/no/such/python3") && failure.contains("not found"), "{failure}");

    let mut bad_slot = start_task("s", shell("true"));
    bad_slot.slot_ids = vec![7];
    conn.send(MasterToAgent::StartTask(Box::new(bad_slot)));
    let (states, _) = until_terminated(&mut conn, "s").await;
    let failure = exit_of(&states).failure.clone().unwrap_or_default();
    assert!(failure.contains("slot 7 is not a slot of this agent"), "{failure}");
    assert_eq!(exit_of(&states).exit_code, None);

    let mut spoofed = start_task("i", shell("true"));
    spoofed.harness_info.insert("cluster.json".into(), serde_json::json!({"agent_id": "elsewhere"}));
    conn.send(MasterToAgent::StartTask(Box::new(spoofed)));
    let (states, _) = until_terminated(&mut conn, "i").await;
    let failure = exit_of(&states).failure.clone().unwrap_or_default();
    assert!(failure.contains("harness_info file \"cluster.json\" is refused: the agent writes that file itself"), "{failure}");

    // Nothing is left behind by any of them.
    assert!(std::fs::read_dir(agent.work_root.path()).unwrap().next().is_none());
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_and_reports_what_happened_meanwhile() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    let go = agent.work_root.path().join("go");
    conn.send(MasterToAgent::StartTask(Box::new(start_task("long", shell("sleep 600")))));
    let waiter = format!("while [ ! -e {} ]; do sleep 0.02; done; echo buffered; exit 0", go.display());
    conn.send(MasterToAgent::StartTask(Box::new(start_task("short", shell(&waiter)))));
    until_running(&mut conn, "long").await;
    until_running(&mut conn, "short").await;

    conn.drop_connection();
    // Output and exit while disconnected are kept for the next connection.
    std::fs::write(&go, "").unwrap();
    let mut conn = master.accept().await;
    assert!(conn.query.reconnect);
    // The short task has ended (its work dir is gone) before the agent learns what the master expects.
    let short_dir = agent.work_root.path().join("task-short").join("task-short.1");
    wait_until("the short task ended while disconnected", || !short_dir.exists()).await;
    let started = conn.register(vec!["long".into(), "short".into(), "unknown".into()]).await;
    // A task that ended meanwhile counts as still here until its exit is reported: not "lost".
    assert_eq!(started.tasks_reattached, ["long", "short"]);
    let (states, logs) = until_terminated(&mut conn, "short").await;
    assert_eq!(exit_of(&states).exit_code, Some(0));
    assert_eq!(logs.iter().map(|l| l.log.as_str()).collect::<Vec<_>>(), ["buffered\n"]);

    // The task survived the reconnect and is still controlled over the new connection.
    conn.send(MasterToAgent::KillTask { container_id: "long".into() });
    let (states, _) = until_terminated(&mut conn, "long").await;
    assert_eq!(exit_of(&states).signal, Some(9));
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_that_forgot_a_task_hears_of_it_and_decides() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |c| c.agent_reconnect_backoff = Some(Duration::from_millis(50)));
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    let start = start_task("orphan", shell("sleep 600"));
    conn.send(MasterToAgent::StartTask(Box::new(start.clone())));
    until_running(&mut conn, "orphan").await;
    conn.drop_connection();
    // A restarted master expects nothing here; the agent still names what runs, so it can be
    // killed — or, with what it needs to re-adopt it (allocation, slots), reattached.
    let mut conn = master.accept().await;
    let started = conn.register(vec![]).await;
    assert_eq!(started.tasks_reattached, ["orphan"]);
    let running: Vec<(&str, &str, &str, &[u32])> = started
        .running_tasks
        .iter()
        .map(|t| (t.container_id.as_str(), t.allocation_id.as_str(), t.task_id.as_str(), t.slot_ids.as_slice()))
        .collect();
    assert_eq!(running, [("orphan", start.allocation_id.as_str(), start.task_id.as_str(), start.slot_ids.as_slice())]);
    conn.send(MasterToAgent::KillTask { container_id: "orphan".into() });
    let (states, _) = until_terminated(&mut conn, "orphan").await;
    assert_eq!(exit_of(&states).signal, Some(9));
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_terminates_running_tasks_and_reports_them() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    conn.send(MasterToAgent::StartTask(Box::new(start_task("bye", shell("sleep 600")))));
    until_running(&mut conn, "bye").await;
    let stopping = tokio::spawn(agent.shut_down());
    let (states, _) = until_terminated(&mut conn, "bye").await;
    assert_eq!(exit_of(&states).signal, Some(15));
    stopping.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_refusal_and_unreachable_master_are_errors() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let conn = master.accept().await;
    conn.send(MasterToAgent::AgentShutdown { err_msg: "duplicate agent id test-agent".into() });
    let err = tokio::time::timeout(DEADLINE, agent.handle).await.unwrap().unwrap().unwrap_err();
    assert!(matches!(err, DaemonError::ShutDownByMaster(_)));
    assert!(err.to_string().contains("duplicate agent id test-agent"), "{err}");

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let root = tempfile::tempdir().unwrap();
    let mut config = config(port, root.path());
    config.agent_reconnect_attempts = Some(1);
    config.agent_reconnect_backoff = Some(Duration::from_millis(10));
    let err = daemon::run(config, std::future::pending()).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, DaemonError::Unreachable { attempts: 1, .. }), "{err:?}");
    assert!(text.contains(&format!("ws://127.0.0.1:{port}/agents")), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_join_secret_is_presented_and_a_refusal_ends_the_agent_without_retries() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |c| c.security.agent_secret = Some("s3cret".into()));
    let mut conn = master.accept().await;
    assert_eq!(conn.authorization.as_deref(), Some("Bearer s3cret"));
    conn.register(vec![]).await;
    agent.shut_down().await.unwrap();

    // A master that answers 401 with its error envelope: the agent stops at once with the reason.
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/agents",
        axum::routing::get(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async {
                let body =
                    serde_json::json!({"error": {"code": 16, "reason": "Unauthenticated", "error": "the agent join secret is wrong"}});
                (axum::http::StatusCode::UNAUTHORIZED, axum::Json(body))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let root = tempfile::tempdir().unwrap();
    let mut config = config(port, root.path());
    config.agent_reconnect_attempts = None;
    config.agent_reconnect_backoff = Some(Duration::from_millis(10));
    let err = tokio::time::timeout(DEADLINE, daemon::run(config, std::future::pending())).await.unwrap().unwrap_err();
    assert!(matches!(err, DaemonError::Refused(_)), "{err:?}");
    assert!(err.to_string().contains("401") && err.to_string().contains("the agent join secret is wrong"), "{err}");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1, "a refusal is not retried");
}

/// A tar.gz holding one file.
fn tar_gz_with(name: &str, content: &[u8]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    let mut header = tar::Header::new_gnu();
    header.set_size(content.len() as u64);
    header.set_mode(0o644);
    builder.append_data(&mut header, name, content).unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

/// `count` bytes no compressor can shrink.
fn incompressible(count: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn streamed_start(container_id: &str, command: &str, archive: &[u8]) -> Vec<MasterToAgent> {
    use base64::Engine as _;
    let mut start = start_task(container_id, shell(command));
    let (stream, chunks) = archive_chunks(container_id, &base64::engine::general_purpose::STANDARD.encode(archive));
    start.work_dir_archive_stream = Some(stream);
    std::iter::once(MasterToAgent::StartTask(Box::new(start))).chain(chunks).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_archive_arrives_whole_and_a_lost_connection_fails_its_start() {
    use sha2::Digest as _;
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |c| c.agent_reconnect_backoff = Some(Duration::from_millis(50)));
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    let content = incompressible(3 * 1024 * 1024 + 17);
    let digest = hex_digest(&sha2::Sha256::digest(&content));
    let messages =
        streamed_start("big", &format!("test \"$(sha256sum big.bin | cut -c1-64)\" = {digest}"), &tar_gz_with("big.bin", &content));
    assert!(messages.len() > 4, "the archive goes in several pieces");
    for message in messages {
        conn.send(message);
    }
    let (states, _) = until_terminated(&mut conn, "big").await;
    assert_eq!(exit_of(&states).exit_code, Some(0), "{states:?}");

    // Only the start and the first piece arrive before the connection drops.
    let mut messages = streamed_start("cut", "true", &tar_gz_with("big.bin", &content)).into_iter();
    conn.send(messages.next().unwrap());
    conn.send(messages.next().unwrap());
    conn.drop_connection();
    let mut conn = master.accept().await;
    let started = conn.register(vec!["cut".into()]).await;
    assert_eq!(started.tasks_reattached, ["cut"], "its failure is still to be reported");
    let (states, _) = until_terminated(&mut conn, "cut").await;
    let failure = exit_of(&states).failure.clone().unwrap();
    assert!(failure.contains("the connection to the master was lost while its work dir archive was arriving"), "{failure}");
    // Pieces of a start that is gone are ignored; the agent carries on.
    for message in messages {
        conn.send(message);
    }
    conn.send(MasterToAgent::StartTask(Box::new(start_task("after", shell("exit 0")))));
    let (states, _) = until_terminated(&mut conn, "after").await;
    assert_eq!(exit_of(&states).exit_code, Some(0));
    agent.shut_down().await.unwrap();
}

fn hex_digest(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A trial as the master starts one: its `trial.json` is the master's, the agent only writes it.
fn trial_task(container_id: &str, python: &Path, code: &str) -> StartTask {
    let mut start = start_task(container_id, TaskEntrypoint::Argv(vec![python.display().to_string(), "-c".into(), code.into()]));
    start.task_type = "TRIAL".into();
    start.python = Some(python.display().to_string());
    for (name, value) in [("DET_CLUSTER_ID", "cluster-1"), ("DET_SESSION_TOKEN", "token")] {
        start.env.insert(name.into(), value.into());
    }
    let trial = serde_json::json!({
        "trial_id": 7,
        "experiment_id": 3,
        "trial_seed": 42,
        "hparams": {"lr": 0.5},
        "config": {"debug": false, "data": {"x": 1}},
        "steps_completed": 0,
        "trial_run_id": 1,
        "debug": false,
        "inter_node_network_interface": null,
    });
    start.harness_info.insert("trial.json".into(), trial);
    start
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_harness_finds_its_cluster_info() {
    let Some(python) = harness_python() else { return };
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    let code = "import determined as det; i=det.get_cluster_info(); \
                print(i.task_type, i.trial.trial_id, i.container_addrs, i.trial.hparams['lr'], i.slot_ids, i.agent_id, i.user_data)";
    conn.send(MasterToAgent::StartTask(Box::new(trial_task("h", &python, code))));
    let (states, logs) = until_terminated(&mut conn, "h").await;
    let output: Vec<&str> = logs.iter().map(|l| l.log.as_str()).collect();
    assert_eq!(exit_of(&states).exit_code, Some(0), "{output:?}");
    assert!(output.contains(&"TRIAL 7 ['127.0.0.1'] 0.5 [0] test-agent {'x': 1}\n"), "{output:?}");
    agent.shut_down().await.unwrap();
}

/// The shim with a stand-in `determined` package: the redirect happens only on import of
/// `determined._info`, and another `sitecustomize` still runs.
#[test]
fn sitecustomize_is_lazy_and_chains() {
    let Ok(python) = which_python3() else {
        println!("skipped: no python3 on PATH");
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let work_dir = root.path().join("t/t.a");
    let shim = ShimDir::for_work_dir(&work_dir);
    let env = BTreeMap::from([("DET_TASK_TYPE".to_string(), "COMMAND".to_string()), ("DET_MASTER".to_string(), "http://m:1".to_string())]);
    shim.write(&env, &[], &resolute_agent::rendezvous::rendezvous_info(None, 0).unwrap(), &BTreeMap::new(), None).unwrap();
    assert!(shim.info_dir().join("cluster.json").is_file() && !shim.info_dir().join("trial.json").exists());

    let packages = root.path().join("packages");
    std::fs::create_dir_all(packages.join("determined")).unwrap();
    std::fs::write(packages.join("determined/__init__.py"), "").unwrap();
    std::fs::write(
        packages.join("determined/_info.py"),
        "DEFAULT_CLUSTER_INFO_PATH = '/run/determined/info/cluster.json'\n\
         class ClusterInfo:\n    @classmethod\n    def _from_file(cls, path=DEFAULT_CLUSTER_INFO_PATH):\n        return path\n",
    )
    .unwrap();
    let other = root.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("sitecustomize.py"), "import os\nos.environ['OTHER_SITECUSTOMIZE'] = 'ran'\n").unwrap();

    let python_path = shim.python_path(Some(&format!("{}:{}", other.display(), packages.display())));
    let code = "import os, sys\n\
                print(os.environ.get('OTHER_SITECUSTOMIZE'), 'determined._info' in sys.modules, 'determined' in sys.modules)\n\
                from determined import _info\n\
                print(_info.ClusterInfo._from_file())\n\
                print(_info.DEFAULT_CLUSTER_INFO_PATH)\n";
    let out = std::process::Command::new(python).args(["-c", code]).env("PYTHONPATH", python_path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cluster = shim.info_dir().join("cluster.json").display().to_string();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("ran False False\n{cluster}\n{cluster}\n"));
}

fn which_python3() -> Result<PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path).map(|dir| dir.join("python3")).find(|p| p.is_file()).ok_or(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_agent_takes_over_its_task_from_the_state_file() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    let go = tempfile::tempdir().unwrap();
    let go_file = go.path().join("go");
    let script = format!("echo one; while [ ! -e {} ]; do sleep 0.02; done; echo two; exit 5", go_file.display());
    conn.send(MasterToAgent::StartTask(Box::new(start_task("c1", shell(&script)))));
    until_running(&mut conn, "c1").await;
    loop {
        if let resolute_api::agent_protocol::AgentToMaster::TaskLogs { batches } = conn.recv().await
            && batches.iter().any(|b| b.lines.iter().any(|l| l.log == "one\n"))
        {
            break;
        }
    }
    let state_path = agent.work_root.path().join(daemon::state_file::STATE_FILE);
    wait_until("the sent line's offset to be saved", || {
        std::fs::read_to_string(&state_path).is_ok_and(|state| state.contains("\"stdout_offset\": 4"))
    })
    .await;

    // The agent dies without stopping its task (as with kill -9), and starts again on its work root.
    agent.handle.abort();
    let restarted = tokio::spawn(daemon::run(config(master.addr.port(), agent.work_root.path()), std::future::pending::<()>()));
    let mut conn = master.accept().await;
    let started = conn.register(vec!["c1".into()]).await;
    assert_eq!(started.tasks_reattached, ["c1"]);
    let running: Vec<(&str, &str)> = started.running_tasks.iter().map(|t| (t.container_id.as_str(), t.allocation_id.as_str())).collect();
    assert_eq!(running, [("c1", "task-c1.1")]);

    std::fs::write(&go_file, "").unwrap();
    let (states, logs) = until_terminated(&mut conn, "c1").await;
    assert_eq!(logs.iter().map(|l| l.log.as_str()).collect::<Vec<_>>(), ["two\n"], "the line sent before the restart is not sent again");
    assert_eq!(states.len(), 1, "no second Running: {states:?}");
    assert_eq!(exit_of(&states).exit_code, Some(5));
    wait_until("the state file to be removed with the last task", || !state_path.exists()).await;
    restarted.abort();
}
