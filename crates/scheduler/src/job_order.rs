//! The queue's order across master restarts. A job's place is its `(registered_at, seq)`: the
//! logical time and counter of its first request, reassigned when it is moved ahead of or behind
//! another. The scheduler reports every place it assigns or drops ([`PositionChange`], taken by
//! the master after each pass and stored); a restarted master hands the stored places back
//! ([`restore_order`], then [`Scheduler::restore_positions`]) before it queues anything, so every
//! job — moved or not, queued again or re-adopted while running, or paused and activated later —
//! takes its old place, and jobs that arrive afterwards queue behind all of them.

use std::collections::BTreeMap;

use crate::ids::{JobId, LogicalTime};
use crate::scheduler::Scheduler;

/// A job's place in one pool's queue (smaller first among jobs of the same priority).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobPosition {
    pub job_id: JobId,
    pub registered_at: LogicalTime,
    pub seq: u64,
}

/// A change of the queue's order to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PositionChange {
    /// The job queued for the first time, or was moved: this is its place now.
    Placed(JobPosition),
    /// The job finished ([`Scheduler::forget_job`]): its place is gone.
    Forgotten(JobId),
}

/// One pool's stored places, ready for [`Scheduler::restore_positions`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoredOrder {
    pub positions: BTreeMap<JobId, (LogicalTime, u64)>,
    /// The logical clock must continue at or above this, so new jobs queue behind restored ones.
    pub clock_floor: LogicalTime,
    /// The pool's submission counter continues from here.
    pub next_seq: u64,
}

impl RestoredOrder {
    /// The restored jobs in queue order.
    pub fn order(&self) -> Vec<JobId> {
        let mut jobs: Vec<(&(LogicalTime, u64), &JobId)> = self.positions.iter().map(|(job, place)| (place, job)).collect();
        jobs.sort();
        jobs.into_iter().map(|(_, job)| job.clone()).collect()
    }
}

/// Rebuilds one pool's order from its stored places. A job stored twice (it cannot be, one row per
/// pool and job, but a caller may merge sources) keeps its earlier place.
pub fn restore_order(stored: impl IntoIterator<Item = JobPosition>) -> RestoredOrder {
    let mut restored = RestoredOrder::default();
    for p in stored {
        restored.clock_floor = restored.clock_floor.max(p.registered_at);
        restored.next_seq = restored.next_seq.max(p.seq.saturating_add(1));
        let place = (p.registered_at, p.seq);
        restored.positions.entry(p.job_id).and_modify(|old| *old = (*old).min(place)).or_insert(place);
    }
    restored
}

impl Scheduler {
    /// Gives restored jobs their stored places: a job the scheduler holds now moves there at once,
    /// any other takes it when its first request arrives. Call before submitting anything new
    /// (the master does it before recovery), with a logical clock continued at or above
    /// `restored.clock_floor`.
    pub fn restore_positions(&mut self, restored: RestoredOrder) {
        self.state.next_seq = self.state.next_seq.max(restored.next_seq);
        for (job_id, (registered_at, seq)) in restored.positions {
            match self.state.jobs.get_mut(&job_id) {
                Some(group) => {
                    group.registered_at = registered_at;
                    group.seq = seq;
                }
                None => {
                    self.state.restored.insert(job_id, (registered_at, seq));
                }
            }
        }
    }

    /// Restored jobs that have not queued anything since (a paused experiment's, say).
    pub fn restored_jobs(&self) -> impl Iterator<Item = &JobId> {
        self.state.restored.keys()
    }

    /// The places assigned or dropped since the last call, in the order they happened.
    pub fn take_position_changes(&mut self) -> Vec<PositionChange> {
        std::mem::take(&mut self.state.position_changes)
    }

    pub(crate) fn record_position(&mut self, job_id: &JobId, (registered_at, seq): (LogicalTime, u64)) {
        self.state.position_changes.push(PositionChange::Placed(JobPosition { job_id: job_id.clone(), registered_at, seq }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AllocationId, AllocationRequest, QueueMove, SchedulerConfig};

    fn place(job: &str, t: u64, seq: u64) -> JobPosition {
        JobPosition { job_id: JobId::new(job), registered_at: LogicalTime(t), seq }
    }

    fn request(id: &str, job: &str, t: u64) -> AllocationRequest {
        AllocationRequest::new(id, id, job, "default", 1, LogicalTime(t))
    }

    fn queue(s: &Scheduler) -> Vec<String> {
        s.job_queue().into_iter().map(|j| j.job_id.as_str().to_owned()).collect()
    }

    /// Stores what the scheduler reports, as the master does.
    fn store(s: &mut Scheduler, stored: &mut BTreeMap<JobId, (LogicalTime, u64)>) {
        for change in s.take_position_changes() {
            match change {
                PositionChange::Placed(p) => {
                    stored.insert(p.job_id, (p.registered_at, p.seq));
                }
                PositionChange::Forgotten(job) => {
                    stored.remove(&job);
                }
            }
        }
    }

    fn restored(stored: &BTreeMap<JobId, (LogicalTime, u64)>) -> RestoredOrder {
        restore_order(stored.iter().map(|(job, (t, seq))| JobPosition { job_id: job.clone(), registered_at: *t, seq: *seq }))
    }

    #[test]
    fn the_order_is_by_place_and_the_counters_continue_above_every_stored_one() {
        let r = restore_order([place("b", 5, 1), place("a", 9, 0), place("c", 5, 7), place("b", 6, 0)]);
        assert_eq!(r.order(), [JobId::new("b"), JobId::new("c"), JobId::new("a")]);
        assert_eq!(r.positions[&JobId::new("b")], (LogicalTime(5), 1), "a job stored twice keeps its earlier place");
        assert_eq!((r.clock_floor, r.next_seq), (LogicalTime(9), 8));
        assert_eq!(restore_order([]), RestoredOrder::default());
    }

    #[test]
    fn a_restarted_scheduler_queues_moved_and_unmoved_jobs_as_before_and_new_ones_behind() {
        let mut stored = BTreeMap::new();
        let mut before = Scheduler::new("default", SchedulerConfig::default());
        for (i, job) in ["j1", "j2", "j3", "j4"].into_iter().enumerate() {
            before.submit(request(&format!("{job}.1"), job, i as u64 + 1)).unwrap();
        }
        before.move_job(&JobId::new("j4"), &JobId::new("j1"), QueueMove::AheadOf).unwrap();
        before.move_job(&JobId::new("j2"), &JobId::new("j3"), QueueMove::BehindOf).unwrap();
        // j1's allocation ends between runs (a paused experiment): its place stays stored.
        before.release(&AllocationId::new("j1.1")).unwrap();
        store(&mut before, &mut stored);
        let order_before = queue(&before);
        assert_eq!(order_before, ["j4", "j3", "j2"]);

        // The new master's clock starts over; recovery queues the jobs again in another order.
        let r = restored(&stored);
        let floor = r.clock_floor.0;
        let mut after = Scheduler::new("default", SchedulerConfig::default());
        after.restore_positions(r);
        after.submit(request("j2.1", "j2", 1)).unwrap();
        after.submit(request("j3.1", "j3", 2)).unwrap();
        after.submit(request("j4.1", "j4", 3)).unwrap();
        assert_eq!(queue(&after), order_before, "the same order after the restart");
        assert_eq!(after.restored_jobs().collect::<Vec<_>>(), [&JobId::new("j1")], "j1 has queued nothing yet");
        after.submit(request("new.1", "new", floor + 1)).unwrap();
        after.submit(request("j1.2", "j1", floor + 2)).unwrap();
        assert_eq!(queue(&after), ["j4", "j1", "j3", "j2", "new"], "j1 takes its old place back; a new job queues last");
        store(&mut after, &mut stored);
        assert_eq!(stored.len(), 5, "only the new job was placed anew: {stored:?}");

        after.release(&AllocationId::new("new.1")).unwrap();
        assert!(after.forget_job(&JobId::new("new")));
        store(&mut after, &mut stored);
        assert!(!stored.contains_key(&JobId::new("new")), "a finished job's place is dropped");
    }

    #[test]
    fn a_restored_job_already_queued_moves_to_its_place_and_one_that_finishes_unqueued_is_dropped() {
        let mut s = Scheduler::new("default", SchedulerConfig::default());
        s.submit(request("late.1", "late", 1)).unwrap();
        s.take_position_changes();
        s.restore_positions(restore_order([place("early", 3, 0), place("late", 4, 1)]));
        s.submit(request("early.1", "early", 2)).unwrap();
        assert_eq!(queue(&s), ["early", "late"]);
        s.restore_positions(restore_order([place("gone", 1, 9)]));
        assert!(s.forget_job(&JobId::new("gone")), "a restored job that never queued again can be forgotten");
        assert_eq!(s.take_position_changes(), [PositionChange::Forgotten(JobId::new("gone"))]);
        assert_eq!(s.restored_jobs().count(), 0);
    }
}
