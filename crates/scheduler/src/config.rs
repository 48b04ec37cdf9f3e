//! Scheduler configuration for one resource pool: the policy (`priority` or `fair_share`), the
//! fitting policy (`best` or `worst`) and the aux-container cap, parsed from upstream's names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::SchedulerError;

/// Upstream's default cap on zero-slot (aux) containers per agent.
pub const DEFAULT_MAX_AUX_CONTAINERS_PER_AGENT: u32 = 100;

/// How requests compete for slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SchedulingPolicy {
    /// Strict priority order (lower number first), FIFO within a priority. With `preemption`, a
    /// request that cannot fit may preempt lower-priority preemptible allocations.
    Priority { preemption: bool },
    /// Jobs get slots in proportion to their weight (max-min fairness). With `preemption`,
    /// jobs over their share are preempted (upstream always preempts).
    FairShare { preemption: bool },
}

impl SchedulingPolicy {
    /// Parses upstream's `scheduler.type`. `round_robin` was removed upstream (0.34) and is
    /// rejected with a message that says what to use instead.
    pub fn from_type(name: &str, preemption: bool) -> Result<Self, SchedulerError> {
        match name {
            "priority" => Ok(SchedulingPolicy::Priority { preemption }),
            "fair_share" => Ok(SchedulingPolicy::FairShare { preemption }),
            "round_robin" => Err(SchedulerError::RemovedPolicy(name.to_owned())),
            other => Err(SchedulerError::UnknownPolicy(other.to_owned())),
        }
    }

    /// Upstream's name for the policy (`priority`, `fair_share`).
    pub fn name(&self) -> &'static str {
        match self {
            SchedulingPolicy::Priority { .. } => "priority",
            SchedulingPolicy::FairShare { .. } => "fair_share",
        }
    }

    pub fn preemption(&self) -> bool {
        match *self {
            SchedulingPolicy::Priority { preemption } | SchedulingPolicy::FairShare { preemption } => preemption,
        }
    }
}

impl Default for SchedulingPolicy {
    /// Upstream's default: `priority` without preemption.
    fn default() -> Self {
        SchedulingPolicy::Priority { preemption: false }
    }
}

/// Which agent a request goes to when several could take it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FittingPolicy {
    /// The agent left with the fewest free slots (packs work; good for multi-slot jobs).
    #[default]
    Best,
    /// The least utilised agent (spreads work; good for single-slot jobs).
    Worst,
}

impl FromStr for FittingPolicy {
    type Err = SchedulerError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "best" => Ok(FittingPolicy::Best),
            "worst" => Ok(FittingPolicy::Worst),
            other => Err(SchedulerError::UnknownFittingPolicy(other.to_owned())),
        }
    }
}

impl fmt::Display for FittingPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FittingPolicy::Best => "best",
            FittingPolicy::Worst => "worst",
        })
    }
}

/// Everything that shapes one pool's scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerConfig {
    pub policy: SchedulingPolicy,
    pub fitting_policy: FittingPolicy,
    /// Zero-slot containers (tensorboards, CPU commands, checkpoint GC) one agent may run.
    pub max_aux_containers_per_agent: u32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            policy: SchedulingPolicy::default(),
            fitting_policy: FittingPolicy::default(),
            max_aux_containers_per_agent: DEFAULT_MAX_AUX_CONTAINERS_PER_AGENT,
        }
    }
}
