//! Memoised fitting for one scheduling pass, so a pass over 10,000 pending requests does not
//! search 1,000 agents for each of them (issue 13: one pass < 20 ms).
//!
//! A pass only ever *takes* slots from its scratch view of the agents, except where it plans
//! preemptions. So a request shape (label, slots, single-agent) that did not fit still does not
//! fit until the view gains free slots, and a diagnosis stays true until the view changes at all.
//! The pass reports every change ([`FitCache::held`], [`FitCache::freed`]); requests that exclude
//! agents are never memoised (their fit depends on more than the shape).

use std::collections::HashMap;

use crate::decisions::{Placement, WaitReason};
use crate::fit::{Agents, Fitter};
use crate::request::AllocationRequest;

/// What decides whether and how a request without excluded agents fits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Shape {
    label: String,
    slots: u32,
    single_agent: bool,
}

impl Shape {
    fn of(req: &AllocationRequest) -> Option<Shape> {
        req.excluded_agents.is_empty().then(|| Shape { label: req.label.clone(), slots: req.slots, single_agent: req.single_agent })
    }
}

#[derive(Debug, Default)]
pub(crate) struct FitCache {
    /// Bumped whenever the view gains free slots or aux capacity.
    freed: u64,
    /// Bumped on every change of the view.
    changed: u64,
    /// Shapes that did not fit, with the `freed` generation they were tried at.
    no_fit: HashMap<Shape, u64>,
    /// Diagnoses, with the `changed` generation they hold for.
    diagnoses: HashMap<Shape, (u64, WaitReason)>,
    /// Shapes for which even every preemption candidate did not make room (see
    /// [`FitCache::no_room`]), with the `freed` generation.
    no_room: HashMap<Shape, u64>,
}

impl FitCache {
    /// [`Fitter::find`] on `view`, skipping the search when the shape is known not to fit.
    pub fn find(&mut self, fitter: &Fitter, req: &AllocationRequest, view: &Agents) -> Option<Vec<Placement>> {
        let shape = Shape::of(req);
        if let Some(shape) = &shape
            && self.no_fit.get(shape) == Some(&self.freed)
        {
            return None;
        }
        let found = fitter.find(req, view);
        if found.is_none()
            && let Some(shape) = shape
        {
            self.no_fit.insert(shape, self.freed);
        }
        found
    }

    /// [`Fitter::diagnose`] on `view`, reusing the last diagnosis of the shape while the view is
    /// unchanged.
    pub fn diagnose(&mut self, fitter: &Fitter, req: &AllocationRequest, view: &Agents) -> WaitReason {
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
    pub fn known_no_room(&self, req: &AllocationRequest) -> bool {
        Shape::of(req).is_some_and(|shape| self.no_room.get(&shape) == Some(&self.freed))
    }

    /// Records that no preemption makes room for this shape (see [`FitCache::known_no_room`]).
    pub fn no_room(&mut self, req: &AllocationRequest) {
        if let Some(shape) = Shape::of(req) {
            self.no_room.insert(shape, self.freed);
        }
    }

    /// The pass took slots or an aux container in its view.
    pub fn held(&mut self) {
        self.changed += 1;
    }

    /// The pass freed slots or aux capacity in its view (or replaced the view).
    pub fn freed(&mut self) {
        self.freed += 1;
        self.changed += 1;
    }
}
