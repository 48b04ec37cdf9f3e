//! Issue 13's scheduling-pass benchmark: one pass with 10,000 pending jobs and 1,000 agents of 8
//! slots (target < 20 ms in a release build; upstream schedules every 500 ms).
//!
//! Run: `cargo bench -p resolute-scheduler --bench scheduling_pass` (optional arguments: jobs,
//! agents, repetitions). For each policy it times two passes on a clone of the same state:
//! - `first`: an empty pool and every job pending (the pass that fills the pool);
//! - `full`: the pass after it, the pool full and most jobs still pending (the steady state the
//!   master sees every time something changes).
//!
//! It prints the median and the maximum of the repetitions, and exits non-zero if a median misses
//! the target, so it can gate a CI step.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use resolute_scheduler::sim::{Rng, workload};
use resolute_scheduler::{LogicalTime, Scheduler, SchedulerConfig, SchedulingPolicy};

const POOL: &str = "default";
const TARGET: Duration = Duration::from_millis(20);

fn main() -> ExitCode {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let jobs = args.first().copied().unwrap_or(10_000);
    let agents = args.get(1).copied().unwrap_or(1_000);
    let repetitions = args.get(2).copied().unwrap_or(9).max(1);
    println!("scheduling pass: {jobs} pending jobs, {agents} agents x 8 slots, median/max of {repetitions}");

    let policies = [
        ("priority", SchedulingPolicy::Priority { preemption: false }),
        ("priority+preemption", SchedulingPolicy::Priority { preemption: true }),
        ("fair_share", SchedulingPolicy::FairShare { preemption: true }),
    ];
    let mut missed = false;
    for (name, policy) in policies {
        let mut scheduler = Scheduler::new(POOL, SchedulerConfig { policy, ..SchedulerConfig::default() });
        for agent in workload::agents(POOL, agents, 8) {
            scheduler.add_agent(agent).expect("generated agents are unique");
        }
        let mut rng = Rng::new(42);
        for job in workload::jobs(POOL, jobs, &mut rng) {
            scheduler.submit(job).expect("generated jobs are valid");
        }
        let first = time_pass(&scheduler, LogicalTime(jobs as u64 + 1), repetitions);
        let mut full = scheduler.clone();
        let decisions = full.schedule(LogicalTime(jobs as u64 + 1));
        let stats = full.stats();
        let steady = time_pass(&full, LogicalTime(jobs as u64 + 2), repetitions);
        println!(
            "{name:>20}: first {} (assigned {}, pool {}/{} slots used) | full {} ({} still pending)",
            show(first),
            decisions.assignments.len(),
            stats.slots_used,
            stats.slots_available,
            show(steady),
            decisions.waiting.len(),
        );
        missed |= first.0 > TARGET || steady.0 > TARGET;
    }
    if missed {
        println!("a median missed the {} ms target", TARGET.as_millis());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Median and maximum time of one `schedule` call on fresh clones of `scheduler`.
fn time_pass(scheduler: &Scheduler, now: LogicalTime, repetitions: usize) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..repetitions)
        .map(|_| {
            let mut copy = scheduler.clone();
            let start = Instant::now();
            let decisions = copy.schedule(now);
            let elapsed = start.elapsed();
            std::hint::black_box(decisions);
            elapsed
        })
        .collect();
    times.sort();
    (times[times.len() / 2], times[times.len() - 1])
}

fn show((median, max): (Duration, Duration)) -> String {
    format!("{:.2} ms (max {:.2})", median.as_secs_f64() * 1e3, max.as_secs_f64() * 1e3)
}
