//! The job queue as `det job list` shows it: jobs in scheduling order with their state and how
//! many jobs are ahead of each, plus the pool's summary counts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::{AllocationId, JobId};
use crate::request::AllocationState;
use crate::state::PoolState;

/// A job's scheduling state (upstream `STATE_QUEUED`, `STATE_SCHEDULED`,
/// `STATE_SCHEDULED_BACKFILLED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    Queued,
    ScheduledBackfilled,
    Scheduled,
}

/// One job in the queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobQueueEntry {
    pub job_id: JobId,
    /// The most advanced state of its allocations.
    pub state: JobState,
    /// Jobs before this one in scheduling order; `None` under fair share, which has no order
    /// (upstream reports -1).
    pub jobs_ahead: Option<u32>,
    pub priority: u32,
    pub weight: f64,
    pub requested_slots: u32,
    pub allocated_slots: u32,
    /// Its allocations in queue order.
    pub allocations: Vec<AllocationId>,
}

/// Counts for `det resource-pool list`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStats {
    pub agents: u32,
    /// Enabled slots on enabled agents.
    pub slots_available: u32,
    pub slots_used: u32,
    pub aux_containers_running: u32,
    pub queued_jobs: u32,
    pub scheduled_jobs: u32,
}

pub(crate) fn job_queue(state: &PoolState) -> Vec<JobQueueEntry> {
    let fair_share = state.is_fair_share();
    let mut jobs: Vec<JobQueueEntry> = Vec::new();
    let mut index_of: BTreeMap<&JobId, usize> = BTreeMap::new();
    for entry in state.queue_order() {
        let job_id = &entry.request.job_id;
        // A job's place is that of its first request in the queue.
        let index = *index_of.entry(job_id).or_insert_with(|| {
            let jobs_ahead = if fair_share { None } else { Some(u32::try_from(jobs.len()).unwrap_or(u32::MAX)) };
            jobs.push(JobQueueEntry {
                job_id: job_id.clone(),
                state: JobState::Queued,
                jobs_ahead,
                priority: state.priority(entry),
                weight: state.weight(job_id),
                requested_slots: 0,
                allocated_slots: 0,
                allocations: Vec::new(),
            });
            jobs.len() - 1
        });
        let job = &mut jobs[index];
        let slots = entry.request.slots;
        let allocation_state = match entry.state {
            AllocationState::Queued { .. } => JobState::Queued,
            AllocationState::Scheduled { backfilled: true, .. } => JobState::ScheduledBackfilled,
            AllocationState::Scheduled { backfilled: false, .. } => JobState::Scheduled,
        };
        job.state = job.state.max(allocation_state);
        job.requested_slots = job.requested_slots.saturating_add(slots);
        if entry.state.is_scheduled() {
            job.allocated_slots = job.allocated_slots.saturating_add(slots);
        }
        job.allocations.push(entry.id().clone());
    }
    jobs
}

pub(crate) fn stats(state: &PoolState) -> PoolStats {
    let enabled = state.agents.values().filter(|a| a.takes_work());
    let jobs = job_queue(state);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    PoolStats {
        agents: count(state.agents.len()),
        slots_available: enabled.map(|a| a.num_usable()).sum(),
        slots_used: state.agents.values().map(|a| a.num_used()).sum(),
        aux_containers_running: count(state.agents.values().map(|a| a.aux.len()).sum()),
        queued_jobs: count(jobs.iter().filter(|j| j.state == JobState::Queued).count()),
        scheduled_jobs: count(jobs.iter().filter(|j| j.state != JobState::Queued).count()),
    }
}
