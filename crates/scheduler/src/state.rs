//! The pool's state: agents, requests and job groups, plus the queries every policy shares.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::config::{SchedulerConfig, SchedulingPolicy};
use crate::decisions::Placement;
use crate::fit::{Agents, Fitter};
use crate::ids::{AllocationId, JobId, LogicalTime};
use crate::request::{AllocationState, DEFAULT_PRIORITY, DEFAULT_WEIGHT, Entry, JobGroup};

/// Sort key of a request in the queue: priority, then the job's place, then the request's.
pub(crate) type QueueKey = (u32, LogicalTime, u64, LogicalTime, u64);

/// A request as a pass sees it: the entry, its job (`None` only for a job never registered) and
/// its place in the queue.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Queued<'a> {
    pub entry: &'a Entry,
    pub job: Option<&'a JobGroup>,
    pub key: QueueKey,
    /// The request's place in [`PoolState::entries`] (map order), which names it in a
    /// [`PassOutcome`](crate::decisions::PassOutcome).
    pub index: usize,
}

impl Queued<'_> {
    /// The job's priority (what [`PoolState::priority`] answers, without the lookup).
    pub fn priority(&self) -> u32 {
        self.job.map_or(DEFAULT_PRIORITY, |job| job.priority)
    }

    /// The job's queue position (older jobs first).
    pub fn job_position(&self) -> (LogicalTime, u64) {
        (self.key.1, self.key.2)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct PoolState {
    pub name: String,
    pub config: SchedulerConfig,
    pub agents: Agents,
    pub entries: BTreeMap<AllocationId, Entry>,
    pub jobs: BTreeMap<JobId, JobGroup>,
    pub next_seq: u64,
    /// Stored places of jobs a restarted master has not queued again yet (`job_order.rs`).
    pub restored: BTreeMap<JobId, (LogicalTime, u64)>,
    /// Places assigned or dropped since the master last took them (`job_order.rs`).
    pub position_changes: Vec<crate::job_order::PositionChange>,
}

impl PoolState {
    pub fn new(name: String, config: SchedulerConfig) -> Self {
        PoolState {
            name,
            config,
            agents: Agents::new(),
            entries: BTreeMap::new(),
            jobs: BTreeMap::new(),
            next_seq: 0,
            restored: BTreeMap::new(),
            position_changes: Vec::new(),
        }
    }

    pub fn fitter(&self) -> Fitter {
        Fitter { policy: self.config.fitting_policy, max_aux: self.config.max_aux_containers_per_agent }
    }

    pub fn is_fair_share(&self) -> bool {
        matches!(self.config.policy, SchedulingPolicy::FairShare { .. })
    }

    pub fn priority(&self, entry: &Entry) -> u32 {
        self.jobs.get(&entry.request.job_id).map_or(DEFAULT_PRIORITY, |job| job.priority)
    }

    pub fn weight(&self, job: &JobId) -> f64 {
        self.jobs.get(job).map_or(DEFAULT_WEIGHT, |job| job.weight)
    }

    /// Every request, pending or scheduled, in queue order.
    pub fn queue_order(&self) -> Vec<&Entry> {
        self.queue().into_iter().map(|queued| queued.entry).collect()
    }

    /// Every request in queue order with its job and sort key: a pass looks each job up once
    /// (by id, in a map of 10,000 jobs) here and reads its priority, place and cap from the result.
    pub fn queue(&self) -> Vec<Queued<'_>> {
        // Fair share has no priorities: its queue is submission order.
        let fair_share = self.is_fair_share();
        // A hash of the jobs, when there are not many more jobs than requests: 10,000 lookups in
        // the ordered map compare a dozen ids each (issue 13). It is keyed by the address of the
        // id's text, which a request shares with its job's key (`Scheduler::submit`), so neither
        // building nor asking it reads any text; an id not found by address is looked up by text.
        let by_address: Option<FxHashMap<usize, &JobGroup>> = (self.jobs.len() <= 4 * self.entries.len()).then(|| {
            let mut by_address = FxHashMap::with_capacity_and_hasher(self.jobs.len(), Default::default());
            by_address.extend(self.jobs.iter().map(|(id, job)| (id.shared_address(), job)));
            by_address
        });
        let job_of = |id: &JobId| by_address.as_ref().and_then(|by| by.get(&id.shared_address()).copied()).or_else(|| self.jobs.get(id));
        let mut queued: Vec<Queued<'_>> = self
            .entries
            .values()
            .enumerate()
            .map(|(index, entry)| {
                let job = job_of(&entry.request.job_id);
                let priority = if fair_share { 0 } else { job.map_or(DEFAULT_PRIORITY, |job| job.priority) };
                let (job_time, job_seq) = job.map_or((entry.request.submitted_at, entry.seq), JobGroup::position);
                Queued { entry, job, key: (priority, job_time, job_seq, entry.request.submitted_at, entry.seq), index }
            })
            .collect();
        // Every key is distinct (it ends with the request's own sequence number), so an unstable
        // sort gives the one order.
        queued.sort_unstable_by_key(|queued| queued.key);
        queued
    }

    /// Agents as the pass starts: what is held now, nothing planned yet.
    pub fn agents_view(&self) -> Agents {
        self.agents.clone()
    }

    /// Slots the job's scheduled allocations hold now.
    pub fn job_slots_held(&self, job: &JobId) -> u32 {
        self.entries.values().filter(|e| &e.request.job_id == job && e.state.is_scheduled()).map(|e| e.request.slots).sum()
    }

    pub fn placements_of(&self, allocation: &AllocationId) -> &[Placement] {
        match self.entries.get(allocation).map(|e| &e.state) {
            Some(AllocationState::Scheduled { placements, .. }) => placements,
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ids::{JobId, LogicalTime};
    use crate::request::{AllocationRequest, AllocationState, DEFAULT_PRIORITY, Entry};
    use crate::sim::Rng;
    use crate::{Scheduler, SchedulerConfig, SchedulingPolicy};

    /// The queue found through the hash by address equals a lookup of each job by text and a
    /// stable sort, also for requests whose job id does not share its key's text, whose job is
    /// unknown, and for pools with many more jobs than requests (no hash).
    #[test]
    fn the_queue_equals_looking_each_job_up_by_text() {
        let mut rng = Rng::new(11);
        for (case, fair_share) in [(0, false), (1, true), (2, false), (3, true)] {
            let policy = if fair_share { SchedulingPolicy::FairShare { preemption: true } } else { SchedulingPolicy::default() };
            let mut scheduler = Scheduler::new("p", SchedulerConfig { policy, ..SchedulerConfig::default() });
            for n in 0..300u64 {
                let job = format!("job-{}", rng.below(120));
                let request =
                    AllocationRequest::new(format!("a-{n}.1"), format!("t-{n}"), job.as_str(), "p", 1, LogicalTime(rng.below(40)))
                        .with_priority(*rng.pick(&[1, 42, 50]));
                scheduler.submit(request).expect("valid request");
            }
            let state = &mut scheduler.state;
            // Requests whose job id is its own text (equal to a key's, or no job's at all).
            for n in 0..20u64 {
                let job = if n % 2 == 0 { format!("job-{}", rng.below(120)) } else { format!("stray-{n}") };
                let request = AllocationRequest::new(format!("b-{n}.1"), format!("u-{n}"), JobId::new(job), "p", 1, LogicalTime(n));
                let seq = state.next_seq;
                state.next_seq += 1;
                state
                    .entries
                    .insert(request.allocation_id.clone(), Entry { request, seq, state: AllocationState::Queued { reason: None } });
            }
            if case >= 2 {
                // Many more jobs than requests: the ordered map is asked directly.
                let template = state.jobs.values().next().expect("a job").clone();
                for n in 0..2_000 {
                    state.jobs.insert(JobId::new(format!("idle-{n}")), template.clone());
                }
            }
            let queue: Vec<_> = state.queue().iter().map(|q| (q.entry.id().clone(), q.job.cloned(), q.key, q.index)).collect();
            let mut expected: Vec<_> = state
                .entries
                .values()
                .enumerate()
                .map(|(index, entry)| {
                    let job = state.jobs.get(&entry.request.job_id);
                    let priority = if fair_share { 0 } else { job.map_or(DEFAULT_PRIORITY, |j| j.priority) };
                    let (time, seq) = job.map_or((entry.request.submitted_at, entry.seq), |j| j.position());
                    (entry.id().clone(), job.cloned(), (priority, time, seq, entry.request.submitted_at, entry.seq), index)
                })
                .collect();
            expected.sort_by_key(|e| e.2);
            assert_eq!(queue, expected, "case {case}");
        }
    }
}
