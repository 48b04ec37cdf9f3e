//! A fake master for daemon tests: serves `/agents` over a websocket and hands each agent
//! connection to the test, which plays the master's side of the protocol by hand; and the agent
//! under test with helpers that read what it reports.

// Each test binary uses its own part of these helpers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use resolute_agent::AgentConfig;
use resolute_agent::daemon::{self, DaemonError};
use resolute_api::agent_protocol::{
    AgentConnectQuery, AgentOptions, AgentStarted, AgentToMaster, MasterToAgent, StartTask, TaskEntrypoint, TaskExitInfo, TaskLogLine,
    TaskState, TaskStateChanged,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

pub const DEADLINE: Duration = Duration::from_secs(20);

pub struct FakeMaster {
    pub addr: SocketAddr,
    connections: mpsc::UnboundedReceiver<Connection>,
}

/// One agent connection as the test sees it.
pub struct Connection {
    pub query: AgentConnectQuery,
    /// The upgrade request's `Authorization` header.
    pub authorization: Option<String>,
    /// `None` drops the connection.
    to_agent: mpsc::UnboundedSender<Option<MasterToAgent>>,
    from_agent: mpsc::UnboundedReceiver<AgentToMaster>,
}

impl FakeMaster {
    pub async fn start() -> FakeMaster {
        let (sender, connections) = mpsc::unbounded_channel();
        let app = Router::new().route("/agents", get(upgrade)).with_state(sender);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeMaster { addr, connections }
    }

    pub async fn accept(&mut self) -> Connection {
        tokio::time::timeout(DEADLINE, self.connections.recv()).await.expect("the agent did not connect in time").unwrap()
    }
}

async fn upgrade(
    ws: WebSocketUpgrade,
    headers: axum::http::HeaderMap,
    Query(query): Query<AgentConnectQuery>,
    State(connections): State<mpsc::UnboundedSender<Connection>>,
) -> Response {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    ws.on_upgrade(move |socket| serve(socket, query, authorization, connections))
}

async fn serve(
    mut socket: WebSocket,
    query: AgentConnectQuery,
    authorization: Option<String>,
    connections: mpsc::UnboundedSender<Connection>,
) {
    let (to_agent, mut outgoing) = mpsc::unbounded_channel();
    let (incoming, from_agent) = mpsc::unbounded_channel();
    let _ = connections.send(Connection { query, authorization, to_agent, from_agent });
    loop {
        tokio::select! {
            message = outgoing.recv() => match message {
                Some(Some(message)) => {
                    let text = serde_json::to_string(&message).unwrap();
                    if socket.send(Message::text(text)).await.is_err() {
                        return;
                    }
                }
                // Dropping the socket cuts the connection without a close handshake.
                _ => return,
            },
            frame = socket.recv() => match frame {
                Some(Ok(Message::Text(text))) => {
                    let message: AgentToMaster = serde_json::from_str(text.as_str()).expect("the agent sent a protocol message");
                    let _ = incoming.send(message);
                }
                Some(Ok(_)) => {}
                _ => return,
            },
        }
    }
}

impl Connection {
    pub fn send(&self, message: MasterToAgent) {
        self.to_agent.send(Some(message)).expect("connection open");
    }

    pub fn drop_connection(&self) {
        let _ = self.to_agent.send(None);
    }

    pub async fn recv(&mut self) -> AgentToMaster {
        tokio::time::timeout(DEADLINE, self.from_agent.recv()).await.expect("no message from the agent in time").expect("connection open")
    }

    /// Sends the master's options and returns the agent's registration.
    pub async fn register(&mut self, tasks_to_reattach: Vec<String>) -> AgentStarted {
        self.send(MasterToAgent::MasterSetAgentOptions(AgentOptions {
            master_id: "fake-master".into(),
            cluster_id: "fake-cluster".into(),
            cluster_name: "fake".into(),
            version: "0.38.1".into(),
            tasks_to_reattach,
        }));
        match self.recv().await {
            AgentToMaster::AgentStarted(started) => started,
            other => panic!("expected AgentStarted, got {other:?}"),
        }
    }
}

/// An agent daemon running in the test, against a [`FakeMaster`].
pub struct Agent {
    pub work_root: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    pub handle: JoinHandle<Result<(), DaemonError>>,
}

pub fn config(port: u16, work_root: &Path) -> AgentConfig {
    AgentConfig {
        master_host: "127.0.0.1".into(),
        master_port: port,
        agent_id: Some("test-agent".into()),
        artificial_slots: 2,
        work_root: Some(work_root.to_path_buf()),
        python: PathBuf::from("/bin/sh"),
        termination_grace_seconds: 5,
        agent_reconnect_attempts: Some(3),
        agent_reconnect_backoff: Some(Duration::from_millis(500)),
        ..AgentConfig::default()
    }
}

pub fn spawn_agent(master: &FakeMaster, adjust: impl FnOnce(&mut AgentConfig)) -> Agent {
    let work_root = tempfile::tempdir().unwrap();
    let mut config = config(master.addr.port(), work_root.path());
    adjust(&mut config);
    let (stop, stopped) = oneshot::channel::<()>();
    let handle = tokio::spawn(daemon::run(config, async move {
        let _ = stopped.await;
    }));
    Agent { work_root, stop: Some(stop), handle }
}

impl Agent {
    pub async fn shut_down(mut self) -> Result<(), DaemonError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(DEADLINE, self.handle).await.expect("the agent did not stop in time").unwrap()
    }
}

pub fn start_task(container_id: &str, entrypoint: TaskEntrypoint) -> StartTask {
    StartTask {
        container_id: container_id.into(),
        task_id: format!("task-{container_id}"),
        allocation_id: format!("task-{container_id}.1"),
        task_type: "COMMAND".into(),
        description: "test".into(),
        slot_ids: vec![0],
        entrypoint,
        env: BTreeMap::from([("DET_MASTER".to_string(), "http://127.0.0.1:8080".to_string())]),
        work_dir_archive_b64: None,
        work_dir_archive_stream: None,
        python: None,
        port_env: Vec::new(),
        ready_pattern: None,
        files: Vec::new(),
        harness_info: BTreeMap::new(),
        run_as: None,
        task_dirs: vec![],
        rendezvous: None,
    }
}

pub fn shell(command: &str) -> TaskEntrypoint {
    TaskEntrypoint::Shell(command.into())
}

/// Everything the agent says about `container_id` up to and including its `Terminated`: the
/// state changes in order and the log lines received before `Terminated`.
pub async fn until_terminated(conn: &mut Connection, container_id: &str) -> (Vec<TaskStateChanged>, Vec<TaskLogLine>) {
    let (mut states, mut logs) = (Vec::new(), Vec::new());
    loop {
        match conn.recv().await {
            AgentToMaster::TaskLogs { batches } => {
                for batch in batches.into_iter().filter(|b| b.container_id == container_id) {
                    // Every line is sent with the ids of the task it came from (see `start_task`).
                    assert_eq!((batch.task_id, batch.allocation_id), (format!("task-{container_id}"), format!("task-{container_id}.1")));
                    logs.extend(batch.lines);
                }
            }
            AgentToMaster::TaskStateChanged(change) if change.container_id == container_id => {
                let done = change.state == TaskState::Terminated;
                states.push(change);
                if done {
                    return (states, logs);
                }
            }
            _ => {}
        }
    }
}

pub async fn until_running(conn: &mut Connection, container_id: &str) -> u32 {
    loop {
        if let AgentToMaster::TaskStateChanged(change) = conn.recv().await
            && change.container_id == container_id
        {
            assert_eq!(change.state, TaskState::Running, "{change:?}");
            return change.pid.expect("Running carries the pid");
        }
    }
}

pub fn exit_of(states: &[TaskStateChanged]) -> &TaskExitInfo {
    states.last().and_then(|s| s.exit.as_ref()).expect("Terminated carries the exit")
}

pub async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A Python with the upstream harness installed, if this machine has one.
pub fn harness_python() -> Option<PathBuf> {
    let candidate = std::env::var_os("RESOLUTE_TEST_PYTHON").map(PathBuf::from).unwrap_or_else(|| "/work/cache/detvenv/bin/python".into());
    if candidate.is_file() {
        Some(candidate)
    } else {
        println!("skipped: no Python with the determined package at {} (set RESOLUTE_TEST_PYTHON)", candidate.display());
        None
    }
}
