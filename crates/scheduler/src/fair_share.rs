//! The fair-share policy: max-min fairness between jobs, weighted. Each job's slot demand is its
//! running plus pending slots; slots are offered by progressive filling in proportion to weight;
//! jobs over their offer are preempted (newest allocation first, when preemption is on) and jobs
//! under it start pending requests that fit. A job's `max_slots` caps its demand, so it is never
//! offered more (what it holds unpreemptibly excepted). Zero-slot requests are not shared: they start
//! whenever an aux container is free.

use std::collections::BTreeMap;

use crate::decisions::{Assignment, PassOutcome, WaitReason};
use crate::fit::{self, Agents, Fitter};
use crate::fit_cache::FitCache;
use crate::ids::{JobId, LogicalTime};
use crate::request::Entry;
use crate::state::PoolState;

pub(crate) fn schedule(state: &PoolState, preemption: bool) -> PassOutcome {
    let fitter = state.fitter();
    let mut view = state.agents_view();
    let mut outcome = PassOutcome::default();
    let order = state.queue_order();
    outcome.queued = order.iter().filter(|e| !e.state.is_scheduled()).map(|e| e.id().clone()).collect();
    let mut cache = FitCache::default();

    for entry in order.iter().filter(|e| e.is_zero_slot() && !e.state.is_scheduled()) {
        start_or_wait(&fitter, &mut cache, &mut view, entry, &mut outcome);
    }

    let mut groups = group_demand(state, &fitter, &order, &mut outcome);
    groups.sort_by(|a, b| a.demand.cmp(&b.demand).then(a.position.cmp(&b.position)));
    let capacity = state.agents.values().filter(|a| a.enabled).map(|a| a.num_usable()).sum();
    offer_slots(&mut groups, capacity);

    for group in &groups {
        let offered = group.offered();
        if group.active > offered {
            if preemption {
                let mut active = group.active;
                for entry in group.running.iter().rev().filter(|e| e.request.preemptible) {
                    if active <= offered {
                        break;
                    }
                    outcome.preemptions.push(entry.id().clone());
                    active -= entry.request.slots;
                }
            }
            for entry in &group.pending {
                outcome.waiting.insert(entry.id().clone(), WaitReason::OverFairShare { share: offered, used: group.active });
            }
            continue;
        }
        let mut budget = offered - group.active;
        for entry in &group.pending {
            if entry.request.slots > budget {
                let reason = WaitReason::OverFairShare { share: offered, used: offered - budget };
                outcome.waiting.insert(entry.id().clone(), reason);
            } else if start_or_wait(&fitter, &mut cache, &mut view, entry, &mut outcome) {
                budget -= entry.request.slots;
            }
        }
    }
    outcome
}

/// Starts `entry` if it fits the view now, or records why not. True if it started.
fn start_or_wait(fitter: &Fitter, cache: &mut FitCache, view: &mut Agents, entry: &Entry, outcome: &mut PassOutcome) -> bool {
    match cache.find(fitter, &entry.request, view) {
        Some(placements) => {
            fit::hold(view, entry.id(), &placements);
            cache.held(view, &placements);
            outcome.assignments.push(Assignment { allocation_id: entry.id().clone(), placements, backfilled: false });
            true
        }
        None => {
            outcome.waiting.insert(entry.id().clone(), cache.diagnose(fitter, &entry.request, view));
            false
        }
    }
}

/// One job's standing in the pass.
struct GroupShare<'a> {
    weight: f64,
    position: (LogicalTime, u64),
    /// Slots of its running and pending requests.
    demand: u32,
    /// Slots its running allocations hold (those being preempted or lost excluded).
    active: u32,
    /// Slots held by its non-preemptible allocations: offered outright, never taken back.
    presubscribed: u32,
    /// Slots progressive filling granted it.
    entitled: u32,
    /// Dropped from this pass to break a deadlock (its offer could not start anything).
    disabled: bool,
    /// Slots of its smallest pending request.
    smallest_pending: Option<u32>,
    /// The job's `max_slots`.
    max_slots: Option<u32>,
    pending: Vec<&'a Entry>,
    running: Vec<&'a Entry>,
}

impl GroupShare<'_> {
    fn offered(&self) -> u32 {
        if self.disabled { self.presubscribed } else { self.entitled.max(self.presubscribed) }
    }
}

/// Groups slot requests by job. Pending requests that can never fit the pool do not count as
/// demand (they would waste offers); they wait with their reason.
fn group_demand<'a>(state: &'a PoolState, fitter: &Fitter, order: &[&'a Entry], outcome: &mut PassOutcome) -> Vec<GroupShare<'a>> {
    let mut groups: Vec<GroupShare<'a>> = Vec::new();
    let mut index_of: BTreeMap<&JobId, usize> = BTreeMap::new();
    // Diagnosed against the pool as it is, which does not change here.
    let mut cache = FitCache::default();
    for &entry in order.iter().filter(|e| !e.is_zero_slot()) {
        let scheduled = entry.state.is_scheduled();
        if scheduled && !entry.is_active() {
            continue;
        }
        if !scheduled {
            let reason = cache.diagnose(fitter, &entry.request, &state.agents);
            if reason.can_never_fit() {
                outcome.waiting.insert(entry.id().clone(), reason);
                continue;
            }
        }
        let job = &entry.request.job_id;
        let index = *index_of.entry(job).or_insert_with(|| {
            groups.push(GroupShare {
                weight: state.weight(job),
                position: state.job_position(entry),
                demand: 0,
                active: 0,
                presubscribed: 0,
                entitled: 0,
                disabled: false,
                smallest_pending: None,
                max_slots: None,
                pending: Vec::new(),
                running: Vec::new(),
            });
            groups.len() - 1
        });
        let group = &mut groups[index];
        group.max_slots = state.jobs.get(job).and_then(|j| j.max_slots);
        let slots = entry.request.slots;
        group.demand = group.demand.saturating_add(slots);
        if scheduled {
            group.active += slots;
            if !entry.request.preemptible {
                group.presubscribed += slots;
            }
            group.running.push(entry);
        } else {
            group.smallest_pending = Some(group.smallest_pending.map_or(slots, |s| s.min(slots)));
            group.pending.push(entry);
        }
    }
    for group in &mut groups {
        if let Some(max) = group.max_slots {
            group.demand = group.demand.min(max.max(group.presubscribed));
        }
    }
    groups
}

/// Progressive filling: every round, each hungry job gets a slice of the slots left in
/// proportion to its weight (at least one), up to its demand, until slots or hunger run out.
/// `groups` must be sorted by demand, so small jobs are served first when slots are indivisible.
fn offer_slots(groups: &mut [GroupShare<'_>], capacity: u32) {
    let presubscribed: u32 = groups.iter().map(|g| g.presubscribed).sum();
    let mut left = capacity.saturating_sub(presubscribed);
    loop {
        let hungry: Vec<usize> = (0..groups.len()).filter(|&i| !groups[i].disabled && groups[i].offered() < groups[i].demand).collect();
        if hungry.is_empty() {
            return;
        }
        if left == 0 {
            if break_deadlock(groups, &hungry, &mut left) {
                continue;
            }
            return;
        }
        let total_weight: f64 = hungry.iter().map(|&i| groups[i].weight).sum();
        let start = left;
        let mut progress = false;
        for &i in &hungry {
            let group = &mut groups[i];
            // Truncation is intended: the floor of a non-negative share no larger than `start`.
            let share = ((f64::from(start) * group.weight / total_weight).floor() as u32).max(1);
            let want = share.min(group.demand.saturating_sub(group.entitled));
            // Entitlement up to what the job already holds unpreemptibly costs no capacity.
            let covered = group.presubscribed.saturating_sub(group.entitled).min(want);
            let paid = (want - covered).min(left);
            group.entitled += covered + paid;
            left -= paid;
            progress |= covered + paid > 0;
        }
        if !progress {
            return;
        }
    }
}

/// With every slot offered, multi-slot jobs may each hold an offer too small for any of their
/// requests, so nobody starts. Drops the newest such job (with nothing running) and frees its
/// offer for the others. False if there is none.
fn break_deadlock(groups: &mut [GroupShare<'_>], hungry: &[usize], left: &mut u32) -> bool {
    let stuck = hungry
        .iter()
        .copied()
        .filter(|&i| {
            let group = &groups[i];
            group.active == 0 && group.smallest_pending.is_some_and(|slots| slots > group.offered())
        })
        .max_by_key(|&i| groups[i].position);
    let Some(index) = stuck else {
        return false;
    };
    let group = &mut groups[index];
    *left += group.entitled.saturating_sub(group.presubscribed);
    group.entitled = 0;
    group.disabled = true;
    true
}
