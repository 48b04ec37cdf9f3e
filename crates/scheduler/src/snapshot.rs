//! The whole scheduler state as one JSON value, for tests that check named points of a scripted
//! run and for debugging a live pool. Requests appear in queue order.

use serde::Serialize;
use serde_json::Value;

use crate::agent::Slot;
use crate::config::SchedulerConfig;
use crate::ids::{AgentId, AllocationId, DeviceType, JobId, LogicalTime, SlotId, TaskId};
use crate::request::AllocationState;
use crate::state::PoolState;

#[derive(Serialize)]
struct SnapshotView<'a> {
    resource_pool: &'a str,
    config: &'a SchedulerConfig,
    agents: Vec<AgentView<'a>>,
    jobs: Vec<JobView<'a>>,
    queue: Vec<RequestView<'a>>,
}

#[derive(Serialize)]
struct AgentView<'a> {
    id: &'a AgentId,
    label: &'a str,
    enabled: bool,
    slots: Vec<SlotView<'a>>,
    aux: Vec<&'a AllocationId>,
}

#[derive(Serialize)]
struct SlotView<'a> {
    id: SlotId,
    device: DeviceType,
    enabled: bool,
    allocation: Option<&'a AllocationId>,
}

#[derive(Serialize)]
struct JobView<'a> {
    job_id: &'a JobId,
    priority: u32,
    weight: f64,
    registered_at: LogicalTime,
}

#[derive(Serialize)]
struct RequestView<'a> {
    allocation_id: &'a AllocationId,
    task_id: &'a TaskId,
    job_id: &'a JobId,
    slots: u32,
    preemptible: bool,
    single_agent: bool,
    label: &'a str,
    submitted_at: LogicalTime,
    #[serde(flatten)]
    state: &'a AllocationState,
}

pub(crate) fn snapshot(state: &PoolState) -> Value {
    let view = SnapshotView {
        resource_pool: &state.name,
        config: &state.config,
        agents: state
            .agents
            .values()
            .map(|agent| AgentView {
                id: &agent.id,
                label: &agent.label,
                enabled: agent.enabled,
                slots: agent.slots.iter().map(|(id, slot)| slot_view(*id, slot)).collect(),
                aux: agent.aux.iter().collect(),
            })
            .collect(),
        jobs: state
            .jobs
            .iter()
            .map(|(job_id, job)| JobView { job_id, priority: job.priority, weight: job.weight, registered_at: job.registered_at })
            .collect(),
        queue: state
            .queue_order()
            .into_iter()
            .map(|entry| RequestView {
                allocation_id: &entry.request.allocation_id,
                task_id: &entry.request.task_id,
                job_id: &entry.request.job_id,
                slots: entry.request.slots,
                preemptible: entry.request.preemptible,
                single_agent: entry.request.single_agent,
                label: &entry.request.label,
                submitted_at: entry.request.submitted_at,
                state: &entry.state,
            })
            .collect(),
    };
    // Only string keys and finite numbers (weights are validated) go in, so this cannot fail.
    serde_json::to_value(view).expect("scheduler snapshot serialises")
}

fn slot_view(id: SlotId, slot: &Slot) -> SlotView<'_> {
    SlotView { id, device: slot.device, enabled: slot.enabled, allocation: slot.allocation.as_ref() }
}
