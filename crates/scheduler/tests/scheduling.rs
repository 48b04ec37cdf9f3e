//! Scripted scheduling scenarios. Each test builds a scheduler, applies a sequence of events and
//! checks the state at named points through a compact rendering of `Scheduler::snapshot`, plus the
//! decisions each pass returned.

#[path = "scheduling/harness.rs"]
mod harness;

use harness::{Harness, POOL, fair_share, priority};
use resolute_scheduler::{
    AgentId, AgentSpec, AllocationId, AllocationRequest, AllocationState, DeviceType, FittingPolicy, JobId, JobState, LogicalTime,
    QueueMove, Scheduler, SchedulerConfig, SchedulerError, SchedulingPolicy, WaitReason,
};
use serde_json::json;

#[test]
fn fifo_within_a_priority_and_release_advances_the_queue() {
    let mut h = Harness::new(priority(false));
    h.agent("a1", 1);
    h.submit("a.1", "a", 1);
    h.submit("b.1", "b", 1);
    h.submit("c.1", "c", 1);
    assert_eq!(h.schedule(), "assign a.1 a1[0]");
    h.check(
        "first come first served",
        "a1: 0=a.1
         a.1 job=a p42 1 slots SCHEDULED a1[0]
         b.1 job=b p42 1 slots QUEUED insufficient_free_slots
         c.1 job=c p42 1 slots QUEUED insufficient_free_slots",
    );
    assert_eq!(h.schedule(), "", "nothing changes without an event");

    h.release("a.1");
    assert_eq!(h.schedule(), "assign b.1 a1[0]");
    h.release("b.1");
    assert_eq!(h.schedule(), "assign c.1 a1[0]");
    h.check(
        "queue drained in submission order",
        "a1: 0=c.1
         c.1 job=c p42 1 slots SCHEDULED a1[0]",
    );
}

#[test]
fn a_smaller_later_request_of_the_same_priority_uses_free_slots() {
    let mut h = Harness::new(priority(false));
    h.agent("a1", 2);
    h.submit("a.1", "a", 1);
    h.submit("b.1", "b", 2);
    h.submit("c.1", "c", 1);
    assert_eq!(h.schedule(), "assign a.1 a1[0]; assign c.1 a1[1]");
    h.check(
        "c passes b, which needs the whole agent",
        "a1: 0=a.1 1=c.1
         a.1 job=a p42 1 slots SCHEDULED a1[0]
         b.1 job=b p42 2 slots QUEUED insufficient_free_slots
         c.1 job=c p42 1 slots SCHEDULED a1[1]",
    );
}

#[test]
fn equal_submission_times_keep_call_order() {
    let mut s = Scheduler::new(POOL, SchedulerConfig::default());
    s.add_agent(AgentSpec::new("a1", POOL).with_slots(DeviceType::Cpu, 1)).unwrap();
    for id in ["z.1", "y.1", "x.1"] {
        s.submit(AllocationRequest::new(id, id, id, POOL, 1, LogicalTime(7))).unwrap();
    }
    let decisions = s.schedule(LogicalTime(8));
    assert_eq!(decisions.assignments[0].allocation_id, AllocationId::from("z.1"));
    let waiting: Vec<&str> = decisions.waiting.iter().map(|w| w.allocation_id.as_str()).collect();
    assert_eq!(waiting, ["y.1", "x.1"]);
}

#[test]
fn higher_priority_goes_first_and_blocks_lower_priorities_without_preemption() {
    let mut h = Harness::new(priority(false));
    h.agent("a1", 2);
    h.agent("a2", 2);
    h.submit_with("low.1", "low", 1, |r| r.with_priority(60));
    h.submit_with("high.1", "high", 1, |r| r.with_priority(10));
    assert_eq!(h.schedule(), "assign high.1 a1[0]; assign low.1 a1[1]");

    // A 4-slot request needs both agents idle; while it waits, nothing of lower priority starts.
    h.submit_with("big.1", "big", 4, |r| r.with_priority(20));
    h.submit_with("later.1", "later", 1, |r| r.with_priority(50));
    assert_eq!(h.schedule(), "");
    h.check(
        "lower priorities wait behind the blocked request",
        "a1: 0=high.1 1=low.1
         a2: 0=- 1=-
         high.1 job=high p10 1 slots SCHEDULED a1[0]
         big.1 job=big p20 4 slots QUEUED insufficient_free_slots
         later.1 job=later p50 1 slots QUEUED blocked_by_higher_priority
         low.1 job=low p60 1 slots SCHEDULED a1[1]",
    );

    h.release("high.1");
    h.release("low.1");
    assert_eq!(h.schedule(), "assign big.1 a1[0,1]+a2[0,1]");
    h.release("big.1");
    assert_eq!(h.schedule(), "assign later.1 a1[0]");
}

#[test]
fn a_request_that_can_never_fit_does_not_block_lower_priorities() {
    let mut h = Harness::new(priority(false));
    h.agent("a1", 2);
    h.submit_with("huge.1", "huge", 8, |r| r.with_priority(1));
    h.submit("small.1", "small", 1);
    assert_eq!(h.schedule(), "assign small.1 a1[0]");
    let Some(AllocationState::Queued { reason: Some(reason) }) = h.scheduler.allocation(&"huge.1".into()) else {
        panic!("huge.1 should wait")
    };
    assert_eq!(reason, &WaitReason::ExceedsPoolCapacity { requested: 8, capacity: 2 });
    assert!(reason.can_never_fit());
    assert_eq!(
        reason.to_string(),
        "can never fit: requests 8 slots but the resource pool has 2 usable slots; lower the slots or add agents"
    );
}

#[test]
fn preemptible_lower_priority_work_is_backfilled_behind_a_blocked_request() {
    let mut h = Harness::new(priority(true));
    h.agent("a1", 2);
    h.agent("a2", 2);
    h.submit_with("pinned.1", "pinned", 1, |r| r.with_preemptible(false));
    assert_eq!(h.schedule(), "assign pinned.1 a1[0]");
    // `big` needs both agents whole, and `pinned` cannot be preempted: it waits, and preemptible
    // lower-priority work may use the idle slots meanwhile.
    h.submit_with("big.1", "big", 4, |r| r.with_priority(10));
    h.submit_with("filler.1", "filler", 1, |r| r.with_priority(50));
    h.submit_with("stubborn.1", "stubborn", 1, |r| r.with_priority(50).with_preemptible(false));
    assert_eq!(h.schedule(), "assign filler.1 a1[1] backfilled");
    h.check(
        "backfilled",
        "a1: 0=pinned.1 1=filler.1
         a2: 0=- 1=-
         big.1 job=big p10 4 slots QUEUED insufficient_free_slots
         pinned.1 job=pinned p42 1 slots SCHEDULED a1[0]
         filler.1 job=filler p50 1 slots SCHEDULED a1[1] backfilled
         stubborn.1 job=stubborn p50 1 slots QUEUED blocked_by_higher_priority",
    );
    let queue = h.scheduler.job_queue();
    let filler = queue.iter().find(|j| j.job_id == JobId::from("filler")).unwrap();
    assert_eq!(filler.state, JobState::ScheduledBackfilled);
}

#[test]
fn preemption_happens_only_when_it_makes_the_request_fit() {
    let mut h = Harness::new(priority(true));
    h.agent("a1", 4);
    h.agent("a2", 4);
    h.submit_with("low.1", "low", 4, |r| r.with_priority(50));
    h.submit_with("low.2", "low", 2, |r| r.with_priority(50));
    h.submit_with("pinned.1", "pinned", 2, |r| r.with_priority(50).with_preemptible(false));
    assert_eq!(h.schedule(), "assign low.1 a1[0,1,2,3]; assign low.2 a2[0,1]; assign pinned.1 a2[2,3]");

    // 8 slots need both agents idle, and `pinned` can never be preempted: nobody is preempted.
    h.submit_with("whole.1", "whole", 8, |r| r.with_priority(5));
    assert_eq!(h.schedule(), "");
    h.release("whole.1");

    // 4 slots: preempting low.2 (newest) alone would not make room on a2 next to `pinned`, so
    // only low.1 is preempted.
    h.submit_with("high.1", "high", 4, |r| r.with_priority(10));
    assert_eq!(h.schedule(), "preempt low.1");
    h.check(
        "preemption decided",
        "a1: 0=low.1 1=low.1 2=low.1 3=low.1
         a2: 0=low.2 1=low.2 2=pinned.1 3=pinned.1
         high.1 job=high p10 4 slots QUEUED awaiting_preemption
         low.1 job=low p50 4 slots SCHEDULED a1[0,1,2,3] preempting
         low.2 job=low p50 2 slots SCHEDULED a2[0,1]
         pinned.1 job=pinned p50 2 slots SCHEDULED a2[2,3]",
    );
    // Each preemption is reported once, and lower priorities do not take the freed slots.
    h.submit_with("sneaky.1", "sneaky", 4, |r| r.with_priority(90));
    assert_eq!(h.schedule(), "");

    h.release("low.1");
    assert_eq!(h.schedule(), "assign high.1 a1[0,1,2,3]");
}

#[test]
fn non_preemptible_work_is_never_preempted() {
    for policy in [priority(true), fair_share(true)] {
        let mut h = Harness::new(policy);
        h.agent("a1", 2);
        h.submit_with("pinned.1", "pinned", 2, |r| r.with_priority(90).with_preemptible(false));
        assert_eq!(h.schedule(), "assign pinned.1 a1[0,1]");
        h.submit_with("urgent.1", "urgent", 2, |r| r.with_priority(1));
        assert_eq!(h.schedule(), "", "{policy:?}");
        assert!(!h.scheduler.allocation(&"urgent.1".into()).unwrap().is_scheduled());
    }
}

#[test]
fn same_priority_preempts_only_jobs_queued_behind() {
    let mut h = Harness::new(priority(true));
    h.agent("a1", 3);
    h.submit("exp1.1", "exp1", 1);
    h.submit("exp2.1", "exp2", 2);
    assert_eq!(h.schedule(), "assign exp1.1 a1[0]; assign exp2.1 a1[1,2]");
    // A newer job of the same priority waits; nobody is preempted for it.
    h.submit("exp3.1", "exp3", 2);
    assert_eq!(h.schedule(), "");
    // The older job asks for more: it is ahead of exp2 in the queue, so exp2 yields.
    h.submit("exp1.2", "exp1", 2);
    assert_eq!(h.schedule(), "preempt exp2.1");
    h.release("exp2.1");
    assert_eq!(h.schedule(), "assign exp1.2 a1[1,2]");
}

#[test]
fn gang_allocation_takes_whole_idle_agents_or_nothing() {
    let mut h = Harness::new(priority(false));
    for id in ["a1", "a2", "a3"] {
        h.agent(id, 4);
    }
    h.submit("dist.1", "dist", 8);
    h.submit("dist2.1", "dist2", 8);
    assert_eq!(h.schedule(), "assign dist.1 a1[0,1,2,3]+a2[0,1,2,3]");
    h.check(
        "the second gang holds nothing while it waits",
        "a1: 0=dist.1 1=dist.1 2=dist.1 3=dist.1
         a2: 0=dist.1 1=dist.1 2=dist.1 3=dist.1
         a3: 0=- 1=- 2=- 3=-
         dist.1 job=dist p42 8 slots SCHEDULED a1[0,1,2,3]+a2[0,1,2,3]
         dist2.1 job=dist2 p42 8 slots QUEUED insufficient_free_slots",
    );
    h.release("dist.1");
    assert_eq!(h.schedule(), "assign dist2.1 a1[0,1,2,3]+a2[0,1,2,3]");

    // Shapes that can never fit these agents say so instead of waiting silently.
    h.submit("odd.1", "odd", 6);
    h.submit("huge.1", "huge", 16);
    h.submit_with("single.1", "single", 8, |r| r.with_single_agent(true));
    h.schedule();
    let reason = |id: &str| match h.scheduler.allocation(&id.into()) {
        Some(AllocationState::Queued { reason: Some(reason) }) => reason.clone(),
        other => panic!("{id} should be queued with a reason, is {other:?}"),
    };
    assert_eq!(reason("odd.1"), WaitReason::NoGangShape { requested: 6, slots_per_agent: vec![4] });
    assert_eq!(reason("huge.1"), WaitReason::ExceedsPoolCapacity { requested: 16, capacity: 12 });
    assert_eq!(reason("single.1"), WaitReason::ExceedsLargestAgent { requested: 8, largest: 4 });
    assert!(reason("odd.1").to_string().starts_with("can never fit"));
}

#[test]
fn gang_prefers_the_largest_agents() {
    let mut h = Harness::new(priority(false));
    h.agent("small1", 2);
    h.agent("small2", 2);
    h.agent("small3", 2);
    h.agent("small4", 2);
    h.agent("big1", 4);
    h.agent("big2", 4);
    h.submit("dist.1", "dist", 8);
    assert_eq!(h.schedule(), "assign dist.1 big1[0,1,2,3]+big2[0,1,2,3]");
    h.submit("dist.2", "dist", 8);
    assert_eq!(h.schedule(), "assign dist.2 small1[0,1]+small2[0,1]+small3[0,1]+small4[0,1]");
}

#[test]
fn best_fit_packs_and_worst_fit_spreads() {
    let run = |fitting_policy: FittingPolicy| {
        let mut h = Harness::with_config(SchedulerConfig { fitting_policy, ..SchedulerConfig::default() });
        h.agent("a1", 2);
        h.agent("a2", 4);
        h.agent("a3", 8);
        (1..=3).map(|n| h.submit(&format!("t.{n}"), "t", 1)).for_each(drop);
        h.schedule()
    };
    // Best: the agent left with the fewest free slots. Worst: the highest free fraction.
    assert_eq!(run(FittingPolicy::Best), "assign t.1 a1[0]; assign t.2 a1[1]; assign t.3 a2[0]");
    assert_eq!(run(FittingPolicy::Worst), "assign t.1 a1[0]; assign t.2 a2[0]; assign t.3 a3[0]");
    assert_eq!("worst".parse::<FittingPolicy>().unwrap(), FittingPolicy::Worst);
}

#[test]
fn disabled_agents_and_slots_are_not_used() {
    let mut h = Harness::new(priority(false));
    h.agent("a1", 2);
    h.agent("a2", 2);
    assert_eq!(h.scheduler.disable_agent(&"a1".into()).unwrap(), Vec::<AllocationId>::new());
    assert_eq!(h.scheduler.disable_slot(&"a2".into(), 0).unwrap(), None);
    h.submit("one.1", "one", 1);
    h.submit("two.1", "two", 2);
    h.submit("three.1", "three", 1);
    assert_eq!(h.schedule(), "assign one.1 a2[1]");
    h.check(
        "only the enabled slot is used",
        "a1 (disabled): 0=- 1=-
         a2: 0=off/- 1=one.1
         one.1 job=one p42 1 slots SCHEDULED a2[1]
         two.1 job=two p42 2 slots QUEUED exceeds_pool_capacity
         three.1 job=three p42 1 slots QUEUED insufficient_free_slots",
    );

    // Disabling a held slot reports its holder; the slot stays held until release.
    assert_eq!(h.scheduler.disable_slot(&"a2".into(), 1).unwrap(), Some(AllocationId::from("one.1")));
    h.release("one.1");
    assert_eq!(h.schedule(), "");

    h.scheduler.enable_agent(&"a1".into()).unwrap();
    h.scheduler.enable_slot(&"a2".into(), 0).unwrap();
    assert_eq!(h.schedule(), "assign two.1 a1[0,1]; assign three.1 a2[0]");
    assert_eq!(h.scheduler.disable_agent(&"a1".into()).unwrap(), vec![AllocationId::from("two.1")]);
    let stats = h.scheduler.stats();
    assert_eq!((stats.slots_available, stats.slots_used, stats.scheduled_jobs), (1, 3, 2));
}

#[test]
fn fair_share_splits_slots_by_weight() {
    let mut h = Harness::new(fair_share(true));
    h.agent("a1", 8);
    for n in 1..=8 {
        h.submit_with(&format!("light.{n}"), "light", 1, |r| r.with_weight(1.0));
        h.submit_with(&format!("heavy.{n}"), "heavy", 1, |r| r.with_weight(3.0));
    }
    h.schedule();
    let allocated =
        |h: &Harness, job: &str| h.scheduler.job_queue().into_iter().find(|j| j.job_id == JobId::from(job)).unwrap().allocated_slots;
    assert_eq!((allocated(&h, "light"), allocated(&h, "heavy")), (2, 6));
    let queue = h.scheduler.job_queue();
    assert!(queue.iter().all(|j| j.jobs_ahead.is_none()), "fair share has no queue order");
    let Some(AllocationState::Queued { reason: Some(reason) }) = h.scheduler.allocation(&"light.3".into()) else { panic!() };
    assert_eq!(reason, &WaitReason::OverFairShare { share: 2, used: 2 });

    // Reweighting evens the split: heavy is over its share and gives back its newest allocations.
    h.scheduler.set_weight(&"heavy".into(), 1.0).unwrap();
    assert_eq!(h.schedule(), "preempt heavy.6; preempt heavy.5");
    assert_eq!(h.schedule(), "", "preemptions are reported once");
    h.release("heavy.6");
    h.release("heavy.5");
    assert_eq!(h.schedule(), "assign light.3 a1[6]; assign light.4 a1[7]");
    assert_eq!((allocated(&h, "light"), allocated(&h, "heavy")), (4, 4));
}

#[test]
fn fair_share_never_offers_a_job_more_than_its_max_slots() {
    let mut h = Harness::new(fair_share(true));
    h.agent("a1", 4);
    for n in 1..=4 {
        h.submit_with(&format!("capped.{n}"), "capped", 1, |r| r.with_max_slots(Some(2)));
    }
    assert_eq!(h.schedule(), "assign capped.1 a1[0]; assign capped.2 a1[1]", "two of four slots, though the rest are idle");
    let Some(AllocationState::Queued { reason: Some(reason) }) = h.scheduler.allocation(&"capped.3".into()) else { panic!() };
    assert_eq!(reason, &WaitReason::OverFairShare { share: 2, used: 2 });
    // Another job takes the idle slots; the capped one still holds two.
    h.submit("free.1", "free", 1);
    h.submit("free.2", "free", 1);
    assert_eq!(h.schedule(), "assign free.1 a1[2]; assign free.2 a1[3]");
    h.release("capped.1");
    assert_eq!(h.schedule(), "assign capped.3 a1[0]", "a freed slot of its own comes back to it");
}

#[test]
fn fair_share_without_preemption_only_holds_back_new_work() {
    let mut h = Harness::new(fair_share(false));
    h.agent("a1", 4);
    for n in 1..=4 {
        h.submit(&format!("first.{n}"), "first", 1);
    }
    assert_eq!(h.schedule(), "assign first.1 a1[0]; assign first.2 a1[1]; assign first.3 a1[2]; assign first.4 a1[3]");
    h.submit("second.1", "second", 1);
    h.submit("second.2", "second", 1);
    assert_eq!(h.schedule(), "");
    h.release("first.4");
    assert_eq!(h.schedule(), "assign second.1 a1[3]");
    h.release("first.3");
    assert_eq!(h.schedule(), "assign second.2 a1[2]");
}

#[test]
fn fair_share_breaks_deadlocks_between_multi_slot_jobs() {
    let mut h = Harness::new(fair_share(true));
    h.agent("a1", 6);
    h.submit("older.1", "older", 4);
    h.submit("older.2", "older", 4);
    h.submit("newer.1", "newer", 4);
    h.submit("newer.2", "newer", 4);
    // An even split (3 + 3) would start nothing; the newest job steps aside for this pass.
    assert_eq!(h.schedule(), "assign older.1 a1[0,1,2,3]");
    h.check(
        "one job runs instead of none",
        "a1: 0=older.1 1=older.1 2=older.1 3=older.1 4=- 5=-
         older.1 job=older p42 4 slots SCHEDULED a1[0,1,2,3]
         older.2 job=older p42 4 slots QUEUED over_fair_share
         newer.1 job=newer p42 4 slots QUEUED over_fair_share
         newer.2 job=newer p42 4 slots QUEUED over_fair_share",
    );
}

#[test]
fn job_queue_reports_positions_and_states() {
    let mut h = Harness::new(priority(false));
    h.agent("a1", 2);
    h.submit("exp1.1", "exp1", 1);
    h.submit("exp1.2", "exp1", 2);
    h.submit_with("cmd.1", "cmd", 1, |r| r.with_priority(5));
    h.submit_with("exp2.1", "exp2", 1, |r| r.with_priority(70));
    h.schedule();
    let queue: Vec<(String, JobState, Option<u32>, u32, u32, u32)> = h
        .scheduler
        .job_queue()
        .into_iter()
        .map(|j| (j.job_id.to_string(), j.state, j.jobs_ahead, j.priority, j.requested_slots, j.allocated_slots))
        .collect();
    assert_eq!(
        queue,
        [
            ("cmd".to_owned(), JobState::Scheduled, Some(0), 5, 1, 1),
            ("exp1".to_owned(), JobState::Scheduled, Some(1), 42, 3, 1),
            ("exp2".to_owned(), JobState::Queued, Some(2), 70, 1, 0),
        ]
    );

    // Raising a job's priority moves it to the front.
    h.scheduler.set_priority(&"exp2".into(), 1).unwrap();
    let order: Vec<String> = h.scheduler.job_queue().into_iter().map(|j| format!("{}:{:?}", j.job_id, j.jobs_ahead)).collect();
    assert_eq!(order, ["exp2:Some(0)", "cmd:Some(1)", "exp1:Some(2)"]);
    let stats = h.scheduler.stats();
    assert_eq!((stats.queued_jobs, stats.scheduled_jobs), (1, 2));
}

#[test]
fn removing_an_agent_reports_the_allocations_that_lost_resources() {
    let mut h = Harness::new(priority(false));
    h.agent("a1", 2);
    h.agent("a2", 2);
    h.submit("dist.1", "dist", 4);
    h.submit("tb.1", "tb", 0);
    assert_eq!(h.schedule(), "assign dist.1 a1[0,1]+a2[0,1]; assign tb.1 a1[]");

    let lost = h.scheduler.remove_agent(&"a1".into()).unwrap();
    assert_eq!(lost, [AllocationId::from("dist.1"), AllocationId::from("tb.1")]);
    h.check(
        "survivors keep what they hold elsewhere until released",
        "a2: 0=dist.1 1=dist.1
         dist.1 job=dist p42 4 slots SCHEDULED a2[0,1] resources_lost
         tb.1 job=tb p42 0 slots SCHEDULED  resources_lost",
    );
    h.release("dist.1");
    h.release("tb.1");
    h.submit("next.1", "next", 2);
    assert_eq!(h.schedule(), "assign next.1 a2[0,1]");
    assert_eq!(h.scheduler.remove_agent(&"a1".into()), Err(SchedulerError::UnknownAgent(AgentId::from("a1"))));
}

#[test]
fn zero_slot_requests_use_aux_capacity_independently_of_slot_requests() {
    let mut h = Harness::with_config(SchedulerConfig { max_aux_containers_per_agent: 2, ..SchedulerConfig::default() });
    h.agent("a1", 2);
    h.agent("a2", 2);
    h.submit("running.1", "running", 1);
    assert_eq!(h.schedule(), "assign running.1 a1[0]");
    h.submit_with("blocked.1", "blocked", 4, |r| r.with_priority(1));
    h.submit_with("later.1", "later", 1, |r| r.with_priority(50));
    assert_eq!(h.schedule(), "");
    // A higher-priority slot request is stuck, yet lower-priority aux tasks still start.
    for n in 1..=5 {
        h.submit_with(&format!("tb.{n}"), "tb", 0, |r| r.with_priority(80));
    }
    assert_eq!(h.schedule(), "assign tb.1 a1[]; assign tb.2 a1[]; assign tb.3 a2[]; assign tb.4 a2[]");
    let Some(AllocationState::Queued { reason: Some(reason) }) = h.scheduler.allocation(&"tb.5".into()) else { panic!() };
    assert_eq!(reason, &WaitReason::AuxCapacityFull { max_aux_containers_per_agent: 2 });
}

#[test]
fn labels_restrict_placement() {
    let mut h = Harness::new(priority(false));
    h.scheduler.add_agent(AgentSpec::new("gpu", POOL).with_slots(DeviceType::Cuda, 2).with_label("a100")).unwrap();
    h.agent("plain", 2);
    h.submit_with("l.1", "l", 1, |r| r.with_label("a100"));
    h.submit_with("h.1", "h", 1, |r| r.with_label("h100"));
    h.submit("u.1", "u", 1);
    assert_eq!(h.schedule(), "assign l.1 gpu[0]; assign u.1 plain[0]");
    let Some(AllocationState::Queued { reason: Some(reason) }) = h.scheduler.allocation(&"h.1".into()) else { panic!() };
    assert_eq!(reason.to_string(), "can never fit: no enabled agent in the resource pool has label \"h100\"");
}

#[test]
fn excluded_agents_are_never_used_and_say_why_when_none_is_left() {
    let mut h = Harness::new(priority(false));
    h.agent("a1", 2);
    h.agent("a2", 2);
    h.submit_with("t.2", "t", 1, |r| r.excluding([AgentId::new("a1")]));
    assert_eq!(h.schedule(), "assign t.2 a2[0]");
    h.submit_with("t.3", "u", 1, |r| r.excluding([AgentId::new("a1"), AgentId::new("a2")]));
    assert_eq!(h.schedule(), "");
    let Some(AllocationState::Queued { reason: Some(reason) }) = h.scheduler.allocation(&"t.3".into()) else { panic!() };
    assert!(reason.to_string().contains("excluded for this trial by an exclude_node log policy (a1, a2)"), "{reason}");
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let mut s = Scheduler::new(POOL, SchedulerConfig::default());
    let agent = AgentSpec::new("a1", POOL).with_slots(DeviceType::Rocm, 2);
    s.add_agent(agent.clone()).unwrap();
    assert_eq!(s.add_agent(agent), Err(SchedulerError::DuplicateAgent("a1".into())));
    let elsewhere = AgentSpec::new("a9", "gpu-pool");
    assert!(matches!(s.add_agent(elsewhere), Err(SchedulerError::WrongResourcePool { what: "agent", .. })));
    let mut twice = AgentSpec::new("a2", POOL).with_slots(DeviceType::Cpu, 1);
    twice.slots.push(twice.slots[0].clone());
    assert_eq!(s.add_agent(twice), Err(SchedulerError::DuplicateSlot { agent: "a2".into(), slot: 0 }));
    assert_eq!(s.enable_agent(&"ghost".into()), Err(SchedulerError::UnknownAgent("ghost".into())));
    assert_eq!(s.disable_slot(&"a1".into(), 7), Err(SchedulerError::UnknownSlot { agent: "a1".into(), slot: 7 }));

    let request = AllocationRequest::new("x.1", "x", "x", POOL, 1, LogicalTime(1));
    s.submit(request.clone()).unwrap();
    assert_eq!(s.submit(request.clone()), Err(SchedulerError::DuplicateAllocation("x.1".into())));
    let bad_priority = AllocationRequest { allocation_id: "x.2".into(), ..request.clone() }.with_priority(0);
    assert_eq!(s.submit(bad_priority), Err(SchedulerError::InvalidPriority(0)));
    let bad_weight = AllocationRequest { allocation_id: "x.3".into(), ..request.clone() }.with_weight(f64::NAN);
    assert!(matches!(s.submit(bad_weight), Err(SchedulerError::InvalidWeight(_))));
    let wrong_pool = AllocationRequest { allocation_id: "x.4".into(), resource_pool: "aux".into(), ..request };
    assert!(matches!(s.submit(wrong_pool), Err(SchedulerError::WrongResourcePool { what: "allocation", .. })));
    assert_eq!(s.set_priority(&"x".into(), 100), Err(SchedulerError::InvalidPriority(100)));
    assert_eq!(s.set_priority(&"nope".into(), 5), Err(SchedulerError::UnknownJob("nope".into())));
    assert_eq!(s.set_weight(&"x".into(), -1.0), Err(SchedulerError::InvalidWeight(-1.0)));
    assert_eq!(s.release(&"y.1".into()), Err(SchedulerError::UnknownAllocation("y.1".into())));

    assert_eq!(SchedulingPolicy::from_type("priority", true).unwrap(), SchedulingPolicy::Priority { preemption: true });
    assert_eq!(SchedulingPolicy::from_type("fair_share", false).unwrap(), SchedulingPolicy::FairShare { preemption: false });
    let removed = SchedulingPolicy::from_type("round_robin", false).unwrap_err();
    assert_eq!(removed.to_string(), "scheduler type \"round_robin\" was removed upstream: use \"priority\" or \"fair_share\"");
    assert!(matches!(SchedulingPolicy::from_type("lottery", false), Err(SchedulerError::UnknownPolicy(_))));
    assert!(matches!("first".parse::<FittingPolicy>(), Err(SchedulerError::UnknownFittingPolicy(_))));

    // Releasing a job's last request keeps the job until it is forgotten.
    s.release(&"x.1".into()).unwrap();
    assert_eq!(s.set_priority(&"x".into(), 5), Ok(()));
    assert!(s.forget_job(&"x".into()));
    assert_eq!(s.set_priority(&"x".into(), 5), Err(SchedulerError::UnknownJob("x".into())));
}

/// A job whose requests are all released keeps its place (and priority): an experiment moved
/// ahead of another stays ahead for its next trial's allocation; once forgotten, a job queues
/// anew at the back.
#[test]
fn a_job_between_allocations_keeps_its_place_until_forgotten() {
    let mut s =
        Scheduler::new(POOL, SchedulerConfig { policy: SchedulingPolicy::Priority { preemption: false }, ..SchedulerConfig::default() });
    s.add_agent(AgentSpec::new("a1", POOL).with_slots(DeviceType::Cuda, 1)).unwrap();
    let request =
        |job: &str, n: u32, at: u64| AllocationRequest::new(format!("{job}.{n}"), format!("{job}-task"), job, POOL, 1, LogicalTime(at));
    s.submit(request("a", 1, 1)).unwrap();
    s.submit(request("b", 1, 2)).unwrap();
    s.submit(request("c", 1, 3)).unwrap();
    s.move_job(&"c".into(), &"b".into(), QueueMove::AheadOf).unwrap();
    let order = |s: &Scheduler| s.job_queue().into_iter().map(|j| j.job_id.as_str().to_owned()).collect::<Vec<_>>();
    assert_eq!(order(&s), ["a", "c", "b"]);
    // c's allocation ends (its trial failed) and its next one comes later: still ahead of b.
    s.release(&"c.1".into()).unwrap();
    s.submit(request("c", 2, 9)).unwrap();
    assert_eq!(order(&s), ["a", "c", "b"]);
    let decisions = s.schedule(LogicalTime(10));
    assert_eq!(decisions.assignments.iter().map(|a| a.allocation_id.as_str()).collect::<Vec<_>>(), ["a.1"]);
    s.release(&"a.1".into()).unwrap();
    let decisions = s.schedule(LogicalTime(11));
    assert_eq!(decisions.assignments.iter().map(|a| a.allocation_id.as_str()).collect::<Vec<_>>(), ["c.2"], "c kept its place");
    // A forgotten job queues anew, behind everyone.
    s.release(&"c.2".into()).unwrap();
    assert!(s.forget_job(&"c".into()));
    s.submit(request("c", 3, 12)).unwrap();
    assert_eq!(order(&s), ["b", "c"]);
    assert!(!s.forget_job(&"b".into()), "a job with a request is kept");
}

#[test]
fn snapshot_holds_the_whole_state() {
    let mut h = Harness::new(priority(true));
    h.scheduler.add_agent(AgentSpec::new("a1", POOL).with_slots(DeviceType::Cuda, 2)).unwrap();
    h.scheduler.disable_slot(&"a1".into(), 1).unwrap();
    h.submit_with("exp.1", "exp", 1, |r| r.with_priority(30));
    h.submit("cmd.1", "cmd", 1);
    h.schedule();
    assert_eq!(
        h.scheduler.snapshot(),
        json!({
            "resource_pool": "default",
            "config": {
                "policy": {"type": "priority", "preemption": true},
                "fitting_policy": "best",
                "max_aux_containers_per_agent": 100
            },
            "agents": [{
                "id": "a1", "label": "", "enabled": true, "aux": [],
                "slots": [
                    {"id": 0, "device": "cuda", "enabled": true, "allocation": "exp.1"},
                    {"id": 1, "device": "cuda", "enabled": false, "allocation": null}
                ]
            }],
            "jobs": [
                {"job_id": "cmd", "priority": 42, "weight": 1.0, "registered_at": 2},
                {"job_id": "exp", "priority": 30, "weight": 1.0, "registered_at": 1}
            ],
            "queue": [
                {
                    "allocation_id": "exp.1", "task_id": "task-exp.1", "job_id": "exp", "slots": 1,
                    "preemptible": true, "single_agent": false, "label": "", "submitted_at": 1,
                    "state": "SCHEDULED", "placements": [{"agent_id": "a1", "slot_ids": [0]}],
                    "backfilled": false, "assigned_at": 3, "preempting": false, "resources_lost": false
                },
                {
                    "allocation_id": "cmd.1", "task_id": "task-cmd.1", "job_id": "cmd", "slots": 1,
                    "preemptible": true, "single_agent": false, "label": "", "submitted_at": 2,
                    "state": "QUEUED", "reason": {"kind": "insufficient_free_slots", "requested": 1, "free": 0}
                }
            ]
        })
    );
}

#[test]
fn the_same_script_gives_the_same_state() {
    let run = || {
        let mut h = Harness::new(priority(true));
        for (id, slots) in [("b", 4), ("a", 4), ("c", 2)] {
            h.agent(id, slots);
        }
        let mut log = Vec::new();
        for n in 0..12u32 {
            let job = format!("j{}", n % 4);
            h.submit_with(&format!("{job}.{n}"), &job, [1, 2, 4, 0][n as usize % 4], |r| r.with_priority(10 + (n % 3) * 30));
            log.push(h.schedule());
            if n % 5 == 4 {
                let first = h.scheduler.job_queue()[0].allocations[0].clone();
                h.scheduler.release(&first).unwrap();
            }
        }
        (log, h.scheduler.snapshot())
    };
    assert_eq!(run(), run());
}
