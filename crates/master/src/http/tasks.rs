//! `GET /api/v1/tasks` (open allocations, as `det task list` reads them), `GET /api/v1/tasks/{id}`
//! and `GET /api/v1/tasks/count`.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::generic_tasks::GenericTaskFields;
use resolute_api::tasks::{
    Allocation, AllocationSummary, Device, DeviceType, GetActiveTasksCountResponse, GetTaskResponse, GetTasksResponse, ResourcesSummary,
    ResourcesSummaryDevices, Task, TaskState, TaskType,
};
use resolute_store::TaskWithAllocations;

use crate::cluster::SlotView;
use crate::domain::TaskType as DomainTaskType;
use crate::error::ApiResult;
use crate::services::{OpenAllocation, Principal};
use crate::state::AppState;

/// The resources type upstream's agent resource manager reports for a container.
const RESOURCES_TYPE: &str = "DockerContainer";

#[utoipa::path(get, path = "/api/v1/tasks", tag = "Tasks", responses((status = 200, body = GetTasksResponse)), security(("bearer" = [])))]
pub async fn list(State(state): State<AppState>, _caller: Principal) -> ApiResult<Json<GetTasksResponse>> {
    let open = state.tasks.open_allocations().await?;
    let allocation_id_to_summary = open.into_iter().map(|a| (a.allocation.allocation_id.clone(), summary(a))).collect();
    Ok(Json(GetTasksResponse { allocation_id_to_summary }))
}

/// The legacy `GET /tasks` (upstream's echo route, before `/api/v1/tasks`): the same summaries,
/// as a bare map from allocation id to summary.
#[utoipa::path(get, path = "/tasks", tag = "Tasks",
    responses((status = 200, description = "allocation id → summary", body = std::collections::BTreeMap<String, AllocationSummary>)), security(("bearer" = [])))]
pub async fn legacy_list(
    State(state): State<AppState>,
    caller: Principal,
) -> ApiResult<Json<std::collections::BTreeMap<String, AllocationSummary>>> {
    let Json(GetTasksResponse { allocation_id_to_summary }) = list(State(state), caller).await?;
    Ok(Json(allocation_id_to_summary.into_iter().collect()))
}

#[utoipa::path(get, path = "/api/v1/tasks/{taskId}", tag = "Tasks", params(("taskId" = String, Path)),
    responses((status = 200, body = GetTaskResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, _caller: Principal, Path(task_id): Path<String>) -> ApiResult<Json<GetTaskResponse>> {
    let found = state.tasks.task(&task_id).await?;
    let generic = if found.task.task_type == DomainTaskType::Generic.as_str() {
        super::generic_tasks::fields(state.commands.generic_info(&task_id).await?)
    } else {
        GenericTaskFields::default()
    };
    Ok(Json(GetTaskResponse { task: Task { generic, ..task(found) } }))
}

#[utoipa::path(get, path = "/api/v1/tasks/count", tag = "Tasks", responses((status = 200, body = GetActiveTasksCountResponse)),
    security(("bearer" = [])))]
pub async fn count(State(state): State<AppState>, _caller: Principal) -> ApiResult<Json<GetActiveTasksCountResponse>> {
    let c = state.tasks.active_counts().await?;
    Ok(Json(GetActiveTasksCountResponse { commands: c.commands, notebooks: c.notebooks, shells: c.shells, tensorboards: c.tensorboards }))
}

fn device(slot: &SlotView) -> Device {
    let device_type = match slot.device_type.as_str() {
        "cpu" => DeviceType::Cpu,
        "cuda" | "gpu" => DeviceType::Cuda,
        "rocm" => DeviceType::Rocm,
        _ => DeviceType::Unspecified,
    };
    Device { id: i32::try_from(slot.id).unwrap_or(i32::MAX), brand: slot.brand.clone(), uuid: slot.uuid.clone(), device_type }
}

fn summary(a: OpenAllocation) -> AllocationSummary {
    let allocation_id = a.allocation.allocation_id.clone();
    let resources = a
        .containers
        .into_iter()
        .map(|(container, slots)| ResourcesSummary {
            resources_id: container.id.clone(),
            resources_type: RESOURCES_TYPE.to_owned(),
            allocation_id: allocation_id.clone(),
            agent_devices: BTreeMap::from([(
                container.agent_id.clone(),
                ResourcesSummaryDevices { devices: slots.iter().map(device).collect() },
            )]),
            container_id: Some(container.id),
        })
        .collect();
    AllocationSummary {
        task_id: a.task.task_id,
        allocation_id,
        name: a.name,
        registered_time: a.allocation.start_time,
        resource_pool: a.allocation.resource_pool,
        slots_needed: a.allocation.slots,
        resources: Some(resources),
        scheduler_type: "priority".to_owned(),
        priority: Some(a.priority),
        proxy_ports: Vec::new(),
    }
}

fn task(t: TaskWithAllocations) -> Task {
    let allocations = t
        .allocations
        .into_iter()
        .map(|a| Allocation {
            task_id: a.task_id,
            allocation_id: a.allocation_id,
            state: TaskState::from_name(&a.state).unwrap_or(TaskState::Unspecified),
            slots: a.slots,
            is_ready: Some(a.is_ready),
            start_time: Some(a.start_time),
            end_time: a.end_time,
            exit_reason: a.exit_reason,
            status_code: a.exit_code,
        })
        .collect();
    Task {
        task_id: t.task.task_id,
        task_type: TaskType::from_name(&t.task.task_type).unwrap_or(TaskType::Unspecified),
        allocations,
        start_time: t.task.start_time,
        end_time: t.task.end_time,
        generic: GenericTaskFields::default(),
    }
}
