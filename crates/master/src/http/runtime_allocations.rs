//! Allocation runtime endpoints: preemption signals, readiness, rendezvous and all-gather,
//! accelerator and proxy reports, and task log shipping.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::runtime::{
    AllocationAllGatherRequest, AllocationAllGatherResponse, AllocationIdRequest, AllocationPreemptionSignalQuery,
    AllocationPreemptionSignalResponse, AllocationRendezvousInfoResponse, Empty, PostAllocationAcceleratorDataRequest,
    PostAllocationProxyAddressRequest, PostTaskLogsRequest, RendezvousInfo,
};

use super::extract::{JsonBody, QueryParams};
use crate::error::ApiResult;
use crate::services::RuntimeCaller;
use crate::services::log_policies::PolicyLine;
use crate::services::trial_runtime_allocations::LogLineIn;
use crate::services::webhook_log_matcher::LineRef;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/allocations/{allocationId}/signals/preemption", tag = "Internal",
    params(("allocationId" = String, Path), AllocationPreemptionSignalQuery),
    responses((status = 200, description = "after the signal or the timeout", body = AllocationPreemptionSignalResponse), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn preemption(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<AllocationPreemptionSignalQuery>,
) -> ApiResult<Json<AllocationPreemptionSignalResponse>> {
    let preempt = state.runtime.preemption(&caller, &id, q.timeout_seconds.unwrap_or(0)).await?;
    Ok(Json(AllocationPreemptionSignalResponse { preempt }))
}

#[utoipa::path(post, path = "/api/v1/allocations/{allocationId}/signals/ack_preemption", tag = "Internal",
    params(("allocationId" = String, Path)), request_body = AllocationIdRequest, responses((status = 200, body = Empty)), security(("bearer" = [])))]
pub async fn ack_preemption(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<AllocationIdRequest>,
) -> ApiResult<Json<Empty>> {
    state.runtime.acknowledge_preemption(&caller, &id).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(post, path = "/api/v1/allocations/{allocationId}/signals/pending_preemption", tag = "Internal",
    params(("allocationId" = String, Path)), request_body = AllocationIdRequest, responses((status = 200, body = Empty)), security(("bearer" = [])))]
pub async fn pending_preemption(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<AllocationIdRequest>,
) -> ApiResult<Json<Empty>> {
    state.runtime.request_preemption(&caller, &id).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(post, path = "/api/v1/allocations/{allocationId}/ready", tag = "Internal",
    params(("allocationId" = String, Path)), request_body = AllocationIdRequest, responses((status = 200, body = Empty)), security(("bearer" = [])))]
pub async fn ready(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<AllocationIdRequest>,
) -> ApiResult<Json<Empty>> {
    state.runtime.mark_ready(&caller, &id).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(post, path = "/api/v1/allocations/{allocationId}/waiting", tag = "Internal",
    params(("allocationId" = String, Path)), request_body = AllocationIdRequest, responses((status = 200, body = Empty)), security(("bearer" = [])))]
pub async fn waiting(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<AllocationIdRequest>,
) -> ApiResult<Json<Empty>> {
    state.runtime.mark_waiting(&caller, &id).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(post, path = "/api/v1/allocations/{allocationId}/acceleratorData", tag = "Internal",
    params(("allocationId" = String, Path)), request_body = PostAllocationAcceleratorDataRequest, responses((status = 200, body = Empty)),
    security(("bearer" = [])))]
pub async fn accelerator_data(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<PostAllocationAcceleratorDataRequest>,
) -> ApiResult<Json<Empty>> {
    let detail = serde_json::to_value(&req.accelerator_data).unwrap_or_default();
    state.runtime.note_allocation_report(&caller, &id, "acceleratorData", &detail).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(post, path = "/api/v1/allocations/{allocationId}/proxy_address", tag = "Internal",
    params(("allocationId" = String, Path)), request_body = PostAllocationProxyAddressRequest, responses((status = 200, body = Empty)),
    security(("bearer" = [])))]
pub async fn proxy_address(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<PostAllocationProxyAddressRequest>,
) -> ApiResult<Json<Empty>> {
    let detail = serde_json::Value::from(req.proxy_address);
    state.runtime.note_allocation_report(&caller, &id, "proxyAddress", &detail).await?;
    Ok(Json(Empty {}))
}

#[utoipa::path(get, path = "/api/v1/allocations/{allocationId}/resources/{resourcesId}/rendezvous", tag = "Internal",
    params(("allocationId" = String, Path), ("resourcesId" = String, Path)),
    responses((status = 200, description = "every process of the gang has started (blocks until then, up to 10 minutes)", body = AllocationRendezvousInfoResponse),
        (status = 400, description = "the allocation ended before all its processes started", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 504, description = "not every process started within 10 minutes", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn rendezvous(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path((id, resources_id)): Path<(String, String)>,
) -> ApiResult<Json<AllocationRendezvousInfoResponse>> {
    let r = state.runtime.rendezvous(&caller, &id, &resources_id).await?;
    Ok(Json(AllocationRendezvousInfoResponse { rendezvous_info: RendezvousInfo { addresses: r.addresses, rank: r.rank, slots: r.slots } }))
}

#[utoipa::path(post, path = "/api/v1/allocations/{allocationId}/all_gather", tag = "Internal",
    params(("allocationId" = String, Path)), request_body = AllocationAllGatherRequest,
    responses((status = 200, body = AllocationAllGatherResponse), (status = 501, description = "more than one peer", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn all_gather(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<AllocationAllGatherRequest>,
) -> ApiResult<Json<AllocationAllGatherResponse>> {
    let data = state.runtime.all_gather(&caller, &id, req.num_peers, req.data).await?;
    Ok(Json(AllocationAllGatherResponse { data }))
}

#[utoipa::path(post, path = "/api/v1/task/logs", tag = "Internal", request_body = PostTaskLogsRequest,
    responses((status = 200, body = Empty), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)), security(("bearer" = [])))]
pub async fn post_logs(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    JsonBody(req): JsonBody<PostTaskLogsRequest>,
) -> ApiResult<Json<Empty>> {
    let lines = req
        .logs
        .into_iter()
        .map(|l| LogLineIn {
            task_id: l.task_id,
            allocation_id: l.allocation_id,
            agent_id: l.agent_id,
            container_id: l.container_id,
            rank_id: l.rank_id,
            timestamp: l.timestamp,
            level: l.level,
            log: l.log,
            source: l.source,
            stdtype: l.stdtype,
        })
        .collect();
    let stored = state.runtime.post_logs(&caller, lines).await?;
    state.task_logs.notify_new_lines();
    // Shipped lines fire task-log webhooks and log policies exactly as the agent's do, once stored.
    let refs: Vec<LineRef<'_>> =
        stored.iter().map(|l| LineRef { task_id: &l.task_id, node_name: l.agent_id.as_deref().unwrap_or(""), log: &l.log }).collect();
    state.webhooks.log_triggers().queue_matches(refs.into_iter()).await;
    let policy_lines: Vec<PolicyLine<'_>> = stored
        .iter()
        .map(|l| PolicyLine { task_id: &l.task_id, allocation_id: l.allocation_id.as_deref(), node: l.agent_id.as_deref(), log: &l.log })
        .collect();
    state.log_policies.match_lines(&policy_lines).await;
    Ok(Json(Empty {}))
}
