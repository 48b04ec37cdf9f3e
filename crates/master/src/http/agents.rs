//! Agents: the websocket they connect on (`/agents`), and the read API over them
//! (`/api/v1/agents`, `/api/v1/agents/{id}`, slots).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, FromRequestParts, Path, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::Response;
use resolute_api::agent_protocol::{AGENT_SECRET_HEADER, AgentConnectQuery, AgentToMaster, MasterToAgent};
use resolute_api::error::ErrorBody;
use resolute_api::pagination::Pagination;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::agent_logs::AgentLogWriter;
use super::extract::QueryParams;
use crate::auth::agent_admission::admit_agent;
use crate::cluster::{AgentInput, AgentView, ClusterEvent, RmInput, SlotView};
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::state::AppState;

/// Upstream's websocket message limit.
const MAX_AGENT_MESSAGE_BYTES: usize = 128 * 1024 * 1024;
const PING_EVERY: Duration = Duration::from_secs(15);

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// The remote address of the connection, when the server recorded it (`ConnectInfo`).
pub struct PeerAddr(pub Option<std::net::SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for PeerAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(PeerAddr(parts.extensions.get::<ConnectInfo<std::net::SocketAddr>>().map(|info| info.0)))
    }
}

/// `GET /agents?id=…` upgraded to a websocket, for an agent with the join secret (or, on a master
/// without one, from loopback).
pub async fn connect(
    State(state): State<AppState>,
    PeerAddr(peer): PeerAddr,
    headers: HeaderMap,
    QueryParams(query): QueryParams<AgentConnectQuery>,
    ws: WebSocketUpgrade,
) -> ApiResult<Response> {
    let authorization = headers.get(AGENT_SECRET_HEADER).and_then(|v| v.to_str().ok());
    if let Err(refusal) = admit_agent(state.config.agent_secret.as_deref(), authorization, peer) {
        let peer = peer.map_or_else(|| "an unknown address".to_owned(), |p| p.to_string());
        tracing::warn!(agent = %query.id, peer = %peer, "refused an agent: {refusal}");
        return Err(ApiError::unauthenticated(refusal.to_string()));
    }
    if query.id.is_empty() || query.id.contains('/') {
        return Err(ApiError::invalid("id: the agent id must be non-empty and contain no '/'"));
    }
    Ok(ws.max_message_size(MAX_AGENT_MESSAGE_BYTES).on_upgrade(move |socket| serve_agent(state, query, socket)))
}

async fn serve_agent(state: AppState, query: AgentConnectQuery, mut socket: WebSocket) {
    let conn_id = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
    let agent_id = query.id.clone();
    let (outbox, mut outgoing) = mpsc::unbounded_channel::<MasterToAgent>();
    state.cluster.notify(ClusterEvent::Rm(RmInput::Agent(AgentInput::Connected { conn_id, query, outbox })));
    let logs = AgentLogWriter::start(state.clone(), agent_id.clone());
    let mut ping = tokio::time::interval(PING_EVERY);
    loop {
        tokio::select! {
            message = outgoing.recv() => {
                let Some(message) = message else { break };
                let shutdown = matches!(message, MasterToAgent::AgentShutdown { .. });
                let Ok(text) = serde_json::to_string(&message) else { continue };
                if socket.send(Message::Text(text.into())).await.is_err() || shutdown {
                    break;
                }
            }
            incoming = socket.recv() => {
                match incoming {
                    Some(Ok(Message::Text(text))) => handle_agent_message(&state, &logs, conn_id, &agent_id, text.as_str()).await,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                }
            }
            _ = ping.tick() => {
                if socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                    break;
                }
            }
        }
    }
    logs.flush().await;
    state.cluster.notify(ClusterEvent::Rm(RmInput::Agent(AgentInput::Disconnected { conn_id, agent_id })));
}

async fn handle_agent_message(state: &AppState, logs: &AgentLogWriter, conn_id: u64, agent_id: &str, text: &str) {
    let message: AgentToMaster = match serde_json::from_str(text) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(agent = %agent_id, error = %e, "ignoring a malformed agent message");
            return;
        }
    };
    match message {
        AgentToMaster::TaskLogs { batches } => logs.push(agent_id, &batches).await,
        // Everything the agent sent before (its last log lines) is stored before the loop sees this.
        message => {
            logs.flush().await;
            state.cluster.notify(ClusterEvent::Rm(RmInput::Agent(AgentInput::Message { conn_id, agent_id: agent_id.to_owned(), message })));
        }
    }
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct AgentsQuery {
    #[serde(default)]
    offset: i32,
    #[serde(default)]
    limit: i32,
    #[serde(default)]
    exclude_slots: bool,
    #[serde(default)]
    exclude_containers: bool,
}

/// `GET /api/v1/agents`.
#[utoipa::path(get, path = "/api/v1/agents", tag = "Cluster", params(AgentsQuery),
    responses((status = 200, description = "`v1GetAgentsResponse`: `{agents: [v1Agent], pagination}`", body = Object)),
    security(("bearer" = [])))]
pub async fn list(State(state): State<AppState>, _caller: Principal, QueryParams(q): QueryParams<AgentsQuery>) -> ApiResult<Json<Value>> {
    let view = state.cluster.view();
    let all: Vec<&AgentView> = view.agents.values().collect();
    let total = i32::try_from(all.len()).unwrap_or(i32::MAX);
    let page = Pagination::resolve(q.offset, q.limit, total);
    let start = usize::try_from(page.start_index).unwrap_or(0);
    let end = usize::try_from(page.end_index).unwrap_or(0);
    let agents: Vec<Value> = all[start..end].iter().map(|a| agent_json(a, q.exclude_slots, q.exclude_containers)).collect();
    Ok(Json(json!({"agents": agents, "pagination": page})))
}

/// `GET /api/v1/agents/{agentId}`.
#[utoipa::path(get, path = "/api/v1/agents/{id}", tag = "Cluster", params(("id" = String, Path, description = "the agent id")),
    responses((status = 200, description = "`v1GetAgentResponse`: `{agent: v1Agent}`", body = Object), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, _caller: Principal, Path(agent_id): Path<String>) -> ApiResult<Json<Value>> {
    let view = state.cluster.view();
    let agent = view.agents.get(&agent_id).ok_or_else(|| ApiError::not_found(format!("agent not found: {agent_id}")))?;
    Ok(Json(json!({"agent": agent_json(agent, false, false)})))
}

/// `GET /api/v1/agents/{agentId}/slots`.
#[utoipa::path(get, path = "/api/v1/agents/{id}/slots", tag = "Cluster", params(("id" = String, Path, description = "the agent id")),
    responses((status = 200, description = "`v1GetSlotsResponse`: `{slots: [v1Slot]}`", body = Object), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn slots(State(state): State<AppState>, _caller: Principal, Path(agent_id): Path<String>) -> ApiResult<Json<Value>> {
    let view = state.cluster.view();
    let agent = view.agents.get(&agent_id).ok_or_else(|| ApiError::not_found(format!("agent not found: {agent_id}")))?;
    let slots: Vec<Value> = agent.slots.values().map(|s| slot_json(agent, s)).collect();
    Ok(Json(json!({"slots": slots})))
}

pub(super) fn agent_json(agent: &AgentView, exclude_slots: bool, exclude_containers: bool) -> Value {
    let mut slots = Map::new();
    let mut containers = Map::new();
    let mut type_stats: Map<String, Value> = Map::new();
    let mut brand_stats: Map<String, Value> = Map::new();
    for slot in agent.slots.values() {
        let slot_json = slot_json(agent, slot);
        if let Some(c) = slot_json.get("container").filter(|c| !c.is_null()) {
            containers.insert(c["id"].as_str().unwrap_or_default().to_owned(), c.clone());
        }
        slots.insert(format!("/agents/{}/slots/{}", agent.id, slot.id), slot_json);
        let state = if slot.container.is_some() { "STATE_RUNNING" } else { "STATE_UNSPECIFIED" };
        for (stats, key) in [(&mut type_stats, device_type_wire(&slot.device_type).to_owned()), (&mut brand_stats, slot.brand.clone())] {
            let entry = stats.entry(key).or_insert_with(|| json!({"disabled": 0, "draining": 0, "total": 0, "states": {}}));
            entry["total"] = json!(entry["total"].as_i64().unwrap_or(0) + 1);
            if !slot.enabled {
                entry["disabled"] = json!(entry["disabled"].as_i64().unwrap_or(0) + 1);
            }
            if agent.draining {
                entry["draining"] = json!(entry["draining"].as_i64().unwrap_or(0) + 1);
            }
            if slot.container.is_some() {
                entry["states"][state] = json!(entry["states"][state].as_i64().unwrap_or(0) + 1);
            }
        }
    }
    json!({
        "id": agent.id,
        "registeredTime": agent.registered_time.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "slots": if exclude_slots { Value::Object(Map::new()) } else { Value::Object(slots) },
        "containers": if exclude_containers { Value::Object(Map::new()) } else { Value::Object(containers) },
        "addresses": agent_addresses(agent),
        "enabled": agent.enabled,
        "draining": agent.draining,
        "version": agent.version,
        "resourcePools": [agent.resource_pool],
        "slotStats": {"typeStats": type_stats, "brandStats": brand_stats},
    })
}

/// Where the agent is reached: the addresses it connected from, else its host name.
fn agent_addresses(agent: &AgentView) -> Vec<String> {
    if !agent.addresses.is_empty() {
        agent.addresses.clone()
    } else if agent.hostname.is_empty() {
        Vec::new()
    } else {
        vec![agent.hostname.clone()]
    }
}

pub(super) fn slot_json(agent: &AgentView, slot: &SlotView) -> Value {
    let device = device_json(slot);
    let container = slot.container.as_ref().map(|c| {
        let devices: Vec<Value> = c.slot_ids.iter().filter_map(|id| agent.slots.get(id)).map(device_json).collect();
        json!({"parent": format!("/agents/{}", agent.id), "id": c.id, "state": c.state, "devices": devices, "permissionDenied": false})
    });
    json!({
        "id": slot.id.to_string(),
        "device": device,
        "enabled": slot.enabled,
        "container": container,
        "draining": agent.draining,
    })
}

fn device_json(slot: &SlotView) -> Value {
    json!({"id": slot.id, "brand": slot.brand, "uuid": slot.uuid, "type": device_type_wire(&slot.device_type)})
}

fn device_type_wire(device_type: &str) -> &'static str {
    match device_type {
        "cuda" | "gpu" => "TYPE_CUDA",
        "rocm" => "TYPE_ROCM",
        _ => "TYPE_CPU",
    }
}
