//! Job queue control (upstream's `UpdateJobQueue`): moving a job ahead of or behind another,
//! and a job's `max_slots`. Priority and weight changes are `Scheduler::set_priority` /
//! `set_weight`.

use crate::error::SchedulerError;
use crate::ids::JobId;
use crate::scheduler::Scheduler;

/// Where to move a job relative to an anchor job (`aheadOf` / `behindOf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueMove {
    AheadOf,
    BehindOf,
}

impl Scheduler {
    /// Moves `job` directly ahead of or behind `anchor` in the queue. Under the priority policy
    /// the queue is ordered by priority first, so the job takes the anchor's priority (upstream
    /// does the same); its place among jobs of that priority is then next to the anchor. Takes
    /// effect at the next pass.
    pub fn move_job(&mut self, job: &JobId, anchor: &JobId, to: QueueMove) -> Result<(), SchedulerError> {
        if job == anchor {
            return Err(SchedulerError::MoveAnchorIsSelf(job.clone()));
        }
        let anchor_priority = self.state.jobs.get(anchor).ok_or_else(|| SchedulerError::UnknownJob(anchor.clone()))?.priority;
        self.job_mut(job)?.priority = anchor_priority;
        // Reorder the jobs while keeping the set of positions they occupy, so jobs that arrive
        // later still queue behind all of them.
        let mut order: Vec<(JobId, (crate::ids::LogicalTime, u64))> =
            self.state.jobs.iter().map(|(id, group)| (id.clone(), group.position())).collect();
        order.sort_by_key(|(_, position)| *position);
        let positions: Vec<_> = order.iter().map(|(_, position)| *position).collect();
        let mut ids: Vec<JobId> = order.into_iter().map(|(id, _)| id).filter(|id| id != job).collect();
        let anchor_index = ids.iter().position(|id| id == anchor).unwrap_or(0);
        let index = match to {
            QueueMove::AheadOf => anchor_index,
            QueueMove::BehindOf => anchor_index + 1,
        };
        ids.insert(index, job.clone());
        for (id, (registered_at, seq)) in ids.iter().zip(positions) {
            let Some(group) = self.state.jobs.get_mut(id) else { continue };
            if group.position() != (registered_at, seq) {
                group.registered_at = registered_at;
                group.seq = seq;
                self.record_position(id, (registered_at, seq));
            }
        }
        Ok(())
    }

    /// Caps the slots the job's allocations hold at once (`None`: no cap). Must be at least 1.
    /// Takes effect at the next pass; allocations already running keep their slots.
    pub fn set_max_slots(&mut self, job: &JobId, max_slots: Option<u32>) -> Result<(), SchedulerError> {
        if max_slots == Some(0) {
            return Err(SchedulerError::InvalidMaxSlots(job.clone()));
        }
        self.job_mut(job)?.max_slots = max_slots;
        Ok(())
    }

    /// Whether the scheduler knows the job (it has a request in this pool).
    pub fn has_job(&self, job: &JobId) -> bool {
        self.state.jobs.contains_key(job)
    }

    /// Why the job waits, in words a user acts on (see `job_reason.rs`); `None` when it is not
    /// waiting or no pass has looked at it yet.
    pub fn job_wait_reason(&self, job: &JobId) -> Option<String> {
        crate::job_reason::explain(&self.state, job)
    }
}
