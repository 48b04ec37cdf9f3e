//! Admin control of the agent resource manager's agents: applies a [`NodeCommand`] to the agent's
//! pool scheduler, remembers the result per agent id (also for agents not connected now), and
//! re-applies it when an agent registers again (after a reconnect timeout or a master restart).

use std::collections::BTreeSet;

use resolute_scheduler::{AgentId, AgentMode, AgentStatus, SchedulerError};
use resolute_store::AgentControlRecord;

use super::AgentResourceManager;
use crate::cluster::rm::RmError;
use crate::cluster::rm::node_control::{ControlError, NodeAction, NodeCommand, NodeControlled, mode_name, parse_mode};

impl AgentResourceManager {
    pub(super) fn control_node(&mut self, command: &NodeCommand) -> Result<NodeControlled, ControlError> {
        let not_found = || ControlError::NotFound(format!("agent not found: {}", command.node));
        let agent = self.agents.get(&command.node).filter(|a| a.started).ok_or_else(not_found)?;
        let pool = agent.resource_pool.clone();
        let id = AgentId::new(command.node.as_str());
        let scheduler = self.pool(&pool);
        let refused = |e: SchedulerError| match e {
            SchedulerError::UnknownSlot { agent, slot } => ControlError::NotFound(format!("slot {slot} not found on agent {agent}")),
            other => ControlError::NotFound(other.to_string()),
        };
        let eviction = match command.action {
            NodeAction::Enable => scheduler.set_agent_mode(&id, AgentMode::Enabled).map_err(refused)?,
            NodeAction::Disable { drain } => {
                scheduler.set_agent_mode(&id, if drain { AgentMode::Draining } else { AgentMode::Disabled }).map_err(refused)?
            }
            NodeAction::EnableSlot(slot) => {
                scheduler.set_slot_enabled(&id, slot, true).map_err(refused)?;
                Default::default()
            }
            NodeAction::DisableSlot(slot) => {
                scheduler.set_slot_enabled(&id, slot, false).map_err(refused)?;
                Default::default()
            }
        };
        let status = scheduler.agent_status(&id).ok_or_else(not_found)?;
        let record = record_of(&command.node, &status);
        self.controls.insert(command.node.clone(), record.clone());
        tracing::info!(agent = %command.node, action = ?command.action, preempted = eviction.preempt.len(), killed = eviction.kill.len(), "agent control changed");
        Ok(NodeControlled {
            record,
            preempt: eviction.preempt.into_iter().map(|a| a.as_str().to_owned()).collect(),
            kill: eviction.kill.into_iter().map(|a| a.as_str().to_owned()).collect(),
        })
    }

    pub(super) fn restore_node_controls(&mut self, records: Vec<AgentControlRecord>) {
        self.controls = records.into_iter().map(|r| (r.agent_id.clone(), r)).collect();
    }

    /// Applies the stored control of a newly registered agent (nothing runs there yet).
    pub(super) fn apply_stored_control(&mut self, agent_id: &str, pool: &str) -> Result<(), RmError> {
        let Some(record) = self.controls.get(agent_id).cloned() else { return Ok(()) };
        let id = AgentId::new(agent_id);
        let scheduler = self.pool(pool);
        scheduler.set_agent_mode(&id, parse_mode(&record.mode))?;
        for slot in record.disabled_slots {
            // A slot the agent no longer has stays recorded, for when it comes back.
            if let Err(e) = scheduler.set_slot_enabled(&id, slot, false) {
                tracing::warn!(agent = %agent_id, slot, error = %e, "a disabled slot is not on the agent now");
            }
        }
        Ok(())
    }

    /// The agent's admin state for views (enabled when the scheduler does not know it).
    pub(super) fn status_of(&self, agent_id: &str, pool: &str) -> AgentStatus {
        self.pools
            .get(pool)
            .and_then(|s| s.agent_status(&AgentId::new(agent_id)))
            .unwrap_or(AgentStatus { mode: AgentMode::Enabled, disabled_slots: BTreeSet::new() })
    }
}

fn record_of(agent_id: &str, status: &AgentStatus) -> AgentControlRecord {
    AgentControlRecord {
        agent_id: agent_id.to_owned(),
        mode: mode_name(status.mode).to_owned(),
        disabled_slots: status.disabled_slots.iter().copied().collect(),
        updated_ms: resolute_store::db_now().timestamp_millis(),
    }
}
