//! The fair-share policy: max-min fairness between jobs, weighted. Each job's slot demand is its
//! running plus pending slots; slots are offered by progressive filling in proportion to weight;
//! jobs over their offer are preempted (newest allocation first, when preemption is on) and jobs
//! under it start pending requests that fit. A job's `max_slots` caps its demand, so it is never
//! offered more (what it holds unpreemptibly excepted). Zero-slot requests are not shared: they start
//! whenever an aux container is free. The offers themselves are `filling.rs`.

use crate::decisions::{Assignment, PassOutcome, WaitReason};
use crate::filling::{self, Claim};
use crate::fit::{self, Agents, Fitter};
use crate::fit_cache::FitCache;
use crate::request::{DEFAULT_WEIGHT, Entry};
use crate::state::{PoolState, Queued};

pub(crate) fn schedule(state: &PoolState, preemption: bool) -> PassOutcome {
    let fitter = state.fitter();
    let mut view = state.agents_view();
    let order = state.queue();
    let mut outcome = PassOutcome::new(order.iter().filter(|q| !q.entry.state.is_scheduled()).map(|q| q.entry.id().clone()).collect());
    let mut cache = FitCache::default();

    for entry in order.iter().map(|q| q.entry).filter(|e| e.is_zero_slot() && !e.state.is_scheduled()) {
        start_or_wait(&fitter, &mut cache, &mut view, entry, &mut outcome);
    }

    let mut groups = group_demand(state, &fitter, &order, &mut outcome);
    groups.sort_by(|a, b| a.claim.demand.cmp(&b.claim.demand).then(a.claim.position.cmp(&b.claim.position)));
    let capacity = state.agents.values().filter(|a| a.enabled).map(|a| a.num_usable()).sum();
    let mut claims: Vec<Claim> = groups.iter().map(|g| g.claim.clone()).collect();
    filling::offer_slots(&mut claims, capacity);

    for (group, claim) in groups.iter().zip(&claims) {
        let offered = claim.offered();
        if claim.active > offered {
            if preemption {
                let mut active = claim.active;
                for entry in group.running.iter().rev().filter(|e| e.request.preemptible) {
                    if active <= offered {
                        break;
                    }
                    outcome.preemptions.push(entry.id().clone());
                    active -= entry.request.slots;
                }
            }
            for entry in &group.pending {
                outcome.waiting.insert(entry.id().clone(), WaitReason::OverFairShare { share: offered, used: claim.active });
            }
            continue;
        }
        let mut budget = offered - claim.active;
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
fn start_or_wait<'a>(fitter: &Fitter, cache: &mut FitCache<'a>, view: &mut Agents, entry: &'a Entry, outcome: &mut PassOutcome) -> bool {
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

/// One job's standing in the pass: its claim on slots and its requests.
struct GroupShare<'a> {
    claim: Claim,
    /// The job's `max_slots`.
    max_slots: Option<u32>,
    job: &'a crate::ids::JobId,
    pending: Vec<&'a Entry>,
    running: Vec<&'a Entry>,
}

/// Groups slot requests by job. Pending requests that can never fit the pool do not count as
/// demand (they would waste offers); they wait with their reason.
fn group_demand<'a>(state: &'a PoolState, fitter: &Fitter, order: &[Queued<'a>], outcome: &mut PassOutcome) -> Vec<GroupShare<'a>> {
    let mut groups: Vec<GroupShare<'a>> = Vec::new();
    // Diagnosed against the pool as it is, which does not change here.
    let mut cache = FitCache::default();
    for queued in order.iter().filter(|q| !q.entry.is_zero_slot()) {
        let entry = queued.entry;
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
        let index = match group_of(&groups, queued) {
            Some(index) => index,
            None => {
                groups.push(GroupShare {
                    claim: Claim {
                        weight: queued.job.map_or(DEFAULT_WEIGHT, |g| g.weight),
                        position: queued.job_position(),
                        demand: 0,
                        active: 0,
                        presubscribed: 0,
                        entitled: 0,
                        disabled: false,
                        smallest_pending: None,
                    },
                    max_slots: queued.job.and_then(|g| g.max_slots),
                    job: &entry.request.job_id,
                    pending: Vec::new(),
                    running: Vec::new(),
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[index];
        let (claim, slots) = (&mut group.claim, entry.request.slots);
        claim.demand = claim.demand.saturating_add(slots);
        if scheduled {
            claim.active += slots;
            if !entry.request.preemptible {
                claim.presubscribed += slots;
            }
            group.running.push(entry);
        } else {
            claim.smallest_pending = Some(claim.smallest_pending.map_or(slots, |s| s.min(slots)));
            group.pending.push(entry);
        }
    }
    for group in &mut groups {
        if let Some(max) = group.max_slots {
            group.claim.demand = group.claim.demand.min(max.max(group.claim.presubscribed));
        }
    }
    groups
}

/// The group already made for `queued`'s job, if any. The queue is sorted by the job's place
/// first, so a job's requests are next to each other unless several jobs share one place (a
/// restored place can): only the groups at the end with the request's place need a look.
fn group_of(groups: &[GroupShare<'_>], queued: &Queued<'_>) -> Option<usize> {
    let position = queued.job_position();
    let job = &queued.entry.request.job_id;
    groups.iter().enumerate().rev().take_while(|(_, g)| g.claim.position == position).find(|(_, g)| g.job == job).map(|(i, _)| i)
}
