//! A fake agent on the master's real `/agents` websocket: it registers artificial CPU slots,
//! receives `StartTask`s and answers with state changes and log batches, but runs no process.
//! That isolates the master's own cost of scheduling and ingestion from process start-up.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures_util::{SinkExt, StreamExt};
use resolute_api::agent_protocol::{
    AgentDevice, AgentStarted, AgentToMaster, MasterToAgent, StartTask, StdType, TaskExitInfo, TaskLogBatch, TaskLogLine, TaskState,
    TaskStateChanged,
};
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The version the master expects agents to speak (`DETERMINED_VERSION`).
const VERSION: &str = "0.38.1";

pub struct FakeAgent {
    socket: Socket,
}

impl FakeAgent {
    /// Connects to `base` (an `http://` URL), waits for the master's options and registers `slots`
    /// CPU slots. It presents the join secret in `DET_SECURITY_AGENT_SECRET`, if set (a master on
    /// loopback without one needs none).
    pub async fn connect(base: &str, id: &str, slots: u32) -> Result<FakeAgent> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let url = format!("{}/agents?id={id}&version={VERSION}&resource_pool=default&hostname=localhost", base.replace("http://", "ws://"));
        let mut request = url.as_str().into_client_request().with_context(|| format!("agent websocket URL {url}"))?;
        if let Ok(secret) = std::env::var("DET_SECURITY_AGENT_SECRET") {
            let value = format!("Bearer {}", secret.trim()).parse().context("DET_SECURITY_AGENT_SECRET cannot be sent in a header")?;
            request.headers_mut().insert(resolute_api::agent_protocol::AGENT_SECRET_HEADER, value);
        }
        // TCP_NODELAY: with Nagle's algorithm a `Terminated` right after `Running` waits for the
        // master's delayed ACK of the first frame (~40 ms), which would be measured as master time.
        let (socket, _) = tokio_tungstenite::connect_async_with_config(request, None, true)
            .await
            .with_context(|| format!("connecting the fake agent to {url}"))?;
        let mut agent = FakeAgent { socket };
        match agent.recv(Duration::from_secs(10)).await? {
            MasterToAgent::MasterSetAgentOptions(_) => {}
            other => bail!("expected MasterSetAgentOptions first, got {other:?}"),
        }
        let devices = (0..slots)
            .map(|i| AgentDevice { id: i, brand: "Artificial CPU".into(), uuid: String::new(), device_type: "cpu".into() })
            .collect();
        let started = AgentStarted {
            version: VERSION.into(),
            devices,
            resource_pool: "default".into(),
            hostname: "localhost".into(),
            tasks_reattached: vec![],
            addresses: vec![],
            unix_user: None,
            running_tasks: vec![],
        };
        agent.send(&AgentToMaster::AgentStarted(started)).await?;
        Ok(agent)
    }

    pub async fn send(&mut self, message: &AgentToMaster) -> Result<()> {
        self.send_text(serde_json::to_string(message)?).await
    }

    /// Sends an already serialised message (lets the log benchmark serialise a batch once).
    pub async fn send_text(&mut self, text: String) -> Result<()> {
        self.socket.send(Message::text(text)).await.context("the master closed the agent websocket")
    }

    /// The next protocol message from the master, skipping pings.
    pub async fn recv(&mut self, timeout: Duration) -> Result<MasterToAgent> {
        loop {
            let frame = tokio::time::timeout(timeout, self.socket.next())
                .await
                .with_context(|| format!("no message from the master within {timeout:?}"))?;
            match frame.context("the master closed the agent websocket")?? {
                Message::Text(text) => return serde_json::from_str(text.as_str()).context("malformed message from the master"),
                Message::Close(frame) => bail!("the master closed the agent websocket: {frame:?}"),
                _ => continue,
            }
        }
    }

    /// Waits for the next `StartTask`, ignoring other messages.
    pub async fn next_start(&mut self, timeout: Duration) -> Result<StartTask> {
        loop {
            if let MasterToAgent::StartTask(start) = self.recv(timeout).await? {
                return Ok(*start);
            }
        }
    }

    pub async fn report(&mut self, start: &StartTask, state: TaskState, exit: Option<TaskExitInfo>) -> Result<()> {
        let change = TaskStateChanged {
            container_id: start.container_id.clone(),
            allocation_id: start.allocation_id.clone(),
            state,
            pid: Some(4242),
            ports: Default::default(),
            exit,
        };
        self.send(&AgentToMaster::TaskStateChanged(change)).await
    }

    pub async fn running(&mut self, start: &StartTask) -> Result<()> {
        self.report(start, TaskState::Running, None).await
    }

    /// The process "exited" with code 0.
    pub async fn exit_ok(&mut self, start: &StartTask) -> Result<()> {
        self.report(start, TaskState::Terminated, Some(TaskExitInfo { exit_code: Some(0), signal: None, failure: None })).await
    }
}

/// A `TaskLogs` message of `count` lines of the task, each `text` (newline appended).
pub fn log_batch(start: &StartTask, count: usize, text: &str) -> AgentToMaster {
    let line =
        TaskLogLine { timestamp: chrono::Utc::now(), stdtype: StdType::Stdout, rank_id: Some(0), level: None, log: format!("{text}\n") };
    let batch = TaskLogBatch {
        container_id: start.container_id.clone(),
        allocation_id: start.allocation_id.clone(),
        task_id: start.task_id.clone(),
        lines: vec![line; count],
    };
    AgentToMaster::TaskLogs { batches: vec![batch] }
}
