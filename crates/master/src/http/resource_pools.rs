//! `GET /api/v1/resource-pools` in upstream's `v1ResourcePool` shape: master.yaml's pools
//! (`config/resource_pools.rs`) with what the loop's view counts in each (agents, slots, aux
//! containers, queued and scheduled jobs). Every pool is a static one (agents that join it).

use axum::Json;
use axum::extract::State;
use resolute_api::pagination::Pagination;
use resolute_scheduler::{FittingPolicy, PoolStats, SchedulingPolicy};
use serde::Deserialize;
use serde_json::{Value, json};

use super::extract::QueryParams;
use crate::cluster::ClusterView;
use crate::config::{PoolConfig, ResourcePools};
use crate::error::ApiResult;
use crate::services::Principal;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ResourcePoolsQuery {
    /// Pools to skip (negative: from the end).
    #[serde(default)]
    offset: i32,
    /// At most this many pools; 0 for all.
    #[serde(default)]
    limit: i32,
    /// Only pools bound to no workspace: every pool, as workspace bindings are not supported.
    #[serde(default)]
    #[allow(dead_code)]
    unbound: bool,
}

/// `GET /api/v1/resource-pools`.
#[utoipa::path(get, path = "/api/v1/resource-pools", tag = "Cluster", params(ResourcePoolsQuery),
    responses((status = 200, description = "`v1GetResourcePoolsResponse`: `{resourcePools: [v1ResourcePool], pagination}`", body = Object)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<ResourcePoolsQuery>,
) -> ApiResult<Json<Value>> {
    let view = state.cluster.view();
    let pools = state.cluster.resource_pools();
    let all: Vec<Value> = pools.pools.iter().map(|p| pool_json(pools, p, &view)).collect();
    let total = i32::try_from(all.len()).unwrap_or(i32::MAX);
    let page = Pagination::resolve(q.offset, q.limit, total);
    let start = usize::try_from(page.start_index).unwrap_or(0);
    let end = usize::try_from(page.end_index).unwrap_or(0);
    Ok(Json(json!({"resourcePools": all[start..end], "pagination": page})))
}

/// One `v1ResourcePool`.
pub fn pool_json(pools: &ResourcePools, pool: &PoolConfig, view: &ClusterView) -> Value {
    let stats = view.pools.get(&pool.name).cloned().unwrap_or_else(PoolStats::default);
    let max_aux = pool.scheduler.max_aux_containers_per_agent;
    let slot_type = view
        .agents
        .values()
        .filter(|a| a.resource_pool == pool.name)
        .flat_map(|a| a.slots.values())
        .map(|s| match s.device_type.as_str() {
            "cuda" | "gpu" => "TYPE_CUDA",
            "rocm" => "TYPE_ROCM",
            _ => "TYPE_CPU",
        })
        .next()
        .unwrap_or("TYPE_UNSPECIFIED");
    let (scheduler_type, priority_detail) = match pool.scheduler.policy {
        SchedulingPolicy::Priority { preemption } => {
            ("SCHEDULER_TYPE_PRIORITY", json!({"preemption": preemption, "defaultPriority": pool.default_priority}))
        }
        SchedulingPolicy::FairShare { .. } => ("SCHEDULER_TYPE_FAIR_SHARE", Value::Null),
    };
    let fitting = match pool.scheduler.fitting_policy {
        FittingPolicy::Best => "FITTING_POLICY_BEST",
        FittingPolicy::Worst => "FITTING_POLICY_WORST",
    };
    json!({
        "name": pool.name,
        "description": pool.description,
        "type": "RESOURCE_POOL_TYPE_STATIC",
        "numAgents": stats.agents,
        "slotsAvailable": stats.slots_available,
        "slotsUsed": stats.slots_used,
        "slotType": slot_type,
        "auxContainerCapacity": max_aux.saturating_mul(stats.agents),
        "auxContainersRunning": stats.aux_containers_running,
        "defaultComputePool": pool.name == pools.default_compute_pool,
        "defaultAuxPool": pool.name == pools.default_aux_pool,
        "preemptible": false,
        "minAgents": 0,
        "maxAgents": 0,
        "slotsPerAgent": -1,
        "auxContainerCapacityPerAgent": max_aux,
        "schedulerType": scheduler_type,
        "schedulerFittingPolicy": fitting,
        "location": "on-prem",
        "imageId": "",
        "instanceType": "",
        "masterUrl": "",
        "masterCertName": "",
        "startupScript": "",
        "containerStartupScript": "",
        "agentDockerNetwork": "",
        "agentDockerRuntime": "",
        "agentDockerImage": "",
        "agentFluentImage": "",
        "maxIdleAgentPeriod": 0.0,
        "maxAgentStartingPeriod": 0.0,
        "details": {"aws": null, "gcp": null, "priorityScheduler": priority_detail},
        "accelerator": "",
        "clusterName": "",
        "resourceManagerMetadata": {},
        "stats": {"queuedCount": stats.queued_jobs, "scheduledCount": stats.scheduled_jobs},
    })
}
