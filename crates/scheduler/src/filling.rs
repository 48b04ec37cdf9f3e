//! Fair share's progressive filling: how many slots each job is offered (issue 13: a pass over
//! 10,000 jobs < 20 ms).
//!
//! Every round, each hungry job (offered less than its demand) gets a slice of the slots left in
//! proportion to its weight (at least one), up to its demand, until slots or hunger run out. Jobs
//! must be given sorted by demand, so small jobs are served first when slots are indivisible.
//! Entitlement up to what a job already holds unpreemptibly ("presubscribed") costs no capacity.
//! When every slot is offered and some multi-slot jobs hold an offer too small for any of their
//! requests, the newest such job with nothing running is dropped and its offer goes back to the
//! others (deadlock breaking).
//!
//! The decisions are those of the plain loop (recompute the hungry jobs and scan for a stuck one
//! per round), which was O(jobs²) when 10,000 jobs compete for 8,000 slots: one round per freed
//! slot. Here the hungry jobs are a skip list in order with their total weight kept as they leave, the
//! deadlock candidates a list sorted by position (newest taken first), and a round stops visiting
//! jobs once the slots are gone, except those still owed presubscribed slots. Both shortcuts rest
//! on monotonicity: within a pass a job's offer only grows until it is dropped, so a job that stops
//! being hungry or stuck never becomes so again. The total weight is kept by subtraction; it equals the plain loop's
//! fresh sum exactly for weights that are binary fractions (1, 0.5, 2, 3 ...).

use std::collections::BTreeSet;

use crate::ids::LogicalTime;

/// One job's standing in progressive filling.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Claim {
    pub weight: f64,
    /// The job's queue position: the newest stuck job is dropped first.
    pub position: (LogicalTime, u64),
    /// Slots of its running and pending requests (capped by `max_slots`).
    pub demand: u32,
    /// Slots its running allocations hold.
    pub active: u32,
    /// Slots held by its non-preemptible allocations: offered outright, never taken back.
    pub presubscribed: u32,
    /// Slots progressive filling granted it.
    pub entitled: u32,
    /// Dropped from this pass to break a deadlock (its offer could not start anything).
    pub disabled: bool,
    /// Slots of its smallest pending request.
    pub smallest_pending: Option<u32>,
}

impl Claim {
    pub fn offered(&self) -> u32 {
        if self.disabled { self.presubscribed } else { self.entitled.max(self.presubscribed) }
    }

    fn hungry(&self) -> bool {
        !self.disabled && self.offered() < self.demand
    }

    /// Still gains entitlement without paying capacity.
    fn owed(&self) -> bool {
        self.presubscribed > self.entitled
    }

    /// Its offer is too small for any of its requests and it runs nothing.
    fn stuck(&self) -> bool {
        self.active == 0 && self.smallest_pending.is_some_and(|slots| slots > self.offered())
    }

    /// One round's slice for this claim; true if it gained anything.
    fn take_share(&mut self, start: u32, total_weight: f64, left: &mut u32) -> bool {
        // Truncation is intended: the floor of a non-negative share no larger than `start`.
        let share = ((f64::from(start) * self.weight / total_weight).floor() as u32).max(1);
        let want = share.min(self.demand.saturating_sub(self.entitled));
        let covered = self.presubscribed.saturating_sub(self.entitled).min(want);
        let paid = (want - covered).min(*left);
        self.entitled += covered + paid;
        *left -= paid;
        covered + paid > 0
    }
}

/// The hungry claims in order, those of them still owed presubscribed slots, and their weight.
/// Claims only ever leave; `next` finds the first one left at or after an index (a disjoint-set
/// forest with path halving, so a round skips those gone in near-constant time).
struct Hungry {
    next: Vec<usize>,
    count: usize,
    owed: BTreeSet<usize>,
    weight: f64,
}

impl Hungry {
    fn new(claims: &[Claim]) -> Self {
        let mut hungry = Hungry { next: (0..=claims.len()).collect(), count: claims.len(), owed: BTreeSet::new(), weight: 0.0 };
        for (index, claim) in claims.iter().enumerate() {
            if !claim.hungry() {
                hungry.next[index] = index + 1;
                hungry.count -= 1;
            } else {
                hungry.weight += claim.weight;
                if claim.owed() {
                    hungry.owed.insert(index);
                }
            }
        }
        hungry
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn contains(&self, index: usize) -> bool {
        self.next[index] == index
    }

    /// The first hungry claim at or after `index`, if any.
    fn first_from(&mut self, mut index: usize) -> Option<usize> {
        while self.next[index] != index {
            let parent = self.next[index];
            self.next[index] = self.next[parent];
            index = parent;
        }
        (index + 1 < self.next.len()).then_some(index)
    }

    /// Files claim `index` again after it changed.
    fn refile(&mut self, index: usize, claim: &Claim) {
        if !claim.hungry() {
            if self.contains(index) {
                self.next[index] = index + 1;
                self.count -= 1;
                self.weight -= claim.weight;
            }
            self.owed.remove(&index);
        } else if !claim.owed() {
            self.owed.remove(&index);
        }
    }
}

/// Sets each claim's `entitled` (and `disabled`) for `capacity` slots.
pub(crate) fn offer_slots(claims: &mut [Claim], capacity: u32) {
    let presubscribed: u32 = claims.iter().map(|c| c.presubscribed).sum();
    let mut left = capacity.saturating_sub(presubscribed);
    let mut hungry = Hungry::new(claims);
    // Candidates to drop, newest last. Claims come sorted by demand, then position, so this is a
    // few sorted runs, which a stable sort merges in near-linear time (a heap's pops cost a
    // dozen comparisons each, for 10,000 jobs).
    let mut stuck: Vec<((LogicalTime, u64), usize)> =
        claims.iter().enumerate().filter(|(_, c)| c.active == 0 && c.smallest_pending.is_some()).map(|(i, c)| (c.position, i)).collect();
    stuck.sort();
    loop {
        if hungry.is_empty() {
            return;
        }
        if left == 0 {
            let Some(index) = newest_stuck(claims, &hungry, &mut stuck) else {
                return;
            };
            let claim = &mut claims[index];
            left += claim.entitled.saturating_sub(claim.presubscribed);
            claim.entitled = 0;
            claim.disabled = true;
            hungry.refile(index, claim);
            continue;
        }
        let start = left;
        let total_weight = hungry.weight;
        let mut progress = false;
        let mut cursor = 0;
        // While slots are left, every hungry claim in order takes its slice.
        while left > 0 {
            let Some(index) = hungry.first_from(cursor) else { break };
            cursor = index + 1;
            progress |= claims[index].take_share(start, total_weight, &mut left);
            hungry.refile(index, &claims[index]);
        }
        // Then only claims owed presubscribed slots gain anything.
        if left == 0 {
            let owed: Vec<usize> = hungry.owed.range(cursor..).copied().collect();
            for index in owed {
                progress |= claims[index].take_share(start, total_weight, &mut left);
                hungry.refile(index, &claims[index]);
            }
        }
        if !progress {
            return;
        }
    }
}

/// The newest hungry claim that is stuck, if any. Candidates that no longer qualify are dropped
/// from the candidates for good: offers only grow and hunger only ends within a pass.
fn newest_stuck(claims: &[Claim], hungry: &Hungry, stuck: &mut Vec<((LogicalTime, u64), usize)>) -> Option<usize> {
    while let Some((_, index)) = stuck.pop() {
        if hungry.contains(index) && claims[index].stuck() {
            return Some(index);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Rng;

    /// The plain loop this module replaces, kept as the reference the fast one must agree with.
    fn reference(groups: &mut [Claim], capacity: u32) {
        let presubscribed: u32 = groups.iter().map(|g| g.presubscribed).sum();
        let mut left = capacity.saturating_sub(presubscribed);
        loop {
            let hungry: Vec<usize> = (0..groups.len()).filter(|&i| !groups[i].disabled && groups[i].offered() < groups[i].demand).collect();
            if hungry.is_empty() {
                return;
            }
            if left == 0 {
                let stuck = hungry.iter().copied().filter(|&i| groups[i].stuck()).max_by_key(|&i| groups[i].position);
                let Some(index) = stuck else { return };
                let group = &mut groups[index];
                left += group.entitled.saturating_sub(group.presubscribed);
                group.entitled = 0;
                group.disabled = true;
                continue;
            }
            let total_weight: f64 = hungry.iter().map(|&i| groups[i].weight).sum();
            let start = left;
            let mut progress = false;
            for &i in &hungry {
                progress |= groups[i].take_share(start, total_weight, &mut left);
            }
            if !progress {
                return;
            }
        }
    }

    fn random_claims(rng: &mut Rng, jobs: usize) -> Vec<Claim> {
        let mut claims: Vec<Claim> = (0..jobs)
            .map(|i| {
                let pending = *rng.pick(&[0, 1, 1, 2, 4, 8, 16]);
                let active = *rng.pick(&[0, 0, 0, 1, 2, 4, 8]);
                let presubscribed = if rng.percent(20) { active } else { 0 };
                Claim {
                    weight: *rng.pick(&[1.0, 1.0, 2.0, 0.5, 3.0]),
                    position: (LogicalTime(rng.below(50)), i as u64),
                    demand: pending + active,
                    active,
                    presubscribed,
                    entitled: 0,
                    disabled: false,
                    smallest_pending: (pending > 0).then_some(pending),
                }
            })
            .filter(|c| c.demand > 0)
            .collect();
        claims.sort_by(|a, b| a.demand.cmp(&b.demand).then(a.position.cmp(&b.position)));
        claims
    }

    #[test]
    fn offers_equal_the_plain_loop_on_random_pools() {
        let mut rng = Rng::new(13);
        for case in 0..3_000 {
            let jobs = 1 + rng.below(40) as usize;
            let claims = random_claims(&mut rng, jobs);
            let capacity = rng.below(120) as u32;
            let mut expected = claims.clone();
            reference(&mut expected, capacity);
            let mut fast = claims;
            offer_slots(&mut fast, capacity);
            assert_eq!(fast, expected, "case {case}: {jobs} jobs, {capacity} slots");
        }
    }

    #[test]
    fn scarce_slots_go_to_small_jobs_and_stuck_gangs_give_theirs_back() {
        // 3 slots; two 1-slot jobs and a 4-slot job that can never start with what is left.
        let claim = |demand: u32, seq: u64| Claim {
            weight: 1.0,
            position: (LogicalTime(0), seq),
            demand,
            active: 0,
            presubscribed: 0,
            entitled: 0,
            disabled: false,
            smallest_pending: Some(demand),
        };
        let mut claims = vec![claim(1, 0), claim(1, 1), claim(4, 2)];
        offer_slots(&mut claims, 3);
        let offers: Vec<(u32, bool)> = claims.iter().map(|c| (c.offered(), c.disabled)).collect();
        assert_eq!(offers, [(1, false), (1, false), (0, true)]);
    }
}
