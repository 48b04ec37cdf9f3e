//! Admin control of agents: enabled, draining (disabled, its work finishes) or disabled (its work
//! is evicted: preemptible allocations checkpoint and stop, others are killed), and what an agent's
//! mode and slots look like; and whether an agent is connected (the master's reconnect window).
//! Placement itself honours both (`Agent::takes_work`) in `fit.rs`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::SchedulerError;
use crate::ids::{AgentId, AllocationId, SlotId};
use crate::request::AllocationState;
use crate::scheduler::Scheduler;

/// What an admin made of an agent (`det agent enable`, `det agent disable [--drain]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AgentMode {
    /// New work may be placed here.
    #[default]
    Enabled,
    /// Nothing new is placed here; what runs here finishes.
    Draining,
    /// Nothing new is placed here, and what runs here is evicted.
    Disabled,
}

/// An agent's admin state, for views.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentStatus {
    pub mode: AgentMode,
    pub disabled_slots: BTreeSet<SlotId>,
}

/// The allocations a disabled agent sends away, each listed once (later calls skip allocations
/// already being preempted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Eviction {
    /// Preemptible: signal them to checkpoint and exit; they keep their slots until released.
    pub preempt: Vec<AllocationId>,
    /// Not preemptible (interactive tasks): stop them at once.
    pub kill: Vec<AllocationId>,
}

impl Scheduler {
    /// Sets the agent's mode. Disabling evicts every allocation with slots or an aux container
    /// here; draining and enabling evict nothing. Evicted preemptible allocations are marked as
    /// preempting, so a later pass does not preempt them again.
    pub fn set_agent_mode(&mut self, agent_id: &AgentId, mode: AgentMode) -> Result<Eviction, SchedulerError> {
        let agent = self.agent_mut(agent_id)?;
        agent.enabled = mode == AgentMode::Enabled;
        agent.draining = mode == AgentMode::Draining;
        let mut eviction = Eviction::default();
        if mode != AgentMode::Disabled {
            return Ok(eviction);
        }
        for allocation in agent.allocations() {
            let Some(entry) = self.state.entries.get_mut(&allocation) else { continue };
            let preemptible = entry.request.preemptible;
            match &mut entry.state {
                AllocationState::Scheduled { preempting, .. } if preemptible => {
                    if !*preempting {
                        *preempting = true;
                        eviction.preempt.push(allocation);
                    }
                }
                _ => eviction.kill.push(allocation),
            }
        }
        Ok(eviction)
    }

    /// Enables or disables one slot. A disabled slot takes no new work; an allocation holding it
    /// keeps it until released.
    pub fn set_slot_enabled(&mut self, agent_id: &AgentId, slot_id: SlotId, enabled: bool) -> Result<(), SchedulerError> {
        self.change_slot_enabled(agent_id, slot_id, enabled).map(|_| ())
    }

    /// Marks the agent disconnected (the master waits for it to reconnect) or connected again. A
    /// disconnected agent keeps what it holds, so its processes can be reattached, but nothing
    /// new is placed there; its admin mode is untouched.
    pub fn set_agent_connected(&mut self, agent_id: &AgentId, connected: bool) -> Result<(), SchedulerError> {
        self.agent_mut(agent_id)?.connected = connected;
        Ok(())
    }

    /// The agent's mode and disabled slots, if the agent is known.
    pub fn agent_status(&self, agent_id: &AgentId) -> Option<AgentStatus> {
        let agent = self.state.agents.get(agent_id)?;
        let mode = match (agent.enabled, agent.draining) {
            (true, _) => AgentMode::Enabled,
            (false, true) => AgentMode::Draining,
            (false, false) => AgentMode::Disabled,
        };
        Some(AgentStatus { mode, disabled_slots: agent.slots.iter().filter(|(_, s)| !s.enabled).map(|(id, _)| *id).collect() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AgentSpec, AllocationRequest, DeviceType, LogicalTime, SchedulerConfig};

    fn two_agents() -> Scheduler {
        let mut s = Scheduler::new("default", SchedulerConfig::default());
        s.add_agent(AgentSpec::new("a", "default").with_slots(DeviceType::Cpu, 2)).unwrap();
        s.add_agent(AgentSpec::new("b", "default").with_slots(DeviceType::Cpu, 2)).unwrap();
        s
    }

    fn submit(s: &mut Scheduler, id: &str, slots: u32, preemptible: bool, t: u64) {
        s.submit(AllocationRequest::new(id, id, id, "default", slots, LogicalTime(t)).with_preemptible(preemptible)).unwrap();
    }

    fn placed_on(s: &mut Scheduler, t: u64) -> Vec<(String, String)> {
        s.schedule(LogicalTime(t))
            .assignments
            .into_iter()
            .map(|a| (a.allocation_id.as_str().to_owned(), a.placements[0].agent_id.as_str().to_owned()))
            .collect()
    }

    #[test]
    fn a_disabled_agent_evicts_its_work_once_and_takes_no_more() {
        let mut s = two_agents();
        submit(&mut s, "trial", 2, true, 1);
        submit(&mut s, "notebook", 0, false, 2);
        assert_eq!(placed_on(&mut s, 3), vec![("trial".into(), "a".into()), ("notebook".into(), "a".into())]);
        let eviction = s.set_agent_mode(&"a".into(), AgentMode::Disabled).unwrap();
        assert_eq!(eviction, Eviction { preempt: vec!["trial".into()], kill: vec!["notebook".into()] });
        assert_eq!(s.agent_status(&"a".into()).unwrap().mode, AgentMode::Disabled);
        // Asked again, the trial already being preempted is not listed again.
        assert_eq!(s.set_agent_mode(&"a".into(), AgentMode::Disabled).unwrap().preempt, Vec::<AllocationId>::new());
        // Its resumed run goes to the other agent; a 4-slot gang cannot use the disabled agent.
        s.release(&"trial".into()).unwrap();
        submit(&mut s, "trial.2", 2, true, 4);
        submit(&mut s, "gang", 4, true, 5);
        assert_eq!(placed_on(&mut s, 6), vec![("trial.2".into(), "b".into())]);
    }

    #[test]
    fn a_draining_agent_keeps_its_work_and_takes_no_more_until_enabled() {
        let mut s = two_agents();
        submit(&mut s, "first", 2, true, 1);
        assert_eq!(placed_on(&mut s, 2), vec![("first".into(), "a".into())]);
        assert_eq!(s.set_agent_mode(&"a".into(), AgentMode::Draining).unwrap(), Eviction::default());
        assert!(matches!(s.allocation(&"first".into()), Some(AllocationState::Scheduled { preempting: false, .. })));
        s.set_agent_mode(&"b".into(), AgentMode::Draining).unwrap();
        submit(&mut s, "second", 1, true, 3);
        assert_eq!(placed_on(&mut s, 4), vec![]);
        s.set_agent_mode(&"b".into(), AgentMode::Enabled).unwrap();
        assert_eq!(placed_on(&mut s, 5), vec![("second".into(), "b".into())]);
        assert_eq!(s.agent_status(&"a".into()).unwrap().mode, AgentMode::Draining);
        assert_eq!(s.agent_status(&"b".into()).unwrap().mode, AgentMode::Enabled);
    }

    #[test]
    fn a_disconnected_agent_keeps_its_work_and_takes_no_more_until_it_reconnects() {
        let mut s = two_agents();
        submit(&mut s, "first", 2, true, 1);
        assert_eq!(placed_on(&mut s, 2), vec![("first".into(), "a".into())]);
        s.set_agent_connected(&"a".into(), false).unwrap();
        s.set_agent_connected(&"b".into(), false).unwrap();
        assert!(matches!(s.allocation(&"first".into()), Some(AllocationState::Scheduled { preempting: false, .. })));
        submit(&mut s, "second", 1, true, 3);
        assert_eq!(placed_on(&mut s, 4), vec![]);
        assert_eq!(s.stats().slots_available, 0, "a disconnected agent's slots are not offered");
        // Its admin mode is its own: enabled throughout.
        assert_eq!(s.agent_status(&"b".into()).unwrap().mode, AgentMode::Enabled);
        s.set_agent_connected(&"b".into(), true).unwrap();
        assert_eq!(placed_on(&mut s, 5), vec![("second".into(), "b".into())]);
        assert!(matches!(s.set_agent_connected(&"c".into(), false), Err(SchedulerError::UnknownAgent(_))));
    }

    #[test]
    fn a_disabled_slot_is_not_placed_on() {
        let mut s = two_agents();
        s.set_slot_enabled(&"a".into(), 0, false).unwrap();
        assert_eq!(s.agent_status(&"a".into()).unwrap().disabled_slots, BTreeSet::from([0]));
        // Two slots fit only on b; the single slot left on a is its enabled one.
        submit(&mut s, "pair", 2, true, 1);
        submit(&mut s, "one", 1, true, 2);
        let placed: Vec<(String, String, Vec<SlotId>)> = s
            .schedule(LogicalTime(3))
            .assignments
            .into_iter()
            .map(|a| (a.allocation_id.as_str().to_owned(), a.placements[0].agent_id.as_str().to_owned(), a.placements[0].slot_ids.clone()))
            .collect();
        assert_eq!(placed, vec![("pair".into(), "b".into(), vec![0, 1]), ("one".into(), "a".into(), vec![1])]);
        s.set_slot_enabled(&"a".into(), 0, true).unwrap();
        assert!(matches!(s.set_slot_enabled(&"a".into(), 9, false), Err(SchedulerError::UnknownSlot { .. })));
        assert!(matches!(s.set_agent_mode(&"zz".into(), AgentMode::Disabled), Err(SchedulerError::UnknownAgent(_))));
    }
}
