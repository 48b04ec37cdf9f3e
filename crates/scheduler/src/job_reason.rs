//! Why a queued job waits, in the words `det job list`, `det experiment describe` and the trial
//! logs show: a pure function of the pool's state and the reasons the last pass recorded.
//! e.g. "needs 8 slots; the largest agent has 4", "waiting behind 3 jobs of higher priority",
//! "no agents in resource pool default", "max_slots 2 reached".

use std::collections::BTreeSet;

use crate::decisions::WaitReason;
use crate::ids::JobId;
use crate::request::AllocationState;
use crate::state::PoolState;

pub(crate) fn explain(state: &PoolState, job: &JobId) -> Option<String> {
    let order = state.queue_order();
    let (index, reason) = order.iter().enumerate().find_map(|(i, e)| match &e.state {
        AllocationState::Queued { reason: Some(reason) } if &e.request.job_id == job => Some((i, reason)),
        _ => None,
    })?;
    let pool = &state.name;
    let usable: Vec<u32> = state.agents.values().filter(|a| a.takes_work()).map(|a| a.num_usable()).collect();
    let largest = usable.iter().copied().max().unwrap_or(0);
    let total: u32 = usable.iter().sum();
    let plural = |n: u32, one: &str, many: &str| if n == 1 { format!("1 {one}") } else { format!("{n} {many}") };
    // Jobs ahead of this one in the queue that are waiting too.
    let queued_ahead = |only_higher: bool| {
        let mine = state.jobs.get(job).map_or(0, |g| g.priority);
        let jobs: BTreeSet<&JobId> = order[..index]
            .iter()
            .filter(|e| !e.state.is_scheduled() && &e.request.job_id != job)
            .filter(|e| !only_higher || state.priority(e) < mine)
            .map(|e| &e.request.job_id)
            .collect();
        u32::try_from(jobs.len()).unwrap_or(u32::MAX)
    };
    let text = match reason {
        WaitReason::NoEligibleAgents { label } if usable.is_empty() && label.is_empty() => {
            format!("no agents in resource pool {pool}; start or enable an agent there")
        }
        WaitReason::NoEligibleAgents { label } if label.is_empty() => format!("no enabled agent in resource pool {pool}"),
        WaitReason::NoEligibleAgents { label } => format!("no enabled agent in resource pool {pool} has label {label:?}"),
        WaitReason::ExceedsPoolCapacity { requested, capacity } => format!(
            "needs {} at once; resource pool {pool} has {capacity} usable in all (the largest agent has {largest}); lower slots_per_trial or add agents",
            plural(*requested, "slot", "slots")
        ),
        WaitReason::ExceedsLargestAgent { requested, largest } => {
            format!("needs {} on one agent; the largest agent has {largest}", plural(*requested, "slot", "slots"))
        }
        WaitReason::InsufficientFreeSlots { requested, free } => {
            let ahead = queued_ahead(false);
            let mut text = format!("needs {}; {free} of {total} free in resource pool {pool}", plural(*requested, "slot", "slots"));
            if ahead > 0 {
                text.push_str(&format!("; {} queued ahead of it", plural(ahead, "job", "jobs")));
            }
            text
        }
        WaitReason::BlockedByHigherPriority => {
            let higher = queued_ahead(true);
            format!("waiting behind {} of higher priority", plural(higher.max(1), "job", "jobs"))
        }
        WaitReason::MaxSlotsReached { max_slots, used } => {
            format!("max_slots {max_slots} reached (its job holds {})", plural(*used, "slot", "slots"))
        }
        other => other.to_string(),
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use crate::{AgentSpec, AllocationRequest, DeviceType, JobId, LogicalTime, QueueMove, Scheduler, SchedulerConfig};

    fn scheduler(agents: &[(&str, u32)]) -> Scheduler {
        let mut s = Scheduler::new("default", SchedulerConfig::default());
        for (id, slots) in agents {
            s.add_agent(AgentSpec::new(*id, "default").with_slots(DeviceType::Cpu, *slots)).unwrap();
        }
        s
    }

    fn submit(s: &mut Scheduler, job: &str, slots: u32, priority: u32, at: u64) {
        let request = AllocationRequest::new(format!("{job}.1"), job, job, "default", slots, LogicalTime(at)).with_priority(priority);
        s.submit(request).unwrap();
    }

    fn reason(s: &Scheduler, job: &str) -> String {
        s.job_wait_reason(&JobId::new(job)).unwrap_or_default()
    }

    #[test]
    fn no_agents_in_the_pool() {
        let mut s = scheduler(&[]);
        submit(&mut s, "exp", 1, 42, 1);
        s.schedule(LogicalTime(2));
        assert_eq!(reason(&s, "exp"), "no agents in resource pool default; start or enable an agent there");
    }

    #[test]
    fn more_slots_than_the_pool_has() {
        // The finding: an 8-slot experiment on a 1-slot cluster.
        let mut s = scheduler(&[("a1", 1)]);
        submit(&mut s, "exp", 8, 42, 1);
        s.schedule(LogicalTime(2));
        assert_eq!(
            reason(&s, "exp"),
            "needs 8 slots at once; resource pool default has 1 usable in all (the largest agent has 1); lower slots_per_trial or add agents"
        );
    }

    #[test]
    fn more_slots_than_one_agent_has_on_a_single_agent() {
        let mut s = scheduler(&[("a1", 4), ("a2", 4)]);
        let request = AllocationRequest::new("exp.1", "exp", "exp", "default", 8, LogicalTime(1)).with_single_agent(true);
        s.submit(request).unwrap();
        s.schedule(LogicalTime(2));
        assert_eq!(reason(&s, "exp"), "needs 8 slots on one agent; the largest agent has 4");
    }

    #[test]
    fn busy_slots_and_jobs_queued_ahead() {
        let mut s = scheduler(&[("a1", 1)]);
        submit(&mut s, "a", 1, 42, 1);
        submit(&mut s, "b", 1, 42, 2);
        submit(&mut s, "c", 1, 42, 3);
        s.schedule(LogicalTime(4));
        assert_eq!(s.job_wait_reason(&JobId::new("a")), None, "a runs");
        assert_eq!(reason(&s, "b"), "needs 1 slot; 0 of 1 free in resource pool default");
        assert_eq!(reason(&s, "c"), "needs 1 slot; 0 of 1 free in resource pool default; 1 job queued ahead of it");
    }

    #[test]
    fn blocked_behind_higher_priority_jobs() {
        // Three high-priority 2-slot jobs wait for a 2-slot agent one of them holds; a 1-slot
        // lower-priority job would fit the free slot but may not pass them (no preemption).
        let mut s = scheduler(&[("a1", 2), ("a2", 1)]);
        for (i, job) in ["h1", "h2", "h3", "h4"].iter().enumerate() {
            submit(&mut s, job, 2, 10, i as u64 + 1);
        }
        submit(&mut s, "low", 1, 50, 9);
        s.schedule(LogicalTime(10));
        assert_eq!(reason(&s, "low"), "waiting behind 3 jobs of higher priority");
    }

    #[test]
    fn max_slots_caps_a_job_and_says_so() {
        let mut s = scheduler(&[("a1", 4)]);
        for trial in 1..=3 {
            s.submit(AllocationRequest::new(format!("exp.{trial}"), format!("t{trial}"), "exp", "default", 1, LogicalTime(trial))).unwrap();
        }
        s.set_max_slots(&JobId::new("exp"), Some(2)).unwrap();
        let decisions = s.schedule(LogicalTime(5));
        assert_eq!(decisions.assignments.len(), 2, "only max_slots of the job's trials run");
        assert_eq!(reason(&s, "exp"), "max_slots 2 reached (its job holds 2 slots)");
        assert!(s.set_max_slots(&JobId::new("exp"), Some(0)).unwrap_err().to_string().contains("max_slots 0"));
        s.set_max_slots(&JobId::new("exp"), None).unwrap();
        assert_eq!(s.schedule(LogicalTime(6)).assignments.len(), 1, "lifting the cap starts the third");
    }

    #[test]
    fn moving_ahead_or_behind_changes_what_starts_next() {
        let mut s = scheduler(&[("a1", 1)]);
        submit(&mut s, "run", 1, 42, 1);
        s.schedule(LogicalTime(2));
        submit(&mut s, "x", 1, 42, 3);
        submit(&mut s, "y", 1, 42, 4);
        submit(&mut s, "z", 1, 60, 5);
        // z (lower priority) jumps ahead of x: it takes x's priority and its place.
        s.move_job(&JobId::new("z"), &JobId::new("x"), QueueMove::AheadOf).unwrap();
        let order: Vec<String> = s.job_queue().iter().map(|j| j.job_id.as_str().to_owned()).collect();
        assert_eq!(order, ["run", "z", "x", "y"]);
        assert_eq!(s.job_queue()[1].priority, 42);
        s.move_job(&JobId::new("x"), &JobId::new("y"), QueueMove::BehindOf).unwrap();
        let order: Vec<String> = s.job_queue().iter().map(|j| j.job_id.as_str().to_owned()).collect();
        assert_eq!(order, ["run", "z", "y", "x"]);
        s.release(&"run.1".into()).unwrap();
        let started: Vec<String> = s.schedule(LogicalTime(6)).assignments.iter().map(|a| a.allocation_id.as_str().to_owned()).collect();
        assert_eq!(started, ["z.1"]);
        // A job submitted later still queues behind every moved one.
        submit(&mut s, "w", 1, 42, 7);
        let order: Vec<String> = s.job_queue().iter().map(|j| j.job_id.as_str().to_owned()).collect();
        assert_eq!(order, ["z", "y", "x", "w"]);
        assert!(s.move_job(&JobId::new("x"), &JobId::new("x"), QueueMove::AheadOf).is_err());
        assert!(s.move_job(&JobId::new("x"), &JobId::new("nope"), QueueMove::AheadOf).unwrap_err().to_string().contains("nope"));
    }
}
