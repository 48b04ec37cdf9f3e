//! Re-adoption of running processes by a restarted master (the agent resource manager's half of
//! `cluster/reattach.rs`). Recovery hands over each allocation that was placed when the old master
//! died ([`ResourceManager::await_reattach`]); when an agent registers and lists the tasks it still
//! runs, those of an awaited allocation are adopted — they hold their slots in the scheduler again
//! and the loop hears [`RmEvent::Reattached`] — and every other one stays an orphan, which
//! `agents.rs` kills.
//!
//! [`ResourceManager::await_reattach`]: super::ResourceManager::await_reattach

use std::collections::BTreeMap;

use resolute_api::agent_protocol::{RunningTask, TaskExitInfo};
use resolute_scheduler::{AgentId, Placement};

use super::{AgentResourceManager, ContainerRun};
use crate::cluster::rm::{ResourceRequest, RmEvent};

impl AgentResourceManager {
    /// Remembers an allocation whose processes may still run on an agent that has yet to register.
    pub(super) fn await_allocation(&mut self, request: ResourceRequest) {
        self.awaiting.insert(request.allocation_id.clone(), request);
    }

    /// Stops waiting: a process of it that shows up later is an orphan.
    pub(super) fn stop_awaiting(&mut self, allocation_id: &str) {
        self.awaiting.remove(allocation_id);
    }

    /// Adopts the tasks `agent_id` reports running that belong to an awaited allocation.
    pub(super) fn adopt_reported(&mut self, agent_id: &str, tasks: &[RunningTask]) -> Vec<RmEvent> {
        let host = self.agents.get(agent_id).and_then(|a| a.addresses.first().cloned()).unwrap_or_else(|| "127.0.0.1".to_owned());
        let mut events = Vec::new();
        for task in tasks {
            if self.containers.contains_key(&task.container_id) {
                continue;
            }
            let Some(request) = self.awaiting.get(&task.allocation_id).cloned() else { continue };
            let now = self.now();
            let scheduler_request = crate::cluster::rm::pools::allocation_request(self.handle.resource_pools(), &request, now);
            let pool = scheduler_request.resource_pool.clone();
            let placement = Placement { agent_id: AgentId::new(agent_id), slot_ids: task.slot_ids.clone() };
            if let Err(e) = self.pool(&pool).adopt(scheduler_request, placement, now) {
                tracing::warn!(agent = %agent_id, container = %task.container_id, allocation = %task.allocation_id, error = %e,
                    "cannot reattach a running process; it is killed");
                continue;
            }
            self.task_ids.insert(request.allocation_id.clone(), request.task_id.clone());
            self.pool_of.insert(request.allocation_id.clone(), pool);
            self.containers.insert(
                task.container_id.clone(),
                ContainerRun {
                    allocation_id: task.allocation_id.clone(),
                    task_id: task.task_id.clone(),
                    agent_id: agent_id.to_owned(),
                    slot_ids: task.slot_ids.clone(),
                    running: true,
                    // Not re-derived: the harness read its rendezvous when it started.
                    rendezvous: None,
                },
            );
            tracing::info!(agent = %agent_id, container = %task.container_id, allocation = %task.allocation_id, "reattached a running process");
            let ports: BTreeMap<String, String> = task.ports.iter().map(|(name, port)| (name.clone(), format!("{host}:{port}"))).collect();
            events.push(RmEvent::Reattached {
                allocation_id: task.allocation_id.clone(),
                container_id: task.container_id.clone(),
                ports,
                ready: task.ready,
                slots: u32::try_from(task.slot_ids.len()).unwrap_or(u32::MAX),
            });
        }
        events
    }

    /// An exit the agent held while the master was away, of a process no allocation here has
    /// adopted yet: it is the awaited allocation's end.
    pub(super) fn awaited_exit(&mut self, container_id: &str, allocation_id: &str, exit: TaskExitInfo) -> Option<RmEvent> {
        if self.containers.contains_key(container_id) || !self.awaiting.contains_key(allocation_id) {
            return None;
        }
        tracing::info!(container = %container_id, allocation = %allocation_id, "a process ended while the master was away");
        Some(RmEvent::Exited { allocation_id: allocation_id.to_owned(), container_id: container_id.to_owned(), exit })
    }
}
