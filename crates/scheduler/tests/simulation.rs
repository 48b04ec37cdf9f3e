//! Issue 13's scheduler simulation: a seeded, deterministic run with accelerated (logical) time
//! that drives the real [`Scheduler`] the way the master's cluster loop does — thousands of
//! agents and trials, random arrivals, agents lost and coming back, priority and weight changes,
//! preemptions carried out by checkpoint-and-resubmit — and checks after every pass:
//! - no slot is ever given to two allocations, and only existing, present slots are given;
//! - gangs are all or nothing: exactly the slots asked for, whole idle agents of one size;
//! - only preemptible allocations are preempted, and only running ones;
//! - the scheduler's slot count agrees with the simulation's own bookkeeping;
//!
//! And at the end, after a drain with every agent back: every trial finished (no job starved
//! forever, under either policy) and every preempted trial was resumed and finished.
//!
//! Each seed prints nothing when it passes; a failure names the seed and the command that replays
//! it exactly: `RESOLUTE_SIM_SEED=<seed> cargo test -p resolute-scheduler --test simulation`.
//! `RESOLUTE_SIM_SEEDS=<n>` runs n seeds per policy (default one; CI runs the default); `RESOLUTE_SIM_AGENTS` and
//! `RESOLUTE_SIM_JOBS` change the scale.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use resolute_scheduler::sim::Rng;
use resolute_scheduler::sim::workload::JOB_SIZES;
use resolute_scheduler::{
    AgentId, AgentSpec, AllocationId, AllocationRequest, AllocationState, Decisions, DeviceType, JobId, LogicalTime, Placement, Scheduler,
    SchedulerConfig, SchedulingPolicy,
};

const POOL: &str = "default";
/// Logical ticks after the arrivals stop within which every trial must have finished.
const DRAIN_DEADLINE: u64 = 20_000;

#[derive(Clone, Copy, Debug)]
struct Scale {
    agents: usize,
    jobs: usize,
    /// Ticks over which the jobs arrive (agents are also lost only during these).
    arrival_ticks: u64,
}

impl Scale {
    fn from_env() -> Scale {
        let agents = env_number("RESOLUTE_SIM_AGENTS").unwrap_or(500);
        let jobs = env_number("RESOLUTE_SIM_JOBS").unwrap_or(1_500);
        Scale { agents, jobs, arrival_ticks: 40 }
    }
}

fn env_number(name: &str) -> Option<usize> {
    let value = std::env::var(name).ok()?;
    Some(value.parse().unwrap_or_else(|_| panic!("{name}={value:?} is not a whole number")))
}

#[derive(Clone, Debug, PartialEq)]
enum TrialState {
    /// Submitted as allocation `attempt`, not placed yet.
    Pending,
    Running,
    /// Preemption signalled; it checkpoints and exits at `exits_at`.
    Preempting {
        exits_at: u64,
    },
    Done,
}

#[derive(Clone, Debug)]
struct Trial {
    job: usize,
    slots: u32,
    preemptible: bool,
    /// Ticks of work left (kept across preemptions: it resumes from its checkpoint).
    work_left: u32,
    attempt: u32,
    state: TrialState,
    preemptions: u32,
    /// Assignments after its latest preemption (a resume).
    resumed_after_preemption: bool,
    submitted_at: u64,
    /// Where its current allocation holds slots.
    placements: Vec<Placement>,
}

/// What a run leaves for the report and the replay check.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// A hash of every decision in order: equal for two runs of a seed.
    trace: u64,
    ticks: u64,
    trials: usize,
    preemptions: u32,
    agents_lost: u32,
    longest_wait: u64,
}

struct Sim {
    seed: u64,
    rng: Rng,
    scheduler: Scheduler,
    now: u64,
    scale: Scale,
    trials: Vec<Trial>,
    jobs: usize,
    /// Agents now in the pool: slot holders by slot index.
    present: BTreeMap<AgentId, Vec<Option<AllocationId>>>,
    /// Lost agents and the tick they come back.
    lost: Vec<(AgentId, u32, u64)>,
    trace: u64,
    preemptions: u32,
    agents_lost: u32,
    longest_wait: u64,
}

impl Sim {
    fn new(seed: u64, policy: SchedulingPolicy, scale: Scale) -> Sim {
        let mut rng = Rng::new(seed);
        let mut scheduler = Scheduler::new(POOL, SchedulerConfig { policy, ..SchedulerConfig::default() });
        let mut present = BTreeMap::new();
        for i in 0..scale.agents {
            let slots = if rng.percent(70) { 8 } else { 4 };
            let id = AgentId::new(format!("agent-{i:04}"));
            scheduler.add_agent(AgentSpec::new(id.clone(), POOL).with_slots(DeviceType::Cuda, slots)).unwrap();
            present.insert(id, vec![None; slots as usize]);
        }
        Sim {
            seed,
            rng,
            scheduler,
            now: 0,
            scale,
            trials: Vec::new(),
            jobs: 0,
            present,
            lost: Vec::new(),
            trace: 0xcbf2_9ce4_8422_2325,
            preemptions: 0,
            agents_lost: 0,
            longest_wait: 0,
        }
    }

    fn fail(&self, what: String) -> ! {
        panic!("seed {}: tick {}: {what}", self.seed, self.now)
    }

    fn record(&mut self, text: &str) {
        // FNV-1a over the decision text: order-sensitive and stable across platforms.
        for byte in text.bytes().chain([b'\n']) {
            self.trace = (self.trace ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn allocation_id(&self, trial: usize) -> AllocationId {
        AllocationId::new(format!("t{trial}.{}", self.trials[trial].attempt))
    }

    fn trial_of(&self, allocation: &AllocationId) -> usize {
        let parsed = allocation.as_str().strip_prefix('t').and_then(|rest| rest.split_once('.')).and_then(|(t, _)| t.parse().ok());
        parsed.unwrap_or_else(|| self.fail(format!("the scheduler named an allocation the simulation never submitted: {allocation}")))
    }

    fn submit(&mut self, trial: usize) {
        let t = &self.trials[trial];
        let request = AllocationRequest::new(
            self.allocation_id(trial),
            format!("t{trial}"),
            format!("j{}", t.job),
            POOL,
            t.slots,
            LogicalTime(self.now),
        )
        .with_preemptible(t.preemptible);
        if let Err(err) = self.scheduler.submit(request) {
            self.fail(format!("submitting t{trial}: {err}"));
        }
        self.trials[trial].state = TrialState::Pending;
        self.trials[trial].submitted_at = self.now;
    }

    fn arrive(&mut self) {
        let job = self.jobs;
        self.jobs += 1;
        let trials = 1 + self.rng.below(4) as usize;
        let slots = *self.rng.pick(&JOB_SIZES);
        let preemptible = !self.rng.percent(10);
        let priority = *self.rng.pick(&[30u32, 42, 42, 42, 60]);
        let weight = *self.rng.pick(&[1.0, 1.0, 2.0, 0.5]);
        for _ in 0..trials {
            let work_left = 2 + self.rng.below(30) as u32;
            let index = self.trials.len();
            self.trials.push(Trial {
                job,
                slots,
                preemptible,
                work_left,
                attempt: 1,
                state: TrialState::Pending,
                preemptions: 0,
                resumed_after_preemption: true,
                submitted_at: self.now,
                placements: Vec::new(),
            });
            let t = &self.trials[index];
            let request = AllocationRequest::new(
                self.allocation_id(index),
                format!("t{index}"),
                format!("j{job}"),
                POOL,
                t.slots,
                LogicalTime(self.now),
            )
            .with_preemptible(preemptible)
            .with_priority(priority)
            .with_weight(weight);
            if let Err(err) = self.scheduler.submit(request) {
                self.fail(format!("submitting t{index}: {err}"));
            }
        }
    }

    /// The master releases an allocation: its slots are free again in the model.
    fn release(&mut self, trial: usize) {
        let allocation = self.allocation_id(trial);
        if let Err(err) = self.scheduler.release(&allocation) {
            self.fail(format!("releasing {allocation}: {err}"));
        }
        for placement in std::mem::take(&mut self.trials[trial].placements) {
            // A lost agent's slots left the model with it.
            let Some(slots) = self.present.get_mut(&placement.agent_id) else { continue };
            for slot in placement.slot_ids {
                if slots[slot as usize].as_ref() != Some(&allocation) {
                    self.fail(format!("{allocation} was released from {}/{slot}, which it did not hold", placement.agent_id));
                }
                slots[slot as usize] = None;
            }
        }
    }

    /// Running trials work; finished ones exit; preempted ones checkpoint, exit and are
    /// resubmitted to resume.
    fn progress(&mut self) {
        for trial in 0..self.trials.len() {
            match self.trials[trial].state {
                TrialState::Running => {
                    self.trials[trial].work_left -= 1;
                    if self.trials[trial].work_left == 0 {
                        self.release(trial);
                        self.trials[trial].state = TrialState::Done;
                    }
                }
                TrialState::Preempting { exits_at } if exits_at <= self.now => {
                    self.release(trial);
                    self.trials[trial].attempt += 1;
                    self.trials[trial].resumed_after_preemption = false;
                    self.submit(trial);
                }
                _ => {}
            }
        }
    }

    /// An agent disappears: the master fails what ran there and restarts those trials.
    fn lose_agent(&mut self) {
        let index = self.rng.below(self.present.len() as u64) as usize;
        let Some(id) = self.present.keys().nth(index).cloned() else { return };
        let lost = match self.scheduler.remove_agent(&id) {
            Ok(lost) => lost,
            Err(err) => self.fail(format!("removing {id}: {err}")),
        };
        let slots = self.present.remove(&id).map_or(0, |s| s.len() as u32);
        for allocation in lost {
            let trial = self.trial_of(&allocation);
            if matches!(self.trials[trial].state, TrialState::Pending | TrialState::Done) {
                self.fail(format!("{id} was lost with {allocation}, which was not running"));
            }
            self.release(trial);
            self.trials[trial].attempt += 1;
            self.submit(trial);
        }
        self.record(&format!("lost {id}"));
        self.agents_lost += 1;
        let back_at = self.now + 3 + self.rng.below(20);
        self.lost.push((id, slots, back_at));
    }

    fn return_agents(&mut self, all: bool) {
        let now = self.now;
        let (back, still): (Vec<_>, Vec<_>) = self.lost.drain(..).partition(|(_, _, at)| all || *at <= now);
        self.lost = still;
        for (id, slots, _) in back {
            if let Err(err) = self.scheduler.add_agent(AgentSpec::new(id.clone(), POOL).with_slots(DeviceType::Cuda, slots)) {
                self.fail(format!("re-adding {id}: {err}"));
            }
            self.present.insert(id, vec![None; slots as usize]);
        }
    }

    fn change_a_job(&mut self) {
        if self.jobs == 0 {
            return;
        }
        let job = JobId::new(format!("j{}", self.rng.below(self.jobs as u64)));
        let priority = *self.rng.pick(&[20u32, 42, 70]);
        let weight = *self.rng.pick(&[0.5, 1.0, 3.0]);
        // A job whose trials all finished is forgotten by the scheduler: an error is expected then.
        let known = self.scheduler.set_priority(&job, priority).is_ok();
        if known {
            self.scheduler.set_weight(&job, weight).unwrap();
            self.record(&format!("job {job} p{priority} w{weight}"));
        }
    }

    fn schedule(&mut self) {
        let decisions = self.scheduler.schedule(LogicalTime(self.now));
        self.check_and_apply(&decisions);
    }

    fn check_and_apply(&mut self, decisions: &Decisions) {
        for assignment in &decisions.assignments {
            let trial = self.trial_of(&assignment.allocation_id);
            if self.allocation_id(trial) != assignment.allocation_id || self.trials[trial].state != TrialState::Pending {
                self.fail(format!("{} was assigned but is not a pending allocation", assignment.allocation_id));
            }
            let requested = self.trials[trial].slots;
            let given: u32 = assignment.placements.iter().map(|p| p.slot_ids.len() as u32).sum();
            if given != requested {
                self.fail(format!("{} asked for {requested} slots and was given {given}", assignment.allocation_id));
            }
            if assignment.placements.len() > 1 {
                let mut agents: Vec<&AgentId> = assignment.placements.iter().map(|p| &p.agent_id).collect();
                agents.sort();
                agents.dedup();
                let sizes: Vec<usize> = assignment.placements.iter().map(|p| self.present.get(&p.agent_id).map_or(0, Vec::len)).collect();
                let whole = assignment.placements.iter().zip(&sizes).all(|(p, size)| p.slot_ids.len() == *size);
                if agents.len() != assignment.placements.len() || !whole || sizes.iter().any(|s| *s != sizes[0]) {
                    self.fail(format!(
                        "gang {} is not whole idle agents of one size: {:?}",
                        assignment.allocation_id, assignment.placements
                    ));
                }
            }
            let mut text = format!("assign {}", assignment.allocation_id);
            for placement in &assignment.placements {
                let Some(slots) = self.present.get_mut(&placement.agent_id) else {
                    self.fail(format!("{} was placed on {}, which is not in the pool", assignment.allocation_id, placement.agent_id));
                };
                for &slot in &placement.slot_ids {
                    match slots.get_mut(slot as usize) {
                        Some(holder @ None) => *holder = Some(assignment.allocation_id.clone()),
                        Some(Some(other)) => {
                            let other = other.clone();
                            self.fail(format!("slot {}/{slot} double-booked: {other} and {}", placement.agent_id, assignment.allocation_id))
                        }
                        None => self.fail(format!(
                            "{} was given slot {}/{slot}, which does not exist",
                            assignment.allocation_id, placement.agent_id
                        )),
                    }
                }
                text.push_str(&format!(" {}{:?}", placement.agent_id, placement.slot_ids));
            }
            self.record(&text);
            let waited = self.now - self.trials[trial].submitted_at;
            self.longest_wait = self.longest_wait.max(waited);
            self.trials[trial].state = TrialState::Running;
            self.trials[trial].resumed_after_preemption = true;
            self.trials[trial].placements = assignment.placements.clone();
        }
        for allocation in &decisions.preemptions {
            let trial = self.trial_of(allocation);
            if self.trials[trial].state != TrialState::Running || self.allocation_id(trial) != *allocation {
                self.fail(format!("{allocation} was preempted but is not running"));
            }
            if !self.trials[trial].preemptible {
                self.fail(format!("{allocation} is not preemptible but was preempted"));
            }
            self.record(&format!("preempt {allocation}"));
            self.preemptions += 1;
            self.trials[trial].preemptions += 1;
            let exits_at = self.now + 1 + self.rng.below(3);
            self.trials[trial].state = TrialState::Preempting { exits_at };
        }
        for waiting in &decisions.waiting {
            let trial = self.trial_of(&waiting.allocation_id);
            if self.trials[trial].state != TrialState::Pending {
                self.fail(format!("{} is reported waiting ({}) but is not pending", waiting.allocation_id, waiting.reason));
            }
        }
    }

    /// The scheduler's own books agree with the simulation's.
    fn cross_check(&self) {
        let held: u32 = self.present.values().map(|slots| slots.iter().filter(|s| s.is_some()).count() as u32).sum();
        let stats = self.scheduler.stats();
        if stats.slots_used != held {
            self.fail(format!("the scheduler counts {} used slots, the simulation {held}", stats.slots_used));
        }
        for (trial, t) in self.trials.iter().enumerate() {
            let state = self.scheduler.allocation(&self.allocation_id(trial));
            let consistent = match t.state {
                TrialState::Pending => matches!(state, Some(AllocationState::Queued { .. })),
                TrialState::Running => matches!(state, Some(AllocationState::Scheduled { preempting: false, .. })),
                TrialState::Preempting { .. } => matches!(state, Some(AllocationState::Scheduled { preempting: true, .. })),
                TrialState::Done => state.is_none(),
            };
            if !consistent {
                self.fail(format!("t{trial} is {:?} in the simulation but {state:?} in the scheduler", t.state));
            }
        }
    }

    fn run(mut self) -> Outcome {
        let per_tick = (self.scale.jobs as u64).div_ceil(self.scale.arrival_ticks);
        while self.now < self.scale.arrival_ticks {
            self.now += 1;
            self.progress();
            self.return_agents(false);
            for _ in 0..self.rng.below(2 * per_tick + 1) {
                if self.jobs < self.scale.jobs {
                    self.arrive();
                }
            }
            if self.rng.percent(30) && self.present.len() > 1 {
                self.lose_agent();
            }
            if self.rng.percent(20) {
                self.change_a_job();
            }
            self.schedule();
            if self.now.is_multiple_of(10) {
                self.cross_check();
            }
        }
        while self.jobs < self.scale.jobs {
            self.arrive();
        }
        // Drain: every agent back, nothing new; everything must finish.
        self.return_agents(true);
        let deadline = self.now + DRAIN_DEADLINE;
        while self.trials.iter().any(|t| t.state != TrialState::Done) {
            if self.now >= deadline {
                let stuck: Vec<String> = self
                    .trials
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.state != TrialState::Done)
                    .take(5)
                    .map(|(i, t)| format!("t{i} (job j{}, {} slots) {:?} since tick {}", t.job, t.slots, t.state, t.submitted_at))
                    .collect();
                self.fail(format!("starved: trials still unfinished {DRAIN_DEADLINE} ticks after arrivals stopped: {}", stuck.join("; ")));
            }
            self.now += 1;
            self.progress();
            self.schedule();
            if self.now.is_multiple_of(50) {
                self.cross_check();
            }
        }
        self.cross_check();
        for (trial, t) in self.trials.iter().enumerate() {
            if t.preemptions > 0 && !t.resumed_after_preemption {
                self.fail(format!("t{trial} was preempted and never resumed"));
            }
        }
        Outcome {
            trace: self.trace,
            ticks: self.now,
            trials: self.trials.len(),
            preemptions: self.preemptions,
            agents_lost: self.agents_lost,
            longest_wait: self.longest_wait,
        }
    }
}

fn policies() -> [(&'static str, SchedulingPolicy); 3] {
    [
        ("priority", SchedulingPolicy::Priority { preemption: false }),
        ("priority+preemption", SchedulingPolicy::Priority { preemption: true }),
        ("fair_share", SchedulingPolicy::FairShare { preemption: true }),
    ]
}

/// Runs one seed, and on failure names it and the command that replays it.
fn run_seed(seed: u64, name: &str, policy: SchedulingPolicy, scale: Scale) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| Sim::new(seed, policy, scale).run())) {
        Ok(outcome) => outcome,
        Err(panic) => {
            eprintln!(
                "scheduler simulation failed: policy {name}, seed {seed}, {} agents, {} jobs; replay with \
                 RESOLUTE_SIM_SEED={seed} cargo test -p resolute-scheduler --test simulation",
                scale.agents, scale.jobs
            );
            resume_unwind(panic)
        }
    }
}

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("RESOLUTE_SIM_SEED") {
        return vec![seed.parse().unwrap_or_else(|_| panic!("RESOLUTE_SIM_SEED={seed:?} is not a whole number"))];
    }
    let count = env_number("RESOLUTE_SIM_SEEDS").unwrap_or(1) as u64;
    (1..=count).collect()
}

#[test]
fn invariants_hold_for_every_seed_and_policy() {
    let scale = Scale::from_env();
    for seed in seeds() {
        for (name, policy) in policies() {
            let outcome = run_seed(seed, name, policy, scale);
            assert!(outcome.trials >= scale.jobs, "{name} seed {seed}: every job has at least one trial");
            println!("{name} seed {seed}: {outcome:?}");
            if matches!(policy, SchedulingPolicy::Priority { preemption: true } | SchedulingPolicy::FairShare { .. }) {
                assert!(outcome.preemptions > 0, "{name} seed {seed}: the load must cause preemptions to test them");
            }
            assert!(outcome.agents_lost > 0, "{name} seed {seed}: agents must be lost to test it");
        }
    }
}

#[test]
fn a_seed_replays_exactly_and_another_differs() {
    let scale = Scale { agents: 200, jobs: 400, arrival_ticks: 20 };
    let policy = SchedulingPolicy::Priority { preemption: true };
    let first = run_seed(7, "priority+preemption", policy, scale);
    let again = run_seed(7, "priority+preemption", policy, scale);
    let other = run_seed(8, "priority+preemption", policy, scale);
    assert_eq!(first, again);
    assert_ne!(first.trace, other.trace);
}
