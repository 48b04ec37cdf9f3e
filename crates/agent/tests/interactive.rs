//! Interactive and other non-trial tasks on the agent daemon, against a fake master: host ports in
//! `port_env`, `ready_pattern` and `TaskReady`, extra work-dir `files`, and commands without an
//! archive or trial variables.

mod support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use resolute_api::agent_protocol::{
    AgentToMaster, MasterToAgent, StartTask, TaskEntrypoint, TaskFile, TaskLogLine, TaskState, TaskStateChanged,
};
use support::{Connection, DEADLINE, FakeMaster, exit_of, harness_python, shell, spawn_agent, start_task, until_terminated};

fn task_file(path: &str, content: &[u8], mode: u32) -> TaskFile {
    TaskFile { path: path.into(), content_b64: base64::engine::general_purpose::STANDARD.encode(content), mode }
}

fn which_python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path).map(|dir| dir.join("python3")).find(|p| p.is_file());
    if found.is_none() {
        println!("skipped: no python3 on PATH");
    }
    found
}

/// What the agent sends, in order, until `container_id` is `Running`: that change and every log
/// line received before it.
async fn until_running_with_ports(conn: &mut Connection, container_id: &str) -> TaskStateChanged {
    loop {
        if let AgentToMaster::TaskStateChanged(change) = conn.recv().await
            && change.container_id == container_id
        {
            assert_eq!(change.state, TaskState::Running, "{change:?}");
            return change;
        }
    }
}

/// One message about a task, as the fake master saw it.
#[derive(Debug, PartialEq)]
enum Seen {
    Line(String),
    State(TaskState),
    Ready,
}

/// Everything the agent says about `container_id` until it has seen `until`, in arrival order.
async fn record(conn: &mut Connection, container_id: &str, until: impl Fn(&Seen) -> bool) -> Vec<Seen> {
    let mut seen = Vec::new();
    loop {
        let new: Vec<Seen> = match conn.recv().await {
            AgentToMaster::TaskLogs { batches } => batches
                .into_iter()
                .filter(|b| b.container_id == container_id)
                .flat_map(|b| b.lines)
                .map(|l: TaskLogLine| Seen::Line(l.log))
                .collect(),
            AgentToMaster::TaskStateChanged(change) if change.container_id == container_id => vec![Seen::State(change.state)],
            AgentToMaster::TaskReady { container_id: id, allocation_id } if id == container_id => {
                assert_eq!(allocation_id, format!("task-{container_id}.1"));
                vec![Seen::Ready]
            }
            _ => vec![],
        };
        for item in new {
            let done = until(&item);
            seen.push(item);
            if done {
                return seen;
            }
        }
    }
}

/// `GET path` on `addr:port`, retried until the server answers or the deadline passes.
async fn http_get(addr: &str, port: u16, path: &str) -> String {
    let deadline = Instant::now() + DEADLINE;
    let (addr, path) = (addr.to_string(), path.to_string());
    tokio::task::spawn_blocking(move || {
        loop {
            let attempt = (|| -> std::io::Result<String> {
                let mut stream = std::net::TcpStream::connect((addr.as_str(), port))?;
                stream.set_read_timeout(Some(Duration::from_secs(5)))?;
                write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
                let mut response = String::new();
                stream.read_to_string(&mut response)?;
                Ok(response)
            })();
            match attempt {
                Ok(response) => return response,
                Err(e) => assert!(Instant::now() < deadline, "nothing serves {addr}:{port}: {e}"),
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_env_server_is_reachable_at_the_reported_port() {
    let Some(python3) = which_python3() else { return };
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    let started = conn.register(vec![]).await;
    assert_eq!(started.addresses, ["127.0.0.1"], "the address the agent reaches the master from");

    let command = format!("exec {} -m http.server \"$WEB_PORT\" --bind 0.0.0.0", python3.display());
    let mut start = start_task("web", shell(&command));
    start.task_type = "NOTEBOOK".into();
    start.port_env = vec!["WEB_PORT".into(), "OTHER_PORT".into()];
    start.files = vec![task_file("static/hello.txt", b"hello from the work dir\n", 0o644)];
    conn.send(MasterToAgent::StartTask(Box::new(start)));
    let running = until_running_with_ports(&mut conn, "web").await;
    assert_eq!(running.ports.keys().collect::<Vec<_>>(), ["OTHER_PORT", "WEB_PORT"]);
    let port = running.ports["WEB_PORT"];
    assert_ne!(port, running.ports["OTHER_PORT"]);

    let response = http_get(&started.addresses[0], port, "/static/hello.txt").await;
    assert!(response.starts_with("HTTP/1.0 200"), "{response}");
    assert!(response.ends_with("hello from the work dir\n"), "{response}");

    conn.send(MasterToAgent::TerminateTask { container_id: "web".into() });
    let (states, _) = until_terminated(&mut conn, "web").await;
    assert_eq!(exit_of(&states).signal, Some(15));
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_ready_follows_the_log_batch_with_the_matching_line() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    let mut start =
        start_task("nb", shell("echo starting; echo 'server listening on 8888'; echo 'listening on 9999 again'; exec sleep 600"));
    start.ready_pattern = Some(r"listening on \d+".into());
    conn.send(MasterToAgent::StartTask(Box::new(start)));

    let seen = record(&mut conn, "nb", |s| *s == Seen::Ready).await;
    // `record` stops at the TaskReady: the matching line and the Running came before it.
    assert!(seen.contains(&Seen::Line("server listening on 8888\n".into())), "{seen:?}");
    assert!(seen.contains(&Seen::State(TaskState::Running)), "{seen:?}");

    // Once per container: the second matching line sends nothing more. Wait for that line
    // before the kill, so it is captured whatever the timing.
    let second = Seen::Line("listening on 9999 again\n".into());
    let before_kill = if seen.contains(&second) { Vec::new() } else { record(&mut conn, "nb", |s| *s == second).await };
    conn.send(MasterToAgent::KillTask { container_id: "nb".into() });
    let rest = record(&mut conn, "nb", |s| *s == Seen::State(TaskState::Terminated)).await;
    assert!(!before_kill.contains(&Seen::Ready) && !rest.contains(&Seen::Ready), "{before_kill:?} {rest:?}");
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_never_prints_its_pattern_is_never_ready() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    let mut start = start_task("quiet", shell("echo 'still starting'; echo 'LISTENING ON 1' >&2"));
    start.ready_pattern = Some(r"listening on \d+".into());
    conn.send(MasterToAgent::StartTask(Box::new(start)));
    let seen = record(&mut conn, "quiet", |s| *s == Seen::State(TaskState::Terminated)).await;
    assert!(seen.contains(&Seen::Line("still starting\n".into())), "{seen:?}");
    assert!(!seen.contains(&Seen::Ready), "{seen:?}");
    agent.shut_down().await.unwrap();
}

/// A tar.gz with a directory `sub` and a symbolic link `link` → `sub` (both inside the work dir).
fn archive_with_a_link() -> String {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_mode(0o755);
    dir.set_size(0);
    builder.append_data(&mut dir, "sub", std::io::empty()).unwrap();
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    builder.append_link(&mut link, "link", "sub").unwrap();
    let bytes = builder.into_inner().unwrap().finish().unwrap();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A container id, how the start is spoiled, and what the failure must say.
type FailureCase = (&'static str, fn(&mut StartTask), &'static str);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsafe_files_and_bad_patterns_fail_the_start() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;

    let cases: [FailureCase; 4] = [
        ("abs", |s| s.files = vec![task_file("/etc/motd", b"x", 0o644)], "task file \"/etc/motd\" is refused: its path is absolute"),
        ("up", |s| s.files = vec![task_file("a/../../x", b"x", 0o644)], "task file \"a/../../x\" is refused: its path contains '..'"),
        (
            "link",
            |s| {
                s.work_dir_archive_b64 = Some(archive_with_a_link());
                s.files = vec![task_file("link/authorized_keys", b"x", 0o600)];
            },
            "task file \"link/authorized_keys\" is refused: it would be written through a symbolic link",
        ),
        ("regex", |s| s.ready_pattern = Some("(".into()), "ready_pattern \"(\" is not a valid regular expression"),
    ];
    for (container_id, adjust, expected) in cases {
        let mut start = start_task(container_id, shell("echo should not run"));
        adjust(&mut start);
        conn.send(MasterToAgent::StartTask(Box::new(start)));
        let (states, logs) = until_terminated(&mut conn, container_id).await;
        assert_eq!(states.len(), 1, "{container_id}: no Running for a task that never started: {states:?}");
        let exit = exit_of(&states);
        let failure = exit.failure.clone().unwrap_or_default();
        assert!(failure.starts_with("the task could not start: ") && failure.contains(expected), "{container_id}: {failure}");
        assert_eq!(exit.exit_code, None);
        assert!(logs.is_empty(), "{logs:?}");
    }
    // Nothing is left behind, inside the work root or outside it.
    assert!(std::fs::read_dir(agent.work_root.path()).unwrap().next().is_none());
    assert!(!Path::new("/x").exists());
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_land_in_the_work_dir_with_their_mode() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    let mut start = start_task("sshd", shell("stat -c '%a %n' ssh/host_key ssh/sshd_config; cat ssh/host_key"));
    start.task_type = "SHELL".into();
    start.files = vec![task_file("ssh/host_key", b"PRIVATE KEY", 0o600), task_file("./ssh/sshd_config", b"Port 22\n", 0o644)];
    conn.send(MasterToAgent::StartTask(Box::new(start)));
    let (states, logs) = until_terminated(&mut conn, "sshd").await;
    let output: Vec<&str> = logs.iter().map(|l| l.log.as_str()).collect();
    assert_eq!(exit_of(&states).exit_code, Some(0), "{output:?}");
    assert_eq!(output, ["600 ssh/host_key\n", "644 ssh/sshd_config\n", "PRIVATE KEY\n"]);
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_without_an_archive_report_their_exit_and_output() {
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;

    let argv = TaskEntrypoint::Argv(vec!["sh".into(), "-c".into(), "echo hi; exit 3".into()]);
    conn.send(MasterToAgent::StartTask(Box::new(start_task("cmd", argv))));
    let (states, logs) = until_terminated(&mut conn, "cmd").await;
    assert_eq!(states.iter().map(|s| s.state).collect::<Vec<_>>(), [TaskState::Running, TaskState::Terminated]);
    assert!(states[0].ports.is_empty());
    let exit = exit_of(&states);
    assert_eq!(exit.exit_code, Some(3));
    assert!(exit.failure.as_deref().is_some_and(|f| f.contains("exit code: 3")), "{exit:?}");
    assert_eq!(logs.iter().map(|l| l.log.as_str()).collect::<Vec<_>>(), ["hi\n"]);

    // Every non-trial type runs as a shell string and succeeds with exit code 0.
    for task_type in ["COMMAND", "NOTEBOOK", "SHELL", "TENSORBOARD", "GENERIC", "CHECKPOINT_GC"] {
        let container_id = task_type.to_lowercase();
        let mut start = start_task(&container_id, shell("echo \"$DET_TASK_TYPE ${DET_EXPERIMENT_CONFIG:-none}\""));
        start.task_type = task_type.into();
        conn.send(MasterToAgent::StartTask(Box::new(start)));
        let (states, logs) = until_terminated(&mut conn, &container_id).await;
        let exit = exit_of(&states);
        assert_eq!((exit.exit_code, exit.failure.as_deref()), (Some(0), None), "{task_type}");
        assert_eq!(logs.iter().map(|l| l.log.as_str()).collect::<Vec<_>>(), [format!("{task_type} none\n")]);
    }
    agent.shut_down().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_sees_its_cluster_info_through_the_real_harness() {
    let Some(python) = harness_python() else { return };
    let mut master = FakeMaster::start().await;
    let agent = spawn_agent(&master, |_| {});
    let mut conn = master.accept().await;
    conn.register(vec![]).await;
    // `python3` resolves to the task's interpreter, as a trial's entrypoint does.
    let code = "import sys, determined as det; i=det.get_cluster_info(); \
                print(i.task_type, i.allocation_id, i.container_addrs, i.slot_ids, sys.executable)";
    let mut start = start_task("info", TaskEntrypoint::Argv(vec!["python3".into(), "-c".into(), code.into()]));
    start.python = Some(python.display().to_string());
    conn.send(MasterToAgent::StartTask(Box::new(start)));
    let (states, logs) = until_terminated(&mut conn, "info").await;
    let output: Vec<&str> = logs.iter().map(|l| l.log.as_str()).collect();
    assert_eq!(exit_of(&states).exit_code, Some(0), "{output:?}");
    let python3 = python.with_file_name("python3");
    assert_eq!(output, [format!("COMMAND task-info.1 ['127.0.0.1'] [0] {}\n", python3.display())]);
    agent.shut_down().await.unwrap();
}
