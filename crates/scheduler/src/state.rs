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
        // the ordered map compare a dozen ids each, the hash reads one (issue 13).
        let by_id: Option<FxHashMap<&JobId, &JobGroup>> = (self.jobs.len() <= 4 * self.entries.len()).then(|| self.jobs.iter().collect());
        let job_of = |id: &JobId| match &by_id {
            Some(by_id) => by_id.get(id).copied(),
            None => self.jobs.get(id),
        };
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
