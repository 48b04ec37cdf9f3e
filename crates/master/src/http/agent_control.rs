//! Agent and slot control (`det agent enable/disable [--drain]`, `det slot enable/disable`):
//! `POST /api/v1/agents/{agentId}/enable|disable` and
//! `POST /api/v1/agents/{agentId}/slots/{slotId}/enable|disable`. Admins only, as upstream's OSS
//! (`CanUpdateAgents`). The loop applies and stores the change (`cluster/node_controls.rs`); the
//! answer is the agent or slot as it now is.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use serde::Deserialize;
use serde_json::{Value, json};

use super::agents::{agent_json, slot_json};
use crate::cluster::rm::{ControlError, NodeAction, NodeCommand};
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::state::AppState;

/// `v1DisableAgentRequest` / `v1DisableSlotRequest`; the CLI sends no body at all without
/// `--drain`. The path's ids win over any in the body.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DisableBody {
    #[serde(default)]
    drain: Option<bool>,
}

fn require_admin(caller: &Principal, action: &str) -> ApiResult<()> {
    if caller.user.admin {
        return Ok(());
    }
    Err(ApiError::forbidden(format!("only admins may {action}; {} is not an admin", caller.user.username)))
}

fn drain_of(body: &Bytes) -> ApiResult<bool> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(false);
    }
    let parsed: Option<DisableBody> =
        serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("request body: expected {{\"drain\": bool}}: {e}")))?;
    Ok(parsed.unwrap_or_default().drain.unwrap_or(false))
}

fn slot_id(raw: &str) -> ApiResult<u32> {
    raw.parse().map_err(|_| ApiError::invalid(format!("slotId: expected a non-negative slot number, got {raw:?}")))
}

async fn apply(state: &AppState, node: &str, action: NodeAction) -> ApiResult<()> {
    let command = NodeCommand { node: node.to_owned(), action };
    state.cluster.control_node(command).await.map_err(|e| match e {
        ControlError::NotFound(message) => ApiError::not_found(message),
        ControlError::Store(message) => {
            tracing::error!(agent = %node, "{message}");
            ApiError::internal()
        }
        ControlError::Unavailable => ApiError::internal(),
    })
}

fn agent_answer(state: &AppState, agent_id: &str) -> ApiResult<Json<Value>> {
    let view = state.cluster.view();
    let agent = view.agents.get(agent_id).ok_or_else(|| ApiError::not_found(format!("agent not found: {agent_id}")))?;
    Ok(Json(json!({"agent": agent_json(agent, false, false)})))
}

fn slot_answer(state: &AppState, agent_id: &str, slot: u32) -> ApiResult<Json<Value>> {
    let view = state.cluster.view();
    let agent = view.agents.get(agent_id).ok_or_else(|| ApiError::not_found(format!("agent not found: {agent_id}")))?;
    let s = agent.slots.get(&slot).ok_or_else(|| ApiError::not_found(format!("slot {slot} not found on agent {agent_id}")))?;
    Ok(Json(json!({"slot": slot_json(agent, s)})))
}

/// `POST /api/v1/agents/{agentId}/enable`.
#[utoipa::path(post, path = "/api/v1/agents/{id}/enable", tag = "Cluster", params(("id" = String, Path, description = "the agent id")),
    responses((status = 200, description = "`v1EnableAgentResponse`: `{agent: v1Agent}`", body = Object),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn enable_agent(State(state): State<AppState>, caller: Principal, Path(agent_id): Path<String>) -> ApiResult<Json<Value>> {
    require_admin(&caller, "enable agents")?;
    apply(&state, &agent_id, NodeAction::Enable).await?;
    agent_answer(&state, &agent_id)
}

/// `POST /api/v1/agents/{agentId}/disable` with `{drain}`: a disabled agent takes no new work and
/// its trials checkpoint and move (other tasks are killed); a draining one lets them finish.
#[utoipa::path(post, path = "/api/v1/agents/{id}/disable", tag = "Cluster", params(("id" = String, Path, description = "the agent id")),
    request_body(content = Object, description = "`v1DisableAgentRequest`: `{drain?: bool}` (optional)"),
    responses((status = 200, description = "`v1DisableAgentResponse`: `{agent: v1Agent}`", body = Object),
        (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn disable_agent(
    State(state): State<AppState>,
    caller: Principal,
    Path(agent_id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    require_admin(&caller, "disable agents")?;
    let drain = drain_of(&body)?;
    apply(&state, &agent_id, NodeAction::Disable { drain }).await?;
    agent_answer(&state, &agent_id)
}

/// `POST /api/v1/agents/{agentId}/slots/{slotId}/enable`.
#[utoipa::path(post, path = "/api/v1/agents/{id}/slots/{slot_id}/enable", tag = "Cluster",
    params(("id" = String, Path, description = "the agent id"), ("slot_id" = String, Path, description = "the slot (device) id")),
    responses((status = 200, description = "`v1EnableSlotResponse`: `{slot: v1Slot}`", body = Object),
        (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn enable_slot(
    State(state): State<AppState>,
    caller: Principal,
    Path((agent_id, slot)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    require_admin(&caller, "enable slots")?;
    let slot = slot_id(&slot)?;
    apply(&state, &agent_id, NodeAction::EnableSlot(slot)).await?;
    slot_answer(&state, &agent_id, slot)
}

/// `POST /api/v1/agents/{agentId}/slots/{slotId}/disable`: no new work is placed on the slot; what
/// runs there finishes.
#[utoipa::path(post, path = "/api/v1/agents/{id}/slots/{slot_id}/disable", tag = "Cluster",
    params(("id" = String, Path, description = "the agent id"), ("slot_id" = String, Path, description = "the slot (device) id")),
    request_body(content = Object, description = "`v1DisableSlotRequest`: `{drain?: bool}` (optional)"),
    responses((status = 200, description = "`v1DisableSlotResponse`: `{slot: v1Slot}`", body = Object),
        (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn disable_slot(
    State(state): State<AppState>,
    caller: Principal,
    Path((agent_id, slot)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    require_admin(&caller, "disable slots")?;
    let slot = slot_id(&slot)?;
    drain_of(&body)?;
    apply(&state, &agent_id, NodeAction::DisableSlot(slot)).await?;
    slot_answer(&state, &agent_id, slot)
}
