//! The websocket to the master: the `/agents` URL, the connect + `MasterSetAgentOptions`
//! handshake, framing of protocol messages, and the bounded outbox that holds what the agent has
//! to say while it is disconnected.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use resolute_api::agent_protocol::{AGENT_SECRET_HEADER, AgentConnectQuery, AgentOptions, AgentToMaster, MAX_MESSAGE_BYTES, MasterToAgent};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::log_batch::Shipped;

pub(crate) type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Most log lines held while disconnected; beyond it the oldest batches are dropped (state
/// changes never are).
const MAX_BUFFERED_LOG_LINES: usize = 100_000;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    #[error("{0}")]
    Websocket(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("the master's TLS certificate is not trusted: {0}; check security.tls.master_cert and security.tls.master_cert_name")]
    Certificate(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the master closed the connection before sending its options")]
    ClosedEarly,
    #[error("the master's first message was not MasterSetAgentOptions: {0}")]
    Protocol(String),
    /// The master answered with `AgentShutdown` (e.g. a duplicate agent id).
    #[error("the master shut this agent down: {0}")]
    ShutDown(String),
    /// The master refused the upgrade with a 4xx (no or a
    /// wrong join secret, …): retrying would not help.
    #[error("the master refused this agent: {0}")]
    Refused(String),
}

/// A refused upgrade's reason: the `error` of the master's error envelope, else the status.
fn refusal(response: &tokio_tungstenite::tungstenite::http::Response<Option<Vec<u8>>>) -> String {
    let status = response.status();
    let body = response.body().as_deref().unwrap_or_default();
    let reason = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.pointer("/error/error").and_then(|e| e.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(500)]).trim().to_string());
    if reason.is_empty() { format!("HTTP {status}") } else { format!("HTTP {status}: {reason}") }
}

/// `ws://host:port/agents?<query>` (`wss://` with TLS).
pub(crate) fn agents_url(host: &str, port: u16, tls: bool, query: &AgentConnectQuery) -> String {
    let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_string() };
    let pairs = [
        ("id", query.id.as_str()),
        ("version", query.version.as_str()),
        ("resource_pool", query.resource_pool.as_str()),
        ("hostname", query.hostname.as_str()),
        ("reconnect", if query.reconnect { "true" } else { "false" }),
        ("instance", query.instance.as_str()),
    ];
    let query = pairs.iter().map(|(k, v)| format!("{k}={}", url_encode(v))).collect::<Vec<_>>().join("&");
    let scheme = if tls { "wss" } else { "ws" };
    format!("{scheme}://{host}:{port}/agents?{query}")
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn url_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Opens the websocket (over TLS with `tls`), presenting the join secret if there is one, and
/// waits for the master's options.
pub(crate) async fn connect(
    url: &str,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    secret: Option<&str>,
    timeout: Duration,
) -> Result<(Ws, AgentOptions), ConnectError> {
    let handshake = async {
        let mut request = url.into_client_request()?;
        if let Some(secret) = secret {
            let value = HeaderValue::from_str(&format!("Bearer {secret}"))
                .map_err(|_| ConnectError::Refused("the agent join secret contains characters an HTTP header cannot carry".into()))?;
            request.headers_mut().insert(AGENT_SECRET_HEADER, value);
        }
        let config = WebSocketConfig::default().max_message_size(Some(MAX_MESSAGE_BYTES)).max_frame_size(Some(MAX_MESSAGE_BYTES));
        // No Nagle: a task's last log batch and its exit go out back to back, and the exit must not
        // wait for the master's delayed ACK (~40 ms per trial).
        let connector = tls.map(tokio_tungstenite::Connector::Rustls);
        let (mut ws, _response) = match tokio_tungstenite::connect_async_tls_with_config(request, Some(config), true, connector).await {
            Ok(connected) => connected,
            Err(WsError::Http(response)) if response.status().is_client_error() => return Err(ConnectError::Refused(refusal(&response))),
            Err(e) => return Err(certificate_error(e)),
        };
        loop {
            match ws.next().await {
                None => return Err(ConnectError::ClosedEarly),
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(message)) => match decode(message) {
                    Incoming::Closed => return Err(ConnectError::ClosedEarly),
                    Incoming::Other => continue,
                    Incoming::Bad(e) => return Err(ConnectError::Protocol(e)),
                    Incoming::Message(MasterToAgent::MasterSetAgentOptions(options)) => return Ok((ws, options)),
                    Incoming::Message(MasterToAgent::AgentShutdown { err_msg }) => return Err(ConnectError::ShutDown(err_msg)),
                    Incoming::Message(other) => return Err(ConnectError::Protocol(format!("{other:?}"))),
                },
            }
        }
    };
    tokio::time::timeout(timeout, handshake).await.map_err(|_| ConnectError::Timeout(timeout))?
}

/// A refused certificate, told apart from other connection failures.
fn certificate_error(error: tokio_tungstenite::tungstenite::Error) -> ConnectError {
    if let tokio_tungstenite::tungstenite::Error::Io(io) = &error
        && let Some(tls) = io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        return ConnectError::Certificate(tls.to_string());
    }
    ConnectError::Websocket(error)
}

/// A frame from the master, decoded.
pub(crate) enum Incoming {
    Message(MasterToAgent),
    Closed,
    /// Pings, pongs: handled by the websocket layer.
    Other,
    /// A frame that is not a protocol message; logged and skipped.
    Bad(String),
}

pub(crate) fn decode(message: Message) -> Incoming {
    let parse = |bytes: &[u8]| match serde_json::from_slice::<MasterToAgent>(bytes) {
        Ok(message) => Incoming::Message(message),
        Err(e) => Incoming::Bad(format!("{e} in {}", String::from_utf8_lossy(&bytes[..bytes.len().min(200)]))),
    };
    match message {
        Message::Text(text) => parse(text.as_bytes()),
        Message::Binary(bytes) => parse(&bytes),
        Message::Close(_) => Incoming::Closed,
        Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => Incoming::Other,
    }
}

/// The address of this end of the connection: where hosts that reach the master can reach this
/// agent (an IPv4-mapped IPv6 address as plain IPv4). Empty when the transport is not plain TCP.
pub(crate) fn local_addresses(ws: &Ws) -> Vec<String> {
    match ws.get_ref() {
        MaybeTlsStream::Plain(stream) => stream.local_addr().map(|addr| vec![addr.ip().to_canonical().to_string()]).unwrap_or_default(),
        MaybeTlsStream::Rustls(stream) => {
            stream.get_ref().0.local_addr().map(|addr| vec![addr.ip().to_canonical().to_string()]).unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

pub(crate) async fn send(ws: &mut Ws, message: &AgentToMaster) -> Result<(), tokio_tungstenite::tungstenite::Error> {
    // Our own wire types always serialize.
    let text = serde_json::to_string(message).unwrap_or_default();
    ws.send(Message::text(text)).await
}

/// Messages for the master, in order, kept until they have been written to a connection.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    queue: VecDeque<Queued>,
    log_lines: usize,
    dropped_lines: usize,
    /// Output offsets of the log messages written (or dropped) since the last `take_shipped`.
    shipped: Vec<Shipped>,
}

#[derive(Debug)]
struct Queued {
    message: AgentToMaster,
    shipped: Vec<Shipped>,
}

impl Outbox {
    pub fn push(&mut self, message: AgentToMaster) {
        self.push_logs(message, Vec::new());
    }

    /// Queues a message with the output offsets it carries the lines up to.
    pub fn push_logs(&mut self, message: AgentToMaster, shipped: Vec<Shipped>) {
        self.log_lines += message.log_lines();
        self.queue.push_back(Queued { message, shipped });
        while self.log_lines > MAX_BUFFERED_LOG_LINES {
            let Some(oldest) = self.queue.iter().position(|q| matches!(q.message, AgentToMaster::TaskLogs { .. })) else { break };
            if let Some(dropped) = self.queue.remove(oldest) {
                self.log_lines -= dropped.message.log_lines();
                self.dropped_lines += dropped.message.log_lines();
                // Given up on: a restarted agent does not read them again either.
                self.shipped.extend(dropped.shipped);
            }
        }
    }

    /// The offsets of what has been written since the last call, oldest first.
    pub fn take_shipped(&mut self) -> Vec<Shipped> {
        std::mem::take(&mut self.shipped)
    }

    /// Writes every queued message; on error the unsent ones stay queued.
    pub async fn flush(&mut self, ws: &mut Ws) -> Result<(), tokio_tungstenite::tungstenite::Error> {
        if self.dropped_lines > 0 {
            tracing::warn!("dropped {} task log lines while the master was unreachable", self.dropped_lines);
            self.dropped_lines = 0;
        }
        while let Some(queued) = self.queue.front() {
            send(ws, &queued.message).await?;
            if let Some(sent) = self.queue.pop_front() {
                self.log_lines -= sent.message.log_lines();
                self.shipped.extend(sent.shipped);
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether the exit (`Terminated`) of `container_id` waits here to be sent: the task is gone
    /// from this machine, but the master has yet to hear how it ended.
    pub fn holds_exit_of(&self, container_id: &str) -> bool {
        self.queue.iter().any(|q| {
            matches!(&q.message, AgentToMaster::TaskStateChanged(change)
                if change.container_id == container_id && change.state == resolute_api::agent_protocol::TaskState::Terminated)
        })
    }
}

#[cfg(test)]
mod tests {
    use resolute_api::agent_protocol::{StdType, TaskExitInfo, TaskLogBatch, TaskLogLine, TaskState, TaskStateChanged};

    use super::*;

    #[test]
    fn url_carries_the_encoded_query() {
        let query = AgentConnectQuery {
            id: "a b/c".into(),
            version: "0.1.0".into(),
            resource_pool: "default".into(),
            hostname: "h".into(),
            reconnect: true,
            instance: "h:/w".into(),
        };
        assert_eq!(
            agents_url("::1", 8080, false, &query),
            "ws://[::1]:8080/agents?id=a%20b%2Fc&version=0.1.0&resource_pool=default&hostname=h&reconnect=true&instance=h%3A%2Fw"
        );
    }

    #[test]
    fn outbox_drops_old_logs_but_never_state_changes() {
        let logs = |n: usize| AgentToMaster::TaskLogs {
            batches: vec![TaskLogBatch {
                container_id: "c".into(),
                allocation_id: "a".into(),
                task_id: "t".into(),
                lines: (0..n)
                    .map(|i| TaskLogLine {
                        timestamp: chrono::Utc::now(),
                        stdtype: StdType::Stdout,
                        rank_id: None,
                        level: None,
                        log: format!("{i}\n"),
                    })
                    .collect(),
            }],
        };
        let state = AgentToMaster::TaskStateChanged(TaskStateChanged {
            container_id: "c".into(),
            allocation_id: "a".into(),
            state: TaskState::Terminated,
            pid: None,
            ports: Default::default(),
            exit: Some(TaskExitInfo { exit_code: Some(0), signal: None, failure: None }),
        });
        let mut outbox = Outbox::default();
        outbox.push(state.clone());
        for i in 0..(MAX_BUFFERED_LOG_LINES / 1000 + 5) {
            outbox.push_logs(logs(1000), vec![Shipped { container_id: "c".into(), stdtype: StdType::Stdout, offset: i as u64 }]);
        }
        // The dropped batches' output is given up on: a restarted agent would not read it again.
        let given_up: Vec<u64> = outbox.take_shipped().iter().map(|s| s.offset).collect();
        assert_eq!(given_up, [0, 1, 2, 3, 4]);
        assert_eq!(outbox.log_lines, MAX_BUFFERED_LOG_LINES);
        assert_eq!(outbox.dropped_lines, 5000);
        assert_eq!(outbox.queue.front().map(|q| &q.message), Some(&state));
        assert!(outbox.holds_exit_of("c") && !outbox.holds_exit_of("d"));
    }
}
