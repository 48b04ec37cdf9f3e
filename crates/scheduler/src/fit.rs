//! Fitting: where a request can go right now. A request fits on one agent (best or worst fit),
//! or, when it is too big for any agent, on whole idle agents of one size (gang placement, all or
//! nothing). Zero-slot requests take an aux container instead of slots.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::agent::Agent;
use crate::config::FittingPolicy;
use crate::decisions::{Placement, WaitReason};
use crate::ids::{AgentId, AllocationId};
use crate::request::AllocationRequest;

pub(crate) type Agents = BTreeMap<AgentId, Agent>;

/// The hard and soft constraints of one pool.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fitter {
    pub policy: FittingPolicy,
    pub max_aux: u32,
}

impl Fitter {
    /// Where `req` can be placed on `agents` as they are, or `None`.
    pub fn find(&self, req: &AllocationRequest, agents: &Agents) -> Option<Vec<Placement>> {
        if let Some(shared) = self.find_on_one_agent(req, agents) {
            return Some(vec![shared]);
        }
        if req.single_agent || req.slots <= 1 {
            return None;
        }
        self.find_on_idle_agents(req, agents)
    }

    fn eligible<'a>(&self, req: &'a AllocationRequest, agents: &'a Agents) -> impl Iterator<Item = &'a Agent> + 'a {
        agents.values().filter(move |a| a.takes_work() && a.label == req.label && !req.excluded_agents.contains(&a.id))
    }

    fn find_on_one_agent(&self, req: &AllocationRequest, agents: &Agents) -> Option<Placement> {
        let max_aux = usize::try_from(self.max_aux).unwrap_or(usize::MAX);
        let agent = self
            .eligible(req, agents)
            .filter(|a| if req.slots == 0 { a.aux.len() < max_aux } else { a.num_free() >= req.slots })
            .min_by(|a, b| self.compare(req.slots, a, b))?;
        let slot_ids = agent.free_slots().take(usize::try_from(req.slots).unwrap_or(usize::MAX)).collect();
        Some(Placement { agent_id: agent.id.clone(), slot_ids })
    }

    /// Multi-agent placement: every agent used is completely idle and gives all its slots, and all
    /// agents have the same size, so `slots` must be a multiple of it. Larger agents are preferred
    /// (fewer containers).
    fn find_on_idle_agents(&self, req: &AllocationRequest, agents: &Agents) -> Option<Vec<Placement>> {
        let mut by_size: BTreeMap<u32, Vec<&Agent>> = BTreeMap::new();
        for agent in self.eligible(req, agents).filter(|a| a.num_used() == 0) {
            let free = agent.num_free();
            if free > 0 {
                by_size.entry(free).or_default().push(agent);
            }
        }
        let (size, mut candidates) = by_size
            .into_iter()
            .rev()
            .find(|(size, group)| req.slots.is_multiple_of(*size) && u64::from(*size) * group.len() as u64 >= u64::from(req.slots))?;
        candidates.sort_by(|a, b| self.compare(req.slots, a, b));
        let needed = usize::try_from(req.slots / size).unwrap_or(usize::MAX);
        let placements = candidates
            .into_iter()
            .take(needed)
            .map(|agent| Placement { agent_id: agent.id.clone(), slot_ids: agent.free_slots().collect() })
            .collect();
        Some(placements)
    }

    /// `Less` when `a` is the better home; ties go to the smaller agent id.
    fn compare(&self, slots: u32, a: &Agent, b: &Agent) -> Ordering {
        let by_score = if slots == 0 {
            // Aux containers are scored by aux usage alone: best packs them, worst spreads them.
            match self.policy {
                FittingPolicy::Best => b.aux.len().cmp(&a.aux.len()),
                FittingPolicy::Worst => a.aux.len().cmp(&b.aux.len()),
            }
        } else {
            match self.policy {
                FittingPolicy::Best => a.num_free().cmp(&b.num_free()),
                // Higher free/usable ratio first, compared without floats.
                FittingPolicy::Worst => {
                    let a_ratio = u64::from(a.num_free()) * u64::from(b.num_usable());
                    let b_ratio = u64::from(b.num_free()) * u64::from(a.num_usable());
                    b_ratio.cmp(&a_ratio)
                }
            }
        };
        by_score.then_with(|| a.id.cmp(&b.id))
    }

    /// Why `req` does not fit on `agents`; permanent reasons come first.
    pub fn diagnose(&self, req: &AllocationRequest, agents: &Agents) -> WaitReason {
        let eligible: Vec<&Agent> = self.eligible(req, agents).collect();
        if eligible.is_empty() && !req.excluded_agents.is_empty() && agents.values().any(|a| a.takes_work() && a.label == req.label) {
            return WaitReason::AllAgentsExcluded { excluded: req.excluded_agents.iter().map(|a| a.as_str().to_owned()).collect() };
        }
        if eligible.is_empty() {
            return WaitReason::NoEligibleAgents { label: req.label.clone() };
        }
        if req.slots == 0 {
            return WaitReason::AuxCapacityFull { max_aux_containers_per_agent: self.max_aux };
        }
        let capacity: u32 = eligible.iter().map(|a| a.num_usable()).sum();
        if req.slots > capacity {
            return WaitReason::ExceedsPoolCapacity { requested: req.slots, capacity };
        }
        let largest = eligible.iter().map(|a| a.num_usable()).max().unwrap_or(0);
        if req.slots > largest {
            if req.single_agent {
                return WaitReason::ExceedsLargestAgent { requested: req.slots, largest };
            }
            let mut agents_by_size: BTreeMap<u32, u64> = BTreeMap::new();
            for agent in eligible.iter().filter(|a| a.num_usable() > 0) {
                *agents_by_size.entry(agent.num_usable()).or_default() += 1;
            }
            let gang_possible = agents_by_size
                .iter()
                .any(|(size, count)| req.slots.is_multiple_of(*size) && u64::from(*size) * count >= u64::from(req.slots));
            if !gang_possible {
                return WaitReason::NoGangShape { requested: req.slots, slots_per_agent: agents_by_size.into_keys().collect() };
            }
        }
        WaitReason::InsufficientFreeSlots { requested: req.slots, free: eligible.iter().map(|a| a.num_free()).sum() }
    }
}

/// Marks `placements` as held by `allocation`.
pub(crate) fn hold(agents: &mut Agents, allocation: &AllocationId, placements: &[Placement]) {
    for placement in placements {
        if let Some(agent) = agents.get_mut(&placement.agent_id) {
            agent.hold(allocation, &placement.slot_ids);
        }
    }
}

/// Frees what `allocation` holds on the agents of `placements`.
pub(crate) fn free(agents: &mut Agents, allocation: &AllocationId, placements: &[Placement]) {
    for placement in placements {
        if let Some(agent) = agents.get_mut(&placement.agent_id) {
            agent.free(allocation);
        }
    }
}
