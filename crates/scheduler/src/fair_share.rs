//! The fair-share policy: max-min fairness between jobs, weighted. Each job's slot demand is its
//! running plus pending slots; slots are offered by progressive filling in proportion to weight;
//! jobs over their offer are preempted (newest allocation first, when preemption is on) and jobs
//! under it start pending requests that fit. A job's `max_slots` caps its demand, so it is never
//! offered more (what it holds unpreemptibly excepted). Zero-slot requests are not shared: they start
//! whenever an aux container is free. The offers themselves are `filling.rs`.

use std::ops::Range;

use crate::decisions::{PassOutcome, WaitReason};
use crate::filling::{self, Claim};
use crate::fit::{self, Agents, Fitter};
use crate::fit_cache::FitCache;
use crate::ids::JobId;
use crate::request::DEFAULT_WEIGHT;
use crate::state::{PoolState, Queued};

/// One pass over `state`'s requests with `agents`, the pool's agents, moved out of `state` for the
/// pass (`state.agents` is not read here). The pass only ever takes slots and aux containers in
/// them, so what it hands back in [`PassOutcome::agents`] is the pool's agents with every
/// assignment held: no copy of the agents, and applying holds nothing again (issue 13).
pub(crate) fn schedule(state: &PoolState, agents: Agents, preemption: bool) -> PassOutcome {
    let fitter = state.fitter();
    let mut view = agents;
    let order = state.queue();
    let mut outcome = PassOutcome::new(&order);
    let mut cache = FitCache::default();

    // Grouped against the agents as they are, before anything is held (zero-slot requests are
    // not grouped, and their aux containers change no slot count anyway).
    let groups = group_demand(&view, &fitter, &order, &mut outcome);
    let capacity = view.values().filter(|a| a.takes_work()).map(|a| a.num_usable()).sum();

    for &queued in order.iter().filter(|q| q.entry.is_zero_slot() && !q.entry.state.is_scheduled()) {
        start_or_wait(&fitter, &mut cache, &mut view, queued, &mut outcome);
    }

    // Sorted by demand, then place, then creation. Shares are made in queue order, which is by
    // place first under fair share (no priorities), so the share's index already orders by place
    // and then creation: (demand, index) keys, two integers, give the same order.
    debug_assert!(groups.shares.windows(2).all(|w| w[0].claim.position <= w[1].claim.position));
    let mut keys: Vec<(u32, usize)> = groups.shares.iter().enumerate().map(|(i, share)| (share.claim.demand, i)).collect();
    keys.sort_unstable();
    let sorted: Vec<usize> = keys.into_iter().map(|(_, i)| i).collect();
    let mut claims: Vec<Claim> = sorted.iter().map(|&i| groups.shares[i].claim.clone()).collect();
    filling::offer_slots(&mut claims, capacity);

    for (&index, claim) in sorted.iter().zip(&claims) {
        let (running, pending) = groups.requests(index);
        let offered = claim.offered();
        if claim.active > offered {
            if preemption {
                let mut active = claim.active;
                for entry in running.iter().rev().map(|&(_, q)| q.entry).filter(|e| e.request.preemptible) {
                    if active <= offered {
                        break;
                    }
                    outcome.preemptions.push(entry.id().clone());
                    active -= entry.request.slots;
                }
            }
            for &(_, queued) in pending {
                outcome.wait(queued, WaitReason::OverFairShare { share: offered, used: claim.active });
            }
            continue;
        }
        let mut budget = offered - claim.active;
        for &(_, queued) in pending {
            let slots = queued.entry.request.slots;
            if slots > budget {
                outcome.wait(queued, WaitReason::OverFairShare { share: offered, used: offered - budget });
            } else if start_or_wait(&fitter, &mut cache, &mut view, queued, &mut outcome) {
                budget -= slots;
            }
        }
    }
    outcome.agents = Some(view);
    outcome
}

/// Starts `queued` if it fits the view now, or records why not. True if it started.
fn start_or_wait<'a>(fitter: &Fitter, cache: &mut FitCache<'a>, view: &mut Agents, queued: Queued<'a>, outcome: &mut PassOutcome) -> bool {
    let entry = queued.entry;
    match cache.find(fitter, &entry.request, view) {
        Some(placements) => {
            fit::hold(view, entry.id(), &placements);
            cache.held(view, &placements);
            outcome.assign(queued, placements, false);
            true
        }
        None => {
            outcome.wait(queued, cache.diagnose(fitter, &entry.request, view));
            false
        }
    }
}

/// One job's standing in the pass: its claim on slots, and where its requests are in
/// [`Groups`]' lists.
struct GroupShare<'a> {
    claim: Claim,
    /// The job's `max_slots`.
    max_slots: Option<u32>,
    job: &'a JobId,
    running: Range<usize>,
    pending: Range<usize>,
}

/// Every job's share, and the requests of all of them in two flat lists (running, pending) of
/// (share index, request), grouped by share and in queue order within one: 10,000 jobs cost two
/// lists, not two per job.
struct Groups<'a> {
    shares: Vec<GroupShare<'a>>,
    running: Vec<Member<'a>>,
    pending: Vec<Member<'a>>,
}

/// A request in [`Groups`]' lists: its share's index and the request.
type Member<'a> = (usize, Queued<'a>);

impl<'a> Groups<'a> {
    /// The running and the pending requests of share `index`, in queue order.
    fn requests(&self, index: usize) -> (&[Member<'a>], &[Member<'a>]) {
        let share = &self.shares[index];
        (&self.running[share.running.clone()], &self.pending[share.pending.clone()])
    }
}

/// Groups slot requests by job. Pending requests that can never fit the pool do not count as
/// demand (they would waste offers); they wait with their reason.
fn group_demand<'a>(agents: &Agents, fitter: &Fitter, order: &[Queued<'a>], outcome: &mut PassOutcome) -> Groups<'a> {
    // Sized for the worst case (a job per request): 10,000 requests would otherwise regrow each
    // list a dozen times.
    let mut groups = Groups {
        shares: Vec::with_capacity(order.len()),
        running: Vec::with_capacity(order.len()),
        pending: Vec::with_capacity(order.len()),
    };
    // Diagnosed against the pool as it is, which does not change here.
    let mut cache = FitCache::default();
    for queued in order.iter().filter(|q| !q.entry.is_zero_slot()) {
        let entry = queued.entry;
        let scheduled = entry.state.is_scheduled();
        if scheduled && !entry.is_active() {
            continue;
        }
        if !scheduled {
            let reason = cache.diagnose(fitter, &entry.request, agents);
            if reason.can_never_fit() {
                outcome.wait(*queued, reason);
                continue;
            }
        }
        let shares = &mut groups.shares;
        let index = match share_of(shares, queued) {
            Some(index) => index,
            None => {
                shares.push(GroupShare {
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
                    running: 0..0,
                    pending: 0..0,
                });
                shares.len() - 1
            }
        };
        let (claim, slots) = (&mut shares[index].claim, entry.request.slots);
        claim.demand = claim.demand.saturating_add(slots);
        if scheduled {
            claim.active += slots;
            if !entry.request.preemptible {
                claim.presubscribed += slots;
            }
            groups.running.push((index, *queued));
        } else {
            claim.smallest_pending = Some(claim.smallest_pending.map_or(slots, |s| s.min(slots)));
            groups.pending.push((index, *queued));
        }
    }
    for share in &mut groups.shares {
        if let Some(max) = share.max_slots {
            share.claim.demand = share.claim.demand.min(max.max(share.claim.presubscribed));
        }
    }
    // Stable: queue order within a share. Nearly sorted already (a job's requests are adjacent).
    groups.running.sort_by_key(|&(index, _)| index);
    groups.pending.sort_by_key(|&(index, _)| index);
    for (list, pending) in [(&groups.running, false), (&groups.pending, true)] {
        let mut start = 0;
        for run in list.chunk_by(|a, b| a.0 == b.0) {
            let share = &mut groups.shares[run[0].0];
            let range = start..start + run.len();
            if pending {
                share.pending = range
            } else {
                share.running = range
            }
            start += run.len();
        }
    }
    groups
}

/// The share already made for `queued`'s job, if any. The queue is sorted by the job's place
/// first, so a job's requests are next to each other unless several jobs share one place (a
/// restored place can): only the shares at the end with the request's place need a look.
fn share_of(shares: &[GroupShare<'_>], queued: &Queued<'_>) -> Option<usize> {
    let position = queued.job_position();
    let job = &queued.entry.request.job_id;
    shares.iter().enumerate().rev().take_while(|(_, g)| g.claim.position == position).find(|(_, g)| g.job == job).map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use crate::sim::{Rng, workload};
    use crate::{AllocationRequest, AllocationState, LogicalTime, Scheduler, SchedulerConfig, SchedulingPolicy};

    /// A pass works on the pool's agents themselves: what it hands back must be exactly what
    /// holding each assignment on the agents as they were gives (the way the priority policy's
    /// outcome is applied), over passes with running, released, zero-slot and disabled parts.
    #[test]
    fn the_agents_a_pass_hands_back_equal_holding_its_assignments_again() {
        let mut rng = Rng::new(5);
        let policy = SchedulingPolicy::FairShare { preemption: true };
        let mut scheduler = Scheduler::new("p", SchedulerConfig { policy, ..SchedulerConfig::default() });
        for agent in workload::agents("p", 40, 4) {
            scheduler.add_agent(agent).expect("unique agents");
        }
        scheduler.disable_slot(&"agent-0003".into(), 1).expect("known slot");
        scheduler.disable_agent(&"agent-0007".into()).expect("known agent");
        let mut assigned = 0;
        for pass in 0..12u64 {
            for (n, job) in workload::jobs("p", 40, &mut rng).into_iter().enumerate() {
                let id = format!("{pass}-{n}");
                let slots = if rng.percent(15) { 0 } else { job.slots };
                let request =
                    AllocationRequest::new(format!("{id}.1"), id.as_str(), format!("job-{}", n % 25), "p", slots, LogicalTime(pass))
                        .with_preemptible(job.preemptible);
                scheduler.submit(request).expect("valid request");
            }
            let mut reference = scheduler.clone();
            let now = LogicalTime(100 + pass);
            let decisions = scheduler.schedule(now);
            let mut outcome = super::schedule(&reference.state, reference.state.agents.clone(), true);
            outcome.agents = None;
            assert_eq!(reference.apply(outcome, now), decisions, "pass {pass}");
            assert_eq!(reference.state.agents, scheduler.state.agents, "pass {pass}");
            assert_eq!(reference.state.entries, scheduler.state.entries, "pass {pass}");
            assigned += decisions.assignments.len();
            // Release a third of what runs, and everything being preempted.
            let running: Vec<_> = scheduler
                .state
                .entries
                .values()
                .filter(|e| matches!(e.state, AllocationState::Scheduled { preempting, .. } if preempting || rng.percent(33)))
                .map(|e| e.id().clone())
                .collect();
            for id in running {
                scheduler.release(&id).expect("known allocation");
            }
        }
        assert!(assigned > 100, "only {assigned} assignments: the test exercises too little");
    }
}
