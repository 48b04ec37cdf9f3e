//! Re-adopting allocations that already run: a restarted master rebuilds its scheduler state from
//! the processes its agents report (`Scheduler::adopt`), so the slots they occupy are held again
//! without any scheduling decision.

use crate::decisions::Placement;
use crate::error::SchedulerError;
use crate::ids::LogicalTime;
use crate::request::AllocationRequest;
use crate::scheduler::Scheduler;

impl Scheduler {
    /// Records that `request` already runs with one process at `placement` (called once per
    /// process of a multi-agent allocation): it is submitted if new, becomes scheduled, and holds
    /// the placement's slots. A slot that is unknown, or held by another allocation, is refused
    /// (the caller kills that process) and nothing changes.
    pub fn adopt(&mut self, request: AllocationRequest, placement: Placement, now: LogicalTime) -> Result<(), SchedulerError> {
        let agent = self.agent_ref(&placement.agent_id)?;
        for slot in &placement.slot_ids {
            match agent.slots.get(slot) {
                None => return Err(SchedulerError::UnknownSlot { agent: placement.agent_id.clone(), slot: *slot }),
                Some(s) if s.allocation.as_ref().is_some_and(|a| a != &request.allocation_id) => {
                    return Err(SchedulerError::SlotHeld { agent: placement.agent_id.clone(), slot: *slot });
                }
                Some(_) => {}
            }
        }
        let allocation_id = request.allocation_id.clone();
        if self.allocation(&allocation_id).is_none() {
            self.submit(request)?;
        }
        self.hold_adopted(&allocation_id, placement, now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{AgentId, AgentSpec, AllocationId, AllocationState, DeviceType, LogicalTime, SchedulerConfig, SlotSpec};

    use super::*;

    fn pool() -> Scheduler {
        let mut s = Scheduler::new("default", SchedulerConfig::default());
        for name in ["a1", "a2"] {
            let slots = (0..2).map(|id| SlotSpec { id, device: DeviceType::Cpu }).collect();
            s.add_agent(AgentSpec { id: name.into(), resource_pool: "default".into(), label: String::new(), slots }).unwrap();
        }
        s
    }

    fn request(id: &str, slots: u32) -> AllocationRequest {
        AllocationRequest::new(id, "t", "j", "default", slots, LogicalTime(1))
    }

    #[test]
    fn an_adopted_allocation_holds_its_slots_and_the_next_pass_places_around_it() {
        let mut s = pool();
        s.adopt(request("old", 2), Placement { agent_id: AgentId::new("a1"), slot_ids: vec![0, 1] }, LogicalTime(2)).unwrap();
        assert!(s.allocation(&AllocationId::new("old")).is_some_and(AllocationState::is_scheduled));
        s.submit(request("new", 2)).unwrap();
        let decisions = s.schedule(LogicalTime(3));
        assert_eq!(decisions.assignments.len(), 1);
        assert_eq!(decisions.assignments[0].placements[0].agent_id, AgentId::new("a2"), "a1's slots are taken by the adopted one");
        // A third 2-slot request cannot fit until the adopted one is released.
        s.submit(request("third", 2)).unwrap();
        assert!(s.schedule(LogicalTime(4)).assignments.is_empty());
        s.release(&AllocationId::new("old")).unwrap();
        assert_eq!(s.schedule(LogicalTime(5)).assignments.len(), 1);
    }

    #[test]
    fn a_multi_agent_allocation_is_adopted_piece_by_piece_and_a_held_slot_is_refused() {
        let mut s = pool();
        s.adopt(request("gang", 4), Placement { agent_id: AgentId::new("a1"), slot_ids: vec![0, 1] }, LogicalTime(2)).unwrap();
        s.adopt(request("gang", 4), Placement { agent_id: AgentId::new("a2"), slot_ids: vec![0, 1] }, LogicalTime(2)).unwrap();
        match s.allocation(&AllocationId::new("gang")) {
            Some(AllocationState::Scheduled { placements, .. }) => assert_eq!(placements.len(), 2),
            other => panic!("{other:?}"),
        }
        let err = s.adopt(request("other", 1), Placement { agent_id: AgentId::new("a1"), slot_ids: vec![1] }, LogicalTime(3)).unwrap_err();
        assert!(matches!(err, SchedulerError::SlotHeld { .. }), "{err}");
        assert!(s.allocation(&AllocationId::new("other")).is_none());
        let err = s.adopt(request("x", 1), Placement { agent_id: AgentId::new("a1"), slot_ids: vec![7] }, LogicalTime(3)).unwrap_err();
        assert!(matches!(err, SchedulerError::UnknownSlot { .. }), "{err}");
    }
}
