//! Synthetic pools for the benchmark and the simulation: many agents and a queue of jobs of
//! mixed sizes (mostly small, some whole-agent and multi-agent gangs), drawn from a seed.

use crate::agent::AgentSpec;
use crate::ids::{DeviceType, LogicalTime};
use crate::request::AllocationRequest;
use crate::sim::rng::Rng;

/// Slot counts a job may ask for, weighted towards small requests; 16 and 32 are gangs on an
/// 8-slot agent.
pub const JOB_SIZES: [u32; 10] = [1, 1, 1, 1, 2, 2, 4, 8, 16, 32];

/// `count` agents named `agent-0000`… of `slots_per_agent` CUDA slots each.
pub fn agents(pool: &str, count: usize, slots_per_agent: u32) -> Vec<AgentSpec> {
    (0..count).map(|i| AgentSpec::new(format!("agent-{i:04}"), pool).with_slots(DeviceType::Cuda, slots_per_agent)).collect()
}

/// `count` one-allocation jobs `job-N` (allocation `job-N.1`), sizes from [`JOB_SIZES`], a tenth of
/// them non-preemptible, priorities spread over 40/42/50, submitted at times `1..=count`.
pub fn jobs(pool: &str, count: usize, rng: &mut Rng) -> Vec<AllocationRequest> {
    (0..count)
        .map(|i| {
            let slots = *rng.pick(&JOB_SIZES);
            let priority = *rng.pick(&[40, 42, 42, 42, 50]);
            AllocationRequest::new(format!("job-{i}.1"), format!("task-{i}"), format!("job-{i}"), pool, slots, LogicalTime(i as u64 + 1))
                .with_priority(priority)
                .with_preemptible(!rng.percent(10))
        })
        .collect()
}
