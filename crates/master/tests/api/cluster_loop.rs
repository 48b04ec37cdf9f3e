//! The single writer loop end to end, with a fake agent on the real websocket: experiments become
//! trials, trials become processes on the agent, and process exits drive trial and experiment
//! states (completion, restarts, pause/activate, kill).

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use resolute_api::agent_protocol::{
    AgentDevice, AgentStarted, AgentToMaster, MasterToAgent, RunningTask, StartTask, StdType, TaskExitInfo, TaskLogBatch, TaskLogLine,
    TaskState, TaskStateChanged,
};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::harness::TestMaster;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub struct FakeAgent {
    socket: Socket,
}

impl FakeAgent {
    pub async fn connect(m: &TestMaster, id: &str, slots: u32) -> FakeAgent {
        Self::connect_with(m, id, slots, vec![]).await
    }

    /// Connects saying these containers still run here (an agent that outlived its master).
    pub async fn connect_with(m: &TestMaster, id: &str, slots: u32, tasks_reattached: Vec<String>) -> FakeAgent {
        Self::try_connect(&m.base, id, slots, tasks_reattached, None).await.expect("the master admits the agent")
    }

    /// Connects listing `running` as the tasks it still runs (for a restarted master to reattach).
    pub async fn connect_running(m: &TestMaster, id: &str, slots: u32, running: Vec<RunningTask>) -> FakeAgent {
        let ids = running.iter().map(|t| t.container_id.clone()).collect();
        Self::open(&m.base, id, slots, ids, running, None, "default", vec![]).await.expect("the master admits the agent")
    }

    /// Connects to the master at `base` presenting `authorization` on the upgrade; a refusal is
    /// its HTTP status and the error envelope's message (status 0: the connection itself failed).
    pub async fn try_connect(
        base: &str,
        id: &str,
        slots: u32,
        tasks_reattached: Vec<String>,
        authorization: Option<&str>,
    ) -> Result<FakeAgent, (u16, String)> {
        Self::open(base, id, slots, tasks_reattached, vec![], authorization, "default", vec![]).await
    }

    /// Connects an agent that reports `addresses` as where other hosts reach it.
    pub async fn connect_at(m: &TestMaster, id: &str, slots: u32, addresses: Vec<String>) -> FakeAgent {
        Self::open(&m.base, id, slots, vec![], vec![], None, "default", addresses).await.expect("the master admits the agent")
    }

    /// [`FakeAgent::try_connect`] joining resource pool `pool`; a refusal on the open websocket
    /// (`AgentShutdown`) is status 101 with the master's message.
    pub async fn try_connect_in(
        base: &str,
        id: &str,
        slots: u32,
        tasks_reattached: Vec<String>,
        authorization: Option<&str>,
        pool: &str,
    ) -> Result<FakeAgent, (u16, String)> {
        Self::open(base, id, slots, tasks_reattached, vec![], authorization, pool, vec![]).await
    }

    // Every way a test agent registers funnels here; the callers above name the common cases.
    #[allow(clippy::too_many_arguments)]
    async fn open(
        base: &str,
        id: &str,
        slots: u32,
        tasks_reattached: Vec<String>,
        running_tasks: Vec<RunningTask>,
        authorization: Option<&str>,
        pool: &str,
        addresses: Vec<String>,
    ) -> Result<FakeAgent, (u16, String)> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let url = format!("{}/agents?id={id}&version=0.38.1&resource_pool={pool}&hostname=localhost", base.replace("http://", "ws://"));
        let mut request = url.into_client_request().unwrap();
        if let Some(value) = authorization {
            request.headers_mut().insert("authorization", value.parse().unwrap());
        }
        let socket = match tokio_tungstenite::connect_async(request).await {
            Ok((socket, _)) => socket,
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                let body: Value = serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap_or(Value::Null);
                return Err((response.status().as_u16(), body["error"]["error"].as_str().unwrap_or_default().to_owned()));
            }
            // Not an HTTP answer: no status.
            Err(e) => return Err((0, e.to_string())),
        };
        let mut agent = FakeAgent { socket };
        match agent.recv().await {
            MasterToAgent::MasterSetAgentOptions(o) => assert_eq!(o.version, "0.38.1"),
            MasterToAgent::AgentShutdown { err_msg } => return Err((101, err_msg)),
            other => panic!("expected options first, got {other:?}"),
        }
        let devices = (0..slots)
            .map(|i| AgentDevice { id: i, brand: "Artificial CPU".into(), uuid: String::new(), device_type: "cpu".into() })
            .collect();
        agent
            .send(AgentToMaster::AgentStarted(AgentStarted {
                version: "0.38.1".into(),
                devices,
                resource_pool: pool.into(),
                hostname: "localhost".into(),
                tasks_reattached,
                addresses,
                unix_user: None,
                running_tasks,
            }))
            .await;
        Ok(agent)
    }

    pub async fn send(&mut self, message: AgentToMaster) {
        self.socket.send(Message::text(serde_json::to_string(&message).unwrap())).await.unwrap();
    }

    pub async fn recv(&mut self) -> MasterToAgent {
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(10), self.socket.next()).await.expect("a message within 10 s");
            match frame.expect("socket open").expect("frame") {
                Message::Text(text) => return serde_json::from_str(text.as_str()).expect("protocol message"),
                Message::Close(_) => panic!("master closed the connection"),
                _ => continue,
            }
        }
    }

    /// Waits for the next task start, receives its streamed work-dir archive (put back into
    /// `work_dir_archive_b64`) and reports it running.
    pub async fn next_start(&mut self) -> StartTask {
        let start = self.next_start_unreported().await;
        self.state(&start, TaskState::Running, None).await;
        start
    }

    /// The next `StartTask` (archive joined), without reporting the process running: as if it
    /// were still starting (`running` reports it later).
    pub async fn next_start_unreported(&mut self) -> StartTask {
        loop {
            if let MasterToAgent::StartTask(mut start) = self.recv().await {
                if let Some(stream) = start.work_dir_archive_stream.clone() {
                    start.work_dir_archive_b64 = Some(self.archive(&start.container_id, stream.chunks).await);
                }
                return *start;
            }
        }
    }

    /// The `chunks` pieces of a container's archive, in order, joined (base64).
    async fn archive(&mut self, container_id: &str, chunks: u32) -> String {
        let mut archive = String::new();
        for seq in 0..chunks {
            match self.recv().await {
                MasterToAgent::TaskArchiveChunk(chunk) => {
                    assert_eq!((chunk.container_id.as_str(), chunk.seq, chunk.last), (container_id, seq, seq + 1 == chunks));
                    assert!(chunk.data_b64.len() <= 1024 * 1024, "a piece is at most 1 MiB of base64");
                    archive.push_str(&chunk.data_b64);
                }
                other => panic!("expected archive piece {seq} of {container_id}, got {other:?}"),
            }
        }
        archive
    }

    /// Reports a started task running.
    pub async fn running(&mut self, start: &StartTask) {
        self.state(start, TaskState::Running, None).await;
    }

    pub async fn state(&mut self, start: &StartTask, state: TaskState, exit: Option<TaskExitInfo>) {
        let change = TaskStateChanged {
            container_id: start.container_id.clone(),
            allocation_id: start.allocation_id.clone(),
            state,
            pid: Some(4242),
            ports: Default::default(),
            exit,
        };
        self.send(AgentToMaster::TaskStateChanged(change)).await;
    }

    pub async fn log(&mut self, start: &StartTask, text: &str) {
        let line = TaskLogLine {
            timestamp: chrono::Utc::now(),
            stdtype: StdType::Stdout,
            rank_id: Some(0),
            level: None,
            log: format!("{text}\n"),
        };
        let batch = TaskLogBatch {
            container_id: start.container_id.clone(),
            allocation_id: start.allocation_id.clone(),
            task_id: start.task_id.clone(),
            lines: vec![line],
        };
        self.send(AgentToMaster::TaskLogs { batches: vec![batch] }).await;
    }

    pub async fn exit(&mut self, start: &StartTask, code: i32) {
        let failure = (code != 0).then(|| format!("the process exited with code {code}"));
        self.state(start, TaskState::Terminated, Some(TaskExitInfo { exit_code: Some(code), signal: None, failure })).await;
    }
}

const CONFIG: &str = "name: loop\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n\
                      hyperparameters: {lr: 0.1}\nmax_restarts: 1\n";

pub async fn create(m: &TestMaster, token: &str, config: &str) -> i64 {
    let r = m.post("/api/v1/experiments", Some(token), json!({"config": config, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["experiment"]["id"].as_i64().unwrap()
}

pub async fn wait_for(m: &TestMaster, token: &str, path: &str, pointer: &str, want: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let r = m.get(path, Some(token)).await;
        last = r.body.clone();
        if r.body.pointer(pointer).and_then(Value::as_str) == Some(want) {
            return r.body;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{path} {pointer} never became {want}: {last}");
}

pub async fn single_trial_runs_to_completion(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 2).await;
    // The registration reaches the loop on its own; created before it, the trial would wait a
    // moment and its log say why ("no agents in resource pool default").
    wait_for(m, &token, "/api/v1/agents", "/agents/0/id", "agent-1").await;
    let id = create(m, &token, CONFIG).await;
    let start = agent.next_start().await;
    let env = &start.env;
    assert_eq!(env["DET_EXPERIMENT_ID"], id.to_string());
    assert_eq!(env["DET_TRIAL_RUN_ID"], "1");
    assert_eq!(env["DET_TASK_TYPE"], "TRIAL");
    assert_eq!(env["DET_USER"], "determined");
    assert!(!env["DET_SESSION_TOKEN"].is_empty());
    assert_eq!(serde_json::from_str::<Value>(&env["DET_HPARAMS"]).unwrap(), json!({"lr": 0.1}));
    assert_eq!(start.slot_ids.len(), 1, "slots_per_trial defaults to 1");
    assert!(start.allocation_id.starts_with(&start.task_id) && start.allocation_id.ends_with(".1"));
    let trial_id: i64 = env["DET_TRIAL_ID"].parse().unwrap();

    // The agent view and the running allocation.
    let mut slots = Value::Null;
    for _ in 0..100 {
        let agents = m.get("/api/v1/agents", Some(&token)).await;
        assert_eq!(agents.status, 200, "{}", agents.text);
        slots = agents.body["agents"][0]["slots"].clone();
        if slots.as_object().is_some_and(|slots| slots.values().any(|s| s["container"]["id"] == start.container_id.as_str())) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(slots.as_object().unwrap().len(), 2);
    assert!(slots.as_object().unwrap().values().any(|s| s["container"]["id"] == start.container_id.as_str()), "{slots}");

    agent.log(&start, "training").await;
    agent.exit(&start, 0).await;
    wait_for(m, &token, &format!("/api/v1/experiments/{id}"), "/experiment/state", "STATE_COMPLETED").await;
    let trial = m.get(&format!("/api/v1/trials/{trial_id}"), Some(&token)).await;
    assert_eq!(trial.body["trial"]["state"], "STATE_COMPLETED", "{}", trial.text);
    let logs = m.store.task_logs(&start.task_id, &Default::default()).await.unwrap();
    assert_eq!(logs.len(), 1, "{:?}", logs.iter().map(|l| &l.log).collect::<Vec<_>>());
    assert_eq!(logs[0].log, "training\n");
    assert_eq!(logs[0].agent_id.as_deref(), Some("agent-1"));
}

pub async fn failing_trial_restarts_then_errors(m: &TestMaster) {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let id = create(m, &token, CONFIG).await;
    let first = agent.next_start().await;
    agent.exit(&first, 1).await;
    let second = agent.next_start().await;
    assert_eq!(second.env["DET_TRIAL_RUN_ID"], "2");
    assert_eq!(second.task_id, first.task_id);
    assert!(second.allocation_id.ends_with(".2"));
    agent.exit(&second, 1).await;
    let body = wait_for(m, &token, &format!("/api/v1/experiments/{id}"), "/experiment/state", "STATE_ERROR").await;
    let trial_id: i64 = first.env["DET_TRIAL_ID"].parse().unwrap();
    let trial = m.store.trial_by_id(i32::try_from(trial_id).unwrap()).await.unwrap();
    assert_eq!(trial.state, "STATE_ERROR");
    assert_eq!(trial.restarts, 1);
    let reason = trial.end_reason.unwrap_or_default();
    assert!(reason.contains("exited with code 1") && reason.contains("max_restarts is 1"), "{reason}; {body}");
}

pub async fn pause_and_activate_resume_the_trial(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let id = create(m, &token, CONFIG).await;
    let first = agent.next_start().await;
    let r = m.post(&format!("/api/v1/experiments/{id}/pause"), Some(&token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // The harness sees the preemption signal, checkpoints and exits 0.
    tokio::time::sleep(Duration::from_millis(100)).await;
    agent.exit(&first, 0).await;
    let trial_path = format!("/api/v1/trials/{}", first.env["DET_TRIAL_ID"]);
    wait_for(m, &token, &trial_path, "/trial/state", "STATE_PAUSED").await;
    let r = m.post(&format!("/api/v1/experiments/{id}/activate"), Some(&token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let second = agent.next_start().await;
    assert_eq!(second.env["DET_TRIAL_RUN_ID"], "2");
    agent.exit(&second, 0).await;
    wait_for(m, &token, &format!("/api/v1/experiments/{id}"), "/experiment/state", "STATE_COMPLETED").await;
    let trial = m.store.trial_by_id(first.env["DET_TRIAL_ID"].parse().unwrap()).await.unwrap();
    assert_eq!(trial.restarts, 0, "a pause is not a failure");
}

pub async fn kill_stops_the_process(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let id = create(m, &token, CONFIG).await;
    let start = agent.next_start().await;
    let r = m.post(&format!("/api/v1/experiments/{id}/kill"), Some(&token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    match agent.recv().await {
        MasterToAgent::KillTask { container_id } => assert_eq!(container_id, start.container_id),
        other => panic!("expected a kill, got {other:?}"),
    }
    agent
        .state(&start, TaskState::Terminated, Some(TaskExitInfo { exit_code: None, signal: Some(9), failure: Some("killed".into()) }))
        .await;
    wait_for(m, &token, &format!("/api/v1/experiments/{id}"), "/experiment/state", "STATE_CANCELED").await;
    let trial = m.store.trial_by_id(start.env["DET_TRIAL_ID"].parse().unwrap()).await.unwrap();
    assert_eq!(trial.state, "STATE_CANCELED");
}

/// A master with a join secret: agents without it, or with a wrong one, are refused with the
/// reason and never get work; the queued trial goes to the agent that has it.
pub async fn agents_without_the_join_secret_are_refused(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let id = create(m, &token, CONFIG).await;
    let (status, reason) = FakeAgent::try_connect(&m.base, "rogue", 4, vec![], None).await.err().expect("refused without the secret");
    assert_eq!(status, 401);
    assert!(reason.contains("requires the cluster's agent join secret") && reason.contains("security.agent_secret"), "{reason}");
    let (status, reason) =
        FakeAgent::try_connect(&m.base, "rogue", 4, vec![], Some("Bearer guessed")).await.err().expect("refused with a wrong secret");
    assert_eq!(status, 401);
    assert!(reason.contains("agent join secret is wrong"), "{reason}");
    let agents = m.get("/api/v1/agents", Some(&token)).await;
    assert_eq!(agents.body["agents"], json!([]), "a refused agent is never registered");
    let trials = m.get(&format!("/api/v1/experiments/{id}/trials"), Some(&token)).await;
    assert!(trials.body["trials"].as_array().is_none_or(|t| t.iter().all(|t| t["state"] != "STATE_RUNNING")), "{}", trials.text);

    let mut good = FakeAgent::try_connect(&m.base, "good", 1, vec![], Some("Bearer s3cret")).await.expect("admitted with the secret");
    let start = good.next_start().await;
    assert_eq!(start.task_type, "TRIAL");
    good.exit(&start, 0).await;
    wait_for(m, &token, &format!("/api/v1/experiments/{id}"), "/experiment/state", "STATE_COMPLETED").await;
}

/// A master without a join secret admits only agents on its own machine: an agent reaching it
/// through a non-loopback address of this host is refused, telling the operator what to set.
pub async fn remote_agents_need_a_join_secret(m: &TestMaster) {
    let Some(ip) = non_loopback_address() else {
        println!("skipped: this host has no non-loopback address to connect from");
        return;
    };
    let port = m.base.rsplit(':').next().unwrap();
    let (status, reason) = FakeAgent::try_connect(&format!("http://{ip}:{port}"), "remote", 1, vec![], None).await.err().expect("refused");
    if status == 0 {
        println!("skipped: the master does not listen on {ip} ({reason})");
        return;
    }
    assert_eq!(status, 401);
    assert!(reason.contains("accepts agents only from its own machine") && reason.contains("security.agent_secret"), "{reason}");
    assert!(reason.contains(&ip.to_string()), "{reason}");
    // The same agent on loopback is admitted.
    FakeAgent::try_connect(&m.base, "local", 1, vec![], None).await.expect("loopback agents are admitted");
}

/// An address of this host other than loopback (the one a route out would use), if any.
fn non_loopback_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // Connecting a UDP socket sends nothing; it only picks the local address of the route.
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

pub async fn duplicate_agent_id_is_refused(m: &TestMaster) {
    let _first = FakeAgent::connect(m, "twin", 1).await;
    let url = format!("{}/agents?id=twin", m.base.replace("http://", "ws://"));
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let mut saw_shutdown = false;
    while let Ok(Some(Ok(frame))) = tokio::time::timeout(Duration::from_secs(5), socket.next()).await {
        if let Message::Text(text) = frame
            && text.as_str().contains("AgentShutdown")
        {
            saw_shutdown = true;
            break;
        }
    }
    assert!(saw_shutdown, "a second agent with the same id is told to shut down");
}
