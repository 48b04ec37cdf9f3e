//! The priority policy: requests are tried in priority order (1 first), FIFO by job and then by
//! submission within a priority; zero-slot and slot requests are scheduled independently.
//!
//! Once a request of some priority cannot fit, lower priorities are only *backfilled*: started if
//! preemption is on and they are preemptible (so they can be taken back). With preemption on, a
//! request that cannot fit preempts running preemptible allocations, lowest priority and newest
//! first, and only if that makes it fit; while preemptions are pending nothing lower starts, so
//! the freed slots go to the request they were freed for.

use std::collections::{BTreeMap, BTreeSet};

use crate::decisions::{PassOutcome, WaitReason};
use crate::fit::{self, Agents, Fitter};
use crate::fit_cache::FitCache;
use crate::ids::{AllocationId, JobId};
use crate::request::Entry;
use crate::state::{PoolState, Queued};

pub(crate) fn schedule(state: &PoolState, preemption: bool) -> PassOutcome {
    let order = state.queue();
    let mut outcome = PassOutcome::new(&order);
    for zero_slot in [false, true] {
        let class: Vec<Queued<'_>> = order.iter().copied().filter(|q| q.entry.is_zero_slot() == zero_slot).collect();
        if class.is_empty() {
            // Nothing to place: spare the copy of every agent a class pass starts from.
            continue;
        }
        let mut pass = ClassPass {
            state,
            fitter: state.fitter(),
            preemption,
            view: state.agents_view(),
            releasing: BTreeSet::new(),
            planned: BTreeMap::new(),
            backfilling: false,
            cache: FitCache::default(),
            outcome: &mut outcome,
        };
        pass.run(&class);
    }
    outcome
}

/// One pass over one class (zero-slot or slot requests) against a scratch copy of the agents.
struct ClassPass<'a, 'o> {
    state: &'a PoolState,
    fitter: Fitter,
    preemption: bool,
    /// Real holdings plus what this pass has placed or reserved.
    view: Agents,
    /// Allocations this pass counts on being preempted.
    releasing: BTreeSet<AllocationId>,
    /// Slots this pass started per job, for `max_slots`.
    planned: BTreeMap<JobId, u32>,
    /// Set once a request that could fit the pool did not fit now.
    backfilling: bool,
    /// Fitting results of this pass, valid while the view has not changed in their favour.
    cache: FitCache<'a>,
    outcome: &'o mut PassOutcome,
}

type ByPriority<'a> = BTreeMap<u32, Vec<Queued<'a>>>;

impl<'a> ClassPass<'a, '_> {
    fn run(&mut self, class: &[Queued<'a>]) {
        let mut pending = ByPriority::new();
        let mut scheduled = ByPriority::new();
        for &queued in class {
            let side = if queued.entry.state.is_scheduled() { &mut scheduled } else { &mut pending };
            side.entry(queued.priority()).or_default().push(queued);
        }
        for (&priority, requests) in &pending {
            self.run_priority(priority, requests, &scheduled);
        }
    }

    fn run_priority(&mut self, priority: u32, requests: &[Queued<'a>], scheduled: &ByPriority<'a>) {
        let mut unfitted = Vec::new();
        for &queued in requests {
            let entry = queued.entry;
            if let Some(reason) = self.over_max_slots(queued) {
                self.outcome.wait(queued, reason);
                continue;
            }
            let Some(placements) = self.cache.find(&self.fitter, &entry.request, &self.view) else {
                unfitted.push(queued);
                continue;
            };
            // The slots stay reserved in the view even when the request may not start, so that
            // lower priorities cannot take them.
            fit::hold(&mut self.view, entry.id(), &placements);
            self.cache.held(&self.view, &placements);
            let may_start = self.releasing.is_empty() && (!self.backfilling || (self.preemption && entry.request.preemptible));
            if may_start {
                let backfilled = self.backfilling;
                *self.planned.entry(entry.request.job_id.clone()).or_default() += entry.request.slots;
                self.outcome.assign(queued, placements, backfilled);
            } else {
                self.outcome.wait(queued, WaitReason::BlockedByHigherPriority);
            }
        }

        let diagnosed: Vec<(Queued<'a>, WaitReason)> =
            unfitted.into_iter().map(|queued| (queued, self.cache.diagnose(&self.fitter, &queued.entry.request, &self.view))).collect();
        // A request that can never fit must not hold everything below it back forever.
        if diagnosed.iter().any(|(_, reason)| !reason.can_never_fit()) {
            self.backfilling = true;
        }

        for (queued, reason) in diagnosed {
            let reason = if self.preemption && !reason.can_never_fit() && self.make_room(queued, priority, scheduled) {
                WaitReason::AwaitingPreemption
            } else {
                reason
            };
            self.outcome.wait(queued, reason);
        }
    }

    /// Why `entry` may not start whatever fits: its job would hold more than its `max_slots`.
    fn over_max_slots(&self, queued: Queued<'_>) -> Option<WaitReason> {
        let (entry, max_slots) = (queued.entry, queued.job?.max_slots?);
        let job = &entry.request.job_id;
        let used = self.state.job_slots_held(job) + self.planned.get(job).copied().unwrap_or(0);
        (used.saturating_add(entry.request.slots) > max_slots).then_some(WaitReason::MaxSlotsReached { max_slots, used })
    }

    /// Reserves room for `entry` in the view, from preemptions already decided this pass or by
    /// choosing new victims. False (and nothing changed) when no preemption makes it fit.
    fn make_room(&mut self, queued: Queued<'a>, priority: u32, scheduled: &ByPriority<'a>) -> bool {
        let entry = queued.entry;
        if let Some(placements) = self.cache.find(&self.fitter, &entry.request, &self.view) {
            fit::hold(&mut self.view, entry.id(), &placements);
            self.cache.held(&self.view, &placements);
            return true;
        }
        if self.cache.known_no_room(&entry.request) {
            return false;
        }
        let candidates = self.victim_candidates(queued, priority, scheduled);
        // On success the view is left without the victims' slots.
        let Some(victims) = self.fewest_victims(entry, &candidates) else {
            self.cache.no_room(&entry.request);
            return false;
        };
        let Some(placements) = self.fitter.find(&entry.request, &self.view) else {
            self.restore(&victims);
            return false;
        };
        fit::hold(&mut self.view, entry.id(), &placements);
        self.cache.freed();
        for victim in victims {
            self.releasing.insert(victim.id().clone());
            self.outcome.preemptions.push(victim.id().clone());
        }
        true
    }

    /// Running preemptible allocations `entry` may displace, in the order they should go: those
    /// already being preempted (their work is lost anyway), then lowest priority and newest first.
    /// At `entry`'s own priority only jobs queued behind its job qualify.
    fn victim_candidates(&self, queued: Queued<'_>, priority: u32, scheduled: &ByPriority<'a>) -> Vec<&'a Entry> {
        let position = queued.job_position();
        let mut candidates = Vec::new();
        'priorities: for (&victim_priority, victims) in scheduled.range(priority..).rev() {
            for queued in victims.iter().rev() {
                let victim = queued.entry;
                if victim_priority == priority && queued.job_position() <= position {
                    break 'priorities;
                }
                if victim.is_running_preemptible() && !self.releasing.contains(victim.id()) {
                    candidates.push(victim);
                }
            }
        }
        candidates.sort_by_key(|victim| !victim.is_preempting());
        candidates
    }

    /// Takes candidates in order until `entry` fits, then gives back every victim the fit can do
    /// without, so no allocation is preempted for nothing. `None` if even all of them are not
    /// enough: then nobody is preempted and the view is as it was. Otherwise the view is left
    /// without the chosen victims' holdings. The view is changed in place and changed back
    /// (holding a victim's placements again undoes freeing them), never copied: a copy of 1,000
    /// agents per preemption was most of a pass under preemption.
    fn fewest_victims(&mut self, entry: &Entry, candidates: &[&'a Entry]) -> Option<Vec<&'a Entry>> {
        let mut chosen = Vec::new();
        let mut fits = false;
        for &victim in candidates {
            fit::free(&mut self.view, victim.id(), self.state.placements_of(victim.id()));
            chosen.push(victim);
            if self.fitter.find(&entry.request, &self.view).is_some() {
                fits = true;
                break;
            }
        }
        if !fits && (!chosen.is_empty() || self.fitter.find(&entry.request, &self.view).is_none()) {
            // Not even every candidate together makes room: preempt nobody.
            self.restore(&chosen);
            return None;
        }
        // Fitting only gets easier as slots are freed, so the last victim is always needed.
        let mut index = 0;
        while index + 1 < chosen.len() {
            let spared = chosen[index];
            fit::hold(&mut self.view, spared.id(), self.state.placements_of(spared.id()));
            if self.fitter.find(&entry.request, &self.view).is_some() {
                chosen.remove(index);
            } else {
                fit::free(&mut self.view, spared.id(), self.state.placements_of(spared.id()));
                index += 1;
            }
        }
        Some(chosen)
    }

    /// Gives `victims` their holdings back in the view.
    fn restore(&mut self, victims: &[&Entry]) {
        for victim in victims {
            fit::hold(&mut self.view, victim.id(), self.state.placements_of(victim.id()));
        }
    }
}
