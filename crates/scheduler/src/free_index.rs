//! An index of a pass's view of the agents: enabled agents by label and by (free, usable) slot
//! counts. Picking the agent for a slot request then looks at a handful of count buckets instead
//! of every agent (a pass with 10,000 pending requests on 1,000 agents, issue 13), and picks
//! exactly the agent [`Fitter::find`](crate::fit::Fitter::find)'s scan would: the best (or worst)
//! fit, ties to the smallest agent id.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;

use crate::agent::Agent;
use crate::config::FittingPolicy;
use crate::fit::Agents;
use crate::ids::AgentId;
use crate::request::AllocationRequest;

/// (free, usable) slot counts of an agent, and whether it is idle (holds no slot, not even a
/// disabled one): only idle agents take part in gangs.
type Counts = (u32, u32, bool);

/// Agents are named by their position in the view's order (by id), so a bucket orders them as
/// their ids without reading any id text, and a placement's agent is found by the address of its
/// id's text (a placement carries a clone of the view's id).
#[derive(Debug, Default)]
pub(crate) struct FreeIndex {
    /// Every agent of the view by position.
    ids: Vec<AgentId>,
    /// Positions by the address of the id's text.
    positions: HashMap<usize, usize>,
    buckets: HashMap<String, BTreeMap<Counts, BTreeSet<usize>>>,
    /// Where each indexed agent is filed, by position.
    filed: Vec<Option<(String, Counts)>>,
}

impl FreeIndex {
    pub fn build(agents: &Agents) -> FreeIndex {
        let ids: Vec<AgentId> = agents.keys().cloned().collect();
        let positions = ids.iter().enumerate().map(|(position, id)| (id.shared_address(), position)).collect();
        let mut index = FreeIndex { filed: vec![None; ids.len()], ids, positions, buckets: HashMap::default() };
        for (position, agent) in agents.values().enumerate() {
            index.file(position, agent);
        }
        index
    }

    /// The agent's position: by the address of its text, else by its text.
    fn position(&self, agent_id: &AgentId) -> Option<usize> {
        match self.positions.get(&agent_id.shared_address()) {
            Some(&position) => Some(position),
            None => self.ids.binary_search(agent_id).ok(),
        }
    }

    /// Files the agent again after its slots changed (or drops it if it is gone or disabled).
    pub fn refile(&mut self, agents: &Agents, agent_id: &AgentId) {
        let Some(position) = self.position(agent_id) else { return };
        if let Some((label, counts)) = self.filed[position].take()
            && let Some(by_counts) = self.buckets.get_mut(&label)
            && let Some(bucket) = by_counts.get_mut(&counts)
        {
            bucket.remove(&position);
            if bucket.is_empty() {
                by_counts.remove(&counts);
            }
        }
        if let Some(agent) = agents.get(agent_id) {
            self.file(position, agent);
        }
    }

    fn file(&mut self, position: usize, agent: &Agent) {
        if !agent.takes_work() {
            return;
        }
        let counts = (agent.num_free(), agent.num_usable(), agent.num_used() == 0);
        self.buckets.entry(agent.label.clone()).or_default().entry(counts).or_default().insert(position);
        self.filed[position] = Some((agent.label.clone(), counts));
    }

    /// The agent a request of one or more slots goes to on a single agent, if any has room.
    pub fn home(&self, policy: FittingPolicy, req: &AllocationRequest) -> Option<&AgentId> {
        let by_counts = self.buckets.get(&req.label)?;
        // The best candidate of each bucket that has room: its smallest id not excluded.
        let candidates = by_counts.range((req.slots, 0, false)..).filter_map(|(counts, positions)| {
            positions.iter().map(|&p| &self.ids[p]).find(|id| !req.excluded_agents.contains(*id)).map(|id| (*counts, id))
        });
        match policy {
            // Fewest free slots; ties to the smallest id.
            FittingPolicy::Best => candidates.min_by(|(a, a_id), (b, b_id)| a.0.cmp(&b.0).then_with(|| a_id.cmp(b_id))).map(|(_, id)| id),
            // Highest free/usable ratio (compared without floats); ties to the smallest id.
            FittingPolicy::Worst => candidates
                .min_by(|(a, a_id), (b, b_id)| {
                    let a_ratio = u64::from(a.0) * u64::from(b.1);
                    let b_ratio = u64::from(b.0) * u64::from(a.1);
                    b_ratio.cmp(&a_ratio).then_with(|| a_id.cmp(b_id))
                })
                .map(|(_, id)| id),
        }
    }
}

impl FreeIndex {
    /// Multi-agent placement as [`Fitter::find_on_idle_agents`](crate::fit::Fitter::find_on_idle_agents)
    /// chooses it: whole idle agents of one size, the largest size that divides the request and
    /// has enough agents, the smallest ids first (every idle agent of a size scores the same).
    pub fn idle_agents(&self, req: &AllocationRequest) -> Option<(u32, Vec<&AgentId>)> {
        let by_counts = self.buckets.get(&req.label)?;
        let mut sizes: Vec<u32> =
            by_counts.keys().filter(|(free, usable, idle)| *idle && free == usable && *free > 0).map(|k| k.0).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for size in sizes.into_iter().rev() {
            if !req.slots.is_multiple_of(size) {
                continue;
            }
            let needed = usize::try_from(req.slots / size).unwrap_or(usize::MAX);
            let chosen: Vec<&AgentId> = by_counts[&(size, size, true)]
                .iter()
                .map(|&p| &self.ids[p])
                .filter(|id| !req.excluded_agents.contains(*id))
                .take(needed)
                .collect();
            if chosen.len() == needed {
                return Some((size, chosen));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentSpec;
    use crate::fit::Fitter;
    use crate::ids::{AllocationId, DeviceType, LogicalTime};
    use crate::sim::Rng;

    /// The agents the index picks, or none: one agent, else a gang.
    fn picked(index: &FreeIndex, policy: FittingPolicy, req: &AllocationRequest) -> Option<Vec<AgentId>> {
        if let Some(id) = index.home(policy, req) {
            return Some(vec![id.clone()]);
        }
        if req.single_agent || req.slots <= 1 {
            return None;
        }
        index.idle_agents(req).map(|(_, ids)| ids.into_iter().cloned().collect())
    }

    /// The index picks the agents the plain scan (`Fitter::find`) picks, as agents fill up and are
    /// refiled (also by an id that does not share the view's text), with labels, disabled agents
    /// and slots, and excluded agents.
    #[test]
    fn the_index_picks_what_the_scan_picks() {
        let mut rng = Rng::new(3);
        for case in 0..40 {
            let mut agents = Agents::new();
            for n in 0..(5 + rng.below(30)) {
                let slots = *rng.pick(&[1, 2, 4, 4, 8, 8]);
                let label = *rng.pick(&["", "", "gpu"]);
                let spec = AgentSpec::new(format!("a{n:02}"), "p").with_slots(DeviceType::Cuda, slots).with_label(label);
                let mut agent = Agent::from_spec(spec).expect("valid agent");
                agent.enabled = !rng.percent(10);
                if rng.percent(10) {
                    agent.set_slot_enabled(0, false);
                }
                agents.insert(agent.id.clone(), agent);
            }
            let policy = if case % 2 == 0 { FittingPolicy::Best } else { FittingPolicy::Worst };
            let fitter = Fitter { policy, max_aux: 1 };
            let mut index = FreeIndex::build(&agents);
            for step in 0..30 {
                let mut req = AllocationRequest::new(format!("r{step}.1"), "t", "j", "p", *rng.pick(&[1, 2, 3, 4, 8, 16]), LogicalTime(0))
                    .with_label(*rng.pick(&["", "gpu"]))
                    .with_single_agent(rng.percent(20));
                if rng.percent(20) {
                    req = req.excluding([AgentId::new(format!("a{:02}", rng.below(10)))]);
                }
                let expected = fitter.find(&req, &agents).map(|placements| placements.into_iter().map(|p| p.agent_id).collect::<Vec<_>>());
                assert_eq!(picked(&index, policy, &req), expected, "case {case} step {step}: {req:?}");
                // Take the placement, and refile its agents (every other time by a fresh id).
                let Some(placements) = fitter.find(&req, &agents) else { continue };
                let allocation = AllocationId::new(format!("r{step}.1"));
                crate::fit::hold(&mut agents, &allocation, &placements);
                for placement in &placements {
                    let id = if step % 2 == 0 { placement.agent_id.clone() } else { AgentId::new(placement.agent_id.as_str()) };
                    index.refile(&agents, &id);
                }
            }
        }
    }
}
