//! The job queue through the resource-manager seam: every pool's jobs in scheduling order with
//! why each waits ([`JobQueueView`]), and the changes `POST /api/v1/job-queues` and
//! `det experiment set priority|weight|max-slots` make ([`JobUpdate`]). The agent resource
//! manager answers from its schedulers (`resolute_scheduler`'s queue view, `move_job`,
//! `job_wait_reason`); another resource manager would answer from its own queue. The queue's
//! order is stored as it changes and restored by a restarted master ([`QueueOrderChanges`],
//! `resolute_scheduler`'s `job_order.rs`).

use std::collections::BTreeMap;

use resolute_scheduler::{JobId, JobPosition, JobState, LogicalTime, PositionChange, QueueMove, RestoredOrder, Scheduler, restore_order};
use resolute_store::JobQueuePositionRecord;

use super::RmError;

/// One job in one resource pool's queue.
#[derive(Clone, Debug, PartialEq)]
pub struct JobQueueView {
    pub job_id: String,
    pub pool: String,
    /// `STATE_QUEUED`, `STATE_SCHEDULED` or `STATE_SCHEDULED_BACKFILLED`.
    pub state: &'static str,
    /// Jobs before it in scheduling order (-1 under fair share, which has no order).
    pub jobs_ahead: i32,
    pub priority: u32,
    pub weight: f64,
    pub requested_slots: u32,
    pub allocated_slots: u32,
    pub preemptible: bool,
    /// Why it waits, in words (`None` while it runs or before the first pass).
    pub wait_reason: Option<String>,
    /// Its allocations in queue order.
    pub allocations: Vec<String>,
}

/// A change to a job's place in the queue. Unset fields stay as they are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobUpdate {
    pub priority: Option<u32>,
    pub weight: Option<f64>,
    /// `Some(None)` lifts the cap.
    pub max_slots: Option<Option<u32>>,
    /// Ahead of or behind this other job.
    pub position: Option<(QueueMove, String)>,
    /// To this resource pool: carried out by the loop (`cluster/job_pool.rs`), which requeues
    /// the job's allocations there; a resource manager never sees it.
    pub resource_pool: Option<String>,
}

impl JobUpdate {
    pub fn is_empty(&self) -> bool {
        *self == JobUpdate::default()
    }
}

/// Every pool's queue, pools by name, jobs in scheduling order.
pub(super) fn queue_of(pools: &BTreeMap<String, Scheduler>) -> Vec<JobQueueView> {
    let mut out = Vec::new();
    for (pool, scheduler) in pools {
        for job in scheduler.job_queue() {
            let preemptible = job.allocations.iter().all(|a| scheduler.request(a).is_none_or(|r| r.preemptible));
            out.push(JobQueueView {
                job_id: job.job_id.as_str().to_owned(),
                pool: pool.clone(),
                state: match job.state {
                    JobState::Queued => "STATE_QUEUED",
                    JobState::Scheduled => "STATE_SCHEDULED",
                    JobState::ScheduledBackfilled => "STATE_SCHEDULED_BACKFILLED",
                },
                jobs_ahead: job.jobs_ahead.map_or(-1, |n| i32::try_from(n).unwrap_or(i32::MAX)),
                priority: job.priority,
                weight: job.weight,
                requested_slots: job.requested_slots,
                allocated_slots: job.allocated_slots,
                preemptible,
                wait_reason: scheduler.job_wait_reason(&job.job_id),
                allocations: job.allocations.iter().map(|a| a.as_str().to_owned()).collect(),
            });
        }
    }
    out
}

/// Applies `update` to `job_id` in whichever pool queues it (or holds it between allocations).
/// A job the scheduler does not hold (not yet queued, or finished) is left alone: the caller
/// stores the change for its next request.
pub(super) fn update(pools: &mut BTreeMap<String, Scheduler>, job_id: &str, update: &JobUpdate) -> Result<(), RmError> {
    let job = JobId::new(job_id);
    // A job moved to another pool is held by both until its old allocations end: both follow.
    let holding: Vec<&mut Scheduler> = pools.values_mut().filter(|s| s.has_job(&job)).collect();
    if holding.is_empty() {
        return Ok(());
    }
    if let Some((to, anchor)) = &update.position {
        let anchor = JobId::new(anchor.as_str());
        let Some(scheduler) = holding.into_iter().find(|s| s.has_job(&anchor)) else {
            return Err(RmError::Unavailable(format!(
                "job {anchor} is not queued in the resource pool of job {job_id}: only jobs of the same pool can be reordered"
            )));
        };
        scheduler.move_job(&job, &anchor, *to)?;
        return apply_settings(scheduler, &job, update);
    }
    for scheduler in holding {
        apply_settings(scheduler, &job, update)?;
    }
    Ok(())
}

/// Priority, weight and `max_slots` of `update`, in one pool.
fn apply_settings(scheduler: &mut Scheduler, job: &JobId, update: &JobUpdate) -> Result<(), RmError> {
    if let Some(priority) = update.priority {
        scheduler.set_priority(job, priority)?;
    }
    if let Some(weight) = update.weight {
        scheduler.set_weight(job, weight)?;
    }
    if let Some(max_slots) = update.max_slots {
        scheduler.set_max_slots(job, max_slots)?;
    }
    Ok(())
}

/// Forgets a finished job in every pool (it may have queued in more than one over its life).
pub(super) fn forget(pools: &mut BTreeMap<String, Scheduler>, job_id: &str) {
    let job = JobId::new(job_id);
    for scheduler in pools.values_mut() {
        scheduler.forget_job(&job);
    }
}

/// What changed in the queues' order since the loop last stored it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueOrderChanges {
    /// Jobs placed for the first time or moved, with their new places.
    pub placed: Vec<JobQueuePositionRecord>,
    /// `(resource pool, job id)` of finished jobs.
    pub forgotten: Vec<(String, String)>,
}

impl QueueOrderChanges {
    pub fn is_empty(&self) -> bool {
        self.placed.is_empty() && self.forgotten.is_empty()
    }
}

/// Every pool's order changes, each job's latest one only (a job placed then moved in one batch
/// is stored once, at its last place).
pub(super) fn take_changes(pools: &mut BTreeMap<String, Scheduler>) -> QueueOrderChanges {
    let mut out = QueueOrderChanges::default();
    for (pool, scheduler) in pools {
        let mut latest: BTreeMap<JobId, Option<JobPosition>> = BTreeMap::new();
        for change in scheduler.take_position_changes() {
            match change {
                PositionChange::Placed(p) => latest.insert(p.job_id.clone(), Some(p)),
                PositionChange::Forgotten(job) => latest.insert(job, None),
            };
        }
        for (job, change) in latest {
            match change {
                Some(p) => out.placed.push(JobQueuePositionRecord {
                    resource_pool: pool.clone(),
                    job_id: job.as_str().to_owned(),
                    registered_at: i64::try_from(p.registered_at.0).unwrap_or(i64::MAX),
                    seq: i64::try_from(p.seq).unwrap_or(i64::MAX),
                }),
                None => out.forgotten.push((pool.clone(), job.as_str().to_owned())),
            }
        }
    }
    out
}

/// The stored places grouped by pool, each pool's order rebuilt.
pub(super) fn restored_orders(stored: Vec<JobQueuePositionRecord>) -> BTreeMap<String, RestoredOrder> {
    let mut by_pool: BTreeMap<String, Vec<JobPosition>> = BTreeMap::new();
    for r in stored {
        by_pool.entry(r.resource_pool).or_default().push(JobPosition {
            job_id: JobId::new(r.job_id.as_str()),
            // Only this store's own rows exist; a negative one would sort first.
            registered_at: LogicalTime(u64::try_from(r.registered_at).unwrap_or(0)),
            seq: u64::try_from(r.seq).unwrap_or(0),
        });
    }
    by_pool.into_iter().map(|(pool, positions)| (pool, restore_order(positions))).collect()
}
