//! Memoised fitting for one scheduling pass, so a pass over 10,000 pending requests does not
//! search 1,000 agents for each of them (issue 13: one pass < 20 ms).
//!
//! A pass only ever *takes* slots from its scratch view of the agents, except where it plans
//! preemptions. So a request shape (label, slots, single-agent) that did not fit still does not
//! fit until the view gains free slots, and a diagnosis stays true until the view changes at all.
//! The pass reports every change ([`FitCache::held`], [`FitCache::freed`]); requests that exclude
//! agents are never memoised (their fit depends on more than the shape).

use rustc_hash::FxHashMap as HashMap;

use crate::decisions::{Placement, WaitReason};
use crate::fit::{Agents, Fitter};
use crate::free_index::FreeIndex;
use crate::request::AllocationRequest;

/// What decides whether and how a request without excluded agents fits.
/// Borrowed from the requests of the pass, so a lookup copies no label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Shape<'a> {
    label: &'a str,
    slots: u32,
    single_agent: bool,
}

impl<'a> Shape<'a> {
    fn of(req: &'a AllocationRequest) -> Option<Shape<'a>> {
        req.excluded_agents.is_empty().then_some(Shape { label: req.label.as_str(), slots: req.slots, single_agent: req.single_agent })
    }
}

#[derive(Debug, Default)]
pub(crate) struct FitCache<'a> {
    /// Bumped whenever the view gains free slots or aux capacity.
    freed: u64,
    /// Bumped on every change of the view.
    changed: u64,
    /// Shapes that did not fit, with the `freed` generation they were tried at.
    no_fit: HashMap<Shape<'a>, u64>,
    /// Diagnoses, with the `changed` generation they hold for.
    diagnoses: HashMap<Shape<'a>, (u64, WaitReason)>,
    /// Shapes for which even every preemption candidate did not make room (see
    /// [`FitCache::no_room`]), with the `freed` generation.
    no_room: HashMap<Shape<'a>, u64>,
    /// The view's agents by label and free slots, built on first use and kept in step by
    /// [`FitCache::held`]; dropped when the view gains slots.
    index: Option<FreeIndex>,
}

impl<'a> FitCache<'a> {
    /// [`Fitter::find`] on `view`, skipping the search when the shape is known not to fit.
    pub fn find(&mut self, fitter: &Fitter, req: &'a AllocationRequest, view: &Agents) -> Option<Vec<Placement>> {
        let shape = Shape::of(req);
        if let Some(shape) = &shape
            && self.no_fit.get(shape) == Some(&self.freed)
        {
            return None;
        }
        let found = if req.slots == 0 { fitter.find(req, view) } else { self.find_slots(fitter, req, view) };
        if found.is_none()
            && let Some(shape) = shape
        {
            self.no_fit.insert(shape, self.freed);
        }
        found
    }

    /// [`Fitter::diagnose`] on `view`, reusing the last diagnosis of the shape while the view is
    /// unchanged.
    pub fn diagnose(&mut self, fitter: &Fitter, req: &'a AllocationRequest, view: &Agents) -> WaitReason {
        let Some(shape) = Shape::of(req) else {
            return fitter.diagnose(req, view);
        };
        if let Some((generation, reason)) = self.diagnoses.get(&shape)
            && *generation == self.changed
        {
            return reason.clone();
        }
        let reason = fitter.diagnose(req, view);
        self.diagnoses.insert(shape, (self.changed, reason.clone()));
        reason
    }

    /// True when preempting every candidate did not make room for this shape earlier in the pass
    /// and the view has gained nothing since. The priority policy visits requests in queue
    /// order and each later request may displace only a subset of what an earlier one could, so
    /// the earlier failure stands.
    pub fn known_no_room(&self, req: &'a AllocationRequest) -> bool {
        Shape::of(req).is_some_and(|shape| self.no_room.get(&shape) == Some(&self.freed))
    }

    /// Records that no preemption makes room for this shape (see [`FitCache::known_no_room`]).
    pub fn no_room(&mut self, req: &'a AllocationRequest) {
        if let Some(shape) = Shape::of(req) {
            self.no_room.insert(shape, self.freed);
        }
    }

    /// [`Fitter::find`] for a request of one or more slots, choosing the single agent through
    /// the index.
    fn find_slots(&mut self, fitter: &Fitter, req: &AllocationRequest, view: &Agents) -> Option<Vec<Placement>> {
        let index = self.index.get_or_insert_with(|| FreeIndex::build(view));
        if let Some(agent) = index.home(fitter.policy, req).and_then(|id| view.get(id)) {
            let slot_ids = agent.free_slots().take(usize::try_from(req.slots).unwrap_or(usize::MAX)).collect();
            return Some(vec![Placement { agent_id: agent.id.clone(), slot_ids }]);
        }
        if req.single_agent || req.slots <= 1 {
            return None;
        }
        let (_, agents) = index.idle_agents(req)?;
        let placements = agents
            .into_iter()
            .filter_map(|id| view.get(id))
            .map(|agent| Placement { agent_id: agent.id.clone(), slot_ids: agent.free_slots().collect() })
            .collect();
        Some(placements)
    }

    /// The pass took `placements` (slots or an aux container) in its view.
    pub fn held(&mut self, view: &Agents, placements: &[Placement]) {
        self.changed += 1;
        if let Some(index) = &mut self.index {
            for placement in placements {
                index.refile(view, &placement.agent_id);
            }
        }
    }

    /// The pass freed slots or aux capacity in its view (or replaced the view).
    pub fn freed(&mut self) {
        self.freed += 1;
        self.changed += 1;
        self.index = None;
    }
}
