//! Agents and their slots as the scheduler sees them: which slots exist, which are enabled, and
//! which allocation (slot or aux container) holds what.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::SchedulerError;
use crate::ids::{AgentId, AllocationId, DeviceType, SlotId};

/// One slot an agent reports when it connects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotSpec {
    pub id: SlotId,
    pub device: DeviceType,
}

/// An agent as it joins a resource pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSpec {
    pub id: AgentId,
    pub resource_pool: String,
    /// Upstream's agent label: a request is only placed on agents whose label equals its own.
    pub label: String,
    pub slots: Vec<SlotSpec>,
}

impl AgentSpec {
    /// An agent with no slots and no label (add slots with [`AgentSpec::with_slots`]).
    pub fn new(id: impl Into<AgentId>, resource_pool: impl Into<String>) -> Self {
        AgentSpec { id: id.into(), resource_pool: resource_pool.into(), label: String::new(), slots: Vec::new() }
    }

    /// Appends `count` slots of `device`, numbered after the existing ones.
    pub fn with_slots(mut self, device: DeviceType, count: u32) -> Self {
        let first = self.slots.iter().map(|s| s.id + 1).max().unwrap_or(0);
        self.slots.extend((first..first + count).map(|id| SlotSpec { id, device }));
        self
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Slot {
    pub device: DeviceType,
    pub enabled: bool,
    /// Held until the allocation is released, even if the slot is disabled meanwhile.
    pub allocation: Option<AllocationId>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Agent {
    pub id: AgentId,
    pub label: String,
    pub enabled: bool,
    /// Disabled with drain: its allocations finish, nothing new is placed (`enabled` is false).
    pub draining: bool,
    /// False while the agent is disconnected and the master waits for it to reconnect: what it
    /// holds stays held (its processes may be reattached), nothing new is placed there.
    pub connected: bool,
    /// Read freely; change only through [`Agent::hold`], [`Agent::free`] and
    /// [`Agent::set_slot_enabled`], which keep the counts below in step.
    pub slots: BTreeMap<SlotId, Slot>,
    /// Zero-slot allocations running here, capped by `max_aux_containers_per_agent`.
    pub aux: BTreeSet<AllocationId>,
    /// Counts of `slots` kept up to date on every change, so fitting a request against a
    /// thousand agents reads a number per agent instead of walking its slots.
    #[serde(skip)]
    counts: SlotCounts,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SlotCounts {
    free: u32,
    usable: u32,
    used: u32,
}

impl Agent {
    pub fn from_spec(spec: AgentSpec) -> Result<Self, SchedulerError> {
        let mut slots = BTreeMap::new();
        for slot in spec.slots {
            let fresh = Slot { device: slot.device, enabled: true, allocation: None };
            if slots.insert(slot.id, fresh).is_some() {
                return Err(SchedulerError::DuplicateSlot { agent: spec.id, slot: slot.id });
            }
        }
        let mut agent = Agent {
            id: spec.id,
            label: spec.label,
            enabled: true,
            draining: false,
            connected: true,
            slots,
            aux: BTreeSet::new(),
            counts: SlotCounts::default(),
        };
        agent.recount();
        Ok(agent)
    }

    /// New work may be placed here: enabled by the admin and connected.
    pub fn takes_work(&self) -> bool {
        self.enabled && self.connected
    }

    /// Enabled slots not held by any allocation, lowest id first.
    pub fn free_slots(&self) -> impl Iterator<Item = SlotId> + '_ {
        self.slots.iter().filter(|(_, s)| s.enabled && s.allocation.is_none()).map(|(id, _)| *id)
    }

    pub fn num_free(&self) -> u32 {
        self.counts.free
    }

    /// Enabled slots, held or not: what this agent offers when idle.
    pub fn num_usable(&self) -> u32 {
        self.counts.usable
    }

    pub fn num_used(&self) -> u32 {
        self.counts.used
    }

    /// Enables or disables one slot. `None` if the agent has no such slot.
    pub fn set_slot_enabled(&mut self, slot_id: SlotId, enabled: bool) -> Option<&Slot> {
        self.slots.get_mut(&slot_id)?.enabled = enabled;
        self.recount();
        self.slots.get(&slot_id)
    }

    fn recount(&mut self) {
        self.counts = self.counted();
    }

    /// The counts, from a walk over every slot.
    fn counted(&self) -> SlotCounts {
        SlotCounts {
            free: count(self.free_slots()),
            usable: count(self.slots.values().filter(|s| s.enabled)),
            used: count(self.slots.values().filter(|s| s.allocation.is_some())),
        }
    }

    /// Every allocation holding a slot or an aux container here, sorted.
    pub fn allocations(&self) -> BTreeSet<AllocationId> {
        let on_slots = self.slots.values().filter_map(|s| s.allocation.clone());
        on_slots.chain(self.aux.iter().cloned()).collect()
    }

    /// Marks `slots` (or one aux container when `slots` is empty) as held by `allocation`. The
    /// counts follow each slot taken, without a walk over all of them (a pass holds thousands).
    pub fn hold(&mut self, allocation: &AllocationId, slots: &[SlotId]) {
        if slots.is_empty() {
            self.aux.insert(allocation.clone());
        }
        for id in slots {
            if let Some(slot) = self.slots.get_mut(id) {
                if slot.allocation.is_none() {
                    self.counts.used += 1;
                    if slot.enabled {
                        self.counts.free -= 1;
                    }
                }
                slot.allocation = Some(allocation.clone());
            }
        }
        debug_assert_eq!(self.counts, self.counted());
    }

    /// Frees everything `allocation` holds here.
    pub fn free(&mut self, allocation: &AllocationId) {
        self.aux.remove(allocation);
        for slot in self.slots.values_mut() {
            if slot.allocation.as_ref() == Some(allocation) {
                slot.allocation = None;
            }
        }
        self.recount();
    }
}

fn count<T>(items: impl Iterator<Item = T>) -> u32 {
    u32::try_from(items.count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holding_keeps_the_counts_of_a_walk_over_the_slots() {
        let spec = AgentSpec::new("a", "default").with_slots(DeviceType::Cuda, 8);
        let mut agent = Agent::from_spec(spec).expect("valid agent");
        agent.set_slot_enabled(2, false);
        let (a, b) = (AllocationId::new("a.1"), AllocationId::new("b.1"));
        // Free, disabled, held again by another, unknown, and an aux container.
        for (allocation, slots) in [(&a, vec![0, 1]), (&b, vec![2, 3]), (&b, vec![1, 4, 99]), (&a, vec![])] {
            agent.hold(allocation, &slots);
            assert_eq!(agent.counts, agent.counted(), "after holding {slots:?}");
        }
        assert_eq!((agent.num_free(), agent.num_usable(), agent.num_used()), (3, 7, 5));
        agent.free(&b);
        assert_eq!(agent.counts, agent.counted());
    }
}
