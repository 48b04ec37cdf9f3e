//! A fake master for daemon tests: serves `/agents` over a websocket and hands each agent
//! connection to the test, which plays the master's side of the protocol by hand.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use resolute_api::agent_protocol::{AgentConnectQuery, AgentOptions, AgentStarted, AgentToMaster, MasterToAgent};
use tokio::sync::mpsc;

pub const DEADLINE: Duration = Duration::from_secs(20);

pub struct FakeMaster {
    pub addr: SocketAddr,
    connections: mpsc::UnboundedReceiver<Connection>,
}

/// One agent connection as the test sees it.
pub struct Connection {
    pub query: AgentConnectQuery,
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
    Query(query): Query<AgentConnectQuery>,
    State(connections): State<mpsc::UnboundedSender<Connection>>,
) -> Response {
    ws.on_upgrade(move |socket| serve(socket, query, connections))
}

async fn serve(mut socket: WebSocket, query: AgentConnectQuery, connections: mpsc::UnboundedSender<Connection>) {
    let (to_agent, mut outgoing) = mpsc::unbounded_channel();
    let (incoming, from_agent) = mpsc::unbounded_channel();
    let _ = connections.send(Connection { query, to_agent, from_agent });
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
