//! The test harness: a scheduler driven by a logical clock, and a compact text rendering of its
//! snapshot and decisions so named points of a script read like a picture of the pool.

use resolute_scheduler::{
    AgentSpec, AllocationId, AllocationRequest, Decisions, DeviceType, LogicalTime, Scheduler, SchedulerConfig, SchedulingPolicy,
};
use serde_json::Value;

pub const POOL: &str = "default";

/// A scheduler plus a logical clock that advances on every submission and pass.
pub struct Harness {
    pub scheduler: Scheduler,
    now: u64,
}

impl Harness {
    pub fn new(policy: SchedulingPolicy) -> Self {
        Self::with_config(SchedulerConfig { policy, ..SchedulerConfig::default() })
    }

    pub fn with_config(config: SchedulerConfig) -> Self {
        Harness { scheduler: Scheduler::new(POOL, config), now: 0 }
    }

    pub fn agent(&mut self, id: &str, slots: u32) {
        self.scheduler.add_agent(AgentSpec::new(id, POOL).with_slots(DeviceType::Cuda, slots)).unwrap();
    }

    pub fn tick(&mut self) -> LogicalTime {
        self.now += 1;
        LogicalTime(self.now)
    }

    /// Submits `<job>.<n>` style allocation `allocation` of `job` with `slots`, shaped by `shape`.
    pub fn submit_with(&mut self, allocation: &str, job: &str, slots: u32, shape: impl FnOnce(AllocationRequest) -> AllocationRequest) {
        let at = self.tick();
        let request = AllocationRequest::new(allocation, format!("task-{allocation}"), job, POOL, slots, at);
        self.scheduler.submit(shape(request)).unwrap();
    }

    pub fn submit(&mut self, allocation: &str, job: &str, slots: u32) {
        self.submit_with(allocation, job, slots, |r| r);
    }

    pub fn schedule(&mut self) -> String {
        let at = self.tick();
        summary(&self.scheduler.schedule(at))
    }

    pub fn release(&mut self, allocation: &str) {
        self.scheduler.release(&AllocationId::from(allocation)).unwrap();
    }

    /// Asserts the rendered state at a named point of the script.
    #[track_caller]
    pub fn check(&self, point: &str, expected: &str) {
        let actual = render(&self.scheduler.snapshot());
        let expected: Vec<&str> = expected.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        assert_eq!(actual.lines().collect::<Vec<_>>(), expected, "state at point {point:?}:\n{actual}");
    }
}

/// One line per decision: `assign a.1 a1[0,1]`, `preempt b.1`.
fn summary(decisions: &Decisions) -> String {
    let mut lines: Vec<String> = decisions
        .assignments
        .iter()
        .map(|a| {
            let backfilled = if a.backfilled { " backfilled" } else { "" };
            format!("assign {} {}{backfilled}", a.allocation_id, placements(&serde_json::to_value(&a.placements).unwrap()))
        })
        .collect();
    lines.extend(decisions.preemptions.iter().map(|id| format!("preempt {id}")));
    lines.join("; ")
}

fn placements(value: &Value) -> String {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let slots: Vec<String> = p["slot_ids"].as_array().unwrap().iter().map(|s| s.to_string()).collect();
            format!("{}[{}]", p["agent_id"].as_str().unwrap(), slots.join(","))
        })
        .collect::<Vec<_>>()
        .join("+")
}

/// Agents as `a1: 0=x.1 1=- 2=off`, then the queue in order as
/// `x.1 job=x p42 2 slots SCHEDULED a1[0,1]` or `y.1 job=y p42 4 slots QUEUED insufficient_free_slots`.
fn render(snapshot: &Value) -> String {
    let mut lines = Vec::new();
    for agent in snapshot["agents"].as_array().unwrap() {
        let mut line = format!("{}{}:", agent["id"].as_str().unwrap(), if agent["enabled"] == true { "" } else { " (disabled)" });
        for slot in agent["slots"].as_array().unwrap() {
            let holder = slot["allocation"].as_str().unwrap_or("-");
            let holder = if slot["enabled"] == true { holder.to_owned() } else { format!("off/{holder}") };
            line.push_str(&format!(" {}={holder}", slot["id"]));
        }
        let aux: Vec<&str> = agent["aux"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        if !aux.is_empty() {
            line.push_str(&format!(" aux=[{}]", aux.join(",")));
        }
        lines.push(line);
    }
    for request in snapshot["queue"].as_array().unwrap() {
        let job = request["job_id"].as_str().unwrap();
        let priority = snapshot["jobs"].as_array().unwrap().iter().find(|j| j["job_id"] == job).unwrap()["priority"].clone();
        let mut line = format!(
            "{} job={job} p{priority} {} slots {}",
            request["allocation_id"].as_str().unwrap(),
            request["slots"],
            request["state"].as_str().unwrap()
        );
        if request["state"] == "SCHEDULED" {
            line.push_str(&format!(" {}", placements(&request["placements"])));
            for flag in ["backfilled", "preempting", "resources_lost"] {
                if request[flag] == true {
                    line.push_str(&format!(" {flag}"));
                }
            }
        } else if let Some(kind) = request["reason"]["kind"].as_str() {
            line.push_str(&format!(" {kind}"));
        }
        lines.push(line);
    }
    lines.join("\n")
}

pub fn priority(preemption: bool) -> SchedulingPolicy {
    SchedulingPolicy::Priority { preemption }
}

pub fn fair_share(preemption: bool) -> SchedulingPolicy {
    SchedulingPolicy::FairShare { preemption }
}
