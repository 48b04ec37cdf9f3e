//! An index of a pass's view of the agents: enabled agents by label and by (free, usable) slot
//! counts. Picking the agent for a slot request then looks at a handful of count buckets instead
//! of every agent (a pass with 10,000 pending requests on 1,000 agents, issue 13), and picks
//! exactly the agent [`Fitter::find`](crate::fit::Fitter::find)'s scan would: the best (or worst)
//! fit, ties to the smallest agent id.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;

use crate::config::FittingPolicy;
use crate::fit::Agents;
use crate::ids::AgentId;
use crate::request::AllocationRequest;

/// (free, usable) slot counts of an agent, and whether it is idle (holds no slot, not even a
/// disabled one): only idle agents take part in gangs.
type Counts = (u32, u32, bool);

#[derive(Debug, Default)]
pub(crate) struct FreeIndex {
    buckets: HashMap<String, BTreeMap<Counts, BTreeSet<AgentId>>>,
    /// Where each indexed agent is filed.
    filed: HashMap<AgentId, (String, Counts)>,
}

impl FreeIndex {
    pub fn build(agents: &Agents) -> FreeIndex {
        let mut index = FreeIndex::default();
        for agent in agents.values() {
            index.refile(agents, &agent.id);
        }
        index
    }

    /// Files the agent again after its slots changed (or drops it if it is gone or disabled).
    pub fn refile(&mut self, agents: &Agents, agent_id: &AgentId) {
        if let Some((label, counts)) = self.filed.remove(agent_id)
            && let Some(by_counts) = self.buckets.get_mut(&label)
            && let Some(bucket) = by_counts.get_mut(&counts)
        {
            bucket.remove(agent_id);
            if bucket.is_empty() {
                by_counts.remove(&counts);
            }
        }
        let Some(agent) = agents.get(agent_id).filter(|a| a.takes_work()) else { return };
        let counts = (agent.num_free(), agent.num_usable(), agent.num_used() == 0);
        self.buckets.entry(agent.label.clone()).or_default().entry(counts).or_default().insert(agent_id.clone());
        self.filed.insert(agent_id.clone(), (agent.label.clone(), counts));
    }

    /// The agent a request of one or more slots goes to on a single agent, if any has room.
    pub fn home(&self, policy: FittingPolicy, req: &AllocationRequest) -> Option<&AgentId> {
        let by_counts = self.buckets.get(&req.label)?;
        // The best candidate of each bucket that has room: its smallest id not excluded.
        let candidates = by_counts
            .range((req.slots, 0, false)..)
            .filter_map(|(counts, ids)| ids.iter().find(|id| !req.excluded_agents.contains(*id)).map(|id| (*counts, id)));
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
            let chosen: Vec<&AgentId> =
                by_counts[&(size, size, true)].iter().filter(|id| !req.excluded_agents.contains(*id)).take(needed).collect();
            if chosen.len() == needed {
                return Some((size, chosen));
            }
        }
        None
    }
}
