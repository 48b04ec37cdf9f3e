//! A read-only picture of the cluster for the HTTP layer (`/api/v1/agents`, `/api/v1/tasks`,
//! slots), published by the loop after each change.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

#[derive(Clone, Debug, Default)]
pub struct ClusterView {
    /// By agent id.
    pub agents: BTreeMap<String, AgentView>,
    /// Each resource pool's counts (agents, slots, aux containers, queued and scheduled jobs),
    /// by pool name.
    pub pools: BTreeMap<String, resolute_scheduler::PoolStats>,
    /// Every pool's job queue in scheduling order (`job_queue.rs`).
    pub jobs: Vec<super::QueuedJob>,
}

#[derive(Clone, Debug)]
pub struct AgentView {
    pub id: String,
    pub registered_time: DateTime<Utc>,
    pub resource_pool: String,
    pub hostname: String,
    /// Where other hosts reach it: its end of its connection to the master (not loopback unless
    /// the master is on the same host).
    pub addresses: Vec<String>,
    /// The account its tasks run as, if the agent said.
    pub unix_user: Option<resolute_api::agent_protocol::AgentUnixUser>,
    pub version: String,
    pub enabled: bool,
    pub draining: bool,
    /// By slot (device) id.
    pub slots: BTreeMap<u32, SlotView>,
}

#[derive(Clone, Debug)]
pub struct SlotView {
    pub id: u32,
    pub brand: String,
    pub uuid: String,
    /// `cpu`, `cuda` or `rocm`.
    pub device_type: String,
    pub enabled: bool,
    /// The container using this slot, if any.
    pub container: Option<ContainerView>,
}

#[derive(Clone, Debug)]
pub struct ContainerView {
    pub id: String,
    pub allocation_id: String,
    pub task_id: String,
    /// `STATE_ASSIGNED`, `STATE_STARTING`, `STATE_RUNNING`, `STATE_TERMINATED` (proto spelling).
    pub state: String,
    pub agent_id: String,
    pub slot_ids: Vec<u32>,
    /// Where the allocation's processes meet, as this one was told (see `rm/gang.rs`).
    pub rendezvous: Option<resolute_api::agent_protocol::TaskRendezvous>,
}

impl ClusterView {
    /// The containers of an allocation (one per agent it runs on).
    pub fn containers_of(&self, allocation_id: &str) -> Vec<ContainerView> {
        let mut out: BTreeMap<String, ContainerView> = BTreeMap::new();
        for agent in self.agents.values() {
            for slot in agent.slots.values() {
                if let Some(c) = &slot.container
                    && c.allocation_id == allocation_id
                {
                    out.entry(c.id.clone()).or_insert_with(|| c.clone());
                }
            }
        }
        out.into_values().collect()
    }
}
